"""An approval in the terminal chat, in a real pseudo-terminal (issue 38): the tool, the file or the command, and
the diff; not the tool's model-facing description nor the raw JSON of the call; the whole call when the user asks
for it (w), never cut; and an approved patch's diff not drawn a second time once the edit is written. The real
client, its real server and, for an MCP tool, a real MCP server; only the model is the local fake. The witnesses
are what the terminal received and the files on disk (or the MCP server's own log)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.test_terminal_tty import Tty
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import received, tracker_env

# slow: each test starts the terminal client, its server (and an MCP server) as subprocesses
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-TERM-004")]

ALLOW = "Allow? [y]es / [n]o / [a]lways"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def open_chat(chat_env: dict[str, str], tmp_path: Path, work: Path) -> Iterator[object]:
    ttys: list[Tty] = []

    def start(extra_env: dict[str, str] | None = None) -> Tty:
        env = {**chat_env, "TERM": "xterm-256color", **(extra_env or {})}
        tty = Tty(["-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(tmp_path / "data")], env)
        ttys.append(tty)
        at = tty.wait_for("> ")
        tty.type(b"/policy interactive\r")
        at = tty.wait_for("> ", tty.wait_for("interactive", at))
        tty.type(b"/execute\r")
        tty.wait_for("> ", tty.wait_for("[mode] unrestricted", at))
        return tty

    yield start
    for tty in ttys:
        tty.close()


def _plain(text: str) -> str:
    return ANSI.sub("", text).replace("\r", "")


def test_a_patch_approval_shows_the_file_and_the_diff_once_and_the_whole_call_on_request(
    open_chat: object, fake_anthropic: FakeAnthropic, work: Path
) -> None:
    (work / "a.txt").write_text("one\nkeep\n")
    call = ToolUseBlock("patch", {"path": "a.txt", "patches": [
        {"operation": "replace", "oldText": "one", "newText": "two-and-more"}]}, id="toolu_p1")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("Changed it."))
    tty = open_chat()  # type: ignore[operator]
    start = len(tty.out)
    tty.type(b"change it\r")
    at = tty.wait_for(ALLOW, start)
    asked = _plain(tty.out[start:at])
    assert "[approval] patch a.txt" in asked, asked
    assert "-one" in asked and "+two-and-more" in asked, asked
    assert "Edit one text file" not in asked, asked  # the model-facing description is not the question
    assert '"patches"' not in asked and "oldText" not in asked, asked  # nor the raw JSON above the diff
    tty.type(b"w\r")
    again = tty.wait_for(ALLOW, at)
    whole = _plain(tty.out[at:again])
    assert '"oldText": "one"' in whole and '"newText": "two-and-more"' in whole, whole  # the whole call
    assert (work / "a.txt").read_text() == "one\nkeep\n"  # w answers nothing
    tty.type(b"y\r")
    done = tty.wait_for("> ", tty.wait_for("Changed it.", again))
    after = _plain(tty.out[again:done])
    assert "[edit]" in after and "+two-and-more" not in after, after  # the approved diff is not drawn again
    assert (work / "a.txt").read_text() == "two-and-more\nkeep\n"
    assert _plain(tty.out).count("+two-and-more") == 1


def test_a_bash_approval_shows_the_whole_command_not_the_tools_description_nor_json(
    open_chat: object, fake_anthropic: FakeAnthropic, work: Path
) -> None:
    command = "echo " + " ".join(f"word{n:03d}" for n in range(60)) + " && echo second-step-done"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command}, id="toolu_b1")),
                           Reply.text_reply("Ran it."))
    tty = open_chat()  # type: ignore[operator]
    start = len(tty.out)
    tty.type(b"run it\r")
    at = tty.wait_for(ALLOW, start)
    asked = _plain(tty.out[start:at])
    assert "[approval] bash" in asked, asked
    assert re.sub(r"\s+", " ", asked).count(command) == 1, asked  # the whole command (wrapped, never cut)
    assert "Run one shell command" not in asked and '{"command"' not in asked, asked
    tty.type(b"y\r")
    tty.wait_for("> ", tty.wait_for("Ran it.", at))


def test_an_mcp_tool_approval_shows_the_tool_and_its_arguments_and_the_servers_words_only_on_request(
    open_chat: object, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    call = ToolUseBlock("mcp__tracker__create_issue", {"title": "the docs are stale"}, id="toolu_m1")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("Opened it."))
    tty = open_chat(tracker_env(tmp_path))  # type: ignore[operator]
    start = len(tty.out)
    tty.type(b"open an issue\r")
    at = tty.wait_for(ALLOW, start, timeout=120)
    asked = _plain(tty.out[start:at])
    assert "[approval] create_issue on tracker" in asked, asked
    assert 'title: "the docs are stale"' in asked, asked
    assert "Open a new issue" not in asked and '{"title"' not in asked, asked  # the server's own words: on request
    tty.type(b"w\r")
    again = tty.wait_for(ALLOW, at)
    assert "Open a new issue" in _plain(tty.out[at:again])
    tty.type(b"y\r")
    tty.wait_for("> ", tty.wait_for("Opened it.", again, timeout=120))
    assert received(tmp_path) == ["create_issue"]
