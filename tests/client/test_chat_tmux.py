"""The terminal chat driven by keys in a real terminal emulator, tmux (issue 38): a user chats and switches the
route, quits, comes back with ``--continue``, starts a second conversation with ``/new``, quits, and picks the
first one again from ``--resume``'s list with the arrow keys. The witness is the screen as tmux draws it
(``capture-pane``): what the user sees, after the client's cursor moves and redraws, not the bytes it wrote."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.conftest import ROOT
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

# slow: the chat and its server start three times in a real terminal
pytestmark = [
    pytest.mark.slow,
    pytest.mark.req("REQ-TERM-001", "REQ-TERM-002", "REQ-TERM-003"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/install-test-deps.sh)"),
]


#: typed after each chat's command line: the shell says the chat's exit code when it is back
EXITED = '; echo "chat exited $?"'


class Tmux:
    """One tmux server of its own (its socket in the test's folder) with one 120x50 window running a shell."""

    def __init__(self, socket: Path, env: dict[str, str]) -> None:
        self.base = ["tmux", "-S", str(socket), "-f", "/dev/null"]
        self.env = env
        self.run("new-session", "-d", "-x", "120", "-y", "50", "bash --norc --noprofile")
        self.run("set-option", "-g", "history-limit", "5000")

    def run(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=True, env=self.env,
                              timeout=30).stdout

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "0", *keys)

    def line(self, text: str) -> None:
        self.run("send-keys", "-t", "0", "-l", text)
        self.keys("Enter")

    def screen(self) -> str:
        """The whole window, its scrollback too, as the user sees it (no colours)."""
        return self.run("capture-pane", "-p", "-J", "-t", "0", "-S", "-5000")

    def wait_for(self, text: str, after: str = "", timeout: float = 60.0) -> str:
        """Wait until ``text`` is on the screen below the last ``after`` (once ``after`` is drawn at all); the
        screen from there."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if after in screen:  # the line typed last is drawn: look only below it
                tail = screen[screen.rfind(after) + len(after):] if after else screen
                if text in tail:
                    return tail
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not on the screen within {timeout}s:\n{screen}")
            time.sleep(0.1)

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, env=self.env, timeout=30)


@pytest.fixture
def tmux(tmp_path: Path, chat_env: dict[str, str]) -> Iterator[Tmux]:
    env = {k: v for k, v in chat_env.items() if k != "NO_COLOR"}
    env |= {"TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    session = Tmux(tmp_path / "tmux.sock", env)
    yield session
    session.kill()


def test_continue_resume_with_the_picker_and_route_switch_typed_in_a_real_terminal(
    tmux: Tmux, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply("Use **add(a, b)** for that.", deltas=6, delay_s=0.02),
        Reply.text_reply("Still about add."),
        Reply.text_reply("About pears now."),
        Reply.text_reply("Back on add."),
    )
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    chat = shlex.join([sys.executable, "-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(data)])

    # a first chat: a question, its answer drawn as markdown, and the route switched to agent
    tmux.line(chat + EXITED)
    tmux.wait_for("Type a message")
    tmux.line("how do I add?")
    screen = tmux.wait_for("Use add(a, b) for that.", "how do I add?")
    assert "**" not in screen  # drawn as markdown, the raw text erased
    tmux.line("/route agent")
    tmux.wait_for("[route] agent from the next message (was ask)", "/route agent")
    tmux.keys("C-d")
    tmux.wait_for("chat exited 0", "[route] agent")

    # --continue: the same conversation, its history, and the route as switched
    tmux.line(chat + " --continue" + EXITED)
    screen = tmux.wait_for("Type a message", "--continue")
    assert "resumed conversation" in screen and "> how do I add?" in screen and "Use add(a, b) for that." in screen
    assert "route: agent" in screen
    tmux.line("/route ask")
    tmux.wait_for("[route] ask from the next message (was agent)", "/route ask")
    tmux.line("and then?")
    tmux.wait_for("Still about add.", "and then?")
    tmux.line("/new")
    tmux.wait_for("Type a message", "/new")
    tmux.line("tell me about pears")
    tmux.wait_for("About pears now.", "tell me about pears")
    tmux.keys("C-d")
    tmux.wait_for("chat exited 0", "About pears now.")

    # --resume: the list of this folder's two conversations, the latest marked; Down moves the marker to the
    # first conversation, Up and Down again come back to it, and Enter picks it
    tmux.line(chat + " --resume" + EXITED)
    screen = tmux.wait_for("Up/Down and Enter, or type a number", "--resume")
    assert screen.index("tell me about pears") < screen.index("how do I add?")  # the latest first
    assert ">  1." in screen and "   2." in screen
    tmux.keys("Down")
    screen = tmux.wait_for(">  2.", "--resume")
    tmux.keys("Up")
    tmux.wait_for(">  1.", "--resume")
    tmux.keys("Down")
    tmux.wait_for(">  2.", "--resume")
    tmux.keys("Enter")
    screen = tmux.wait_for("Type a message", "Up/Down and Enter")
    assert "> how do I add?" in screen and "Still about add." in screen and "pears" not in screen
    tmux.line("once more")
    tmux.wait_for("Back on add.", "once more")
    tmux.keys("C-d")
    tmux.wait_for("chat exited 0", "Back on add.")
    users = [m for m in fake_anthropic.requests[3].body["messages"] if m["role"] == "user"]
    texts = [b["text"] for m in users for b in m["content"] if isinstance(b, dict) and b.get("type") == "text"]
    assert texts == ["how do I add?", "and then?", "once more"]


def test_a_pending_approval_is_asked_again_after_a_restart_typed_in_a_real_terminal(
    tmux: Tmux, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """The chat (and its server) go away while an approval is open: the terminal's window is killed. Coming back
    with ``--continue``, the user sees the same question and answers it with keys; nothing ran before."""
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo resumed > made.txt"}), text="Creating it."),
        Reply.text_reply("Created made.txt."),
    )
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    chat = shlex.join([sys.executable, "-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(data)])
    tmux.line(chat + EXITED)
    tmux.wait_for("Type a message")
    tmux.line("/policy interactive")
    tmux.line("/execute")
    tmux.wait_for("[mode] unrestricted", "/execute")
    tmux.line("please create made.txt")
    tmux.wait_for("Allow? [y]es / [n]o / [a]lways", "please create made.txt")
    tmux.run("respawn-pane", "-k", "-t", "0", "bash --norc --noprofile")  # the window killed, the question open
    tmux.run("clear-history", "-t", "0")
    assert not (work / "made.txt").exists()

    tmux.line(chat + " --continue" + EXITED)
    screen = tmux.wait_for("Allow? [y]es / [n]o / [a]lways", "--continue")
    assert "resumed conversation" in screen and "[approval] bash" in screen and "echo resumed > made.txt" in screen
    tmux.line("y")
    # the command's captured change is asked about before it lands (REQ-BASH-032)
    tmux.wait_for("Allow? [y]es / [n]o / [a]lways", "[approval] patch")
    assert not (work / "made.txt").exists(), "the change landed before its review was answered"
    tmux.line("y")
    tmux.wait_for("Created made.txt.", "[approval] patch")
    assert (work / "made.txt").read_text() == "resumed\n"
    tmux.keys("C-d")
    tmux.wait_for("chat exited 0", "Created made.txt.")
