"""The Neovim plugin's :PhoenixBackground (issue 36, REQ-BASH-045): headless Neovim (both versions) with the real
server, a real overlay and the fake model. The model starts a background command that writes a file and keeps
running; :PhoenixBackground shows in the chat what it changed so far (nothing lands); :PhoenixBackground stop stops
it and its review follows (auto policy: it lands). The witnesses are the chat's text and the disk."""

from __future__ import annotations

from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]


@pytest.mark.req("REQ-BASH-045")
def test_phoenix_background_shows_the_changes_so_far_and_stop_leads_to_their_review(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    command = "echo so far > partial.txt && touch ../wrote && sleep 300"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command, "run": "background"})),
                           Reply.text_reply("started"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        vim.cmd("PhoenixPolicy auto")
        T.wait("auto", function() return phoenix.state.policy == "auto" end)
        phoenix.send("start it")
        T.wait("the turn", function()
          return phoenix.state.status == "idle" and T.chat_text():find("started", 1, true)
        end)
        T.wait("its first write", function() return vim.loop.fs_stat("../wrote") ~= nil end)
        vim.cmd("PhoenixBackground")
        T.wait("the changes so far", function() return T.chat_text():find("+so far", 1, true) end)
        T.data.shown = T.chat_text()
        T.data.landed_early = vim.loop.fs_stat("partial.txt") ~= nil
        vim.cmd("PhoenixBackground stop")
        T.wait("the stop", function() return T.chat_text():find("Stopped", 1, true) end)
        T.wait("its review applied", function()
          local buf = vim.fn.bufnr("partial.txt")
          return buf ~= -1 and vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1] == "so far"
        end)
        vim.cmd("silent! wall")  -- the editor holds the applied edit; saving it writes the file
        """,
    )
    assert "changed so far" in run.data["shown"] and "  partial.txt" in run.data["shown"]
    assert run.data["landed_early"] is False, "a look lands nothing"
    assert (run.workdir / "partial.txt").read_text() == "so far\n"
