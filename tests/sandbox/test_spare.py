"""The spare launcher (REQ-BASH-047): a command handed to a spare gets exactly the sandbox a launcher of its own
gives it, the spare's request is bounded and refused when malformed (nothing runs then), and the split of the
options between the spare and its request is the one launch_options makes."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import build, launch_options, spare, spawn
from phoenix_lsp.sandbox.limits import Limits
from tests.sandbox.conftest import needs_sandbox

pytestmark = needs_sandbox

#: what a command sees of its sandbox: seccomp, no_new_privs, capabilities, its limits, its sessions, its folder,
#: its /tmp, its environment, what it may write
PROBE = ("grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs|CapEff|CapBnd|CapAmb)' /proc/self/status; ulimit -a; "
         "ps -o sid=,pgid= -p $$ | awk '{print ($1==$2)}'; pwd; ls -a /tmp | grep -v phoenix-lsp-scratch; "
         "env | grep -v -E '^(TMPDIR|TMP|TEMP|_)=' | sort; echo x > $TMPDIR/f && echo scratch-ok; "
         "echo x > ../outside 2>/dev/null || echo outside-refused; cat /proc/self/cgroup | grep -c phoenix-")


def _normal(text: str) -> str:
    return re.sub(r"phoenix-\d+", "phoenix-N", text)


@pytest.mark.req("REQ-BASH-047")
async def test_a_spared_command_gets_the_sandbox_of_a_launcher_of_its_own(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_LSP_SANDBOX_LAUNCHER", "compiled")
    build.reset_cache()
    folder = tmp_path / "ws"
    folder.mkdir()
    req = spawn.SpawnRequest(("bash", "-c", PROBE), folder, restricted=True, env={"PATH": os.environ["PATH"]})
    await spawn.run(req, timeout=20)  # so that a spare is made
    assert await asyncio.to_thread(spare.wait_ready, 10)
    (helper,) = spare.pids()
    waiting = _children(helper)
    spared = await spawn.run(req, timeout=20)
    assert {spared.pid} == waiting, "the command was not the spare's child"
    monkeypatch.setenv("PHOENIX_LSP_SANDBOX_SPARE", "0")
    own = await spawn.run(req, timeout=20)
    texts = [_normal(bytes(b"".join(r.capture.parts()[::2])).decode()) for r in (spared, own)]
    assert texts[0] == texts[1]
    assert "scratch-ok" in texts[0] and "outside-refused" in texts[0] and "Seccomp:\t2" in texts[0]
    assert not (tmp_path / "outside").exists()


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1]) == pid:
                    out.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


@pytest.mark.req("REQ-BASH-047")
def test_the_spare_options_are_those_launch_options_gives_a_spare(tmp_path: Path) -> None:
    for limits in (Limits(), Limits(max_processes=64, memory=None, disk=None), Limits(max_processes=None)):
        req = spawn.SpawnRequest(("bash", "-c", "true"), tmp_path, restricted=True, limits=limits)
        args = spawn.launcher_args(req, tmp_path / "scratch")
        words = args[len(build.launcher().argv):]
        options, request = spare.split_options(words)
        assert options == launch_options.spare_args(limits, tmp_path / "scratch")
        assert request[request.index("--"):] == ["--", "bash", "-c", "true"]
        assert sorted(options + request) == sorted(words)


def _spare_helper(extra: list[str]) -> tuple[subprocess.Popen[bytes], socket.socket]:
    ours, theirs = socket.socketpair()
    helper = build.launcher().argv
    popen = subprocess.Popen([*helper, "-R", str(theirs.fileno()), *extra], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}, pass_fds=(theirs.fileno(),))
    theirs.close()
    assert ours.recv(1) == b"R"  # ready
    return popen, ours


def _ended(popen: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Its output and status once it closed them, its lifeline (stdin) held until then."""
    assert popen.stdout is not None and popen.stderr is not None and popen.stdin is not None
    out, err = popen.stdout.read(), popen.stderr.read()
    popen.wait(10)
    popen.stdin.close()
    return out, err


@pytest.mark.req("REQ-BASH-047")
@pytest.mark.parametrize(("request_bytes", "why"), [
    (b"junk" * 8 + b"\n", b"bad request header"),  # no header
    (b"0000000004 0000000000 0000000999\n-C\0/\0--\0true\0", b"request"),  # cut short: end of file
    (b"0000000004 0000000000 0000000013\n-C\0/\0--\0true!", b"bad request body"),  # the last word without its NUL
    (b"0000000004 0000000000 9999999999\n", b"bad request header"),  # past the bound
    (b"0000000005 0000000000 0000000000\n", b"bad request header"),  # fewer bytes than words
    (spare.encode_request(["-w", "1", "--", "true"], {}), b"option not taken here"),  # not a request's option
    (spare.encode_request(["-m", "1", "--", "true"], {}), b"option not taken here"),  # a spare's own option
    (spare.encode_request(["-C", "/"], {}), b"no command"),
], ids=["no-header", "cut", "no-nul", "too-big", "short", "clock", "limit", "no-command"])
def test_a_malformed_request_runs_nothing(tmp_path: Path, request_bytes: bytes, why: bytes,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_LSP_SANDBOX_LAUNCHER", "compiled")
    build.reset_cache()
    witness = tmp_path / "ran"
    popen, ours = _spare_helper([])
    payload = request_bytes.replace(b"true", f"touch {witness}".encode()) if b"touch" in request_bytes else \
        request_bytes
    ours.sendall(payload)
    ours.close()
    _out, err = _ended(popen)
    assert popen.returncode == 125, (popen.returncode, err)
    assert re.search(rb"^error (usage|request) ", err, re.M) and why in err, err
    assert b"started" not in err
    assert not witness.exists()


@pytest.mark.req("REQ-BASH-047")
def test_a_well_formed_request_runs_its_command_with_its_environment(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_LSP_SANDBOX_LAUNCHER", "compiled")
    build.reset_cache()
    popen, ours = _spare_helper([])
    ours.sendall(spare.encode_request(["-C", str(tmp_path), "--", "/bin/sh", "-c", "pwd; echo $GREETING"],
                                      {"GREETING": "hello from the request"}))
    ours.close()
    out, err = _ended(popen)
    assert out.decode().split("\n")[:2] == [str(tmp_path), "hello from the request"], (out, err)
    assert b"started " in err and b"exit 0" in err

