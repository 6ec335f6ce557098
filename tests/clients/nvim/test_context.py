"""What the agent is given in Neovim: attached lines, files and problems, and the project instructions in effect
(issue 17). Real headless Neovim (0.7.2 and 0.11.4), the real plugin and server, the fake Anthropic API."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow

CALC = "# calc\ndef add(a, b):\n    return a + b\n"


def model_requests(fake: FakeAnthropic) -> list[Any]:
    """The requests for a model's answer (not the models list the plugin asks for at start-up)."""
    return [r for r in fake.requests if isinstance(r.body, dict) and "messages" in r.body]


def user_texts(body: dict[str, Any]) -> list[str]:
    content = body["messages"][-1]["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-016", "REQ-NVIM-019", "REQ-ATTACH-001", "REQ-ATTACH-002", "REQ-ATTACH-003")
def test_attached_range_file_and_problems_go_with_the_next_message(
    fake_anthropic: FakeAnthropic, run_nvim: Any, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("seen them"))
    outside = tmp_path / "elsewhere.txt"  # not in the workspace (tmp_path / "work"): refused at once
    outside.write_text("far away\n")
    run = run_nvim(
        """
        local phoenix = T.setup()
        local chat = require("phoenix.chat")
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        vim.cmd("split calc.py")
        local buf = vim.api.nvim_get_current_buf()
        T.wait("calc.py attached to the server", function()
          return vim.lsp.buf_is_attached(buf, phoenix.client_id)
        end)
        -- an unsaved change: the attachment is read from the buffer, not from disk
        vim.api.nvim_buf_set_lines(buf, 2, 3, false, { "    return a + b  # unsaved" })
        vim.wait(400, function() return false end)  -- past the didChange debounce

        -- a file outside the workspace is refused at once, with nothing attached
        T.data.outside = T.notes_of("PhoenixAttachFile " .. vim.fn.fnameescape(%(outside)s))
        T.data.outside_pending = phoenix.attachments()
        -- an attachment the server refuses (a binary file): the server's message, nothing sent, the chip and
        -- the typed text kept, the text offered again by the next prompt
        local notes, notify = {}, vim.notify
        vim.notify = function(message) table.insert(notes, message) end
        vim.cmd("PhoenixAttachFile data.bin")
        T.data.refused_chips = chat.lines()
        T.ok(phoenix.send("read this"), "send with the refused attachment")
        T.wait("the refusal", function()
          for _, note in ipairs(notes) do
            if note:find("not sent", 1, true) then return true end
          end
        end)
        vim.notify = notify
        T.data.notes = notes
        T.data.kept = phoenix.attachments()
        T.data.kept_chat = chat.lines()
        local input = vim.ui.input
        vim.ui.input = function(opts, on_confirm)
          vim.ui.input = input
          T.data.offered = opts.default or vim.NIL
          on_confirm(nil)  -- the user changes their mind
        end
        vim.cmd("PhoenixSend")
        T.wait("the prompt", function() return T.data.offered ~= nil end)
        vim.cmd("PhoenixAttachClear")
        T.data.cleared = phoenix.attachments()
        T.data.cleared_chat = chat.lines()

        -- lines 2-3 (a visual selection gives the same range), a file by name, the buffer's problems
        vim.cmd("2,3PhoenixAttach")
        T.data.completion = vim.fn.getcompletion("PhoenixAttachFile not", "cmdline")
        vim.cmd("PhoenixAttachFile notes.txt")
        local ns = vim.api.nvim_create_namespace("phoenix-test-lint")
        vim.diagnostic.set(ns, buf, {
          { lnum = 1, col = 0, severity = vim.diagnostic.severity.ERROR, message = "add is never called",
            source = "lint" },
        })
        vim.cmd("PhoenixAttachProblems")
        T.data.pending = phoenix.attachments()
        T.data.before = chat.lines()
        T.ok(phoenix.send("what do these do?"), "send")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("seen them", 1, true) ~= nil
        end)
        T.wait("the chips to go", function() return #phoenix.attachments() == 0 end)
        T.data.after = chat.lines()
        """.replace("%(outside)s", json.dumps(str(outside))),
        files={"calc.py": CALC, "notes.txt": "remember the milk\n", "data.bin": "\0binary\0"},
    )
    data = run.data
    # outside the workspace: refused at once, naming the file and what to do instead
    assert len(data["outside"]) == 1 and data["outside_pending"] == [], data
    assert "elsewhere.txt is outside the workspace" in data["outside"][0], data["outside"]
    assert "not attached" in data["outside"][0] and "Attach a file of the project" in data["outside"][0]
    # refused by the server: its message names the file; the attachment and the text stay; nothing reached the
    # model; no wire words
    refusal = [n for n in data["notes"] if "not sent" in n]
    assert refusal and "data.bin is a binary file" in refusal[0], data["notes"]
    assert "attachments are kept" in refusal[0] and "Your text is kept" in refusal[0], refusal[0]
    assert "Invalid params" not in refusal[0] and "attachments[0]" not in refusal[0], refusal[0]
    assert data["kept"] == ["data.bin"]
    assert data["refused_chips"][-1] == "📎 data.bin" and data["kept_chat"][-1] == "📎 data.bin"
    assert data["offered"] == "read this", "the refused text comes back in the next prompt"
    assert data["cleared"] == [] and not any("📎" in line for line in data["cleared_chat"]), data["cleared_chat"]
    assert data["completion"] == ["notes.txt"], data["completion"]
    # the chips before sending, and none after
    assert data["pending"] == ["calc.py:2-3", "notes.txt", "problems: calc.py"]
    assert data["before"][-2:] == ["", "📎 calc.py:2-3  📎 notes.txt  📎 problems: calc.py"], data["before"]
    assert not any("📎" in line for line in data["after"]), data["after"]
    # the sent message as the transcript keeps it: one line per attachment
    after = data["after"]
    assert "what do these do?" in after
    assert "📄 calc.py, lines 2-3" in after and "📄 notes.txt, all 1 lines" in after
    assert "📄 problems in calc.py" in after
    assert after.index("what do these do?") < after.index("📄 calc.py, lines 2-3") < after.index("seen them")
    # what the model got: the question, then each attachment labelled with its path and lines
    asked = model_requests(fake_anthropic)
    assert len(asked) == 1, "the refused message reached nobody"
    texts = user_texts(asked[0].body)
    assert texts[0] == "what do these do?"
    assert texts[1] == ('<attachment path="calc.py" lines="calc.py, lines 2-3">\n'
                        "def add(a, b):\n    return a + b  # unsaved\n</attachment>"), texts[1]
    assert texts[2] == '<attachment path="notes.txt" lines="notes.txt, all 1 lines">\nremember the milk\n</attachment>'
    assert texts[3].startswith('<attachment path="calc.py" kind="diagnostics">'), texts[3]
    assert texts[3].endswith("line 2: error (lint): add is never called\n</attachment>"), texts[3]
    assert len(texts) == 4


@pytest.mark.req("REQ-NVIM-017", "REQ-INSTR-001", "REQ-INSTR-002", "REQ-INSTR-003")
def test_the_first_line_of_the_chat_names_the_instructions_in_effect(
    fake_anthropic: FakeAnthropic, run_nvim: Any, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("following them"))
    user = tmp_path / "user-config" / "AGENTS.md"  # PHOENIX_CONFIG_DIR of the test server (conftest.py)
    user.parent.mkdir(parents=True)
    user.write_text("Use British spelling.\n" + "x" * (40_000 - 22))
    work = tmp_path / "work"
    work.mkdir()
    (work / "CLAUDE.md").write_bytes(b"caf\xe9 au lait\n")  # not UTF-8: skipped and said so
    run = run_nvim(
        """
        local phoenix = T.setup()
        local chat = require("phoenix.chat")
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.wait("the instructions line", function()
          return (chat.lines()[1] or ""):find("Instructions: ", 1, true) == 1
        end)
        T.data.first = chat.lines()[1]
        T.ok(phoenix.send("hello"), "send")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("following them", 1, true) ~= nil
        end)
        T.data.with_answer = chat.lines()[1]
        -- the user fixes CLAUDE.md and asks for a reload: the line shows it now
        vim.fn.writefile({ "Prefer small functions." }, "CLAUDE.md")
        vim.cmd("PhoenixReloadInstructions")
        T.wait("the reloaded line", function() return not chat.lines()[1]:find("skipped", 1, true) end)
        T.data.reloaded = chat.lines()[1]
        T.data.chat = T.chat_text()
        -- a new conversation shows its own line, read afresh
        vim.fn.delete("CLAUDE.md")
        vim.fn.delete("AGENTS.md")
        vim.cmd("PhoenixNew")
        T.wait("the new conversation's line", function()
          return not chat.lines()[1]:find("CLAUDE.md", 1, true)
        end)
        T.data.new = chat.lines()[1]
        """,
        files={"AGENTS.md": "Always run the tests before you say done.\n"},
    )
    data = run.data
    first = data["first"]
    cut = re.match(rf"^Instructions: {re.escape(str(user))} \(cut: ([\d,]+) of 40,000 bytes kept\) · (.*)$", first)
    assert cut, first
    assert 0 < int(cut.group(1).replace(",", "")) < 40_000
    assert cut.group(2) == "AGENTS.md · CLAUDE.md (skipped: it is not UTF-8 text; save it as UTF-8)", first
    assert data["with_answer"] == first, "the line stays while the conversation goes on"
    system = json.dumps(model_requests(fake_anthropic)[0].body.get("system"))
    assert "Always run the tests before you say done." in system and "Use British spelling." in system
    assert data["reloaded"].endswith(" · AGENTS.md · CLAUDE.md"), data["reloaded"]
    assert "instructions reloaded" in data["chat"]
    assert re.match(rf"^Instructions: {re.escape(str(user))} \(cut: [\d,]+ of 40,000 bytes kept\)$", data["new"]), (
        data["new"])
