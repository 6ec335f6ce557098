"""``phoenix-lsp chat`` end to end: the real client process, the real server subprocess it starts, the real
kernel sandbox and SQLite; only the Anthropic API is the local fake (tests/fake_anthropic.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.client.conftest import ROOT, ChatProcess
from tests.fake_anthropic import FakeAnthropic, FakeModel, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI
from tests.waiting import wait_exited

# slow: each test starts the terminal client and its server as subprocesses
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-PROTO-035")]

StartChat = Callable[..., ChatProcess]


def _sandbox_available() -> bool:
    try:
        from phoenix_lsp.sandbox import probe

        return bool(probe().available)
    except Exception:
        return False


def _servers_for(data_dir: Path) -> list[int]:
    """Pids of phoenix-lsp server processes started with ``--data-dir data_dir``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and str(data_dir).encode() in argv:
            pids.append(int(entry.name))
    return pids


def _tool_results(fake: FakeAnthropic, request_index: int) -> list[dict[str, object]]:
    """The tool_result blocks of the last message of the ``request_index``-th request the fake got."""
    content = fake.requests[request_index].body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _text(block: dict[str, object]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


def test_without_api_key_exits_2_with_one_line_and_no_server(tmp_path: Path, chat_env: dict[str, str]) -> None:
    env = {k: v for k, v in chat_env.items() if k != "ANTHROPIC_API_KEY"}
    env["ANTHROPIC_API_KEY"] = ""  # set but empty counts as missing
    data = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-m", "phoenix_lsp", "chat", "--cwd", str(tmp_path), "--data-dir", str(data)],
        input=b"hello\n", capture_output=True, env=env, cwd=ROOT, timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "ANTHROPIC_API_KEY" in lines[0] and "export ANTHROPIC_API_KEY=" in lines[0]
    assert not data.exists()  # the server never started (it would have created its log there)


@pytest.mark.req("REQ-URI-002")
def test_a_folder_that_would_confine_nothing_is_refused_before_the_server_starts(chat_env: dict[str, str],
                                                                                  tmp_path: Path) -> None:
    home = tmp_path / "up" / "home"
    (home / "project").mkdir(parents=True)
    data = tmp_path / "data"
    for cwd, why in (("//", "whole file system"), ("/.", "whole file system"), (str(home), "home folder"),
                     (str(home.parent), "home folder"), (f"/{home}/project/..", "home folder"),
                     (str(tmp_path / "missing"), "not an existing")):
        proc = subprocess.run(
            [sys.executable, "-m", "phoenix_lsp", "chat", "--cwd", cwd, "--data-dir", str(data)],
            input=b"hello\n", capture_output=True, env={**chat_env, "HOME": str(home)}, cwd=ROOT, timeout=30,
        )
        assert proc.returncode == 2, cwd
        assert why in proc.stderr.decode() and "--cwd" in proc.stderr.decode(), (cwd, proc.stderr)
    assert not data.exists()  # the server never started


def test_streams_the_answer_as_it_arrives(start_chat: StartChat, fake_anthropic: FakeAnthropic) -> None:
    pieces = ["Streaming ", "answers ", "arrive ", "piece ", "by piece."]
    fake_anthropic.enqueue(Reply.text_reply("".join(pieces), deltas=len(pieces), delay_s=0.25))
    chat = start_chat()
    at = chat.wait_for("mode: ")
    assert "Landlock" in chat.out or "no kernel sandbox" in chat.out  # the mode/sandbox line
    at = chat.wait_for("> ", at)
    chat.send("hello model")
    at = chat.wait_for("Streaming ", at)
    # the first delta is on screen while the model is still sending the rest
    assert "by piece." not in chat.out
    at = chat.wait_for("answers arrive piece by piece.", at)
    chat.wait_for("> ", at)
    assert fake_anthropic.requests[0].body["messages"][-1]["content"][0]["text"] == "hello model"
    chat.close_stdin()
    assert chat.wait() == 0


def test_approval_answered_yes_runs_the_tool(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo approved > made.txt"}), text="Creating it."),
        Reply.text_reply("Created made.txt."),
    )
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/execute")
    at = chat.wait_for("[mode] unrestricted", at)
    at = chat.wait_for("> ", at)
    chat.send("please create made.txt")
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", at)
    assert "[approval] bash" in chat.out and "$ echo approved > made.txt" in chat.out
    assert not (tmp_path / "work" / "made.txt").exists()  # nothing ran before the answer
    chat.send("y")
    # the command ran; its change is shown as a diff and lands only on a second yes (issue 36)
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", chat.wait_for("[approval] patch", at))
    assert "+approved" in chat.out and not (tmp_path / "work" / "made.txt").exists()
    chat.send("y")
    at = chat.wait_for("Created made.txt.", at)
    chat.wait_for("> ", at)
    assert (tmp_path / "work" / "made.txt").read_text() == "approved\n"
    results = _tool_results(fake_anthropic, 1)
    assert results and not results[0].get("is_error")
    chat.close_stdin()
    assert chat.wait() == 0


@pytest.mark.req("REQ-PERM-020", "REQ-PERM-013")
def test_always_allow_offers_the_command_prefix_then_the_whole_tool(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """`a` adds the narrowest scope (this command's prefix), `t` the whole tool (issue 10)."""
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo one | cat"})),
        Reply.text_reply("First done."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo two"})),
        Reply.text_reply("Second done."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"})),
        Reply.text_reply("Third done."),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "touch again.txt"})),
        Reply.text_reply("Fourth done."),
    )
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/execute")
    at = chat.wait_for("> ", chat.wait_for("[mode] unrestricted", at))
    chat.send("first")
    at = chat.wait_for("always allow: [a] bash: echo *; cat *   [t] bash (every call of the tool)", at)
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways / [t]ool: ", at)
    chat.send("a")
    at = chat.wait_for("[approvals] bash: echo *; cat * always allowed in this conversation", at)
    at = chat.wait_for("> ", chat.wait_for("First done.", at))
    chat.send("second")  # covered by the rule: no question
    at = chat.wait_for("Second done.", at)
    assert chat.out.count("Allow? [y]es") == 1
    at = chat.wait_for("> ", at)
    chat.send("third")  # `touch` is not covered
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways / [t]ool: ", at)
    chat.send("t")
    at = chat.wait_for("[approvals] bash always allowed in this conversation", at)
    # the file it made is a change to review, asked as the patch tool is (issue 36): always allow patch too
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", chat.wait_for("[approval] patch", at))
    chat.send("a")
    at = chat.wait_for("> ", chat.wait_for("Third done.", at))
    chat.send("fourth")  # the whole tool, and its changes: no question
    at = chat.wait_for("> ", chat.wait_for("Fourth done.", at))
    assert (tmp_path / "work" / "again.txt").exists() and chat.out.count("Allow? [y]es") == 3
    chat.close_stdin()
    assert chat.wait() == 0


def test_messages_wait_while_an_approval_is_open(start_chat: StartChat, fake_anthropic: FakeAnthropic) -> None:
    """A line typed while a question is open is the answer, never a message (seed 003)."""
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo hi"})),
        Reply.text_reply("Not run, fine."),
    )
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/execute")
    at = chat.wait_for("> ", chat.wait_for("[mode] unrestricted", at))
    chat.send("run echo")
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways / [t]ool: ", at)
    chat.send("what is the weather")  # not an answer: asked again, nothing sent to the server
    at = chat.wait_for("Please answer y (allow), n (deny), a (always allow bash: echo *) or t (always allow bash", at)
    chat.send("n")
    at = chat.wait_for("Not run, fine.", at)
    chat.wait_for("> ", at)
    results = _tool_results(fake_anthropic, 1)
    assert results and results[0].get("is_error")
    assert all("weather" not in str(r.body) for r in fake_anthropic.requests)
    chat.close_stdin()
    assert chat.wait() == 0


@pytest.mark.skipif(not _sandbox_available(), reason="Restricted mode needs the kernel sandbox (Landlock)")
def test_upgrade_request_answered_no(start_chat: StartChat, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "I need to edit setup.cfg"})),
        Reply.text_reply("Understood, staying read-only."),
    )
    chat = start_chat()
    at = chat.wait_for("mode: restricted")
    at = chat.wait_for("> ", at)
    chat.send("fix the config")
    at = chat.wait_for("Approve? [y/n]: ", at)
    assert "I need to edit setup.cfg" in chat.out
    chat.send("n")
    at = chat.wait_for("[upgrade] denied", at)
    at = chat.wait_for("Understood, staying read-only.", at)
    chat.wait_for("> ", at)
    assert "[mode] unrestricted" not in chat.out
    results = _tool_results(fake_anthropic, 1)
    assert results and results[0].get("is_error")
    chat.close_stdin()
    assert chat.wait() == 0


def test_ctrl_c_cancels_a_slow_turn_and_the_prompt_returns(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply("slow " * 40, deltas=40, delay_s=0.5),  # 20 s if nobody cancels
        Reply.text_reply("Fresh answer after the cancel."),
    )
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("write a long essay")
    at = chat.wait_for("slow", at)
    started = time.monotonic()
    chat.interrupt()
    at = chat.wait_for("[cancel] turn cancelled", at, timeout=10)
    at = chat.wait_for("> ", at, timeout=10)
    assert time.monotonic() - started < 10  # half the stream's 20 s: cancelled, not finished (5 s: near the edge)
    assert chat.proc.poll() is None  # Ctrl-C during a turn does not end the client
    assert fake_anthropic.wait_for(lambda reqs: reqs[0].disconnected, timeout=5)  # the stream was closed
    chat.send("try again")
    at = chat.wait_for("Fresh answer after the cancel.", at)
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0


def test_eof_at_the_prompt_exits_cleanly_and_stops_the_server(start_chat: StartChat, tmp_path: Path) -> None:
    chat = start_chat()
    chat.wait_for("> ")
    assert _servers_for(tmp_path / "data"), "the chat should have started its server"
    servers = _servers_for(tmp_path / "data")
    chat.close_stdin()
    assert chat.wait() == 0
    assert "Traceback" not in chat.err
    assert wait_exited(servers, 5) == []
    assert _servers_for(tmp_path / "data") == []


def test_ctrl_c_at_the_prompt_exits_cleanly(start_chat: StartChat, tmp_path: Path) -> None:
    chat = start_chat()
    chat.wait_for("> ")
    servers = _servers_for(tmp_path / "data")
    chat.interrupt()
    assert chat.wait() == 0
    assert "Traceback" not in chat.err
    assert wait_exited(servers, 5) == []
    assert _servers_for(tmp_path / "data") == []


def test_patch_is_applied_by_the_client_as_the_editor(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    target = tmp_path / "work" / "greet.py"
    target.write_text('def greet():\n    return "hello"  # \U0001f600 emoji before the edit\n')
    patch = {"path": "greet.py", "patches": [
        {"operation": "replace", "oldText": 'return "hello"', "newText": 'return "hello, world"'},
    ]}
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", patch)), Reply.text_reply("Patched."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/execute")
    at = chat.wait_for("> ", chat.wait_for("[mode] unrestricted", at))
    chat.send("greet the world")
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", chat.wait_for('+    return "hello, world"', at))
    chat.send("a")
    at = chat.wait_for("[edit] phoenix: patch greet.py: written, the diff approved above", at)  # not drawn again
    at = chat.wait_for("Patched.", at)
    chat.wait_for("> ", at)
    assert target.read_text() == 'def greet():\n    return "hello, world"  # \U0001f600 emoji before the edit\n'
    results = _tool_results(fake_anthropic, 1)
    assert results and not results[0].get("is_error"), _text(results[0])
    chat.close_stdin()
    assert chat.wait() == 0


def test_commands_policy_style_help_and_unknown(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo auto > auto.txt"})),
        Reply.text_reply("Ran without asking."),
    )
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/help")
    at = chat.wait_for("/policy POLICY", at)
    chat.send("/bogus")
    at = chat.wait_for("Unknown command /bogus", at)
    chat.send("/style development")
    at = chat.wait_for("[style] development (was chat)", at)
    chat.send("/policy sometimes")
    at = chat.wait_for("Usage: /policy auto|interactive.", at)
    chat.send("/execute")
    at = chat.wait_for("[mode] unrestricted", at)
    chat.send("/policy auto")
    at = chat.wait_for("[approvals] auto (was interactive)", at)
    at = chat.wait_for("> ", at)
    chat.send("make auto.txt")
    at = chat.wait_for("Ran without asking.", at)
    chat.wait_for("> ", at)
    assert "Allow?" not in chat.out
    assert (tmp_path / "work" / "auto.txt").read_text() == "auto\n"
    assert not any("/help" in str(r.body) or "/bogus" in str(r.body) for r in fake_anthropic.requests)
    chat.close_stdin()
    assert chat.wait() == 0


def test_retries_and_errors_are_shown_and_the_prompt_returns(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(Reply.error(529), Reply.text_reply("Recovered after a retry."), Reply.error(401))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("first")
    at = chat.wait_for("[retry] attempt 1/", at)
    at = chat.wait_for("Recovered after a retry.", at)
    at = chat.wait_for("> ", at)
    chat.send("second")
    at = chat.wait_for("[error] ", at)
    chat.wait_for("> ", at)
    chat.close_stdin()
    assert chat.wait() == 0


def test_input_ending_while_a_question_is_open_cancels_the_turn(
    start_chat: StartChat, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "echo no > never.txt"})))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/execute")
    at = chat.wait_for("> ", chat.wait_for("[mode] unrestricted", at))
    chat.send("do it")
    at = chat.wait_for("Allow? [y]es / [n]o / [a]lways: ", at)
    chat.close_stdin()
    assert chat.wait() == 0
    assert "[input ended]" in chat.out and "turn cancelled" in chat.out
    assert not (tmp_path / "work" / "never.txt").exists()


def test_a_dying_server_is_reported_and_the_client_exits_1(start_chat: StartChat, tmp_path: Path) -> None:
    chat = start_chat()
    chat.wait_for("> ")
    (pid,) = _servers_for(tmp_path / "data")
    os.kill(pid, 9)
    at = chat.wait_for("the server stopped unexpectedly")
    chat.wait_for("phoenix-lsp.log", at)
    assert chat.wait() == 1


@pytest.mark.req("REQ-CACHE-008")
def test_usage_command_shows_the_totals_cache_share_and_an_estimated_cost(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("First."), Reply.text_reply("Second."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("hello")
    at = chat.wait_for("> ", chat.wait_for("First.", at))
    chat.send("again")
    at = chat.wait_for("> ", chat.wait_for("Second.", at))
    chat.send("/usage")
    at = chat.wait_for("(an estimate from list prices)", at)
    used = [r.usage for r in fake_anthropic.requests]
    assert all(used)
    read = sum(u["cache_read_input_tokens"] for u in used if u)
    every = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                for u in used if u)
    assert read > 0  # the second request read the first one's prefix
    assert f"[usage] 2 requests (0 by sub-agents): {every:,} input tokens" in chat.out
    assert f"{read:,} read from the cache: {read / every:.0%} cached" in chat.out
    assert "estimated cost: $" in chat.out
    chat.close_stdin()
    assert chat.wait() == 0


@pytest.mark.req("REQ-MODEL-008", "REQ-MODEL-005")
def test_chat_on_an_openai_compatible_server_without_an_anthropic_key_and_model_grouped_by_provider(
    start_chat: StartChat, chat_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.enqueue(Reply.text_reply("Answered by a compatible server.", deltas=3))
    env = {**chat_env, "ANTHROPIC_API_KEY": "", **fake_openai.env(), "PHOENIX_MODEL": "openai/gpt-4.1"}
    chat = start_chat(env=env)
    at = chat.wait_for("> ")
    chat.send("hello")
    at = chat.wait_for("Answered by a compatible server.", at)
    at = chat.wait_for("> ", at)
    chat.send("/model")
    at = chat.wait_for("Switch with /model ID", at)
    shown = chat.out
    anthropic, openai = shown.index("\nanthropic:"), shown.index("\nopenai:")
    assert anthropic < shown.index("claude-sonnet-4-6") < openai < shown.index("* openai/gpt-4.1")
    assert "openai/meta-llama/llama-3.3-70b" in shown[openai:]
    assert fake_openai.requests[0].body["model"] == "gpt-4.1"
    chat.close_stdin()
    assert chat.wait() == 0


@pytest.mark.req("REQ-MODEL-014", "REQ-MODEL-004")
def test_model_list_shows_when_a_deprecated_model_retires_and_offers_no_retired_one(
    start_chat: StartChat, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.models = [
        FakeModel("claude-sonnet-9-0", "Claude Sonnet 9.0", 1_000_000, "2026-09-01T00:00:00Z", "active", "sonnet"),
        FakeModel("claude-sonnet-8-0", "Claude Sonnet 8.0", 1_000_000, "2026-05-01T00:00:00Z", "deprecated", "sonnet",
                  deprecated_at="2026-10-01T00:00:00Z", retires_at="2027-01-15T00:00:00Z"),
        FakeModel("claude-sonnet-7-0", "Claude Sonnet 7.0", 1_000_000, "2026-01-01T00:00:00Z", "retired", "sonnet"),
    ]
    fake_anthropic.enqueue(Reply.text_reply("Hello there."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("hello")  # the conversation started meanwhile asked the Models API
    at = chat.wait_for("> ", chat.wait_for("Hello there.", at))
    chat.send("/model")
    at_list = chat.wait_for("Switch with /model ID", at)
    shown = chat.out[at:at_list]
    assert "claude-sonnet-8-0" in shown and "deprecated, retires 2027-01-15" in shown
    assert "claude-sonnet-7-0" not in shown  # retired: not offered
    line = next(row for row in shown.splitlines() if "claude-sonnet-9-0" in row)
    assert "deprecated" not in line
    chat.send("/model claude-sonnet-7-0")
    chat.wait_for("was retired", at_list)
    chat.close_stdin()
    assert chat.wait() == 0
