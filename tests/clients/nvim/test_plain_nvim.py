"""Neovim with no plugin: only the built-in LSP client, code actions and executeCommand (REQ-PROTO-023, 038, 039).

The scenario configures the server the way any generic client configuration does (a command and a root) and
then acts as a user: it picks code actions from Neovim's own menu and answers the server's prompts by
pressing keys once they are on screen.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_snippet(cmd: list[str]) -> str:
    """The README's "Neovim with no plugin" configuration, as it stands there, with the server command given."""
    section = README.read_text().split("## Use it from any LSP editor", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"Or in Neovim with no plugin:\s*```lua\n(.*?)```", section, re.S)
    assert match, "the README's section 'Use it from any LSP editor' has a Lua snippet for Neovim"
    snippet = match.group(1)
    assert '{ "phoenix-lsp" }' in snippet
    return snippet.replace('{ "phoenix-lsp" }', "{ " + ", ".join(json.dumps(word) for word in cmd) + " }")


PLAIN_USER = """
-- A plain user: presses the number of the wanted entry when Neovim's own menu or prompt is up.
local picks = {}
local function press(keys, ms)  -- from a libuv timer: it fires while Neovim waits in its prompt
  local timer = (vim.uv or vim.loop).new_timer()
  timer:start(ms, 0, function()
    timer:close()
    vim.api.nvim_input(keys)
  end)
end
local select = vim.ui.select
local in_prompt = false
vim.ui.select = function(items, opts, on_choice)
  if in_prompt then  -- Neovim 0.10 on asks the server's prompt through vim.ui.select too: answered below
    return select(items, opts, on_choice)
  end
  local want = table.remove(picks, 1)
  local index = 0
  for i, item in ipairs(items) do
    local label = opts.format_item and opts.format_item(item) or tostring(item)
    if label:find(want, 1, true) then index = i end
  end
  T.data.menus = T.data.menus or {}
  table.insert(T.data.menus, want)
  press(index .. "<CR>", 300)
  return select(items, opts, on_choice)
end
local ask = vim.lsp.handlers["window/showMessageRequest"]
vim.lsp.handlers["window/showMessageRequest"] = function(err, result, ctx, config)
  T.data.asked = result.message
  press("1<CR>", 300)  -- 1. Allow
  in_prompt = true
  local ok, answer = pcall(ask, err, result, ctx, config)
  in_prompt = false
  assert(ok, answer)
  return answer
end
local function code_action(label, first, last)
  table.insert(picks, label)
  if first and vim.fn.has("nvim-0.9") == 1 then  -- range_code_action is deprecated from 0.9, gone in 0.10
    vim.lsp.buf.code_action({ range = { start = {first, 0}, ["end"] = {last, 0} } })
  elseif first then
    vim.lsp.buf.range_code_action(nil, {first, 0}, {last, 0})
  else
    vim.lsp.buf.code_action()
  end
end
local function transcript()
  local files = vim.fn.glob(T.data_dir .. "/transcripts/*.md", false, true)
  return files[1] and table.concat(vim.fn.readfile(files[1]), "\\n") or "", files[1]
end
"""


@pytest.mark.req("REQ-PROTO-038", "REQ-PROTO-039", "REQ-PROTO-023", "REQ-NVIM-013")
def test_plain_neovim_asks_through_code_actions_sees_the_answer_and_approves(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply("It adds the two numbers and returns the sum."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo checked > checked.txt"})),
        Reply.text_reply("I found no problems; the check is in checked.txt."),
    )
    run = run_nvim(
        PLAIN_USER + readme_snippet([sys.executable, "-m", "phoenix_lsp", "serve"]) + """
        vim.cmd("edit calc.py")
        T.wait("the server", function()
          local c = vim.lsp.get_client_by_id(id)
          return c and c.initialized
        end)
        code_action("Ask Phoenix: explain this", 1, 3)
        T.wait("the answer in the transcript", function()
          return transcript():find("It adds the two numbers", 1, true) ~= nil
        end)
        local _, path = transcript()
        local window = vim.lsp.protocol.make_client_capabilities().window or {}
        T.data.show_document = (window.showDocument or {}).support == true  -- the server opens the transcript
        T.wait("the transcript shown", function() return not T.data.show_document or vim.fn.bufnr(path) ~= -1 end)
        vim.cmd("edit " .. path)  -- the user opens the file the message named (or the one shown)
        T.data.transcript = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        vim.cmd("edit calc.py")
        code_action("switch to unrestricted")
        T.wait("unrestricted", function() return transcript():find("mode `unrestricted`", 1, true) ~= nil end)
        code_action("Ask Phoenix: find problems in this", 1, 3)
        T.wait("the second answer", function()
          return transcript():find("I found no problems", 1, true) ~= nil
        end)
        T.data.final = transcript()
        vim.cmd("silent! wall")  -- the command's reviewed file is applied to a buffer; saving it writes the file
        """,
        files={"calc.py": "def add(a, b):\n    return a + b\n\n"},
        plugin=False,
        timeout=180,
    )
    output = run.stdout + run.stderr
    assert "Phoenix answered" in output and "It adds the two numbers" in output, output[-2000:]
    if not run.data["show_document"]:  # Neovim 0.7 (no window/showDocument): the message names the file
        assert "transcripts" in output, "the user is told where the transcript is"
    lines = run.data["transcript"]
    assert "## You" in lines and "It adds the two numbers and returns the sum." in lines
    assert "Explain what this code does." in lines
    # the last question asked is the review of what the command wrote (issue 36): its diff, not only its JSON
    assert "bash" in run.data["asked"] and "echo checked > checked.txt" in run.data["asked"]
    assert "+checked" in run.data["asked"]
    assert (run.workdir / "checked.txt").read_text() == "checked\n"
    assert "I found no problems" in run.data["final"]
