"""One engine worker process (REQ-AGENT-008/013), host side: started by the project's sandbox launcher in
Restricted mode with the kernel's limits of its unit's budgets (``limits_for``), cold (its unit written before it
starts) or warm (it prepares, says it is ready, and waits for one unit); ended with its whole tree and its scratch
directory. The launcher's stdin is the lifeline: if the server dies the tree dies.

A warm worker is watched through a pidfd of its own process (the pid its launcher reports), not only through
its launcher: the launcher learns of the worker's death only when it next runs, which on a loaded machine can be
after the next unit was handed out (REQ-AGENT-037)."""

from __future__ import annotations

import array
import contextlib
import fcntl
import functools
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import termios
from pathlib import Path

from ..sandbox import spawn
from ..sandbox.limits import Limits
from ..sandbox.outcome import OutputCapture, RunResult, parse_status
from ..sandbox.scratch import remove_tree
from ..sandbox.watch import TERMINATE_GRACE_S
from .contracts import Budgets, ErrorCode, ErrorKind, ExecutionUnit, Metrics, ResultEnvelope
from .worker_lines import Violation, read_line, write_all

#: time the worker gets to start (Python, pydantic_monty, the monty pool) before its CPU budget counts
STARTUP_GRACE_S = 10.0
#: beyond the unit's CPU budget, before the watchdog kills (monty's own limit should fire first)
WATCHDOG_GRACE_S = 2.0
#: memory for the worker's Python and the monty process, on top of the script's heap budget
MEMORY_OVERHEAD = 256 << 20
#: virtual memory per process (RLIMIT_AS): a bound even where no memory cgroup can be made
ADDRESS_SPACE = 4 << 30

#: the worker's argument that makes it warm, its word when ready, and the host's word to read its unit
WARM_FLAG = "--warm"
READY_LINE = b'{"ready": true}'
GO_LINE = b'{"go": true}'


def limits_for(budgets: Budgets) -> Limits:
    """The kernel's limits of a worker for a unit with these budgets (a warm worker is keyed on them)."""
    return Limits(
        address_space=ADDRESS_SPACE,
        cpu_seconds=math.ceil(budgets.cpu_s + STARTUP_GRACE_S),
        max_processes=64,
        file_size=1 << 20,
        open_files=256,
        memory=budgets.memory_bytes + MEMORY_OVERHEAD,
        disk=4 << 20,
    )


def terminate(launcher: subprocess.Popen[bytes]) -> None:
    """Ask the launcher to kill the tree (it does on SIGTERM); from any thread. ``stop`` reaps it after."""
    with contextlib.suppress(ProcessLookupError, OSError):
        if launcher.returncode is None:
            launcher.send_signal(signal.SIGTERM)


def worker_env() -> dict[str, str]:
    """The worker needs nothing from the server's environment: a fixed minimum."""
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def stop(launcher: subprocess.Popen[bytes]) -> None:
    """End the launcher and so the whole tree (SIGTERM: it kills the tree; SIGKILL as a last resort), then
    reap it and close every pipe, the lifeline included."""
    if launcher.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            launcher.send_signal(signal.SIGTERM)
            launcher.send_signal(signal.SIGCONT)  # a stopped launcher (SIGSTOP, a debugger) kills its tree too
        try:
            launcher.wait(TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
    for stream in (launcher.stdin, launcher.stdout, launcher.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


class Worker:
    """One sandboxed worker process: its scratch directory, the FIFO of its replies, its launcher. It runs one
    unit and ends; ``end`` kills what is left of its tree and removes its scratch directory."""

    def __init__(self, scratch: Path, replies: int, launcher: subprocess.Popen[bytes], warm: bool) -> None:
        self.scratch, self.replies, self.launcher, self.warm = scratch, replies, launcher, warm
        self.buffer = bytearray()  # read from the worker before its unit (nothing, once it said it is ready)
        self.status = bytearray()  # the launcher's status lines read before the unit (its "started <pid>")
        self.pidfd = -1  # a warm worker's own process, once it is ready

    @classmethod
    def start(cls, restricted: bool, limits: Limits, unit: ExecutionUnit | None) -> Worker:
        """Start a worker: cold with its `unit` written before it starts, or warm (`unit` None): it prepares
        and then waits for ``hand``. Raises OSError / SandboxUnavailable when it cannot be started."""
        scratch = Path(tempfile.mkdtemp(prefix="phoenix-agent-"))
        fifo = scratch / "replies"
        replies = -1
        try:
            if unit is not None:
                write_unit(scratch, unit)
            os.mkfifo(fifo, 0o600)
            replies = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)  # never blocks, even alone
            argv = (*worker_argv(), str(fifo))
            if unit is None:
                argv += (WARM_FLAG,)
            request = spawn.SpawnRequest(argv=argv, cwd=scratch, restricted=restricted, limits=limits,
                                         env=worker_env())
            args = spawn.launcher_args(request, scratch if restricted else None)
            env = spawn.command_env(restricted, scratch, request.env)
            launcher = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, close_fds=True)
        except BaseException:
            if replies >= 0:
                os.close(replies)
            remove_tree(scratch)
            raise
        return cls(scratch, replies, launcher, warm=unit is None)

    def ready(self, timeout_s: float) -> bool:
        """Wait (a warm worker) for its word that it is ready for a unit; False if anything else came."""
        assert self.launcher.stdout is not None
        out = self.launcher.stdout.fileno()
        os.set_blocking(out, False)
        try:
            line, left = read_line(out, self.buffer, timeout_s)
        except (TimeoutError, Violation):
            return False
        return line == READY_LINE and self._watch(left)

    def _watch(self, timeout_s: float) -> bool:
        """Open a pidfd of the worker's own process: the pid is the launcher's "started <pid>" line (every line
        read is kept for the outcome), and the process must be the launcher's child (so not another that took
        the pid of a worker already gone). False when it cannot be watched: then it is not used warm."""
        assert self.launcher.stderr is not None
        err = self.launcher.stderr.fileno()
        os.set_blocking(err, False)
        pending = bytearray()
        try:
            while True:
                line, timeout_s = read_line(err, pending, timeout_s)
                if line is None:
                    return False
                self.status += line + b"\n"
                word, _, rest = line.partition(b" ")
                if word == b"started":
                    pid = int(rest)
                    break
            self.pidfd = os.pidfd_open(pid)
            return _parent(pid) == self.launcher.pid
        except (TimeoutError, Violation, ValueError, IndexError, OSError):
            return False
        finally:
            self.status += pending

    def alive(self) -> bool:
        """Whether the worker's own process still runs (its pidfd is readable once it ended, reaped or not)."""
        if self.pidfd < 0:
            return False
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return not readable

    def idle(self) -> bool:
        """A warm worker that is still alive and has said nothing since it was ready."""
        if not self.alive() or self.launcher.poll() is not None or self.launcher.stdout is None:
            return False
        readable, _, _ = select.select([self.launcher.stdout.fileno()], [], [], 0)
        return not readable  # anything (even the end of its output) before its unit: not usable

    def hand(self, unit: ExecutionUnit) -> None:
        """Give a warm worker its unit (a file in its scratch directory, then one line on its FIFO)."""
        write_unit(self.scratch, unit)
        write_all(self.replies, GO_LINE + b"\n", STARTUP_GRACE_S)

    def never_took_unit(self) -> bool:
        """After a warm worker ended without a word: whether it died before it read its go line (the line is
        still in its FIFO, so the unit never ran)."""
        unread = array.array("i", [0])
        try:
            fcntl.ioctl(self.replies, termios.FIONREAD, unread)
        except OSError:
            return False
        return unread[0] == len(GO_LINE) + 1

    def end(self) -> None:
        stop(self.launcher)
        for fd in (self.replies, self.pidfd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.replies = self.pidfd = -1
        remove_tree(self.scratch)


def _parent(pid: int) -> int:
    """The parent of a process (from ``/proc/<pid>/stat``: the fields after the name's closing parenthesis)."""
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(fd, 4096)
    finally:
        os.close(fd)
    return int(text.rsplit(b")", 1)[1].split()[1])


WORKER_MODULE = "phoenix_lsp.agent.worker"
#: how a worker is started where ``python -I`` would import another copy of this package (a development
#: checkout beside an installed one): this package's root is put first on its path, then the module is run
_BOOT = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
         f"runpy.run_module({WORKER_MODULE!r}, run_name='__main__', alter_sys=True)")


@functools.cache
def worker_argv() -> tuple[str, ...]:
    """The worker's command, before its FIFO: ``python -I -m phoenix_lsp.agent.worker``, run by the same Python
    from this very package; where ``python -I`` would import another copy of the package (a development
    checkout beside an installed one), the same module started so that it imports this copy (worth one
    ``python -I`` start, once per process, to find out)."""
    root = str(Path(__file__).resolve().parents[2])
    plain = (sys.executable, "-I", "-m", WORKER_MODULE)
    try:
        found = subprocess.run((sys.executable, "-I", "-c", "import phoenix_lsp; print(phoenix_lsp.__file__)"),
                               capture_output=True, text=True, timeout=30, cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired):
        return plain
    if found.returncode == 0 and Path(found.stdout.strip()).resolve().parents[1] == Path(root):
        return plain
    return (sys.executable, "-I", "-c", _BOOT, root)


def is_worker(argv: list[bytes]) -> bool:
    """Whether a process's argv (``/proc/<pid>/cmdline`` split at NUL) is an engine worker's."""
    return argv[1:2] == [b"-I"] and any(WORKER_MODULE.encode() in part for part in argv[2:4])


def write_unit(scratch: Path, unit: ExecutionUnit) -> None:
    # the worker binds each tool by the name scripts call it (``function_name``), not by its URI
    wire = {**unit.model_dump(mode="json", by_alias=True), "functions": sorted(unit.functions())}
    (scratch / "unit.json").write_text(json.dumps(wire), encoding="utf-8")


def ended_envelope(launcher: subprocess.Popen[bytes], calls: int, read: bytes = b"") -> ResultEnvelope:
    """The worker closed its output without an envelope: killed by an rlimit, or crashed. `read`: the
    launcher's status lines read before (a warm worker's "started")."""
    assert launcher.stderr is not None
    with contextlib.suppress(subprocess.TimeoutExpired):
        launcher.wait(TERMINATE_GRACE_S)
    status = RunResult(capture=OutputCapture())
    with contextlib.suppress(OSError, ValueError):
        os.set_blocking(launcher.stderr.fileno(), False)
        parse_status((read + (launcher.stderr.read() or b"")).decode("utf-8", "replace"), status)
    metrics = Metrics(tool_calls=calls)
    if status.memory_limit_hits:  # before the signal: the memory cgroup's OOM kill is a SIGKILL too
        return ResultEnvelope.failure(ErrorKind.BUDGET, ErrorCode.MEM_LIMIT, "the worker hit its memory limit",
                                      metrics)
    if status.signal in (signal.SIGXCPU, signal.SIGKILL) and status.killed is None:
        return ResultEnvelope.failure(ErrorKind.BUDGET, ErrorCode.CPU_LIMIT,
                                      f"the worker was killed by signal {status.signal} (CPU rlimit)", metrics)
    if status.setup_failure is not None:
        return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.UNAVAILABLE,
                                      f"the sandbox could not start the worker: {status.setup_failure.describe()}",
                                      metrics)
    return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.PROC_CRASH,
                                  f"the worker ended without an answer (exit {status.exit_code})", metrics)
