"""``phoenix-lsp run`` end to end, as a CI job uses it (issue 38, specs/run.md): the real command in a subprocess,
the real store, sandbox and SDK, against the fake Anthropic API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from phoenix_lsp import limits
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

from .harness import Runner, lines, result

CREATE = {"path": "made.txt", "patches": [{"operation": "append_eof", "newText": "made by the model\n"}]}


def _texts(body: dict) -> str:  # type: ignore[type-arg]
    return json.dumps(body["messages"], ensure_ascii=False)


@pytest.mark.req("REQ-RUN-001")
@pytest.mark.req("REQ-RUN-003")
def test_text_prints_the_answer_only(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("The answer is **42**.", deltas=4))
    done = run("what is the answer?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The answer is **42**.\n"  # the answer, nothing else on stdout
    assert "what is the answer?" in _texts(fake_anthropic.requests[0].body)


@pytest.mark.req("REQ-RUN-003")
@pytest.mark.req("REQ-RUN-004")
def test_json_is_one_result_object(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Done.", deltas=2))
    done = run("--output-format", "json", "do it")
    assert done.returncode == 0, done.stderr
    value = result(done.stdout)
    assert value["status"] == "success" and value["exitCode"] == 0 and value["answer"] == "Done."
    assert value["conversationStatus"] == "idle" and value["mode"] == "restricted" and value["denied"] == []
    assert value["turns"] == 1 and value["usage"]["total"]["requests"] == 1
    assert value["usage"]["estimatedCost"]["usd"] > 0
    assert len(value["sessionId"]) == 32


@pytest.mark.req("REQ-RUN-003")
def test_stream_json_is_the_clients_events_then_the_result(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."}, id="toolu_ls")),
                           Reply.text_reply("Two files.", deltas=3))
    (run.work / "a.txt").write_text("a\n")
    done = run("--output-format", "stream-json", "what is here?")
    assert done.returncode == 0, done.stderr
    parsed = lines(done.stdout)  # every line valid against the schema
    kinds = [line["kind"] for line in parsed]
    assert kinds[-1] == "result" and kinds.count("result") == 1
    assert {"message", "status", "textDelta", "toolStart", "toolEnd", "usage"} <= set(kinds)
    events = parsed[:-1]
    # the same events every client gets: those the store keeps for catch-up, in order
    assert events == run.stored_events(parsed[-1]["sessionId"])
    assert parsed[-1]["answer"] == "Two files." and parsed[-1]["turns"] == 2


@pytest.mark.req("REQ-RUN-002")
def test_the_prompt_from_stdin(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("one"), Reply.text_reply("two"))
    assert run(stdin=b"from a pipe, absent").returncode == 0
    assert run("-", stdin=b"from a pipe, dash").returncode == 0
    sent = [_texts(r.body) for r in fake_anthropic.requests]
    assert "from a pipe, absent" in sent[0] and "from a pipe, dash" in sent[1]


@pytest.mark.req("REQ-RUN-002")
def test_stdin_beside_a_prompt_is_context(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("It fails on line 3."))
    done = run("why does this fail?", stdin=b"Traceback: line 3 ZeroDivisionError\n")
    assert done.returncode == 0, done.stderr
    sent = _texts(fake_anthropic.requests[0].body)
    assert "why does this fail?" in sent and "ZeroDivisionError" in sent and "standard input" in sent


@pytest.mark.req("REQ-RUN-002")
def test_stdin_over_its_bound_is_refused_unsent(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    done = run(stdin=b"x" * (limits.RUN_STDIN_MAX_BYTES + 1))
    assert done.returncode == 2
    assert f"more than {limits.RUN_STDIN_MAX_BYTES:,} bytes" in done.stderr and done.stdout == ""
    assert fake_anthropic.requests == []


@pytest.mark.req("REQ-RUN-005")
def test_exit_codes(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    # 2: usage or configuration
    for args in (["--resume", "0123456789abcdef", "hi"], ["--allow", "pacth", "hi"], ["--max-turns", "0", "hi"],
                 ["--continue", "hi"], ["--model", "nosuchprovider/x", "hi"], ["   "]):
        done = run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == "" and done.stderr.startswith("phoenix-lsp run: "), args
    assert fake_anthropic.requests == []
    # 1: the turn failed (the model service refused the request)
    fake_anthropic.enqueue(Reply.error(400, "the request was refused"))
    failed = run("--output-format", "json", "hi")
    assert failed.returncode == 1
    assert result(failed.stdout)["status"] == "failed" and "refused" in failed.stderr
    # 3: the turn limit: the model asks for a second response, which is not made
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."})),
                           Reply.text_reply("never asked for"))
    limited = run("--max-turns", "1", "--output-format", "json", "look around")
    assert limited.returncode == 3, limited.stderr
    assert result(limited.stdout)["status"] == "limit" and "--max-turns" in limited.stderr
    assert len(fake_anthropic.requests) == 2  # the failed run's and the limited run's first: no second one


@pytest.mark.req("REQ-RUN-004")
@pytest.mark.req("REQ-RUN-006")
def test_an_approval_is_denied_at_once_and_listed(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("patch", CREATE, id="toolu_patch"),
                         ToolUseBlock("bash", {"command": "touch ran.txt"}, id="toolu_bash")),
        Reply.text_reply("I could not."))
    done = run("--mode", "unrestricted", "--output-format", "json", "make the files")
    assert done.returncode == 0, done.stderr
    value = result(done.stdout)
    denied = {d["toolUseId"]: d for d in value["denied"]}
    assert set(denied) == {"toolu_patch", "toolu_bash"}
    assert denied["toolu_patch"]["allowRule"] == "patch" and denied["toolu_bash"]["arguments"] == {
        "command": "touch ran.txt"}
    # the witnesses: nothing was written, nothing ran, and the model was told why
    assert not (run.work / "made.txt").exists() and not (run.work / "ran.txt").exists()
    assert "headless run" in _texts(fake_anthropic.requests[1].body)


@pytest.mark.req("REQ-RUN-006")
def test_an_upgrade_request_is_refused_and_listed(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "to write made.txt"}, id="toolu_up")),
        Reply.text_reply("Staying read-only."))
    done = run("--output-format", "json", "make the file")
    assert done.returncode == 0, done.stderr
    value = result(done.stdout)
    assert value["mode"] == "restricted"
    assert [(d["kind"], d["toolName"]) for d in value["denied"]] == [("upgrade", "request_mode_upgrade")]


@pytest.mark.req("REQ-RUN-006")
@pytest.mark.req("REQ-RUN-007")
def test_allow_lets_a_covered_call_run(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("patch", CREATE, id="toolu_patch"),
                         ToolUseBlock("bash", {"command": "touch ran.txt"}, id="toolu_bash")),
        Reply.text_reply("Made one."))
    done = run("--mode", "unrestricted", "--allow", "bash: git status *", "--allow", "patch",
               "--output-format", "json", "make the files")
    assert done.returncode == 0, done.stderr
    value = result(done.stdout)
    assert (run.work / "made.txt").read_text() == "made by the model\n"  # written by the run, as an editor would
    assert [d["toolUseId"] for d in value["denied"]] == ["toolu_bash"]  # git status * does not cover touch
    assert not (run.work / "ran.txt").exists()


@pytest.mark.req("REQ-RUN-008")
def test_resume_and_continue_go_on_with_the_conversation(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("First answer."), Reply.text_reply("Second answer."),
                           Reply.text_reply("Third answer."))
    first = result(run("--output-format", "json", "first question").stdout)
    second = run("--resume", first["sessionId"], "--output-format", "json", "second question")
    assert second.returncode == 0, second.stderr
    assert result(second.stdout)["sessionId"] == first["sessionId"]
    sent = _texts(fake_anthropic.requests[1].body)
    assert "first question" in sent and "First answer." in sent and "second question" in sent
    third = run("--continue", "--output-format", "json", "third question")
    assert result(third.stdout)["sessionId"] == first["sessionId"]
    sent = _texts(fake_anthropic.requests[2].body)
    assert "second question" in sent and "Second answer." in sent and "third question" in sent


def _processes() -> dict[int, tuple[int, str]]:
    """Every process: pid -> (parent pid, command line)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            continue  # a zombie has ended
        found[int(proc.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return found


def _descendants(pid: int) -> dict[int, str]:
    table = _processes()
    found: dict[int, str] = {}
    parents = {pid}
    while True:
        more = {p: cmd for p, (ppid, cmd) in table.items() if ppid in parents and p not in found}
        if not more:
            return found
        found.update(more)
        parents = set(more)


def _until_running(proc: subprocess.Popen[bytes], marker: str) -> dict[int, str]:
    """The run's processes once the sandboxed command ``marker`` is among them (polled: a process has no event
    to wait for; the command runs for minutes, so it is found long before it could end)."""
    for _ in range(600):
        children = _descendants(proc.pid)
        if any(marker in cmd for cmd in children.values()):
            return children
        time.sleep(0.05)
    raise AssertionError(f"the command {marker!r} never started")


@pytest.mark.req("REQ-RUN-009")
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_killed_run_leaves_nothing_running_and_nothing_lost(run: Runner, fake_anthropic: FakeAnthropic,
                                                              signum: str) -> None:
    marker = f"sleep 300.{os.getpid()}{len(signum)}"  # the sandboxed process's own command line names it
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": marker},
                                                         id="toolu_sleep"), text="Waiting a while."))
    proc = run.start("--output-format", "stream-json", "wait")
    assert proc.stdout is not None
    printed = []
    for raw in proc.stdout:  # the events as they come, until the command starts
        printed.append(json.loads(raw))
        if printed[-1].get("kind") == "toolStart":
            break
    running = _until_running(proc, marker)
    proc.send_signal(getattr(signal, signum))
    rest, err = proc.communicate(timeout=60)
    printed += [json.loads(line) for line in rest.decode().splitlines()]
    assert proc.returncode == (143 if signum == "SIGTERM" else 130), err.decode()
    assert printed[-1]["kind"] == "result" and printed[-1]["status"] == "killed"
    left = {pid: cmd for pid, (_ppid, cmd) in _processes().items() if running.get(pid) == cmd}
    assert left == {}  # the sandboxed command, and every other process the run started, went with it
    stored = run.stored_events(printed[-1]["sessionId"])
    assert printed[:-1] == stored  # everything streamed is stored, and the cancel too
    assert [e["status"] for e in stored if e["kind"] == "status"][-1] == "idle"  # the turn was cancelled
    assert [e.get("summary") for e in stored if e["kind"] == "toolEnd"] == ["cancelled"]
    assert any(e["kind"] == "textDelta" and "Waiting" in e["text"] for e in stored)


@pytest.mark.req("REQ-RUN-001")
def test_model_and_route_reach_the_request(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("asked"), Reply.text_reply("planned"))
    assert run("--model", "claude-haiku-4-5", "--route", "ask", "one").returncode == 0
    assert run("--route", "agent", "two").returncode == 0
    ask, agent = fake_anthropic.requests
    assert ask.body["model"] == "claude-haiku-4-5"
    assert "run_plan" not in (ask.tool_names or []) and "run_plan" in (agent.tool_names or [])


@pytest.mark.req("REQ-RUN-007")
def test_a_commands_changes_land_only_with_their_own_rule(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    """In Unrestricted a command's writes are held back and asked about as a patch (REQ-BASH-032): the run
    denies that question unless --allow patch covers it; the server then places the changes whole."""
    for name, allow in (("denied.txt", ["--allow", "bash"]), ("landed.txt", ["--allow", "bash", "--allow", "patch"])):
        fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": f"echo made > {name}"})),
                               Reply.text_reply("done"))
        done = run("--mode", "unrestricted", *allow, "--output-format", "json", f"make {name}")
        assert done.returncode == 0, done.stderr
        value = result(done.stdout)
        if name == "denied.txt":
            assert not (run.work / name).exists()
            assert [(d["toolName"], d["allowRule"]) for d in value["denied"]] == [("patch", "patch")]
        else:
            assert (run.work / name).read_text() == "made\n" and value["denied"] == []


@pytest.mark.req("REQ-RUN-008")
def test_resume_restores_a_conversation_left_inside_a_turn(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    """A run killed outright (SIGKILL: nothing can be done) leaves its conversation running a tool in the store;
    the next run restores it before it sends its own prompt."""
    marker = f"sleep 300.{os.getpid()}9"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": marker}, id="toolu_sleep")),
                           Reply.text_reply("Going on."))
    proc = run.start("--output-format", "stream-json", "wait")
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    running = _until_running(proc, marker)
    proc.kill()
    proc.communicate(timeout=60)
    for pid, cmd in running.items():  # what SIGKILL left behind is ours to end
        if marker in cmd and _processes().get(pid, (0, ""))[1] == cmd:
            os.kill(pid, signal.SIGKILL)
    stored = run.stored_events(first["conversationId"])
    assert [e["status"] for e in stored if e["kind"] == "status"][-1] == "running_tool"
    done = run("--resume", first["conversationId"], "--output-format", "json", "go on")
    assert done.returncode == 0, done.stderr
    assert result(done.stdout)["answer"] == "Going on."
    sent = _texts(fake_anthropic.requests[1].body)
    assert "toolu_sleep" in sent and "go on" in sent  # the interrupted call answered, then the new prompt


@pytest.mark.req("REQ-RUN-003")
def test_a_reader_that_leaves_early_does_not_stop_the_turn(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    """``phoenix-lsp run --output-format stream-json | head -1``: the rest of the stream is dropped, the turn goes
    on to its end and is stored, and the run exits as it would have."""
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."})),
                           Reply.text_reply("All there.", deltas=5))
    proc = run.start("--output-format", "stream-json", "look")
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()
    try:
        code = proc.wait(timeout=90)  # its stderr holds a few warnings at most: the pipe does not fill
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, proc.stderr.read().decode()
    stored = run.stored_events(first["conversationId"])
    assert [e["status"] for e in stored if e["kind"] == "status"][-1] == "idle"
    assert any(e["kind"] == "message" and "All there." in json.dumps(e) for e in stored)


@pytest.mark.req("REQ-RUN-006")
@pytest.mark.req("REQ-MCP-009")
def test_a_project_mcp_server_never_starts_without_a_person(run: Runner, fake_anthropic: FakeAnthropic,
                                                            tmp_path: Path) -> None:
    """A cloned repository's .mcp.json is a command line chosen by whoever wrote it: a headless run has nobody to
    ask, so the server is not started (its witness file stays absent), its tools are not offered, and stderr says
    why and what to do."""
    from tests.tools.tracker import project_server, starts

    (run.work / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": project_server(tmp_path)}}),
                                        encoding="utf-8")
    fake_anthropic.enqueue(Reply.text_reply("No tracker here.", deltas=2))
    done = run("what is open in the tracker?")
    assert done.returncode == 0, done.stderr
    assert starts(tmp_path) == 0
    assert "mcp__tracker__" not in json.dumps(fake_anthropic.requests[0].body.get("tools", []))
    assert "was not started" in done.stderr and "tracker" in done.stderr


@pytest.mark.req("REQ-RUN-001")
@pytest.mark.req("REQ-MODEL-004")
def test_a_new_run_starts_on_the_newest_sonnet_the_api_lists(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    """No model chosen: the run's first (and only) request goes to the newest active Sonnet of the Models API's
    list, not the built-in table's default, although it leaves right after the start."""
    from tests.fake_anthropic import FakeModel

    fake_anthropic.models = [
        FakeModel("claude-opus-9-1", "Claude Opus 9.1", 1_000_000, "2026-10-01T00:00:00Z", "active", "opus"),
        FakeModel("claude-sonnet-9-0", "Claude Sonnet 9.0", 1_000_000, "2026-09-01T00:00:00Z", "active", "sonnet"),
        FakeModel("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000, "2026-02-17T00:00:00Z", "active", "sonnet"),
    ]
    fake_anthropic.enqueue(Reply.text_reply("On the listed default.", deltas=2))
    done = run("--output-format", "json", "hello")
    assert done.returncode == 0, done.stderr
    assert fake_anthropic.requests[-1].body["model"] == "claude-sonnet-9-0"
    assert result(done.stdout)["model"] == "claude-sonnet-9-0"


@pytest.mark.req("REQ-RUN-008")
def test_resume_refuses_another_folders_conversation(run: Runner, fake_anthropic: FakeAnthropic,
                                                     tmp_path: Path) -> None:
    """A conversation's edits and commands belong to its folder: resumed from another one it is refused as a usage
    error naming the command that goes on with it there (as the terminal chat does), and nothing is sent."""
    fake_anthropic.enqueue(Reply.text_reply("First answer."))
    first = result(run("--output-format", "json", "first question").stdout)
    other = tmp_path / "other"
    other.mkdir()
    done = run("--cwd", str(other), "--resume", first["sessionId"], "second question")
    assert done.returncode == 2, done.stderr
    assert f"--cwd {run.work}" in done.stderr and first["sessionId"] in done.stderr
    assert len(fake_anthropic.requests) == 1
