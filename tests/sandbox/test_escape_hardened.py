"""The escape suite of issue 12: classes that got through the first sandbox, each closed and proven by more
than one attack, each judged by a witness outside the sandbox (the other end of a terminal, /proc of an
outside process, system-wide counters, the disk, a lock taken from outside), with both launchers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import os
import pty
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import background, cgroups, outcome, spare, spawn, watch
from phoenix_lsp.sandbox import scratch as scratch_mod
from phoenix_lsp.sandbox.limits import Limits
from phoenix_lsp.sandbox.scratch import remove_tree
from phoenix_lsp.tools.bash import BashContext, run_bash
from tests.waiting import eventually

from .conftest import IS_ROOT, Runner, needs_sandbox, pid_alive, py, run_while_watching

pytestmark = [needs_sandbox, pytest.mark.usefixtures("launcher")]

SECRET = "s3cr3t-" + secrets.token_hex(6)


# ------------------------------------------------------------------------------------------ devices


@pytest.mark.req("REQ-BASH-015")
async def test_reading_another_terminal(restricted: Runner) -> None:
    master, slave = pty.openpty()
    try:
        os.write(master, f"{SECRET}\n".encode())  # what the user typed into that terminal
        name = os.ttyname(slave)
        res = await restricted(f"timeout 2 cat {name}; timeout 2 head -n 1 < {name}; "
                               + py(f"print(open({name!r}).readline())"))
        assert SECRET not in res.output and "Permission denied" in res.output
        os.set_blocking(slave, False)
        assert SECRET.encode() in os.read(slave, 1024)  # the keystrokes are still there, unread
    finally:
        os.close(master)
        os.close(slave)


def _ptys_in_use() -> int:
    return int(Path("/proc/sys/kernel/pty/nr").read_text())


@pytest.mark.req("REQ-BASH-015")
async def test_pty_exhaustion(restricted: Runner) -> None:
    before = _ptys_in_use()
    peak = [before]

    def witness() -> None:
        peak[0] = max(peak[0], _ptys_in_use())

    code = ("import os, time\nfds = []\ntry:\n    for _ in range(64): fds.append(os.open('/dev/ptmx', os.O_RDWR))\n"
            "except OSError as e: print('refused', e)\ntime.sleep(0.5)")
    res = await run_while_watching(restricted(py(code) + "; script -qc true /dev/null"), witness)
    assert peak[0] < before + 5  # other engineers' terminals may come and go; 64 would show
    assert "refused" in res.output


@pytest.mark.req("REQ-BASH-015")
async def test_other_programs_shared_memory_and_devices(restricted: Runner) -> None:
    shm = Path(f"/dev/shm/phoenix-private-{secrets.token_hex(4)}")
    shm.write_text(SECRET)
    try:
        res = await restricted(f"cat {shm}; ls /dev/shm; head -c 16 /dev/vda 2>&1 | od | head -1; "
                               "cat /dev/tty; cat /dev/kmsg | head -1")
        assert SECRET not in res.output
        assert res.output.count("Permission denied") >= 3
    finally:
        shm.unlink()


@pytest.mark.req("REQ-BASH-015")
async def test_allowed_devices_still_work(restricted: Runner) -> None:
    res = await restricted("head -c 8 /dev/urandom | wc -c; head -c 8 /dev/random | wc -c; "
                           "head -c 8 /dev/zero | od -An -tx1; echo gone > /dev/null; "
                           "echo x | cat /dev/stdin; cat /dev/fd/0 < /dev/null; echo | cat - /dev/null; "
                           "(echo full > /dev/full) 2>&1 | grep -c 'No space'")
    assert res.exit_code == 0, res.output
    assert res.output.split("\n")[:2] == ["8", "8"] and "00 00 00" in res.output and "\nx\n" in res.output


# ------------------------------------------------------------------------------------- deny-read


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home with credentials, phoenix-lsp's data and an ordinary file (the control)."""
    home = tmp_path / "home"
    for rel in (".ssh/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml", ".netrc",
                ".mozilla/firefox/p/cookies.sqlite", ".local/share/phoenix-lsp/phoenix.db"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"{SECRET} {rel}\n")
    (home / "notes.txt").write_text("ordinary notes\n")
    (home / ".config" / "app.toml").write_text("ordinary config\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("PHOENIX_LSP_DATA_DIR", raising=False)
    return home


@pytest.mark.req("REQ-BASH-016")
async def test_credentials_are_not_readable(restricted: Runner, home: Path) -> None:
    res = await restricted(
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.config/gh/hosts.yml ~/.netrc; "
        "grep -r s3cr3t ~ 2>&1; find ~ -type f -exec cat {} + 2>&1; "
        f"cat /proc/self/root{home}/.ssh/id_ed25519; cd ~/.aws && cat credentials; "
        'ln -s ~/.ssh "$TMPDIR/k" && cat "$TMPDIR/k/id_ed25519"; '
        + py("import glob, os; [print(open(p).read()) for p in glob.glob(os.path.expanduser('~/.*/**'), "
             "recursive=True) if os.path.isfile(p)]")
        + "; cat ~/notes.txt ~/.config/app.toml")
    assert SECRET not in res.output
    assert "ordinary notes" in res.output and "ordinary config" in res.output  # the rest stays readable


@pytest.mark.req("REQ-BASH-016")
async def test_the_servers_data_directory_is_not_readable(restricted: Runner, home: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "server-data"
    data.mkdir()
    db = sqlite3.connect(data / "phoenix.db")
    db.execute("create table t (x)")
    db.execute("insert into t values (?)", (SECRET,))
    db.commit()
    db.close()
    monkeypatch.setenv("PHOENIX_LSP_DATA_DIR", str(data))
    res = await restricted(f"cat {data}/phoenix.db | strings; cat ~/.local/share/phoenix-lsp/phoenix.db; "
                           + py(f"import sqlite3; print(sqlite3.connect('file:{data}/phoenix.db?mode=ro', "
                                "uri=True).execute('select x from t').fetchall())"))
    assert SECRET not in res.output and "Permission denied" in res.output


@pytest.mark.req("REQ-BASH-016")
async def test_the_user_extends_the_list(workspace: Path, home: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from phoenix_lsp.server.config import Config, read_sandbox_settings

    by_env, by_option = tmp_path / "vault", tmp_path / "company-tokens.txt"
    by_env.mkdir()
    (by_env / "key").write_text(SECRET)
    by_option.write_text(SECRET)
    monkeypatch.setenv("PHOENIX_LSP_DENY_READ", f"{by_env}:relative/ignored")
    settings, problems = read_sandbox_settings(Config(), [str(by_option)], tmp_path / "data")
    assert "relative/ignored" in problems[0]
    # The context the server gives every conversation, sub-agents included (runtime passes config.deny_read).
    ctx = BashContext(working_directory=workspace, restricted=True, deny_read=settings["deny_read"])
    res = await run_bash({"command": f"cat {by_env}/key {by_option} ~/.ssh/id_ed25519; cat ~/notes.txt"}, ctx)
    assert SECRET not in res.output and "ordinary notes" in res.output


@pytest.mark.req("REQ-BASH-016", "REQ-BASH-014")
def test_doctor_lists_what_is_denied(home: Path) -> None:
    from phoenix_lsp.sandbox.cli import doctor_lines

    text = "\n".join(doctor_lines(self_test=False))
    assert f"denied: {home}/.ssh" in text and f"denied: {home}/.local/share/phoenix-lsp" in text
    assert "PHOENIX_LSP_DENY_READ" in text and "/dev/null" in text


# ------------------------------------------------------------------------------------ locks, leases


def _leases_on(path: Path) -> list[str]:
    inode = os.stat(path).st_ino
    return [line for line in Path("/proc/locks").read_text().splitlines()
            if "LEASE" in line and line.split()[-3].endswith(f":{inode}")]


@pytest.mark.req("REQ-BASH-017")
async def test_no_lease_on_a_workspace_file(restricted: Runner, workspace: Path) -> None:
    target = workspace / "secret.txt"
    seen: list[str] = []

    def witness() -> None:
        seen.extend(_leases_on(target))

    code = ("import fcntl, time\nfor mode in (fcntl.F_RDLCK, fcntl.F_WRLCK):\n"
            "    try:\n        f = open('secret.txt'); fcntl.fcntl(f, 1024, mode); print('lease taken')\n"
            "    except OSError as e: print('refused', e)\ntime.sleep(0.5)")
    res = await run_while_watching(restricted(py(code)), witness)
    assert not seen and "lease taken" not in res.output and res.output.count("refused [Errno 1]") == 2


def _lock_free(path: Path, kind: str) -> bool:
    with open(path, "r+b") as f:
        try:
            if kind == "flock":
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True


@pytest.mark.req("REQ-BASH-017", "REQ-BASH-023")
async def test_a_background_lock_ends_with_the_time_limit(workspace: Path, tmp_path: Path) -> None:
    target = workspace / "secret.txt"
    ctx = BashContext(working_directory=workspace, restricted=True, conversation_id="c-lock",
                      background_timeout_s=1.5, background_dir=tmp_path / "bg")
    # util-linux's flock(1), not a Python: the lock must be taken within the 1.5 s limit, and a Python's start
    # alone took longer than that at load 19 (the job was ended before it locked, and nothing held the lock)
    started = await run_bash({"command": "flock --shared secret.txt sh -c 'echo locked; exec sleep 300'",
                              "run": "background"}, ctx)
    assert started.outcome == "background", started.output
    await eventually(lambda: not _lock_free(target, "flock"), "the job holds the lock", 30)
    await eventually(lambda: _lock_free(target, "flock"), "the lock free once the limit ended the job", 30)
    assert not pid_alive(started.pid or 0)
    await eventually(lambda: "time-limit" in Path(started.output_file or "").read_text(), "the time-limit status", 30)


@pytest.mark.req("REQ-BASH-017")
async def test_leaving_restricted_ends_the_jobs_and_their_locks(workspace: Path, tmp_path: Path) -> None:
    target = workspace / "notes.md"
    ctx = BashContext(working_directory=workspace, restricted=True, conversation_id="c-leave",
                      background_dir=tmp_path / "bg")
    started = await run_bash({"command": py("import fcntl, time; f = open('notes.md'); "
                                            "fcntl.flock(f, fcntl.LOCK_SH); time.sleep(300)"),
                              "run": "background"}, ctx)
    assert started.outcome == "background", started.output
    await eventually(lambda: not _lock_free(target, "flock"), "the job holds the lock", 30)
    assert background.end_restricted_jobs("c-leave") == 1  # what the server does on the mode change
    assert _lock_free(target, "flock") and not pid_alive(started.pid or 0)


@pytest.mark.req("REQ-BASH-017", "REQ-BASH-016")
async def test_a_job_cannot_lock_the_servers_database(workspace: Path, tmp_path: Path, home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("PHOENIX_LSP_DATA_DIR", str(data))
    server_db = sqlite3.connect(data / "phoenix.db", timeout=0)
    server_db.execute("pragma journal_mode=wal")
    server_db.execute("create table t (x)")
    server_db.commit()
    ctx = BashContext(working_directory=workspace, restricted=True, conversation_id="c-db",
                      background_dir=tmp_path / "bg")
    code = (f"import fcntl, time\nfor name in ('phoenix.db', 'phoenix.db-shm', 'phoenix.db-wal'):\n"
            f"    try:\n        f = open({str(data)!r} + '/' + name, 'rb'); fcntl.lockf(f, fcntl.LOCK_SH)\n"
            f"    except OSError as e: print(name, e, flush=True)\nprint('tried all three', flush=True)\n"
            f"time.sleep(300)")
    started = await run_bash({"command": py(code), "run": "background"}, ctx)
    try:
        # once the job has tried (not after a fixed second: at load 19 its Python had not started by then)
        output = Path(started.output_file or "")
        await eventually(lambda: "tried all three" in output.read_text(), "the job tried its three locks", 60)
        server_db.execute("insert into t values (1)")  # "database is locked" if the job held a lock
        server_db.commit()
        log = Path(started.output_file or "").read_text()
        assert log.count("Permission denied") == 3, log
    finally:
        background.end_conversation_jobs("c-db")
        server_db.close()


# -------------------------------------------------------------------------------------- scheduling


@contextlib.contextmanager
def _victim() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _ioprio(pid: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(252 if os.uname().machine == "x86_64" else 31, 1, pid))


@pytest.mark.req("REQ-BASH-018")
async def test_other_processes_cannot_be_rescheduled(restricted: Runner) -> None:
    with _victim() as pid:
        before = (os.getpriority(os.PRIO_PROCESS, pid), os.sched_getaffinity(pid), os.sched_getscheduler(pid),
                  _ioprio(pid), os.getpriority(os.PRIO_USER, os.getuid()))
        res = await restricted(
            f"renice -n 19 -p {pid}; renice -n 19 -u $(id -u); renice -n 19 -g {os.getpgid(pid)}; "
            f"taskset -p 1 {pid}; chrt -i -p 0 {pid}; ionice -c 3 -p {pid}; "
            + py(f"import os; os.sched_setaffinity({pid}, {{0}})") + "; "
            + py(f"import os; os.sched_setscheduler({pid}, os.SCHED_IDLE, os.sched_param(0))") + "; "
            + py(f"import os; os.setpriority(os.PRIO_PROCESS, {pid}, 19)"))
        after = (os.getpriority(os.PRIO_PROCESS, pid), os.sched_getaffinity(pid), os.sched_getscheduler(pid),
                 _ioprio(pid), os.getpriority(os.PRIO_USER, os.getuid()))
        assert after == before
        assert res.output.count("Operation not permitted") >= 6


@pytest.mark.req("REQ-BASH-018")
async def test_the_launcher_cannot_be_starved_by_its_command(restricted: Runner) -> None:
    niceness: set[int] = set()

    def witness() -> None:  # the launcher is a direct child of this (server-like) process
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
                    if int(fields[1]) == os.getpid():
                        niceness.add(int(fields[16]))

    res = await run_while_watching(restricted(
        "renice -n 19 -p $PPID; chrt -i -p 0 $PPID; taskset -p 1 $PPID; sleep 0.5; "
        "nice -n 5 sh -c 'echo self-nice-ok'"), witness)
    assert niceness <= {0}
    assert "self-nice-ok" in res.output  # renicing itself is still allowed


@pytest.mark.slow  # each case waits out the bounded drain after the launcher is gone
@pytest.mark.req("REQ-BASH-018", "REQ-BASH-025")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSTOP])
async def test_the_tree_is_stopped_even_when_the_launcher_is_gone(workspace: Path, signum: int) -> None:
    if cgroups.pids_cgroup_parent() is None and cgroups.memory_cgroup_parent() is None:
        pytest.skip("needs a cgroup: without one the result says processes may survive (tested below)")
    # setsid'd children and a double-forked one leave the launcher's process group; all hold the output pipe
    req = spawn.SpawnRequest(("bash", "-c", "setsid sleep 300 & sleep 300 & "
                              "( (setsid sleep 300 &) ); sleep 300"), workspace, restricted=True)
    result, tree = await _kill_the_launcher_mid_run(req, signum)
    assert result.backstop_stopped is True  # verified through the cgroups
    assert not [p for p in tree if pid_alive(p)]


@pytest.mark.slow  # each case waits out the bounded drain after the launcher is gone
@pytest.mark.req("REQ-BASH-025")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSTOP])
async def test_orphans_holding_the_output_die_with_a_killed_launcher_without_cgroups(
        workspace: Path, signum: int) -> None:
    # Unrestricted: no cgroup at all. The setsid'd orphans are found by the output pipe they hold.
    req = spawn.SpawnRequest(("bash", "-c", "setsid sleep 300 & sleep 300 & "
                              "( (setsid sleep 300 &) ); sleep 300"), workspace, restricted=False)
    result, tree = await _kill_the_launcher_mid_run(req, signum)
    assert result.backstop_stopped is False  # without a cgroup nothing can be verified: said so
    assert not [p for p in tree if pid_alive(p)]


async def _kill_the_launcher_mid_run(req: spawn.SpawnRequest, signum: int) -> tuple[outcome.RunResult, list[int]]:
    """Start `req`, wait until its tree is up, kill or stop its launcher; the run must still end, quickly
    for a killed launcher, after the timeout and the terminate grace for a stopped one."""
    # this worker's other children (an MCP server of another module...), but for a spare launcher: the command may
    # take it (REQ-BASH-047); the next one, made meanwhile, is no launcher of this command
    before = set(_children(os.getpid())) - spare.pids()
    task = asyncio.ensure_future(spawn.run(req, timeout=6))
    launcher = 0
    tree: list[int] = []
    for _ in range(400):
        await asyncio.sleep(0.02)
        children = [pid for pid in _children(os.getpid()) if pid not in before and pid not in spare.pids()]
        if children:
            launcher = children[0]
            tree = _descendants(launcher)
            if _sleepers(tree) == 4:  # 2 setsid'd (1 double-forked), 1 in the background, 1 in front
                break
    assert launcher and _sleepers(tree) == 4, tree
    os.kill(launcher, signum)  # starved (stopped) or killed: either way it will not stop the tree itself
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(task, 30)
        took = time.monotonic() - started
        assert took < (3 if signum == signal.SIGKILL else 6 + watch.TERMINATE_GRACE_S + 3), took
        await asyncio.sleep(0.1)
        return result, tree
    finally:
        for pid in tree:  # whatever survived must not outlive the test
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _sleepers(pids: list[int]) -> int:
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            count += Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00300\x00"
    return count


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


# ------------------------------------------------------------------------------ shared system limits


@pytest.mark.req("REQ-BASH-019")
async def test_aio_and_inotify_are_refused(restricted: Runner) -> None:
    aio_before = int(Path("/proc/sys/fs/aio-nr").read_text())
    outside_ok: list[bool] = []
    libc = ctypes.CDLL(None, use_errno=True)

    def witness() -> None:
        fd = libc.inotify_init1(os.O_CLOEXEC)
        outside_ok.append(fd >= 0)
        if fd >= 0:
            os.close(fd)
        assert int(Path("/proc/sys/fs/aio-nr").read_text()) < aio_before + 60000

    code = ("import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "ctx = ctypes.c_ulong(0)\nprint('io_setup', libc.syscall(206, 65536, ctypes.byref(ctx)), "
            "ctypes.get_errno())\nfds = [libc.inotify_init1(0) for _ in range(300)]\n"
            "print('inotify', sum(f >= 0 for f in fds), ctypes.get_errno(), flush=True)\ntime.sleep(0.5)")
    if os.uname().machine != "x86_64":
        code = code.replace("206", "0")
    res = await run_while_watching(restricted(py(code) + "; timeout 1 tail -f /dev/null; echo tail-ok"),
                                   witness, interval=0.05)
    assert "io_setup -1 38" in res.output and "inotify 0 38" in res.output  # ENOSYS
    assert all(outside_ok) and "tail-ok" in res.output  # tail -f falls back to polling


def _shmem_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    return 0


@pytest.fixture(params=["cgroup", "no-cgroup", "unusable-cgroup"])
def memory_limit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The ways shared memory is bounded: a memory cgroup; none at all (memfd_create refused); a cgroup
    the launcher fails to make at run time (the fallback filter refuses memfd_create)."""
    if request.param == "cgroup" and cgroups.memory_cgroup_parent() is None:
        pytest.skip("no memory cgroup can be created here")
    if request.param == "no-cgroup":
        monkeypatch.setattr(cgroups, "memory_cgroup_parent", lambda: None)
    if request.param == "unusable-cgroup":
        monkeypatch.setattr(cgroups, "memory_cgroup_parent", lambda: tmp_path / "no-such-cgroup")
    return str(request.param)


@pytest.mark.req("REQ-BASH-019")
async def test_shared_memory_beyond_the_address_space_limit(restricted: Runner, memory_limit: str) -> None:
    before = _shmem_kb()
    peak = [before]

    def witness() -> None:
        peak[0] = max(peak[0], _shmem_kb())

    code = ("import os\nfds = []\nfor i in range(6):\n    try:\n        fd = os.memfd_create(f'm{i}')\n"
            "        fds.append(fd)\n        os.posix_fallocate(fd, 0, 300 << 20) if i % 2 else "
            "[os.write(fd, b'x' * (1 << 20)) for _ in range(300)]\n        print('got', i, flush=True)\n"
            "    except OSError as e: print('refused', i, e, flush=True)\n")
    res = await run_while_watching(restricted(py(code), limits=Limits(memory=256 << 20, address_space=1 << 30)),
                                   witness, interval=0.01)
    assert (peak[0] - before) < 600 << 10, res.output  # 1.8 GB of shared memory were asked for
    # memfd_create refused, or the memory cgroup's limit reached (allocation refused or OOM kill)
    assert "refused" in res.output or "memory limit" in res.output or "SIGKILL" in res.output


@pytest.mark.req("REQ-BASH-019")
async def test_fallocate_modes_that_escape_the_file_size_limit(restricted: Runner) -> None:
    free_before = shutil.disk_usage("/tmp").free
    low = [free_before]

    def witness() -> None:
        low[0] = min(low[0], shutil.disk_usage("/tmp").free)

    res = await run_while_watching(restricted(
        ': > "$TMPDIR/a"; fallocate -n -l 3G "$TMPDIR/a"; fallocate -l 3G "$TMPDIR/b"; '
        + py("import os, fcntl; fd = os.open(os.environ['TMPDIR'] + '/c', os.O_CREAT | os.O_WRONLY); "
             "os.posix_fallocate(fd, 0, 4096); print('plain ok')") + "; "
        + py("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
             "fd = os.open(os.environ['TMPDIR'] + '/d', os.O_CREAT | os.O_WRONLY); "
             "print('keep-size', libc.fallocate(fd, 1, 0, ctypes.c_long(3 << 30)), ctypes.get_errno())")
        + '; du -sk "$TMPDIR"', limits=Limits(file_size=1 << 20)), witness, interval=0.02)
    assert free_before - low[0] < 1 << 30, res.output  # ~9 GB were asked for
    assert "keep size mode is unsupported" in res.output and "keep-size -1 95" in res.output  # EOPNOTSUPP
    assert "plain ok" in res.output


@pytest.mark.req("REQ-BASH-019")
async def test_disk_quota_of_scratch_and_background_log(restricted: Runner, workspace: Path,
                                                        tmp_path: Path) -> None:
    started = time.monotonic()
    res = await restricted('for i in $(seq 40); do head -c 4M /dev/zero > "$TMPDIR/f$i"; sleep 0.02; done; '
                           "sleep 20", limits=Limits(disk=32 << 20), timeout=30)
    assert time.monotonic() - started < 15 and "disk quota" in res.output
    ctx = BashContext(working_directory=workspace, restricted=True, conversation_id="c-quota",
                      limits=Limits(disk=32 << 20), background_dir=tmp_path / "bg")
    job = await run_bash({"command": "for i in $(seq 100); do head -c 2M /dev/zero; sleep 0.02; done; sleep 30",
                          "run": "background"}, ctx)
    log = Path(job.output_file or "")
    await eventually(lambda: "disk-quota" in log.read_bytes()[-200:].decode("latin-1"), "the disk-quota status", 30)
    assert log.stat().st_size < 64 << 20


# ---------------------------------------------------------------------------------------- metadata


def _ioctl_get(path: Path, request: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return fcntl.ioctl(fd, request, b"\0" * size)
    finally:
        os.close(fd)


FS_IOC_GETFLAGS, FS_IOC_GETVERSION, FS_IOC_FSGETXATTR = 0x80086601, 0x80087601, 0x801C581F


@pytest.mark.req("REQ-BASH-020")
async def test_inode_flags_of_read_only_files(restricted: Runner, workspace: Path) -> None:
    target = workspace / "secret.txt"
    try:
        before = (_ioctl_get(target, FS_IOC_GETFLAGS, 8), _ioctl_get(target, FS_IOC_GETVERSION, 8),
                  _ioctl_get(target, FS_IOC_FSGETXATTR, 28))
    except OSError as exc:
        pytest.skip(f"this filesystem has no inode flags ({exc})")
    set_flags = ("import fcntl, struct; f = open('secret.txt'); "
                 "fcntl.ioctl(f, 0x40086602, struct.pack('q', 0x40 | 0x80 | 0x8))")
    set_version = "import fcntl, struct; f = open('secret.txt'); fcntl.ioctl(f, 0x40087602, struct.pack('q', 7))"
    set_xattr = ("import fcntl, struct; f = open('secret.txt'); "
                 "fcntl.ioctl(f, 0x401C5820, struct.pack('IIII12x', 0x80000, 0, 0, 0))")
    file_setattr = ("import ctypes, struct; libc = ctypes.CDLL(None, use_errno=True); "
                    "buf = ctypes.create_string_buffer(struct.pack('QIIII', 0x80000, 0, 0, 0, 0)); "
                    "print('file_setattr', libc.syscall(469, -100, b'secret.txt', buf, 24, 0), ctypes.get_errno())")
    res = await restricted(f"chattr +dAS secret.txt; {py(set_flags)}; {py(set_version)}; {py(set_xattr)}; "
                           f"{py(file_setattr)}")
    after = (_ioctl_get(target, FS_IOC_GETFLAGS, 8), _ioctl_get(target, FS_IOC_GETVERSION, 8),
             _ioctl_get(target, FS_IOC_FSGETXATTR, 28))
    assert after == before
    assert "file_setattr -1 1" in res.output and res.output.count("Operation not permitted") >= 4


# ---------------------------------------------------------------------------------------- leftovers


@pytest.mark.req("REQ-BASH-022")
async def test_scratch_is_removed_whatever_the_command_left(restricted: Runner) -> None:
    deep = py("import os\nfor _ in range(1500):\n    os.mkdir('d'); os.chdir('d')\n"
              "open('deep.bin', 'wb').write(bytes(1 << 20)); print('deep-ok')")
    res = await restricted(f'echo "$TMPDIR"; cd "$TMPDIR" && mkdir -m 300 wo && echo x > wo/f && {deep}',
                           timeout=60)
    scratch = Path(res.output.split("\n")[0])
    assert "deep-ok" in res.output, res.output
    assert scratch.name.startswith("phoenix-lsp-scratch-") and not scratch.exists()
    # its name is gone at once; what the command left is removed by the janitor, off the command's path
    scratch_mod.wait_for_removals()
    assert not scratch_mod.ended_name(scratch).exists()


@pytest.mark.req("REQ-BASH-022")
def test_remove_tree_without_privileges(tmp_path: Path) -> None:
    """As an unprivileged user (root ignores directory permissions): a 1,500-level tree with long names
    (deeper than PATH_MAX), a write-only and a no-permission directory."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="phoenix-rm-"))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            if IS_ROOT:
                os.chown(top, 65534, 65534)
                os.setgid(65534)
                os.setuid(65534)
            fd = os.open(top, os.O_RDONLY)
            for _ in range(1500):
                os.mkdir("directory-name", dir_fd=fd)
                new = os.open("directory-name", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = new
            os.close(fd)
            (top / "wo").mkdir()
            (top / "wo" / "f").write_text("x")
            (top / "wo").chmod(0o300)
            (top / "none").mkdir()
            (top / "none" / "g").write_text("y")
            (top / "none").chmod(0)
            code = 0 if remove_tree(top) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        assert os.WEXITSTATUS(status) == 0 and not top.exists()
    finally:
        if top.exists():
            remove_tree(top)


@pytest.mark.req("REQ-BASH-024", "REQ-BASH-023")
async def test_background_logs_end_with_the_conversation(workspace: Path, tmp_path: Path) -> None:
    ctx = BashContext(working_directory=workspace, restricted=True, conversation_id="c-logs",
                      background_dir=tmp_path / "bg")
    job = await run_bash({"command": "echo hello; sleep 300", "run": "background"}, ctx)
    log = Path(job.output_file or "")
    assert log.parent == tmp_path / "bg" / str(os.getpid()) / "c-logs"
    await eventually(lambda: "hello" in log.read_text(), "the job's output", 30)
    assert background.end_conversation_jobs("c-logs") == 1
    assert not pid_alive(job.pid or 0) and not log.parent.exists()
    stale = tmp_path / "bg" / "999999999"  # a server process that crashed
    stale.mkdir()
    (stale / "old.log").write_text("old")
    os.rmdir(tmp_path / "bg" / str(os.getpid()))
    background.background_log_dir(tmp_path / "bg", "again")
    assert not stale.exists()
    background.remove_background_logs()


# ---------------------------------------------------------------------------------------------- env


@pytest.mark.req("REQ-BASH-021")
@pytest.mark.parametrize("mode", ["restricted", "unrestricted"])
def test_sandbox_run_cleans_the_environment_like_the_server(mode: str) -> None:
    from phoenix_lsp.sandbox import env as sandbox_env
    from phoenix_lsp.server import runtime

    assert runtime.clean_environment is sandbox_env.clean_environment  # one function, not a copy
    secrets_env = {"ANTHROPIC_API_KEY": f"sk-ant-{SECRET}", "GITHUB_TOKEN": f"ghp_{SECRET}",
                   "AWS_SECRET_ACCESS_KEY": SECRET, "PGPASSWORD": SECRET, "ANTHROPIC_BASE_URL": SECRET}
    proc = subprocess.run([sys.executable, "-m", "phoenix_lsp", "sandbox", "run", "--mode", mode, "--", "env"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **secrets_env})
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert re.search(r"^PATH=", proc.stdout, re.M)
