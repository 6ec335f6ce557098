"""CodeCompanion.nvim 19.22 (a real ACP client, vendored) in Neovim 0.11, driven by a user's keys against
``phoenix-lsp acp`` and the fake Anthropic API (issue 38). The witnesses are what the client received and drew
(its chat buffer, its notifications, its own hold of the session's options), what the fake model received, and
the store."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import tool_result
from tests.clients.nvim.conftest import API_KEY, NvimRun
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test runs Neovim, CodeCompanion and the agent as subprocesses

RunCC = Callable[..., NvimRun]


def _user_texts(fake: FakeAnthropic, request: int = -1) -> list[str]:
    """The text of every user message in one request the model was sent (the last by default)."""
    texts = []
    for message in fake.requests[request].messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return texts


def _stored_state(data_dir: Path, conversation_id: str) -> dict[str, Any]:
    with sqlite3.connect(data_dir / "phoenix.db") as db:
        row = db.execute("SELECT state_json FROM conversation_states WHERE conversation_id = ?",
                         (conversation_id,)).fetchone()
    assert row is not None, f"the store holds no conversation {conversation_id}"
    state: dict[str, Any] = json.loads(row[0])
    return state


def _drawn_calls(lines: list[str]) -> list[str]:
    """The lines CodeCompanion drew for tool calls ("Kind: target", or its fallback "Tool call")."""
    kinds = ("Read:", "Edit:", "Delete:", "Move:", "Search:", "Execute:", "Think:", "Fetch:", "Switch mode:",
             "Other:", "Tool:")
    return [line for line in lines if line.startswith(kinds) or line.endswith("Tool call")]


@pytest.mark.req("REQ-ACP-004", "REQ-ACP-014")
def test_a_message_typed_in_the_chat_is_answered_in_it(run_cc: RunCC, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("The answer is forty-two.", deltas=4))
    run = run_cc("""
        CC.open()
        CC.say("what is the answer?")
        T.data.lines = CC.lines()
        T.data.chunks = #CC.updates("agent_message_chunk")
        T.data.errors = CC.errors()
        T.data.received = CC.received
    """)
    assert API_KEY not in json.dumps(run.data["received"])  # nothing the client got names the key
    lines = run.data["lines"]
    assert "The answer is forty-two." in lines, lines
    assert any(line.startswith("## CodeCompanion") for line in lines[:lines.index("The answer is forty-two.")])
    assert run.data["chunks"] >= 1 and not run.data["errors"]
    assert any("what is the answer?" in t for t in _user_texts(fake_anthropic))


@pytest.mark.req("REQ-ACP-005", "REQ-ACP-028")
def test_a_tool_call_is_drawn_once_from_one_final_update(run_cc: RunCC, fake_anthropic: FakeAnthropic) -> None:
    """The issue's double report: a second, nameless ``tool_call_update`` when the result was stored made
    CodeCompanion draw a second line, "Other: Tool call", under the read's own."""
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "notes.md"}, id="toolu_cc_read")),
                           Reply.text_reply("The notes say hello."))
    run = run_cc("""
        CC.open()
        CC.say("read the notes")
        T.data.lines = CC.lines()
        T.data.updates = vim.tbl_filter(function(u) return u.toolCallId == "toolu_cc_read" end, CC.updates())
    """, files={"notes.md": "hello from the notes\n"})
    updates = run.data["updates"]
    final = [u for u in updates if u.get("status") in ("completed", "failed")]
    assert [u["status"] for u in final] == ["completed"], updates
    assert updates[0]["sessionUpdate"] == "tool_call" and updates[0]["title"] == "Read notes.md"
    lines = run.data["lines"]
    assert _drawn_calls(lines) == ["Read: notes.md"], lines
    assert "The notes say hello." in lines
    assert "hello from the notes" in json.dumps(fake_anthropic.requests[-1].messages)


@pytest.mark.req("REQ-ACP-029", "REQ-ACP-025")
@pytest.mark.parametrize("typed", ["/execute", "\\exe<C-x><C-o>"], ids=["typed", "completed"])
def test_a_mode_command_answers_and_the_next_message_is_not_refused(run_cc: RunCC, fake_anthropic: FakeAnthropic,
                                                                    typed: str) -> None:
    """``/execute`` typed whole, or the agent's command completed from its announced commands (CodeCompanion
    writes them ``\\execute`` and sends ``/execute``): the chat shows the command's line of text, the session is
    Unrestricted, and the message after it reaches the model (it had arrived empty and was refused with a bare
    "Invalid request")."""
    fake_anthropic.enqueue(Reply.text_reply("Hello after the switch."))
    completed = json.dumps(typed.startswith("\\"))
    run = run_cc(f"""
        CC.open()
        if {completed} then
          T.wait("the agent's commands", function()
            return #require("codecompanion.interactions.chat.acp.commands").get_commands_for_buffer(CC.chat.bufnr) > 0
          end)
        end
        CC.say({json.dumps(typed)})
        T.data.after_command = CC.lines()
        T.data.command_chunks = CC.updates("agent_message_chunk")
        CC.say("hello there")
        T.data.lines = CC.lines()
        T.data.errors = CC.errors()
        T.data.session = CC.session_id
    """)
    assert not run.data["errors"], run.data["errors"]
    assert "Hello after the switch." in run.data["lines"], run.data["lines"]
    assert not any("Invalid request" in line for line in run.data["lines"])
    said = "".join(u["content"]["text"] for u in run.data["command_chunks"]).strip()
    assert said and said.splitlines()[0] in "\n".join(run.data["after_command"]), (said, run.data["after_command"])
    assert len(fake_anthropic.requests) == 1  # the command itself is no model request
    assert any("hello there" in t for t in _user_texts(fake_anthropic))
    assert _stored_state(run.data_dir, run.data["session"])["mode"] == "unrestricted"


@pytest.mark.req("REQ-ACP-023", "REQ-ACP-024")
def test_the_mode_is_picked_from_the_session_options_in_codecompanion(run_cc: RunCC,
                                                                       fake_anthropic: FakeAnthropic) -> None:
    """The user opens CodeCompanion's own session options (its ``/acp_session_options`` command, completed in
    the chat), picks the mode option, then Unrestricted. Witnesses: the model's edit of a file, refused before
    (Restricted), is asked about after it and lands on the disk once the user accepts it in the chat; the
    conversation in the store is Unrestricted."""
    edit = {"path": "a.txt", "patches": [{"operation": "replace", "oldText": "one", "newText": "two"}]}
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", edit, id="toolu_cc_p1")),
                           Reply.text_reply("It is read-only here."),
                           Reply.tool_reply(ToolUseBlock("patch", edit, id="toolu_cc_p2")),
                           Reply.text_reply("Changed it."))
    run = run_cc("""
        CC.open()
        CC.say("change a.txt")
        local mode = CC.option("mode")
        T.ok(mode, "a mode among the session's config options; CodeCompanion said " .. vim.inspect(CC.said()))
        T.data.first = mode.currentValue
        T.data.session = CC.session_id
        T.data.before = vim.fn.readfile("a.txt")
        CC.pick(mode.name, "Unrestricted")
        CC.slash("/acp_sess")
        T.wait("the mode to change", function() return CC.option("mode").currentValue ~= T.data.first end)
        T.data.picked = CC.option("mode").currentValue
        T.data.menus = CC.menus
        T.data.said = CC.said()
        CC.send("change a.txt now")
        CC.approve("Accept")
        CC.wait_answer()
        T.data.lines = CC.lines()
    """, files={"a.txt": "one\n"})
    assert run.data["first"] == "restricted"
    assert run.data["before"] == ["one"]  # refused in Restricted: the file as it was
    assert "request_mode_upgrade" in json.dumps(tool_result(fake_anthropic, "toolu_cc_p1"))
    assert run.data["picked"] == "unrestricted", run.data
    options, values = run.data["menus"]  # the session's options, then the mode's values
    assert any(o.startswith("Model") for o in options) and any("Unrestricted" in v for v in values), run.data["menus"]
    assert any("Changed" in note and "Unrestricted" in note for note in run.data["said"]), run.data["said"]
    assert (run.workdir / "a.txt").read_text() == "two\n"  # asked, accepted in the chat, written
    assert not tool_result(fake_anthropic, "toolu_cc_p2").get("is_error")
    assert "Changed it." in run.data["lines"]
    assert _stored_state(run.data_dir, run.data["session"])["mode"] == "unrestricted"


@pytest.mark.req("REQ-ACP-023", "REQ-ACP-024")
def test_the_model_is_picked_with_codecompanions_own_key(run_cc: RunCC, fake_anthropic: FakeAnthropic) -> None:
    """CodeCompanion's "change adapter and model" key (ga) lists the agent's models from its model option; the
    user keeps the adapter and picks the other model: the next message goes to the model with that id."""
    fake_anthropic.models = [("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000),
                             ("claude-opus-4-6", "Claude Opus 4.6", 1_000_000)]
    fake_anthropic.enqueue(Reply.text_reply("From the other model."))
    run = run_cc("""
        CC.open()
        -- the agent's model list may follow the session's answer, as a config_option_update
        T.wait("the agent's models", function()
          local listed = CC.option("model")
          return listed and #require("codecompanion.acp").flatten_config_options(listed.options) > 1
        end)
        local model = CC.option("model")
        T.data.first = model.currentValue
        local other
        for _, value in ipairs(require("codecompanion.acp").flatten_config_options(model.options)) do
          other = other or (value.value ~= model.currentValue and value or nil)
        end
        T.ok(other, "a second model to pick: " .. vim.inspect(model.options))
        T.data.picked = other.value
        CC.pick("phoenix", other.name)
        vim.api.nvim_set_current_buf(CC.chat.bufnr)
        T.keys("ga")
        T.wait("the model to change", function() return CC.option("model").currentValue == other.value end)
        CC.say("hello there")
        T.data.lines = CC.lines()
        T.data.menus = CC.menus
        T.data.session = CC.session_id
    """)
    picked = run.data["picked"]
    assert picked != run.data["first"] and picked in {"claude-sonnet-4-6", "claude-opus-4-6"}, run.data
    assert "From the other model." in run.data["lines"]
    assert fake_anthropic.requests[-1].body["model"] == picked
    assert _stored_state(run.data_dir, run.data["session"])["model"] == picked


@pytest.mark.req("REQ-ACP-026", "REQ-ACP-012")
def test_a_conversation_is_resumed_from_codecompanions_session_list(run_cc: RunCC,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    """Yesterday's conversation, in a restarted editor: CodeCompanion's ``/resume`` lists this folder's
    sessions, the user picks it, the chat shows its history, and the next message goes on with it (the model
    sees the earlier exchange; the store holds one conversation)."""
    fake_anthropic.enqueue(Reply.text_reply("Apples are red."), Reply.text_reply("Green ones too."))
    first = run_cc("""
        CC.open()
        CC.say("tell me about apples")
        T.data.session = CC.session_id
    """)
    run = run_cc("""
        CC.open()
        T.ok(CC.chat.acp_connection:can_list_sessions(), "the agent offers session/list")
        CC.pick("tell me about apples")
        CC.slash("/resu")
        T.wait("the session to be resumed", function()
          return vim.iter(CC.said()):any(function(n) return n:find("Resumed session", 1, true) ~= nil end)
        end)
        T.data.resumed = CC.chat.acp_connection.session_id
        T.data.history = CC.lines()
        CC.say("and the others?")
        T.data.lines = CC.lines()
        T.data.menus = CC.menus
    """)
    assert run.data["resumed"] == first.data["session"]
    assert "Apples are red." in run.data["history"], run.data["history"]
    assert "Green ones too." in run.data["lines"]
    texts = _user_texts(fake_anthropic)
    assert any("tell me about apples" in t for t in texts) and any("and the others?" in t for t in texts)
    with sqlite3.connect(run.data_dir / "phoenix.db") as db:
        history = json.dumps([r[0] for r in db.execute(
            "SELECT json FROM messages WHERE conversation_id = ? ORDER BY idx", (first.data["session"],))])
    assert "tell me about apples" in history and "and the others?" in history  # one conversation, gone on with



@pytest.mark.req("REQ-ACP-008", "REQ-ACP-028", "REQ-ACP-024")
def test_an_upgrade_approved_in_the_chat_keeps_its_line_and_the_mode_option(run_cc: RunCC,
                                                                            fake_anthropic: FakeAnthropic) -> None:
    """The model asks to switch to Unrestricted; CodeCompanion shows the approval in its chat, the user presses
    the key it names for Accept. The call keeps its one line with its title (a second, nameless final update
    had drawn "Other: Tool call" over it), and the client's own mode option follows the switch."""
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write notes.txt"}, id="toolu_cc_up")),
        Reply.text_reply("Now unrestricted."))
    run = run_cc("""
        CC.open()
        CC.send("take notes")
        CC.approve("Accept")
        CC.wait_answer()
        T.data.lines = CC.lines()
        T.data.finals = vim.tbl_filter(function(u)
          return u.toolCallId == "toolu_cc_up" and (u.status == "completed" or u.status == "failed")
        end, CC.updates())
        T.data.mode = CC.option("mode")
        T.data.session = CC.session_id
    """)
    assert len(run.data["finals"]) == 1, run.data["finals"]
    assert _drawn_calls(run.data["lines"]) == ["Switch mode: Switch to Unrestricted mode"], run.data["lines"]
    assert "Now unrestricted." in run.data["lines"]
    assert run.data["mode"] and run.data["mode"]["currentValue"] == "unrestricted", run.data["mode"]
    assert _stored_state(run.data_dir, run.data["session"])["mode"] == "unrestricted"
