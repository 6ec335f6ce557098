"""``phoenix-lsp chat --continue`` and ``--resume [ID]`` (issue 38): the real client process, the real server it
starts and the real SQLite store; only the Anthropic API is the local fake. Each test runs a first chat, ends it,
then starts a second one that comes back to the conversation: the witnesses are what the second chat prints and
what the fake model receives on the next turn (the whole earlier history)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

# slow: each test starts the terminal client and its server as subprocesses, twice
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-TERM-001")]

StartChat = Callable[..., ChatProcess]


def _talk(start_chat: StartChat, text: str, answer_seen: str, *args: str) -> str:
    """One chat that sends ``text``, waits for ``answer_seen`` and quits; returns its conversation's short id."""
    chat = start_chat(*args)
    at = chat.wait_for("> ")
    chat.send(text)
    chat.wait_for(answer_seen, at)
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0, chat.err
    header = next(line for line in chat.out.splitlines() if "conversation " in line)
    return header.split("conversation ", 1)[1].split(" ", 1)[0]


def _user_texts(fake: FakeAnthropic, index: int) -> list[str]:
    texts = []
    for message in fake.requests[index].body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts += [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return texts


def test_continue_goes_on_with_this_folders_latest_conversation(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("First answer."), Reply.text_reply("Second answer."),
                           Reply.text_reply("Third answer."))
    _talk(start_chat, "an older question", "First answer.")
    latest = _talk(start_chat, "the latest question", "Second answer.")
    chat = start_chat("--continue")
    at = chat.wait_for(f"resumed conversation {latest}")
    at = chat.wait_for("> the latest question", at)  # the history: the user's message and the answer
    at = chat.wait_for("Second answer.", at)
    at = chat.wait_for("end of the history", at)
    at = chat.wait_for("mode: restricted", at)
    assert "model: " in chat.out[at:] and "route: ask" in chat.out[at:]
    assert "an older question" not in chat.out  # the other conversation is not this one
    at = chat.wait_for("> ", at)
    chat.send("and now?")
    chat.wait_for("Third answer.", at)
    chat.close_stdin()
    assert chat.wait() == 0
    # the model got the resumed conversation's history with the new message, in one conversation
    assert _user_texts(fake_anthropic, 2) == ["the latest question", "and now?"]


def test_resume_without_an_id_offers_a_picker_of_this_folders_conversations(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("One."), Reply.text_reply("Two."), Reply.text_reply("Again one."))
    _talk(start_chat, "first topic", "One.")
    _talk(start_chat, "second topic", "Two.")
    chat = start_chat("--resume")
    at = chat.wait_for("Resume which? [1-2, Enter = 1]: ")
    listing = chat.out[:at]
    assert listing.index("1. ") < listing.index("second topic") < listing.index("2. ") < listing.index("first topic")
    assert "idle" in listing and "2 messages" in listing
    chat.send("7")  # not in the list: asked again
    at = chat.wait_for("not in the list", at)
    at = chat.wait_for("Resume which?", at)
    chat.send("2")
    at = chat.wait_for("> first topic", at)
    at = chat.wait_for("> ", chat.wait_for("end of the history", at))
    chat.send("more on it")
    chat.wait_for("Again one.", at)
    chat.close_stdin()
    assert chat.wait() == 0
    assert _user_texts(fake_anthropic, 2) == ["first topic", "more on it"]


def test_resume_by_id_restores_mode_and_policy_and_asks_the_pending_approval_again(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo resumed > made.txt"}), text="Creating it."),
        Reply.text_reply("Created made.txt."),
    )
    first = start_chat()
    at = first.wait_for("> ")
    first.send("/policy interactive")
    first.send("/execute")
    at = first.wait_for("[mode] unrestricted", at)
    at = first.wait_for("> ", at)
    first.send("please create made.txt")
    first.wait_for("Allow? [y]es / [n]o / [a]lways: ", at)
    cid = next(line for line in first.out.splitlines() if "conversation " in line).split("conversation ")[1][:8]
    first.kill()  # the chat and its server go away with the question open
    assert not (tmp_path / "work" / "made.txt").exists()

    chat = start_chat("--resume", cid)
    at = chat.wait_for(f"resumed conversation {cid}")
    at = chat.wait_for("> please create made.txt", at)
    at = chat.wait_for("mode: unrestricted", at)
    assert "approvals: interactive" in chat.out[at:chat.out.find("\n", at)]
    at = chat.wait_for("[approval] bash", at)  # the pending approval, asked again
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", at)
    chat.send("y")
    # the command's captured change is asked about before it lands (REQ-BASH-032)
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", chat.wait_for("[approval] patch", at))
    assert not (tmp_path / "work" / "made.txt").exists(), "the change landed before its review was answered"
    chat.send("y")
    at = chat.wait_for("Created made.txt.", at)
    chat.wait_for("> ", at)
    assert (tmp_path / "work" / "made.txt").read_text() == "resumed\n"
    chat.close_stdin()
    assert chat.wait() == 0


def test_continue_in_a_folder_without_conversations_starts_a_new_one(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    chat = start_chat("--continue")
    at = chat.wait_for("no earlier conversation in")
    at = chat.wait_for("phoenix-lsp chat · conversation ", at)
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0


def test_ctrl_d_at_the_picker_leaves_without_a_conversation(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("One."))
    _talk(start_chat, "only topic", "One.")
    chat = start_chat("--resume")
    chat.wait_for("Resume which?")
    chat.close_stdin()
    assert chat.wait() == 0
    assert "conversation " not in chat.out.split("Resume which?")[1]


def test_resume_of_another_folders_conversation_says_where_to_go_on_with_it(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path, chat_env: dict[str, str]
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Elsewhere."))
    cid = _talk(start_chat, "a question here", "Elsewhere.")
    other = tmp_path / "other"
    other.mkdir()
    chat = ChatProcess(["--cwd", str(other), "--data-dir", str(tmp_path / "data"), "--resume", cid], chat_env)
    try:
        chat.wait_for(f"belongs to {tmp_path / 'work'}")
        assert chat.wait() == 1
        assert f"--cwd {tmp_path / 'work'} --resume {cid}" in chat.out
        assert "resumed conversation" not in chat.out
    finally:
        chat.kill()


def test_the_picker_finds_this_folders_conversation_behind_many_newer_ones_of_other_folders(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """The list is the server's listing of this folder (one request), not a scan of the latest conversations
    of every folder: 60 newer conversations elsewhere do not hide this folder's."""
    import time

    from phoenix_lsp.store import ConversationRecord, Store
    from phoenix_lsp.store.paths import DB_FILE_NAME

    fake_anthropic.enqueue(Reply.text_reply("Here."), Reply.text_reply("Here again."))
    _talk(start_chat, "this folder's topic", "Here.")
    later = time.time() + 60
    with Store(tmp_path / "data" / DB_FILE_NAME) as store:
        for n in range(60):
            cid = f"elsewhere-{n:02d}"
            store.create_conversation(ConversationRecord(
                id=cid, parent_id=None, origin_id=None, is_subagent=False, working_directory=str(tmp_path / "other"),
                model="claude-sonnet-4-6", title=f"elsewhere {n}", created_at=later + n))
            store.save_state(cid, "{}", "idle", later + n)  # at rest: listed from its row, never loaded
    chat = start_chat("--resume")
    at = chat.wait_for("Resume which? [1-1, Enter = 1]: ")
    assert "this folder's topic" in chat.out[:at] and "elsewhere" not in chat.out[:at]
    chat.send("1")
    at = chat.wait_for("> ", chat.wait_for("end of the history", at))
    chat.send("still here?")
    chat.wait_for("Here again.", at)
    chat.close_stdin()
    assert chat.wait() == 0
    assert _user_texts(fake_anthropic, 1) == ["this folder's topic", "still here?"]


@pytest.mark.req("REQ-MCP-024")
def test_continue_shows_a_tools_image_and_the_users_as_they_were_shown_live(
    start_chat: StartChat, chat_env: dict[str, str], fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """Issue 37: an MCP tool's image is named in the resumed history as the live call named it."""
    from tests.tools.tracker import tracker_env

    env = {**chat_env, **tracker_env(tmp_path)}
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("mcp__tracker__picture", {"kind": "png"}, id="toolu_i1")),
                           Reply.text_reply("A gradient."))
    chat = start_chat(env=env)
    at = chat.wait_for("> ")
    chat.send("show me the chart")
    at = chat.wait_for("A gradient.", at)
    live = next(line for line in chat.out.splitlines() if "picture on tracker done" in line)
    assert "done: image (PNG, " in live, chat.out
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0, chat.err
    again = start_chat("--continue", env=env)
    at = again.wait_for("end of the history")
    assert live.strip() in again.out[:at], again.out
