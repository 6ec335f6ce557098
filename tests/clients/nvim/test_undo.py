"""The Neovim plugin's :PhoenixUndo (issue 36, REQ-BASH-041): headless Neovim (both versions) with the real server
and the fake model. A patch lands in the open buffer; :PhoenixUndo takes it back as one workspace edit that Neovim
applies to the buffer, so Neovim's own undo brings the patch back again; the chat says what was undone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow


@pytest.mark.req("REQ-BASH-041")
def test_phoenix_undo_takes_a_patch_back_in_the_buffer_and_neovims_undo_redoes_it(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    edit = ToolUseBlock("patch", {"path": "m.py", "patches": [
        {"operation": "replace", "oldText": "x = 0", "newText": "x = 10"}]})
    fake_anthropic.enqueue(Reply.tool_reply(edit), Reply.text_reply("patched"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        local notified = {}
        local notify = vim.notify
        vim.notify = function(msg, ...) table.insert(notified, msg); return notify(msg, ...) end
        vim.cmd("edit m.py")
        local buf = vim.api.nvim_get_current_buf()
        T.wait("the buffer to be attached", function() return vim.lsp.buf_is_attached(buf, phoenix.client_id) end)
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        vim.cmd("PhoenixPolicy auto")
        T.wait("auto", function() return phoenix.state.policy == "auto" end)
        phoenix.send("patch it")
        T.wait("the turn", function()
          return phoenix.state.status == "idle" and T.chat_text():find("patched", 1, true)
        end)
        T.data.patched = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        vim.cmd("let &undolevels = &undolevels")  -- the patch is its own undo step, as when time passes
        vim.cmd("PhoenixUndo")
        T.wait("the undo", function() return T.chat_text():find("was undone", 1, true) end)
        T.data.undone = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        vim.api.nvim_set_current_buf(buf)
        vim.cmd("undo")
        T.data.redone = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        vim.cmd("redo")
        vim.cmd("silent! wall")
        vim.cmd("PhoenixUndo")
        T.wait("the second undo's refusal", function()
          return table.concat(notified, "\\n"):find("no accepted change set", 1, true)
        end)
        """,
        files={"m.py": "def f():\n    return 1\nx = 0\n"},
    )
    assert run.data["patched"] == ["def f():", "    return 1", "x = 10"]
    assert run.data["undone"] == ["def f():", "    return 1", "x = 0"]
    assert run.data["redone"] == run.data["patched"], "Neovim's own undo brings the patch back"
    assert (run.workdir / "m.py").read_text() == "def f():\n    return 1\nx = 0\n"
