"""Headless Neovim answers the editor's sight (issue 29, REQ-SIGHT-004): the real plugin, the real server, and
the real ``ruff server`` (a test dependency) as the language server of the Python buffer, whose diagnostics
Neovim holds, and the real python-lsp-server (a test dependency too) for a definition lookup. The model is the
fake Anthropic API; its recorded requests show what the model was told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import tool_results
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow

HELPERS = Path(__file__).resolve().parent

ORIGINAL = "import os\n\n\ndef area(r):\n    return 3.14 * r * r\n"

#: start ruff server (the real one) for the current buffer and wait for its first diagnostics
START_RUFF = """
local compat = require("phoenix.compat")
local function start_ruff(buf)
  local id = compat.start_client({ name = "ruff", cmd = { T.python, "-m", "ruff", "server" },
    root_dir = vim.fn.getcwd() })
  vim.lsp.buf_attach_client(buf, id)
  T.wait("ruff's diagnostics", function() return #vim.diagnostic.get(buf) > 0 end)
  return id
end
"""

def told(request: Any) -> str:
    (result,) = tool_results(request).values()
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


@pytest.mark.req("REQ-SIGHT-004", "REQ-SIGHT-001")
def test_the_patch_result_carries_ruffs_new_problems_from_neovim(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    patch = ToolUseBlock("patch", {"path": "app.py", "patches": [
        {"operation": "prepend_bof", "newText": "import sys\nprint(undefined_name)\n"}]})
    fake_anthropic.enqueue(
        Reply.tool_reply(patch), Reply.text_reply("patched"),
        Reply.tool_reply(ToolUseBlock("find_definition", {"path": "app.py", "line": 8, "symbol": "area"})),
        Reply.text_reply("located it"),
    )
    run = run_nvim(
        START_RUFF + """
        local phoenix = T.setup()
        vim.cmd("edit app.py")
        local buf = vim.api.nvim_get_current_buf()
        T.wait("the buffer to be attached", function() return vim.lsp.buf_is_attached(buf, phoenix.client_id) end)
        start_ruff(buf)
        T.data.before = #vim.diagnostic.get(buf)
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        vim.cmd("PhoenixPolicy auto")
        T.wait("auto", function() return phoenix.state.policy == "auto" end)
        phoenix.send("patch it")
        T.wait("the turn", function()
          return phoenix.state.status == "idle" and T.chat_text():find("patched", 1, true)
        end)
        T.data.chat = T.chat_text()
        T.data.buffer = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        -- a definition lookup answered by a real language server attached to the buffer (python-lsp-server,
        -- a test dependency: ruff answers no definitions)
        local defs = compat.start_client({ name = "pylsp", cmd = { T.python, "-m", "pylsp" },
          root_dir = vim.fn.getcwd() })
        vim.lsp.buf_attach_client(buf, defs)
        T.wait("the definition server", function()
          local c = vim.lsp.get_client_by_id(defs)
          return c and c.initialized
        end)
        vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "print(area(2))" })
        phoenix.send("where is area defined?")
        T.wait("the second turn", function()
          return phoenix.state.status == "idle" and T.chat_text():find("located it", 1, true)
        end)
        """,
        files={"app.py": ORIGINAL},
        # the time the server gives Neovim to answer, and Neovim its language servers (waitMs): ample, so that a
        # loaded machine, where python-lsp-server answers its first lookup late, does not decide the outcome
        env={"PHOENIX_SIGHT_TIMEOUT_MS": "30000"},
    )
    assert run.data["before"] == 1, "ruff reported the unused import of os before the patch"
    assert run.data["buffer"][:2] == ["import sys", "print(undefined_name)"]
    patched = told(fake_anthropic.requests[1])
    assert patched.startswith("Patched app.py"), patched
    assert "After this patch the editor reports" in patched, patched
    assert "2:7 error Ruff(F821): Undefined name `undefined_name`" in patched, patched
    assert "1:8" in patched and "`sys` imported but unused" in patched, patched
    assert "`os`" not in patched, "the unused import of os only moved with the line shift"
    assert "Undefined name `undefined_name`" in run.data["chat"], "the user sees the same in the chat"
    assert len(fake_anthropic.requests) == 4, run.data["chat"]
    found = told(fake_anthropic.requests[3])
    assert "app.py:6:5  def area(r):" in found, found
