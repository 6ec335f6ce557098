"""The Neovim plugin end to end: real headless Neovim 0.7+, the real server, the fake Anthropic API."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import tool_results
from tests.e2e.raw import route_of
from tests.fake_anthropic import FakeAnthropic, FakeModel, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow

ANSWER = "Hello from the fake model, streamed in many small pieces."


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-002", "REQ-NVIM-003", "REQ-NVIM-004", "REQ-NVIM-005",
                 "REQ-LAYER-008", "REQ-PERM-009", "REQ-PERM-010")
def test_chat_streams_follows_the_end_and_keeps_its_place(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply(ANSWER, deltas=12, delay_s=0.05),
        Reply.text_reply("It adds two numbers.\n" + "\n".join(f"line {i}" for i in range(40))),
        Reply.text_reply("third answer"),
    )
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.o.columns = 200  -- a wide screen: the statusline shows every part
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        local chat_win = vim.api.nvim_get_current_win()
        T.ok(phoenix.send("hi there"), "send")
        local partial = false
        T.wait("the streamed answer", function()
          local text = T.chat_text()
          if not text:find(%(answer)q, 1, true) and text:find("Hello from", 1, true) then partial = true end
          return phoenix.state.status == "idle" and text:find(%(answer)q, 1, true) ~= nil
        end)
        T.data.partial = partial
        T.data.statusline = phoenix.statusline()
        T.data.follows = vim.api.nvim_win_get_cursor(chat_win)[1] == vim.api.nvim_buf_line_count(0)
        -- the policy toggle key in the chat (REQ-PERM-010)
        T.keys("<S-Tab>")
        T.wait("the policy to change", function() return phoenix.state.policy == "auto" end)
        T.data.toggled = phoenix.statusline()
        -- the user scrolls up: the next answer does not move the cursor
        vim.api.nvim_win_set_cursor(chat_win, {1, 0})
        vim.cmd("split calc.py")
        vim.cmd("2,3PhoenixSend what does this do?")
        T.wait("the second answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("line 39", 1, true) ~= nil
        end)
        T.data.kept = vim.api.nvim_win_get_cursor(chat_win)[1]
        T.data.lines = require("phoenix.chat").lines()
        vim.cmd("PhoenixStyle development")
        T.wait("the style", function() return phoenix.state.style == "development" end)
        T.data.styled = phoenix.statusline()
        if phoenix.state.mode == "restricted" then
          T.wait("the style suggestion", function() return T.chat_text():find("/execute", 1, true) end)
        end
        T.data.suggested = T.chat_text()
        """.replace("%(answer)q", '"' + ANSWER + '"'),
        files={"calc.py": "# calc\ndef add(a, b):\n    return a + b\n"},
    )
    assert run.data["partial"], "the answer appeared piece by piece, before it was complete"
    assert run.data["follows"], "at the end, the chat window follows the new text"
    assert run.data["statusline"].startswith("phoenix ") and "🔒 interactive" in run.data["statusline"]
    assert "chat" in run.data["statusline"]
    assert "🚀 auto" in run.data["toggled"]
    assert run.data["kept"] == 1, "the user's place is kept while the answer streams in"
    assert "development" in run.data["styled"]
    if run.data["styled"].startswith("phoenix restricted"):  # a style suggestion is shown with its command
        assert "/execute" in run.data["suggested"]
    lines = run.data["lines"]
    assert "## You" in lines and "## Phoenix" in lines and ANSWER in lines
    second = fake_anthropic.requests[1].messages[-1]["content"]
    text = second if isinstance(second, str) else " ".join(b.get("text", "") for b in second)
    assert "what does this do?" in text and "calc.py" in text and "lines 2-3" in text and "return a + b" in text
    assert "# calc" not in text


@pytest.mark.req("REQ-NVIM-006", "REQ-NVIM-007", "REQ-PERM-011", "REQ-PERM-012", "REQ-PERM-013", "REQ-PERM-014")
def test_approval_dialog_answered_with_y_and_with_escape(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo yes > y.txt"})),
        Reply.text_reply("wrote y"),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo no > n.txt"})),
        Reply.text_reply("did not write n"),
        Reply.tool_reply(ToolUseBlock("patch", {"path": "p.py", "patches": [
            {"operation": "replace", "oldText": "x = 0", "newText": "x = 10"}]})),
        Reply.text_reply("left p.py alone"),
    )
    run = run_nvim(
        """
        local phoenix = T.setup()
        local dialog = require("phoenix.dialog")
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        phoenix.send("write y")
        T.wait("the approval dialog", dialog.is_open)
        local snap = dialog.snapshot()
        T.data.first = snap
        T.data.refused = phoenix.send("another message while the dialog is open")
        vim.cmd("wincmd p")  -- trying to leave the dialog brings the focus back
        T.wait("the focus back on the dialog", function() return dialog.snapshot().focused end)
        T.data.refocused = dialog.snapshot().focused
        T.keys("j")
        T.data.after_j = dialog.snapshot().selected
        T.keys("<Down>")
        T.data.after_down = dialog.snapshot().selected
        T.keys("k")
        T.keys("<Up>")
        T.data.back = dialog.snapshot().selected
        T.keys("Y")
        -- what the command wrote is reviewed like a patch before it lands (issue 36): allowed too
        T.wait("the review of its file", function()
          return dialog.is_open() and table.concat(dialog.snapshot().lines, " "):find("created y.txt", 1, true)
        end)
        T.data.review = dialog.snapshot()
        T.keys("y")
        T.wait("the turn to end", function()
          return not dialog.is_open() and phoenix.state.status == "idle" and T.chat_text():find("wrote y", 1, true)
        end)
        vim.cmd("silent! wall")  -- the editor holds the applied edit; saving it writes the file
        phoenix.send("write n")
        T.wait("the second dialog", dialog.is_open)
        T.keys("<Esc>")
        T.wait("the second turn to end", function()
          return not dialog.is_open() and phoenix.state.status == "idle"
            and T.chat_text():find("did not write n", 1, true)
        end)
        -- a patch: the dialog shows its diff; Enter confirms the selected choice (j: Deny)
        phoenix.send("patch p.py")
        T.wait("the patch dialog", dialog.is_open)
        T.data.patch = dialog.snapshot()
        T.keys("j")
        T.keys("<CR>")
        T.wait("the third turn to end", function()
          return not dialog.is_open() and phoenix.state.status == "idle"
            and T.chat_text():find("left p.py alone", 1, true)
        end)
        T.data.chat = T.chat_text()
        """,
        files={"p.py": "x = 0\n"},
    )
    first = run.data["first"]
    lines = first["lines"]
    assert lines[0] == "bash"
    assert '{"command":"echo yes > y.txt"}' in lines
    choices = ("Allow", "Deny", "Always Allow every bash call")  # a redirect: only the whole tool is offered
    assert [ln.strip() for ln in lines if ln.strip().lstrip("▸ ") in choices] == [
        "▸ Allow", "Deny", "Always Allow every bash call"]
    assert first["selected"] == "Allow" and first["focused"] is True
    groups = first["groups"]  # 0-based line -> highlight group

    def group(line: int) -> str | None:
        return groups.get(str(line))

    assert group(0) == "Title" and group(1) == "Comment", "the description is dimmed"
    choice_rows = {ln.strip().lstrip("▸ "): i for i, ln in enumerate(lines) if ln.strip().lstrip("▸ ") in choices}
    assert group(choice_rows["Allow"]) == "PmenuSel"
    assert group(choice_rows["Deny"]) == group(choice_rows["Always Allow every bash call"]) == "Comment"
    assert "Y allow" in lines[-1] and "Esc deny" in lines[-1]
    assert run.data["refused"] is False, "the chat input is blocked while the dialog is open"
    assert run.data["refocused"] is True
    assert (run.data["after_j"], run.data["after_down"], run.data["back"]) == (
        "Deny", "Always Allow every bash call", "Allow")
    assert (run.workdir / "y.txt").read_text() == "yes\n"
    assert not (run.workdir / "n.txt").exists(), "Escape denies"
    assert "approval: allow" in run.data["chat"] and run.data["chat"].count("approval: deny") == 2
    # the server's note to the model about the mode change is not shown as the user's words
    assert "## Note to the model" in run.data["chat"] and "\n[system]" not in run.data["chat"], run.data["chat"]
    # the chat shows each tool call with its compact arguments, and its result
    assert '● bash {"command":"echo yes > y.txt"}' in run.data["chat"]
    assert "  ⎿ " in run.data["chat"]
    patch = run.data["patch"]
    assert patch["lines"][0] == "patch" and "-x = 0" in patch["lines"] and "+x = 10" in patch["lines"]
    # the file and a summary above the diff, not the raw JSON of the call
    assert "p.py: 1 change, 1 line added, 1 removed" in patch["lines"], patch["lines"]
    assert not any('"patches"' in line or "oldText" in line for line in patch["lines"]), patch["lines"]
    assert patch["groups"][str(patch["lines"].index("-x = 0"))] == "DiffDelete"
    assert patch["groups"][str(patch["lines"].index("+x = 10"))] == "DiffAdd"
    assert (run.workdir / "p.py").read_text() == "x = 0\n", "Enter on Deny denied the patch"
    assert len(fake_anthropic.requests) == 6


@pytest.mark.req("REQ-NVIM-007")
def test_upgrade_request_in_the_same_dialog(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "I need to fix the typo in calc.py"})),
        Reply.text_reply("now I can write"),
    )
    run = run_nvim(
        """
        local phoenix = T.setup()
        local dialog = require("phoenix.dialog")
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.data.before = phoenix.state.mode
        phoenix.send("fix it")
        T.wait("the upgrade dialog", dialog.is_open)
        T.data.dialog = dialog.snapshot()
        T.keys("y")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("now I can write", 1, true)
        end)
        T.data.after = phoenix.state.mode
        """
    )
    lines = run.data["dialog"]["lines"]
    assert "unrestricted" in lines[0] and any("fix the typo in calc.py" in ln for ln in lines)
    assert run.data["dialog"]["selected"] == "Approve"
    assert run.data["after"] == "unrestricted"


@pytest.mark.req("REQ-NVIM-008", "REQ-PROTO-040", "REQ-PROTO-041")
def test_patch_lands_in_the_open_modified_buffer_with_one_step_undo(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    edit = ToolUseBlock("patch", {"path": "m.py", "patches": [
        {"operation": "replace", "oldText": "return 1  # unsaved", "newText": "return 2"},
        {"operation": "replace", "oldText": "x = 0", "newText": "x = 10"}]})
    create = ToolUseBlock("patch", {"path": "new.txt", "patches": [
        {"operation": "overwrite", "newText": "one\ntwo\n"}]})
    fake_anthropic.enqueue(Reply.tool_reply(edit, create), Reply.text_reply("patched"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("edit m.py")
        local buf = vim.api.nvim_get_current_buf()
        T.wait("the buffer to be attached", function() return vim.lsp.buf_is_attached(buf, phoenix.client_id) end)
        vim.api.nvim_buf_set_lines(buf, 1, 2, false, {"    return 1  # unsaved"})
        vim.cmd("let &undolevels = &undolevels")  -- the user's edit is its own undo step, as when typed
        T.data.before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        vim.cmd("PhoenixPolicy auto")
        T.wait("auto", function() return phoenix.state.policy == "auto" end)
        phoenix.send("patch it")
        T.wait("the turn", function()
          return phoenix.state.status == "idle" and T.chat_text():find("patched", 1, true)
        end)
        T.data.after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        T.data.modified = vim.bo[buf].modified
        local created = vim.fn.bufnr(vim.fn.getcwd() .. "/new.txt")
        T.data.created = vim.api.nvim_buf_get_lines(created, 0, -1, false)
        vim.api.nvim_set_current_buf(buf)
        vim.cmd("undo")
        T.data.undone = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        vim.cmd("silent! wall")
        """,
        files={"m.py": "def f():\n    return 1\nx = 0\n"},
    )
    assert run.data["after"] == ["def f():", "    return 2", "x = 10"]
    assert run.data["modified"] is True
    assert run.data["undone"] == run.data["before"], "one undo step takes the whole patch back"
    assert run.data["created"] == ["one", "two"], "a new file ends exactly as planned"
    assert (run.workdir / "new.txt").read_text() == "one\ntwo\n"
    results = tool_results(fake_anthropic.requests[1])
    assert all(r["is_error"] is False for r in results.values()), results


@pytest.mark.req("REQ-NVIM-009", "REQ-NVIM-019")
def test_cancel_stops_the_turn_and_keeps_what_arrived(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(Reply.hanging("thinking very slowly", after_events=3), Reply.text_reply("after cancel"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.send("take your time")
        T.wait("the answer to start", function() return T.chat_text():find("thin", 1, true) end)
        -- a message while Phoenix works is refused in the user's words, and its text is kept
        local notes, notify = {}, vim.notify
        vim.notify = function(message) table.insert(notes, message) end
        phoenix.send("and another thing")
        T.wait("the refusal", function() return #notes > 0 end)
        vim.notify = notify
        T.data.busy = notes
        local input = vim.ui.input
        vim.ui.input = function(opts, on_confirm)
          vim.ui.input = input
          T.data.offered = opts.default or vim.NIL
          on_confirm(nil)
        end
        T.keys("i")  -- the chat's key asks for a message: the refused text is offered
        T.wait("the prompt", function() return T.data.offered ~= nil end)
        T.keys("<C-c>")
        T.wait("idle after the cancel", function() return phoenix.state.status == "idle" end)
        T.wait("the note", function() return T.chat_text():find("stopped by you", 1, true) end)
        T.data.after_cancel = require("phoenix.chat").lines()
        phoenix.send("again")
        T.wait("the next answer", function() return T.chat_text():find("after cancel", 1, true) end)
        T.data.after_next = require("phoenix.chat").lines()
        """
    )
    busy = run.data["busy"]
    assert len(busy) == 1 and "not sent" in busy[0] and "still working (thinking…)" in busy[0], busy
    assert "<C-c>" in busy[0] and "Your text is kept" in busy[0], busy
    for jargon in ("awaiting_llm", "phoenix/cancel", "busy:", "Invalid params"):
        assert jargon not in busy[0], busy
    assert run.data["offered"] == "and another thing"
    lines = run.data["after_cancel"]
    partial = next(i for i, line in enumerate(lines) if line.startswith("thin"))
    assert lines[partial - 1] == "## Phoenix", lines[3:]
    assert lines[-1].startswith("> stopped by you"), "what arrived stays, marked as stopped"
    after = run.data["after_next"]
    assert lines[partial] in after and after.index(lines[partial]) < after.index("after cancel"), after
    assert fake_anthropic.requests[0].disconnected


@pytest.mark.req("REQ-NVIM-011")
def test_phoenix_restart_starts_one_server_even_when_the_old_one_exits_late(run_nvim: Any) -> None:
    """:PhoenixRestart starts the next server 300 ms after stopping the old one; a server slower than that to exit
    (a loaded machine, or a wrapper as here) was taken for a crash: "the server stopped ... starting it again",
    and a third server replaced the second under a message already sent to it."""
    run = run_nvim(
        """
        local notes, notify = {}, vim.notify
        vim.notify = function(message, ...) table.insert(notes, message); return notify(message, ...) end
        local cmd = table.concat(vim.tbl_map(vim.fn.shellescape, T.server_cmd()), " ")
        local phoenix = T.setup({ cmd = { "sh", "-c", cmd .. "; sleep 1" } })
        local old = phoenix.client_id
        vim.cmd("PhoenixRestart")
        T.wait("a restarted server", function()
          local c = phoenix.client_id ~= old and vim.lsp.get_client_by_id(phoenix.client_id)
          return c and c.initialized
        end)
        local new = phoenix.client_id
        T.wait("the old server gone", function() return vim.lsp.get_client_by_id(old) == nil end)
        vim.wait(1000, function() return phoenix.client_id ~= new end, 20)  -- a second restart would come now
        T.data.same = phoenix.client_id == new
        T.data.notes = notes
        """
    )
    assert run.data["same"] is True, "a second server replaced the one :PhoenixRestart started"
    assert not any("server stopped" in note for note in run.data["notes"]), run.data["notes"]


@pytest.mark.req("REQ-NVIM-010", "REQ-NVIM-011")
def test_a_restarted_server_restores_the_chat_and_a_gap_is_caught_up(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("first answer"), Reply.text_reply("second answer after the restart"),
                           Reply.text_reply("third answer seen through a catch-up"),
                           Reply.text_reply("fourth answer after :PhoenixRestart"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.send("hello")
        T.wait("the first answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("first answer", 1, true)
        end)
        local before = T.chat_text()
        local old = phoenix.client_id
        local uv = vim.uv or vim.loop
        uv.kill(phoenix.server_pid(), 9)
        T.wait("a new server", function()
          local c = phoenix.client_id ~= old and vim.lsp.get_client_by_id(phoenix.client_id)
          return c and c.initialized
        end)
        T.wait("the restored chat", function() return T.chat_text() == before end)
        T.data.restored = true
        phoenix.send("still there?")
        T.wait("the second answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("second answer", 1, true)
        end)
        -- drop three events: the next one shows a gap, and getConversation(afterSeq) fills it
        local c = vim.lsp.get_client_by_id(phoenix.client_id)
        local original = c.handlers["phoenix/event"]
        local dropped = 0
        c.handlers["phoenix/event"] = function(err, ev, ctx, config)
          if dropped < 3 and ev.conversationId == phoenix.state.conversation then
            dropped = dropped + 1
            return
          end
          return original(err, ev, ctx, config)
        end
        phoenix.send("one more")
        T.wait("the third answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("third answer", 1, true)
        end)
        T.data.dropped = dropped
        T.data.lines = require("phoenix.chat").lines()
        -- :PhoenixRestart keeps the chat as it was, the notes the server does not keep included
        c.handlers["phoenix/event"] = original
        vim.cmd("PhoenixStyle development")
        T.wait("the style's note", function() return T.chat_text():find("style: development", 1, true) end)
        local kept = T.chat_text()
        old = phoenix.client_id
        vim.cmd("PhoenixRestart")
        T.wait("a restarted server", function()
          local c = phoenix.client_id ~= old and vim.lsp.get_client_by_id(phoenix.client_id)
          return c and c.initialized
        end)
        phoenix.send("and after a restart?")
        T.wait("the fourth answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("fourth answer", 1, true)
        end)
        T.data.kept = kept
        T.data.after_restart = T.chat_text()
        """
    )
    assert run.data["restored"] is True and run.data["dropped"] == 3
    lines = run.data["lines"]
    assert lines.count("one more") == 1 and lines.count("third answer seen through a catch-up") == 1
    after = run.data["after_restart"]
    assert after.startswith(run.data["kept"]) and "> style: development" in after, after
    assert after.count("fourth answer after :PhoenixRestart") == 1 and after.count("third answer seen") == 1


@pytest.mark.req("REQ-NVIM-012")
def test_checkhealth_reports_what_doctor_reports(run_nvim: Any) -> None:
    run = run_nvim(
        """
        T.setup()
        vim.cmd("checkhealth phoenix")
        T.data.report = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        """
    )
    report = "\n".join(run.data["report"])
    assert "phoenix: phoenix-lsp doctor" in report
    assert "data directory" in report and "ANTHROPIC_API_KEY: set" in report and "sandbox" in report.lower()
    assert "the server is running" in report


@pytest.mark.req("REQ-NVIM-006")
def test_approvals_through_vim_ui_select(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo a > a.txt"})),
        Reply.text_reply("done"),
    )
    run = run_nvim(
        """
        local picked = {}
        vim.ui.select = function(items, opts, on_choice)  -- a picker plugin (Telescope, fzf-lua, ...)
          table.insert(picked, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) })
          on_choice(items[3])  -- Always Allow (every bash call: the command has a redirect)
        end
        local phoenix = T.setup({ ui = "select" })
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        vim.cmd("PhoenixMode unrestricted")
        T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
        phoenix.send("write a")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("done", 1, true)
        end)
        T.data.picked = picked
        vim.cmd("silent! wall")  -- the editor holds the applied edit; saving it writes the file
        """
    )
    # the command, then what it wrote, reviewed like a patch (issue 36)
    picked, review = run.data["picked"]
    assert picked["items"] == ["Allow", "Deny", "Always Allow every bash call"]
    assert picked["prompt"].startswith("bash")
    assert review["prompt"].startswith("patch") and review["items"][2] == "Always Allow every patch call"
    assert (run.workdir / "a.txt").read_text() == "a\n"


@pytest.mark.req("REQ-NVIM-011")
def test_the_next_neovim_session_shows_the_same_conversation(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.enqueue(Reply.text_reply("remembered answer"), Reply.text_reply("an answer in the new one"))
    first = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.send("remember me")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("remembered answer", 1, true)
        end)
        T.data.conversation = phoenix.state.conversation
        """
    )
    second = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("the restored chat", function() return T.chat_text():find("remembered answer", 1, true) end)
        T.data.conversation = phoenix.state.conversation
        T.data.lines = require("phoenix.chat").lines()
        local chat_buf = require("phoenix.chat").buffer()
        -- :PhoenixConversations, "+ New conversation" chosen in Neovim's own menu: a new, empty conversation
        T.pick("+ New conversation")
        vim.cmd("PhoenixConversations")
        T.wait("a new conversation", function()
          return phoenix.state.conversation ~= nil and phoenix.state.conversation ~= T.data.conversation
        end)
        T.data.new = phoenix.state.conversation
        T.wait("the chat to show it", function() return vim.b[chat_buf].phoenix_conversation == T.data.new end)
        T.data.new_chat = require("phoenix.chat").lines()
        T.data.chat_shown = vim.api.nvim_win_get_buf(0) == chat_buf
        phoenix.send("start afresh")
        T.wait("the answer in the new conversation", function()
          return phoenix.state.status == "idle" and T.chat_text():find("an answer in the new one", 1, true)
        end)
        T.data.new_lines = require("phoenix.chat").lines()
        phoenix.async(function()
          local _, result = phoenix.call("phoenix/listConversations", vim.empty_dict())
          T.data.listed = vim.tbl_map(function(c) return c.conversationId end, result.conversations)
        end)
        T.wait("the list", function() return T.data.listed ~= nil end)
        -- and back to the first one, chosen by its title
        T.pick("remember me")
        vim.cmd("PhoenixConversations")
        T.wait("the first conversation again", function()
          return phoenix.state.conversation == T.data.conversation
            and T.chat_text():find("remembered answer", 1, true) ~= nil
        end)
        T.data.back_chat = vim.b[chat_buf].phoenix_conversation
        T.data.back_lines = require("phoenix.chat").lines()
        """
    )
    assert second.data["conversation"] == first.data["conversation"]
    assert "remember me" in second.data["lines"] and "remembered answer" in second.data["lines"]
    new_menu, back_menu = second.data["menus"]
    assert new_menu[0] == "+ New conversation" and new_menu[1].startswith("remember me")
    new = second.data["new"]
    assert new != first.data["conversation"] and second.data["chat_shown"] is True
    assert "remembered answer" not in second.data["new_chat"], "the new conversation's chat starts empty"
    assert "start afresh" in second.data["new_lines"] and "an answer in the new one" in second.data["new_lines"]
    assert "remember me" not in second.data["new_lines"]
    assert sorted(second.data["listed"]) == sorted([new, first.data["conversation"]])
    assert back_menu[0] == "+ New conversation" and len(back_menu) == 3, "the new conversation is listed too"
    assert second.data["back_chat"] == first.data["conversation"]
    assert "an answer in the new one" not in second.data["back_lines"]


@pytest.mark.req("REQ-NVIM-006", "REQ-PERM-011", "REQ-PERM-012", "REQ-PERM-013")
def test_every_key_of_the_dialog(run_nvim: Any) -> None:
    run = run_nvim(
        """
        local dialog = require("phoenix.dialog")
        local answers = {}
        local function ask(keys)
          dialog.open({
            id = "t" .. #answers, title = "bash", description = "Runs a command.", arguments = '{"command":"ls"}',
            choices = {
              { label = "Allow", value = "allow", key = "y" },
              { label = "Deny", value = "deny", key = "n" },
              { label = "Always Allow", value = "alwaysAllow", key = "a" },
            },
            cancel_value = "deny", cancel_label = "deny",
            on_choice = function(value) table.insert(answers, value) end,
          })
          for _, k in ipairs(keys) do T.keys(k) end
          -- bounded by what is left of the scenario's own time, as every step (helper.lua), not 5 s of its own
          T.wait("the answer to " .. table.concat(keys, " "), function() return not dialog.is_open() end)
        end
        ask({ "y" }); ask({ "N" }); ask({ "A" }); ask({ "n" }); ask({ "Y" }); ask({ "a" })
        ask({ "<CR>" }); ask({ "j", "<CR>" }); ask({ "j", "j", "<CR>" }); ask({ "<Down>", "<Down>", "<Up>", "<CR>" })
        ask({ "k", "<CR>" })  -- up from the first wraps to the last
        ask({ "<Esc>" }); ask({ "q" })
        T.data.answers = answers
        """,
        plugin=True,
    )
    assert run.data["answers"] == ["allow", "deny", "alwaysAllow", "deny", "allow", "alwaysAllow",
                                   "allow", "deny", "alwaysAllow", "deny", "alwaysAllow", "deny", "deny"]


@pytest.mark.req("REQ-NVIM-002")
def test_the_servers_words_have_their_own_heading_and_tool_results_follow_their_call(run_nvim: Any) -> None:
    run = run_nvim(
        """
        local chat = require("phoenix.chat")
        chat.message({ role = "user", content = { { type = "text", text = "list the files" } } })
        chat.message({ role = "assistant", content = {
          { type = "text", text = "Let me look." },
          { type = "toolUse", toolUseId = "t1", toolName = "bash", arguments = { command = "ls" } } } })
        chat.message({ role = "user", content = {
          { type = "toolResult", toolUseId = "t1", content = "calc.py\\nnotes.txt" },
          { type = "text", text = "[system] The conversation is now in Unrestricted mode." } } })
        chat.message({ role = "assistant", content = { { type = "text", text = "Two files." } } })
        chat.message({ role = "user", tag = "note", content = {
          { type = "text", text = "[system] The conversation is now in Restricted mode." } } })
        chat.message({ role = "user", content = { { type = "text", text = "thanks" } } })
        T.data.lines = chat.lines()
        """
    )
    lines = run.data["lines"]

    def heading_of(text: str) -> str:
        at = lines.index(text)
        return next(line for line in reversed(lines[:at]) if line.startswith("## "))

    assert heading_of("  ⎿ calc.py") == "## Phoenix", lines
    assert heading_of("The conversation is now in Unrestricted mode.") == "## Note to the model", lines
    assert heading_of("The conversation is now in Restricted mode.") == "## Note to the model", lines
    assert heading_of("list the files") == heading_of("thanks") == "## You", lines
    assert lines.count("## You") == 2 and not any(line.startswith("[system]") for line in lines), lines


README = Path(__file__).resolve().parents[3] / "README.md"


def readme_setup() -> str:
    """The README's setup for Neovim, as a new user copies it, pointed at this checkout and its server."""
    section = README.read_text().split("## Use it from Neovim", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```lua\n(.*?)```", section, re.S)
    assert match, "the README's section 'Use it from Neovim' has a Lua snippet"
    lines = [line[3:] if line.startswith("   ") else line for line in match.group(1).splitlines()]
    snippet = "\n".join(lines)
    assert '"/path/to/phoenix-lsp/nvim"' in snippet and '"/path/to/phoenix-lsp/.venv/bin/phoenix-lsp"' in snippet
    server = Path(sys.executable).parent / "phoenix-lsp"
    return (snippet.replace('"/path/to/phoenix-lsp/nvim"', json.dumps(str(README.parent / "nvim")))
            .replace('"/path/to/phoenix-lsp/.venv/bin/phoenix-lsp"', json.dumps(str(server))))


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-005", "REQ-NVIM-011", "REQ-PERM-010")
def test_the_readme_setup_its_statusline_policy_style_and_new_conversation(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    run = run_nvim(
        readme_setup() + """
        local phoenix = require("phoenix")
        T.wait("the server", function()
          local c = phoenix.client_id and vim.lsp.get_client_by_id(phoenix.client_id)
          return c and c.initialized
        end)
        local function statusline()  -- what the statusline of the README shows, on a wide screen
          vim.o.columns = 200
          return vim.api.nvim_eval_statusline(vim.o.statusline, { maxwidth = 200 }).str
        end
        T.data.before = statusline()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.wait("the statusline", function() return statusline():find("interactive", 1, true) end)
        T.data.first = statusline()
        local first = phoenix.state.conversation
        vim.cmd("PhoenixPolicy")  -- no argument: toggle
        T.wait("auto", function() return phoenix.state.policy == "auto" end)
        T.data.auto = statusline()
        vim.cmd("PhoenixPolicy")
        T.wait("interactive", function() return phoenix.state.policy == "interactive" end)
        T.pick("plan")  -- :PhoenixStyle without an argument: a picker
        vim.cmd("PhoenixStyle")
        T.wait("the plan style", function() return phoenix.state.style == "plan" end)
        T.data.plan = statusline()
        vim.cmd("PhoenixNew")
        T.wait("a new conversation", function()
          return phoenix.state.conversation ~= nil and phoenix.state.conversation ~= first
        end)
        T.data.new_chat = vim.b[require("phoenix.chat").buffer()].phoenix_conversation == phoenix.state.conversation
        T.data.new = statusline()
        -- narrow windows with a long file name: mode and policy stay in sight, the file name gives way
        vim.cmd("only")
        vim.cmd("edit src/components/a_rather_long_module_name_for_this_test.py")
        T.data.narrow = {}
        for _, width in ipairs({ 100, 80, 60 }) do
          vim.o.columns = width
          T.data.narrow[tostring(width)] = vim.api.nvim_eval_statusline(vim.o.statusline, { maxwidth = width }).str
        end
        """,
        plugin=False,
    )
    assert "phoenix: no conversation" in run.data["before"]
    assert re.search(r"phoenix (un)?restricted 🔒 interactive · ready · chat", run.data["first"]), run.data["first"]
    assert "🚀 auto" in run.data["auto"]
    assert "🔒 interactive · ready · plan" in run.data["plan"]
    for width, line in run.data["narrow"].items():
        assert re.search(r"phoenix (un)?restricted 🔒 interactive", line), (width, line)
    assert "· ready" in run.data["narrow"]["100"], run.data["narrow"]
    assert run.data["menus"] == [["chat", "discussion", "plan", "development", "task"]]
    assert run.data["new_chat"] is True and "· chat ·" in run.data["new"], "a new conversation starts in chat"


MODELS = [
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000),
    ("claude-haiku-4-5", "Claude Haiku 4.5", 200_000),
    ("claude-opus-4-7", "Claude Opus 4.7", 1_000_000),
]


@pytest.mark.req("REQ-NVIM-005", "REQ-NVIM-015", "REQ-NVIM-018")
def test_phoenix_model_switches_the_model_and_the_next_request_names_it(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    fake_anthropic.models = list(MODELS)
    fake_anthropic.enqueue(
        Reply.text_reply("first answer"), Reply.text_reply("second answer"), Reply.text_reply("third answer")
    )
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.o.columns = 200  -- a wide screen: the statusline shows every part
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.ok(phoenix.send("hi"), "send")
        T.wait("the first answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("first answer", 1, true) ~= nil
        end)
        T.data.before = phoenix.statusline()
        T.data.first_model = phoenix.state.model
        T.data.header_before = require("phoenix.chat").lines()[2]
        -- completion answers from the API's list once the plugin has it, and asks for it (waiting at most 2 s)
        -- until then; on a loaded machine the server answers with its built-in list first (it answers within
        -- about 1.5 s) and keeps the API's when it arrives, so wait here until the plugin holds the API's list
        T.wait("the API's model list", function()
          local models = require("phoenix.models")
          models.model_ids()
          return models.models ~= nil and models.models.source == "api"
        end)
        T.data.completion = vim.fn.getcompletion("PhoenixModel claude-h", "cmdline")
        T.data.all = vim.fn.getcompletion("PhoenixModel ", "cmdline")
        T.pick("Claude Haiku 4.5")  -- :PhoenixModel without an argument: a picker
        vim.cmd("PhoenixModel")
        T.wait("the picked model", function() return phoenix.state.model == "claude-haiku-4-5" end)
        T.wait("the chat to show the change", function()
          return T.chat_text():find("model: claude-haiku-4-5", 1, true) ~= nil
        end)
        T.data.after = phoenix.statusline()
        T.data.header_after = require("phoenix.chat").lines()[2]
        T.ok(phoenix.send("again"), "send again")
        T.wait("the second answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("second answer", 1, true) ~= nil
        end)
        vim.cmd("PhoenixModel claude-opus-4-7")  -- with an argument
        T.wait("the named model", function() return phoenix.state.model == "claude-opus-4-7" end)
        -- a refusal shows the server's message and changes nothing
        T.data.refusal = T.notes_of("PhoenixModel no!model")
        T.data.kept = phoenix.state.model
        T.ok(phoenix.send("once more"), "send a third time")
        T.wait("the third answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("third answer", 1, true) ~= nil
        end)
        T.data.chat = T.chat_text()
        -- the chat's own key opens the same picker (the header names it)
        vim.api.nvim_set_current_win(vim.fn.bufwinid(require("phoenix.chat").buffer()))
        T.pick("Claude Haiku 4.5")
        T.keys("gm")
        T.wait("the model picked with the chat's key", function() return phoenix.state.model == "claude-haiku-4-5" end)
        T.wait("the header to follow", function()
          return require("phoenix.chat").lines()[2]:find("Model: claude-haiku-4-5", 1, true) ~= nil
        end)
        """
    )
    data = run.data
    first = data["first_model"]
    assert first and first != "claude-haiku-4-5", data
    assert data["before"].endswith(" · " + first), data["before"]
    assert data["completion"] == ["claude-haiku-4-5"], data["completion"]
    assert data["all"] == [m[0] for m in MODELS], data["all"]
    menu = data["menus"][0]
    assert len(menu) == 3 and "Claude Haiku 4.5  claude-haiku-4-5 · 200K tokens" in menu[1], menu
    assert [line.startswith("● ") for line in menu] == [m[0] == first for m in MODELS], menu
    assert "in use" in menu[[m[0] for m in MODELS].index(first)], menu
    assert data["after"].endswith(" · claude-haiku-4-5"), data["after"]
    assert data["header_before"] == f"Model: {first}  (gm or :PhoenixModel to choose)", data["header_before"]
    assert data["header_after"].startswith("Model: claude-haiku-4-5"), data["header_after"]
    assert len(data["menus"]) == 2, data["menus"]  # the :PhoenixModel picker, then the chat key's
    assert "model: claude-haiku-4-5 (was " + first + "; 200K-token context window)" in data["chat"], data["chat"]
    assert any("model" in n for n in data["refusal"]), data["refusal"]
    assert data["kept"] == "claude-opus-4-7"
    asked = [r.body["model"] for r in fake_anthropic.requests if isinstance(r.body, dict) and "messages" in r.body]
    assert asked == [first, "claude-haiku-4-5", "claude-opus-4-7"], asked


@pytest.mark.req("REQ-NVIM-005", "REQ-MODEL-008")
def test_phoenix_model_groups_the_models_by_provider(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, run_nvim: Any
) -> None:
    fake_anthropic.models = list(MODELS[:2])
    fake_openai.enqueue(Reply.text_reply("answered by a compatible server"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        phoenix.async(function()  -- each call waits up to 1.5 s; a list later than that fills the next one
          for _ = 1, 20 do
            local result = phoenix.list_models()
            for _, p in ipairs(result and result.providers or {}) do
              if p.listed then T.data.listed = true end
            end
            if T.data.listed then return end
          end
        end)
        T.wait("the openai provider's list", function() return T.data.listed end)
        T.pick("meta-llama")
        vim.cmd("PhoenixModel")
        T.wait("the picked model", function() return phoenix.state.model == "openai/meta-llama/llama-3.3-70b" end)
        T.ok(phoenix.send("hi"), "send")
        T.wait("the answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("compatible server", 1, true) ~= nil
        end)
        """,
        env=fake_openai.env(),
    )
    menu = run.data["menus"][0]
    providers = [line[2:].split(" │ ")[0] for line in menu]
    first_openai = providers.index("openai")
    assert set(providers[:first_openai]) == {"anthropic"} and providers[first_openai:] == ["openai", "openai"], menu
    assert "openai │ meta-llama/llama-3.3-70b (openai)  openai/meta-llama/llama-3.3-70b · 131K tokens" in menu[-1], menu
    assert fake_openai.requests[-1].body["model"] == "meta-llama/llama-3.3-70b"



@pytest.mark.req("REQ-NVIM-005", "REQ-MODEL-014")
def test_phoenix_model_shows_when_a_deprecated_model_retires(fake_anthropic: FakeAnthropic, run_nvim: Any) -> None:
    fake_anthropic.models = [
        FakeModel("claude-sonnet-9-0", "Claude Sonnet 9.0", 1_000_000, "2026-09-01T00:00:00Z", "active", "sonnet"),
        FakeModel("claude-sonnet-8-0", "Claude Sonnet 8.0", 1_000_000, "2026-05-01T00:00:00Z", "deprecated", "sonnet",
                  retires_at="2027-01-15T00:00:00Z"),
        FakeModel("claude-sonnet-7-0", "Claude Sonnet 7.0", 1_000_000, "2026-01-01T00:00:00Z", "retired", "sonnet"),
    ]
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.wait("the API's model list", function()
          local models = require("phoenix.models")
          models.model_ids()
          return models.models ~= nil and models.models.source == "api"
        end)
        T.pick("Claude Sonnet 8.0")  -- deprecated: still chosen
        vim.cmd("PhoenixModel")
        T.wait("the picked model", function() return phoenix.state.model == "claude-sonnet-8-0" end)
        """
    )
    menu = run.data["menus"][0]
    assert not any("claude-sonnet-7-0" in line for line in menu), menu  # retired: not offered
    assert re.search(r"\(.*default\)$", next(line for line in menu if "claude-sonnet-9-0" in line)), menu
    deprecated = next(line for line in menu if "claude-sonnet-8-0" in line)
    assert "deprecated, retires 2027-01-15" in deprecated, menu
    assert "deprecated" not in next(line for line in menu if "claude-sonnet-9-0" in line), menu

@pytest.mark.req("REQ-NVIM-001", "REQ-PROTO-046", "REQ-URI-002")
def test_a_project_at_the_root_directory_is_refused_with_the_servers_reason(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    """The plugin keeps its root without a trailing slash, so "/" became "" (which the server refuses as an empty
    working directory): the plugin must send "/" itself. The whole file system is no session folder (issue 34,
    REQ-URI-002), so the user is shown the server's reason for "/", and no conversation starts."""
    run = run_nvim(
        """
        T.setup({ root_dir = "/" })
        T.data.notes = T.notes_of("Phoenix")
        T.data.conversation = require("phoenix").state.conversation or vim.NIL
        """
    )
    said = "\n".join(run.data["notes"])
    assert "could not start a conversation" in said and "'/' is the whole file system" in said, said
    assert "empty" not in said, said  # "/" was sent, not ""
    assert run.data["conversation"] is None, run.data


@pytest.mark.req("REQ-NVIM-005", "REQ-PROTO-051", "REQ-PROTO-052")
def test_phoenix_route_chooses_the_route_for_the_machine_and_every_message_carries_it(
    fake_anthropic: FakeAnthropic, run_nvim: Any
) -> None:
    """:PhoenixRoute (issue 14, REQ-AGENT-001): the route read at start (getRoute), shown beside the model in the
    chat's header and the statusline, switched with setRoute (persisted in ui_settings.json in the data
    directory), and sent as `route` with every phoenix/sendMessage. The message sent with `agent` runs a plan (in
    the sandboxed engine) whose answer shows in the same chat."""
    plan = ToolUseBlock("run_plan", {"goal": "add 1, 2 and 3", "nodes": [
        {"id": "add", "code": "{'sum': sum([1, 2, 3])}", "outputs": ["sum"]}]})
    fake_anthropic.enqueue(Reply.text_reply("first answer"), Reply.tool_reply(plan),
                           Reply.text_reply("the plan says six"))
    run = run_nvim(
        """
        local phoenix = T.setup()
        vim.o.columns = 200  -- a wide screen: the statusline shows every part
        local chat = require("phoenix.chat")
        T.wait("the route from the server", function() return phoenix.state.route ~= nil end)
        T.data.first_route = phoenix.state.route
        -- what the plugin hands the LSP client for each sendMessage, and how each was answered
        local compat = require("phoenix.compat")
        local request = compat.request
        T.data.sent, T.data.answers = {}, {}
        compat.request = function(c, method, params, handler)
          if method ~= "phoenix/sendMessage" then
            return request(c, method, params, handler)
          end
          table.insert(T.data.sent, vim.deepcopy(params))
          return request(c, method, params, function(err, result)
            table.insert(T.data.answers, err and tostring(err.message or err) or "accepted")
            handler(err, result)
          end)
        end
        vim.cmd("Phoenix")
        T.wait("a conversation", function() return phoenix.state.conversation ~= nil end)
        T.wait("the route in the header", function() return (chat.lines()[3] or ""):find("Route: ask", 1, true) end)
        T.data.header_before = chat.lines()[3]
        T.ok(phoenix.send("hi"), "send")
        T.wait("the first answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("first answer", 1, true) ~= nil
        end)
        T.data.statusline_before = phoenix.statusline()
        T.data.completion = vim.fn.getcompletion("PhoenixRoute a", "cmdline")
        T.pick("agent")  -- :PhoenixRoute without an argument: a picker
        vim.cmd("PhoenixRoute")
        T.wait("the agent route", function() return phoenix.state.route == "agent" end)
        T.wait("the chat to note it", function() return T.chat_text():find("route: agent (was ask", 1, true) end)
        T.data.header_after = chat.lines()[3]
        T.data.statusline_after = phoenix.statusline()
        T.data.file = vim.fn.json_decode(table.concat(vim.fn.readfile(T.data_dir .. "/ui_settings.json"), " "))
        phoenix.async(function()
          local _, result = phoenix.call("phoenix/getRoute", vim.empty_dict())
          T.data.server_route = result and result.route or "none"
        end)
        T.wait("the server's route", function() return T.data.server_route ~= nil end)
        -- a route that is none is refused with the server's message, and nothing changes
        T.data.refusal = T.notes_of("PhoenixRoute fast")
        T.data.kept = phoenix.state.route
        -- the next message carries the chosen route
        T.ok(phoenix.send("second"), "send again")
        T.wait("the second message's answer", function() return #T.data.answers == 2 end)
        T.wait("the plan's answer", function()
          return phoenix.state.status == "idle" and T.chat_text():find("the plan says six", 1, true) ~= nil
        end)
        -- with an argument, both ways
        vim.cmd("PhoenixRoute ask")
        T.wait("ask", function() return phoenix.state.route == "ask" end)
        vim.cmd("PhoenixRoute agent")
        T.wait("agent again", function() return phoenix.state.route == "agent" end)
        """
    )
    data = run.data
    assert data["first_route"] == "ask", data
    assert data["header_before"] == "Route: ask  (:PhoenixRoute ask|agent to choose)", data["header_before"]
    assert " · ready · chat · ask · " in data["statusline_before"], data["statusline_before"]
    assert data["completion"] == ["ask", "agent"], data["completion"]
    assert data["menus"][0][0].startswith("● ask") and "agent" in data["menus"][0][1], data["menus"]
    assert data["header_after"].startswith("Route: agent"), data["header_after"]
    assert " · ready · chat · agent · " in data["statusline_after"], data["statusline_after"]
    assert data["file"] == {"route": "agent"}, data["file"]
    assert data["server_route"] == "agent", data
    assert any("route" in n and "'ask' or 'agent'" in n for n in data["refusal"]), data["refusal"]
    assert data["kept"] == "agent"
    assert [m.get("route") for m in data["sent"]] == ["ask", "agent"], data["sent"]
    assert [m["text"] for m in data["sent"]] == ["hi", "second"], data["sent"]
    assert data["answers"] == ["accepted", "accepted"], data["answers"]
    # the file the server wrote, and what a server started afterwards on the same data directory reports
    assert json.loads((run.data_dir / "ui_settings.json").read_text()) == {"route": "agent"}
    assert route_of(run.data_dir, run.workdir) == "agent"
    # the agent route reached the model: run_plan offered, the plan computed, its result told
    ask, agent, answered = fake_anthropic.requests[-3:]
    assert "run_plan" not in (ask.tool_names or []) and "run_plan" in (agent.tool_names or [])
    told = [b for b in answered.messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(told) == 1 and '{"sum":6}' in str(told[0]["content"]).replace(" ", ""), told
