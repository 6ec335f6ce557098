"""Attacks on the spare launcher (REQ-BASH-047): the helper started before the next Restricted command is known,
waiting for it outside the sandbox. It must not be a way in: a running command cannot stop, kill, trace or re-limit
the spare the next command takes; the server's secrets never reach it; it ends with the server; and a spare that is
gone or made for other limits is never what runs a command, which gets a launcher of its own and the sandbox all
the same.

The witnesses are outside the server: /proc (the spare's state, its environment, its cgroups), the files a command
tried to write, and a server process killed for real.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import background, landlock, spare
from phoenix_lsp.sandbox.limits import Limits
from phoenix_lsp.tools.bash import BashContext, run_bash
from tests.sandbox.conftest import PY, needs_sandbox, pid_alive
from tests.waiting import eventually, exited

pytestmark = [needs_sandbox, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _ctx(tmp_path: Path) -> BashContext:
    return BashContext(working_directory=tmp_path, restricted=True, default_timeout_s=20)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "gone"


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


async def _ready_spare(tmp_path: Path) -> tuple[int, int]:
    """Run a Restricted command so that a spare is made, wait until it is ready: (its pid, its waiting child's)."""
    res = await run_bash({"command": "true"}, _ctx(tmp_path))
    assert res.exit_code == 0, res.output
    assert await asyncio.to_thread(spare.wait_ready, 10), "no spare was made after a Restricted command"
    (helper,) = spare.pids()
    (child,) = _children(helper)
    return helper, child


@pytest.mark.req("REQ-BASH-047")
async def test_a_running_command_cannot_touch_the_spare_of_the_next(tmp_path: Path) -> None:
    # The attacker runs in the background while a foreground command ends and the next one's spare is made; once it
    # is told that spare's pids (a file in the folder, which it may read), it stops, kills, re-limits, joins,
    # traces and writes the memory of it.
    told = tmp_path / "pids.txt"
    attack = (
        f"for i in $(seq 400); do [ -s {told} ] && break; sleep 0.05; done; read H C CG < {told}; "
        "kill -STOP $H $C; echo stop=$?; kill -KILL $H $C; echo kill=$?; "
        "echo 1 > /sys/fs/cgroup/pids$CG/pids.max; echo max=$?; "
        "echo 0 > /sys/fs/cgroup/pids$CG/cgroup.procs; echo join=$?; "
        + PY + " -c " + shlex.quote(textwrap.dedent("""
            import ctypes, sys
            child = int(sys.argv[1])
            libc = ctypes.CDLL(None, use_errno=True)
            print('ptrace', libc.ptrace(16, child, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH
            try:
                with open(f'/proc/{child}/mem', 'wb') as f:
                    f.write(b'x')
                print('mem written')
            except OSError as exc:
                print('mem', exc.errno)
        """)) + " $C; echo attack-done")
    ctx = replace(_ctx(tmp_path), conversation_id="c-spare-attack", background_dir=tmp_path / "bg")
    job = await run_bash({"command": attack, "run": "background"}, ctx)
    assert job.outcome == "background" and job.output_file, job.output
    try:
        helper, child = await _ready_spare(tmp_path)
        cgroup = next(line.split(":", 2)[2] for line in Path(f"/proc/{child}/cgroup").read_text().splitlines()
                      if ":pids:" in line)
        told.write_text(f"{helper} {child} {cgroup}\n")
        log = Path(job.output_file)
        report = await eventually(lambda: "attack-done" in log.read_text() and log.read_text(), "the attack ran", 20)
    finally:
        background.kill_background_jobs("c-spare-attack")
    assert "mem written" not in report and "ptrace 0 " not in report, report
    assert "max=0" not in report and "join=0" not in report, report
    assert Path(f"/sys/fs/cgroup/pids{cgroup}/pids.max").read_text().strip() != "1"
    if (landlock.landlock_abi() or 0) >= 6:  # scoped signals: the spare is outside the command's domain
        assert "stop=0" not in report and "kill=0" not in report, report
        # witnesses outside: the spare is alive, not stopped, and still the one kept
        assert _state(helper) in ("S", "R") and _state(child) in ("S", "R"), (_state(helper), _state(child))
        assert spare.pids() == {helper}
    # whatever happened to it, the next command runs, and in the sandbox
    outside = tmp_path / "outside.txt"
    nxt = await run_bash({"command": f"echo next; echo x > {outside}; echo wrote=$?"}, _ctx(tmp_path))
    assert "next" in nxt.output and "wrote=0" not in nxt.output, nxt.output
    assert not outside.exists()


@pytest.mark.req("REQ-BASH-047")
async def test_the_server_secrets_never_reach_the_spare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "spare-secret-" + os.urandom(6).hex()
    monkeypatch.setenv("PHOENIX_SPARE_TEST_TOKEN", secret)
    monkeypatch.setenv("PHOENIX_SPARE_TEST_PLAIN", "plain-" + secret[-12:])
    spare.discard()
    helper, child = await _ready_spare(tmp_path)
    for pid in (helper, child):  # the witness: the spare's environment as the kernel keeps it
        assert Path(f"/proc/{pid}/environ").read_bytes() == b"", pid
    res = await run_bash({"command": "env"}, _ctx(tmp_path))
    assert secret not in res.output
    assert "PHOENIX_SPARE_TEST_PLAIN=plain-" in res.output  # the command's own environment came with its request
    assert "PHOENIX_LSP_SANDBOX=restricted" in res.output


@pytest.mark.req("REQ-BASH-047")
async def test_a_spare_that_is_gone_or_made_for_other_limits_runs_nothing(tmp_path: Path) -> None:
    helper, child = await _ready_spare(tmp_path)
    os.kill(child, signal.SIGKILL)  # killed by someone while it waits
    assert await exited([child], 5) == []
    outside = tmp_path / "outside.txt"
    res = await run_bash({"command": f"echo ran; echo x > {outside}; echo wrote=$?"}, _ctx(tmp_path))
    assert res.exit_code == 0 and "ran" in res.output and "wrote=0" not in res.output, res.output
    assert not outside.exists()
    assert await exited([helper], 5) == []  # let go, not used
    # a spare made for 1024 processes does not run a command limited to 64: its own launcher, its own cgroup
    await eventually(lambda: spare.wait_ready(0), "the next spare is ready")
    kept = spare.pids()
    limited = replace(_ctx(tmp_path), limits=Limits(max_processes=64))
    res = await run_bash({"command": "cat /sys/fs/cgroup/pids$(grep :pids: /proc/self/cgroup | cut -d: -f3)/pids.max"},
                         limited)
    assert res.output.strip() == "64", res.output
    assert await exited(list(kept), 5) == []  # let go: made for other limits


@pytest.mark.req("REQ-BASH-047")
async def test_the_spare_ends_with_the_server(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        from phoenix_lsp.sandbox import spare
        from phoenix_lsp.tools.bash import BashContext, run_bash
        async def main():
            ctx = BashContext(working_directory=Path({str(tmp_path)!r}), restricted=True)
            await run_bash({{"command": "true"}}, ctx)
            assert spare.wait_ready(10)
            print(*spare.pids(), flush=True)
            await asyncio.sleep(300)
        asyncio.run(main())
    """))
    server = subprocess.Popen([sys.executable, str(script)], cwd=str(ROOT), stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(server.stdout.readline), 30)
        (helper,) = [int(word) for word in line.split()]
        (child,) = _children(helper)
        assert pid_alive(helper) and pid_alive(child)
        server.send_signal(signal.SIGKILL)  # no cleanup of any kind
        server.wait()
        assert await exited([helper, child], 5) == [], "the spare outlived the server"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
