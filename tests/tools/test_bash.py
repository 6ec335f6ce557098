"""The bash tool: REQ-BASH-001, 003..006, 008 (error reporting), 009, 010 and input validation."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import SandboxSupport, landlock, probe, protections
from phoenix_lsp.tools.bash import BashContext, run_bash
from phoenix_lsp.tools.registry import REGISTRY
from tests.waiting import eventually

SUPPORT = probe()
needs_sandbox = pytest.mark.skipif(not SUPPORT.available, reason="no kernel sandbox here")
BOTH = [pytest.param(True, id="restricted", marks=needs_sandbox), pytest.param(False, id="unrestricted")]


def ctx_for(path: Path, restricted: bool, **kw: Any) -> BashContext:
    return BashContext(working_directory=path, restricted=restricted, **kw)


@pytest.mark.req("REQ-BASH-001")
@pytest.mark.parametrize("restricted", BOTH)
async def test_runs_bash_c_in_the_working_directory_with_combined_output(tmp_path: Path,
                                                                          restricted: bool) -> None:
    res = await run_bash({"command": "pwd; echo out; echo err >&2; echo out2; [[ -n $BASH_VERSION ]] && "
                                     "echo is-bash"}, ctx_for(tmp_path, restricted))
    assert res.output == f"{tmp_path}\nout\nerr\nout2\nis-bash\n"  # ordered as written
    assert res.exit_code == 0 and not res.is_error and res.outcome == "exited"


@pytest.mark.req("REQ-BASH-001")
async def test_output_over_128k_is_cut_in_the_middle(tmp_path: Path) -> None:
    cmd = "printf 'H%.0s' $(seq 4096); printf 'm%.0s' $(seq 200000); printf 'T%.0s' $(seq 4096)"
    res = await run_bash({"command": cmd}, ctx_for(tmp_path, False))
    head, _, rest = res.output.partition("\n\n[... ")
    assert head == "H" * 4096
    marker, _, tail = rest.partition("...]\n\n")
    assert marker.startswith("200000 bytes cut from the middle of 208192 bytes")
    assert tail == "T" * 4096
    assert res.truncated


@pytest.mark.req("REQ-BASH-001")
async def test_output_up_to_128k_is_whole(tmp_path: Path) -> None:
    res = await run_bash({"command": "head -c 131072 /dev/zero | tr '\\0' x"}, ctx_for(tmp_path, False))
    assert res.output == "x" * 131072 and not res.truncated


@pytest.mark.req("REQ-BASH-003")
@pytest.mark.parametrize("restricted", BOTH)
async def test_background_returns_at_once_with_pid_group_and_output_file(tmp_path: Path,
                                                                         restricted: bool) -> None:
    ctx = ctx_for(tmp_path, restricted, background_dir=tmp_path / "bg", conversation_id="bg-test")
    # the command ends only once the test lets it (a file appears in its working directory): a return before
    # that did not wait for it, however long the sandboxed launcher took to start (a time bound failed at load 20)
    go = tmp_path / "go"
    res = await asyncio.wait_for(  # a hang guard: the command cannot end before the test lets it
        run_bash({"command": "echo begin; until [ -e go ]; do sleep 0.01; done; echo end; exit 3",
                  "run": "background"}, ctx), 60)
    assert res.output_file and "end" not in Path(res.output_file).read_text(), "did not wait for the command"
    go.touch()
    assert res.outcome == "background" and not res.is_error
    assert res.pid and res.pgid == res.pid and os.getpgid(res.pid) == res.pid
    assert res.output_file and str(res.pid) in res.output and res.output_file in res.output
    out = Path(res.output_file)
    await eventually(lambda: "finished" in out.read_text(), "the launcher recorded the end", 30)
    text = out.read_text()
    assert text.startswith("begin\nend\n")
    assert "background command finished: exit code 3" in text


@pytest.mark.req("REQ-BASH-003")
async def test_background_cap_per_conversation(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path, False, background_dir=tmp_path / "bg", conversation_id="cap", background_limit=2)
    first = [await run_bash({"command": "sleep 30", "run": "background"}, ctx) for _ in range(2)]
    try:
        third = await run_bash({"command": "sleep 30", "run": "background"}, ctx)
        assert third.error_id == "bash.background_limit" and third.is_error
        assert str(first[0].pid) in third.output
        other = await run_bash({"command": "true", "run": "background"},
                               replace(ctx, conversation_id="another"))
        assert other.outcome == "background"
    finally:
        from phoenix_lsp.sandbox import background

        background.kill_background_jobs("cap")
        background.kill_background_jobs("another")


@pytest.mark.req("REQ-BASH-004")
@pytest.mark.parametrize("restricted", BOTH)
async def test_no_tty_and_empty_stdin(tmp_path: Path, restricted: bool) -> None:
    cmd = ("cat; echo \"stdin-done\"; tty; read -r x || echo read-eof; "
           "awk '{print \"tty_nr=\" $7}' /proc/self/stat; ps -o sid= -p $$; echo $$")
    res = await asyncio.wait_for(run_bash({"command": cmd}, ctx_for(tmp_path, restricted)), 10)
    lines = res.output.split("\n")
    assert lines[0] == "stdin-done"  # cat saw EOF at once
    assert "not a tty" in res.output and "read-eof" in res.output
    assert "tty_nr=0" in res.output  # no controlling terminal
    sid, pid = lines[-3].strip(), lines[-2].strip()
    assert sid == pid  # bash leads its own session (setsid)
    res = await run_bash({"command": "exec 3</dev/tty"}, ctx_for(tmp_path, restricted))
    # No controlling terminal (ENXIO); in Restricted /dev/tty is not even on the device allow-list (EACCES).
    expected = "Permission denied" if restricted else "No such device or address"
    assert res.is_error and expected in res.output


@pytest.mark.req("REQ-BASH-005")
def test_schema() -> None:
    definition = REGISTRY.tools["bash"].definition("/w")
    schema = definition["input_schema"]
    props = schema["properties"]
    assert definition["name"] == "bash"
    assert props["command"]["type"] == "string" and schema["required"] == ["command"]
    assert set(props) == {"command", "run"}  # not "mode": that word is the conversation's (specs/modes.md)
    assert props["run"]["enum"] == ["default", "slow", "background"] and props["run"]["default"] == "default"
    assert schema["additionalProperties"] is False
    desc = definition["description"]
    for words in ("30 seconds", "15 minutes", "128 KB", "Restricted", "Landlock", "no network",
                  "Permission denied", "Operation not permitted", "request_mode_upgrade", "do not retry"):
        assert words in desc


@pytest.mark.req("REQ-BASH-005", "REQ-BED-017")
def test_description_states_the_working_directory_and_never_depends_on_mode(tmp_path: Path) -> None:
    definition = REGISTRY.tools["bash"].definition(str(tmp_path))
    assert definition["description"].endswith(f"Working directory: {tmp_path}")
    # the only input is the directory: there is no way to give it a mode, by construction
    assert REGISTRY.tools["bash"].definition(str(tmp_path)) == definition


@pytest.mark.req("REQ-BASH-005")
async def test_the_timeout_note_names_the_run_field(tmp_path: Path) -> None:
    res = await run_bash({"command": "sleep 5"}, ctx_for(tmp_path, False, default_timeout_s=0.2))
    assert res.error_id == "bash.timeout" and "(run 'default')" in res.output and 'Use run "slow"' in res.output


@pytest.mark.req("REQ-BASH-006")
@pytest.mark.parametrize("restricted", BOTH)
async def test_exit_code_versus_system_error(tmp_path: Path, restricted: bool) -> None:
    res = await run_bash({"command": "echo partial; exit 7"}, ctx_for(tmp_path, restricted))
    assert res.outcome == "exited" and res.exit_code == 7 and res.is_error and res.error_id is None
    assert res.output == "partial\n[exit code 7]"
    res = await run_bash({"command": "true"}, ctx_for(tmp_path / "missing", restricted))
    assert res.outcome == "system_error" and res.exit_code is None and res.error_id == "bash.spawn_failed"
    assert "did not run" in res.output and "working directory" in res.output


@pytest.mark.req("REQ-BASH-006", "REQ-BASH-008")
@needs_sandbox
async def test_sandbox_setup_failure_is_a_system_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ask the real kernel for a Landlock right it does not know: landlock_create_ruleset fails (EINVAL).
    real = landlock.fs_rights
    monkeypatch.setattr(landlock, "fs_rights", lambda abi: real(abi) | (1 << 60))
    marker = tmp_path / "ran"
    res = await run_bash({"command": f"touch {marker}"}, ctx_for(tmp_path, True))
    assert res.outcome == "system_error" and res.error_id == "bash.sandbox_setup_failed"
    assert "Landlock" in res.output and "EINVAL" in res.output and "retrying will not help" in res.output
    assert not marker.exists()  # never ran, in particular never ran unsandboxed


@pytest.mark.req("REQ-BASH-008")
@needs_sandbox
async def test_kernel_errors_reach_the_model_unchanged_with_a_note(tmp_path: Path) -> None:
    res = await run_bash({"command": "echo x > f.txt; echo y > /dev/tcp/127.0.0.1/9"}, ctx_for(tmp_path, True))
    assert "f.txt: Permission denied" in res.output  # the kernel's EACCES, as bash prints it
    assert "socket: Operation not permitted" in res.output  # seccomp's EPERM
    assert res.sandbox_refused and "request_mode_upgrade" in res.output and "do not retry" in res.output
    assert res.output.count("Permission denied") == 2  # once from bash, once quoted by the note: no retry
    res = await run_bash({"command": "echo x > f.txt"}, ctx_for(tmp_path, False))
    assert not res.is_error and (tmp_path / "f.txt").read_text() == "x\n"  # same write, Unrestricted


@pytest.mark.req("REQ-BASH-009")
async def test_restricted_without_landlock_is_an_error_explaining_the_kernel(tmp_path: Path) -> None:
    degraded = SandboxSupport(False, None, True, protections.missing_protections(None, True),
                              "this kernel does not offer Landlock (test double)")
    marker = tmp_path / "ran"
    res = await run_bash({"command": f"touch {marker}"}, ctx_for(tmp_path, True, sandbox=degraded))
    assert res.outcome == "system_error" and res.error_id == "bash.sandbox_unavailable"
    assert not marker.exists()


@pytest.mark.req("REQ-BASH-010")
async def test_stateless_everything_comes_from_the_context(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    cmd = {"command": "cd /; export X=1; pwd_before=$PWD; echo $PWD"}
    await run_bash(cmd, ctx_for(a, False))
    results = await asyncio.gather(*(run_bash({"command": "pwd; echo ${X:-unset}"}, ctx_for(d, r))
                                     for d in (a, b, a, b)
                                     for r in ([True, False] if SUPPORT.available else [False])))
    outs = [r.output for r in results]
    assert all(o in (f"{a}\nunset\n", f"{b}\nunset\n") for o in outs)
    assert sum(o.startswith(str(a)) for o in outs) == len(outs) // 2


@pytest.mark.parametrize("bad", [
    None, "ls", 42, [], {}, {"command": None}, {"command": 3}, {"command": ""}, {"command": "   "},
    {"command": "ls", "run": "fast"}, {"command": "ls", "run": 1}, {"command": "ls", "extra": 1},
    {"command": "echo \x00"}, {"cmd": "ls"}, {"command": "ls", "mode": "slow"},
])
@pytest.mark.req("REQ-BASH-005")
async def test_invalid_input_is_an_error_result_never_an_exception(tmp_path: Path, bad: Any) -> None:
    res = await run_bash(bad, ctx_for(tmp_path, False))
    assert res.is_error and res.error_id == "bash.invalid_input" and res.outcome == "system_error"
    assert res.output.startswith("Invalid bash input: ") and "send it again" in res.output


@pytest.mark.req("REQ-BASH-005", "REQ-SEC-002")
@pytest.mark.parametrize(("bad", "expected"), [
    (None, "the input must be a JSON object (with command, run), not null"),
    ({"command": 3}, "'command' must be a string, not the number 3"),
    ({"command": "   "}, "'command' must not be empty or only whitespace"),
    ({"command": "echo \x00"}, "'command' contains a NUL byte"),
    ({"cmd": "ls"}, "'command' is required (The shell command to run with bash -c); unknown field 'cmd'"),
    ({"command": "ls", "run": "fast"}, "'run' must be one of 'default', 'slow' or 'background', not \"fast\""),
    ({"command": "ls", "mode": "slow"}, "unknown field 'mode' (the fields are: command, run)"),
])
async def test_invalid_input_names_the_field_and_what_is_wrong(tmp_path: Path, bad: Any, expected: str) -> None:
    res = await run_bash(bad, ctx_for(tmp_path, False))
    assert expected in res.output
