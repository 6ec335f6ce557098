"""Neovim with the plugin asks the user before a project's MCP server starts (issue 37, REQ-MCP-009): the
server's ``window/showMessageRequest``, shown by Neovim's own prompt and answered with a key. Headless Neovim,
the real server; the witness is the file the project's server writes when it starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply
from tests.tools.tracker import TOKEN, project_server, starts

pytestmark = pytest.mark.slow


@pytest.mark.req("REQ-MCP-009")
def test_neovim_asks_before_a_project_server_starts(fake_anthropic: FakeAnthropic, run_nvim: Any,
                                                    tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Two issues are open."))
    run = run_nvim(
        """
        local function press(keys, ms)  -- from a libuv timer: it fires while Neovim waits in its prompt
          local timer = (vim.uv or vim.loop).new_timer()
          timer:start(ms, 0, function()
            timer:close()
            vim.api.nvim_input(keys)
          end)
        end
        local ask = vim.lsp.handlers["window/showMessageRequest"]
        vim.lsp.handlers["window/showMessageRequest"] = function(err, result, ctx, config)
          T.data.asked = result.message
          T.data.titles = vim.tbl_map(function(a) return a.title end, result.actions or {})
          T.data.started_when_asked = vim.fn.filereadable(WITNESS)
          press("1<CR>", 300)  -- 1. Start it
          return ask(err, result, ctx, config)
        end
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.ok(phoenix.send("what is open?"), "send")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("Two issues are open.", 1, true) ~= nil
        end)
        """.replace("WITNESS", json.dumps(str(tmp_path / "tracker-started.txt"))),
        files={".mcp.json": json.dumps({"mcpServers": {"tracker": project_server(tmp_path)}})},
    )
    assert "MCP server 'tracker'" in run.data["asked"] and "--label one" in run.data["asked"]
    assert TOKEN not in run.data["asked"]
    assert run.data["titles"] == ["Start it", "Do not start it"]
    assert run.data["started_when_asked"] == 0, "nothing ran before the answer"
    assert starts(tmp_path) == 1
    assert "mcp__tracker__list_issues" in (fake_anthropic.requests[0].tool_names or [])
