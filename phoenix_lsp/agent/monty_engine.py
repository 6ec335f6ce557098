"""The pydantic-monty engine, host side (REQ-AGENT-008/009/013).

One execute = one worker process (``phoenix_lsp.agent.worker``, the same Python), started by the
project's sandbox launcher in Restricted mode: Landlock (read-only filesystem, writes only to a private
scratch directory, no TCP), seccomp, no capabilities, rlimits (CPU, address space, open files,
processes) and a memory cgroup where available. The launcher's stdin is the lifeline: if this process dies
the tree dies. pydantic-monty itself runs the script in a ``monty`` subprocess of the worker, which inherits
all of that.

The watchdog here: each wait for the worker is bounded (start-up grace + the unit's CPU budget + a grace,
with the time spent in host functions not counted); past it the tree is killed and the unit ends with
``ENGINE``/``TIMEOUT``. Anything on the channel that is not the protocol ends it with
``ENGINE``/``PROTOCOL``. Two more ends, for the run (issue 24): its wall clock (``remaining``, host calls
counted) spent while the unit runs is ``BUDGET``/``WALL_CLOCK``, and a cancel (``cancelled``) kills the tree
at once (``ENGINE``/``CANCELLED``): with a ``host.Cancellation`` from the moment it is set, even while the
script loops without calling a tool; with a plain ``threading.Event`` within ``CANCEL_POLL_S``.

Warm workers (REQ-AGENT-037): with a :class:`WarmPool`, a unit is handed to a worker started ahead of need,
sandboxed and limited exactly as a cold one would be for it (the same launcher, environment and ``Limits``),
that has already imported pydantic-monty and waits for ONE unit. Every worker still runs one unit and ends, so
no state can pass from one unit to another; only the start is paid earlier, off the node's path. Without a
pool (or with no warm worker for the unit's limits) the worker is started cold, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import safe_json
from ..sandbox import landlock, spawn
from ..sandbox.limits import Limits
from ..sandbox.outcome import OutputCapture, RunResult, parse_status
from ..sandbox.scratch import remove_tree
from ..sandbox.watch import TERMINATE_GRACE_S
from . import static_check
from .contracts import AgentError, Budgets, ErrorCode, ErrorKind, ExecutionUnit, Metrics, ResultEnvelope, ToolFailure
from .engine_types import EngineHealth, HostFunction

log = logging.getLogger(__name__)

#: time the worker gets to start (Python, pydantic_monty, the monty pool) before its CPU budget counts
STARTUP_GRACE_S = 10.0
#: beyond the unit's CPU budget, before the watchdog kills (monty's own limit should fire first)
WATCHDOG_GRACE_S = 2.0
#: the longest protocol line accepted from the worker
MAX_LINE_BYTES = 16 << 20
#: memory for the worker's Python and the monty process, on top of the script's heap budget
MEMORY_OVERHEAD = 256 << 20
#: virtual memory per process (RLIMIT_AS): a bound even where no memory cgroup can be made
ADDRESS_SPACE = 4 << 30
#: how often a plain threading.Event cancel flag is looked at while a unit runs (a Cancellation is immediate)
CANCEL_POLL_S = 0.05


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


class _Violation(Exception):
    """The worker broke the protocol."""


class MontyEngine:
    """Runs units in a sandboxed pydantic-monty worker; `host_functions` are what units may be allowed."""

    name = "monty"

    def __init__(self, host_functions: Mapping[str, HostFunction], *, restricted: bool = True,
                 check_scripts: bool = True, cancelled: threading.Event | None = None,
                 remaining: Callable[[], float] | None = None, pool: WarmPool | None = None) -> None:
        """`restricted` and `check_scripts` are False only in tests and benchmarks: to measure the sandbox's
        cost, and to show that the worker's run-time settings hold on their own behind the static check.
        `cancelled` and `remaining`: the run's cancel flag and wall clock left (see the module docstring).
        `pool`: warm workers to take units to (REQ-AGENT-037); None starts every worker cold."""
        self._pool = pool
        self._cancelled = cancelled
        self._remaining = remaining
        for name in host_functions:
            if not name.isidentifier() or name.startswith("_") or name in static_check.FORBIDDEN_NAMES:
                raise ValueError(f"{name!r} cannot be a host function: scripts could never call it")
        self._functions = dict(host_functions)
        self._restricted = restricted
        self._check_scripts = check_scripts

    def capabilities(self) -> list[str]:
        return sorted(self._functions)

    def health(self) -> EngineHealth:
        try:
            import pydantic_monty
            from pydantic_monty._binary import find_monty_binary

            binary = find_monty_binary()
        except (ImportError, FileNotFoundError) as exc:
            return EngineHealth(engine=self.name, ok=False, detail=f"pydantic-monty is not usable: {exc}")
        if self._restricted and landlock.landlock_abi() is None:
            return EngineHealth(engine=self.name, ok=False, detail="the Restricted sandbox (Landlock) is not "
                                 "available on this system; the engine does not run scripts unsandboxed")
        return EngineHealth(engine=self.name, ok=True,
                             detail=f"pydantic-monty {pydantic_monty.__version__} ({binary})")

    def execute(self, unit: ExecutionUnit) -> ResultEnvelope:
        started = time.monotonic()
        denied = sorted(set(unit.functions()) - set(self._functions))
        if denied:
            return ResultEnvelope.failure(ErrorKind.DENIED, ErrorCode.CAPABILITY_DENIED,
                                          f"the engine offers no tool named {denied}; nothing was run")
        refused = static_check.check(unit.code, unit.budgets.max_code_bytes) if self._check_scripts else None
        if refused is not None:
            return ResultEnvelope(ok=False, error=refused)
        try:
            envelope = self._run(unit)
        except spawn.SandboxUnavailable as exc:
            envelope = ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.UNAVAILABLE, str(exc))
        except OSError as exc:  # no launcher, no FIFO, no scratch: the engine cannot start here
            envelope = ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.UNAVAILABLE,
                                              f"the engine worker could not be started: {exc}")
        wall_ms = (time.monotonic() - started) * 1000
        return envelope.model_copy(update={"metrics": envelope.metrics.model_copy(update={"wall_ms": wall_ms})})

    # ------------------------------------------------------------------------------------------ the worker

    def _limits(self, unit: ExecutionUnit) -> Limits:
        return limits_for(unit.budgets)

    def _run(self, unit: ExecutionUnit) -> ResultEnvelope:
        limits = self._limits(unit)
        worker = self._pool.take(self._restricted, limits) if self._pool is not None else None
        if worker is None:
            worker = _Worker.start(self._restricted, limits, unit)
        forget: Callable[[], None] = _nothing
        try:
            if worker.warm:  # a warm worker reads its unit once it is told to go, never before
                worker.hand(unit)
            on_cancel = getattr(self._cancelled, "on_cancel", None)
            if callable(on_cancel):  # a cancel ends the tree now: the launcher kills it on SIGTERM
                forget = on_cancel(functools.partial(_terminate, worker.launcher))
            return self._converse(unit, worker.launcher, worker.replies, worker.buffer)
        finally:
            forget()
            worker.end()

    def _converse(self, unit: ExecutionUnit, launcher: subprocess.Popen[bytes], replies: int,
                  buffer: bytearray | None = None) -> ResultEnvelope:
        assert launcher.stdout is not None
        out = launcher.stdout.fileno()
        os.set_blocking(out, False)
        budget_s = STARTUP_GRACE_S + unit.budgets.cpu_s + WATCHDOG_GRACE_S  # host-call time not counted
        buffer = bytearray() if buffer is None else buffer
        calls = 0
        while True:
            try:
                line, budget_s = _read_line(out, buffer, budget_s, self._run_limit)
            except _RunEnded as ended:
                return ResultEnvelope.failure(ended.kind, ended.code, ended.message, Metrics(tool_calls=calls))
            except TimeoutError:
                return ResultEnvelope.failure(
                    ErrorKind.ENGINE, ErrorCode.TIMEOUT,
                    f"the worker did not finish within its budget ({unit.budgets.cpu_s:g} s of execution "
                    f"plus {STARTUP_GRACE_S + WATCHDOG_GRACE_S:g} s of grace); it was killed",
                    Metrics(tool_calls=calls))
            except _Violation as exc:
                return _protocol(str(exc), calls)
            if line is None:
                if self._cancelled is not None and self._cancelled.is_set():
                    return _cancelled_envelope(calls)
                return _ended(launcher, calls)
            try:
                message = safe_json.loads(line, what="a line of the worker")
            except safe_json.TooDeep as exc:
                return _protocol(str(exc), calls)
            except ValueError:  # e.g. a traceback of a worker that failed before its protocol began
                shown = line[:300].decode("utf-8", "replace")
                return _protocol(f"a line that is not JSON ({shown!r})", calls)
            if not isinstance(message, dict):
                return _protocol("a message that is not an object", calls)
            if "done" in message:
                try:
                    envelope = ResultEnvelope.model_validate(message["done"])
                except ValidationError as exc:
                    return _protocol(f"an invalid envelope ({exc.error_count()} errors)", calls)
                return envelope
            if "call" not in message:
                return _protocol("an unknown message", calls)
            calls += 1
            reply = self._call(unit, message)
            try:
                _write_all(replies, (json.dumps(reply) + "\n").encode(), STARTUP_GRACE_S)
            except TimeoutError:
                return _protocol("a worker that does not read its replies", calls)

    def _run_limit(self) -> float:
        """How long the watchdog may wait now before looking again at the run (cancel, wall clock); raises
        ``_RunEnded`` when the run says the unit must end."""
        if self._cancelled is not None and self._cancelled.is_set():
            raise _RunEnded(ErrorKind.ENGINE, ErrorCode.CANCELLED, _CANCELLED)
        wait = math.inf
        if self._remaining is not None:
            wait = self._remaining()
            if wait <= 0:
                raise _RunEnded(ErrorKind.BUDGET, ErrorCode.WALL_CLOCK, (
                    "the run's wall clock (run.wallClockS, host calls included, approvals excluded) was spent "
                    "while this unit ran; it was killed. Re-plan with less work per run, or stop"))
        if self._cancelled is not None and not callable(getattr(self._cancelled, "on_cancel", None)):
            wait = min(wait, CANCEL_POLL_S)
        return wait

    def _call(self, unit: ExecutionUnit, message: dict[str, Any]) -> dict[str, Any]:
        """Run one host call for the worker: only a tool the unit allows (checked again here, whatever the
        worker says), with JSON arguments; the answer is JSON, or a typed error."""
        name, args, kwargs = message.get("call"), message.get("args", []), message.get("kwargs", {})
        if not isinstance(name, str) or name not in unit.functions() or name not in self._functions:
            return {"error": _err(ErrorKind.DENIED, ErrorCode.CAPABILITY_DENIED, f"{name!r} is not allowed")}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return {"error": _err(ErrorKind.ENGINE, ErrorCode.PROTOCOL, "malformed call")}
        try:
            value = self._functions[name](*args, **kwargs)
            return {"return": json.loads(json.dumps(value))}
        except ToolFailure as failure:
            return {"error": failure.error.model_dump(mode="json")}
        except Exception as exc:  # a tool's failure is the script's business (TOOL), not the server's
            return {"error": _err(ErrorKind.TOOL, ErrorCode.TOOL_ERROR, f"{name}: {type(exc).__name__}: {exc}")}


_CANCELLED = "the run was cancelled while this unit ran; its process tree was killed"


class _RunEnded(Exception):
    """The run (not the unit) ends the unit: cancelled, or out of wall-clock time."""

    def __init__(self, kind: ErrorKind, code: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.code, self.message = kind, code, message


def _cancelled_envelope(calls: int) -> ResultEnvelope:
    return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.CANCELLED, _CANCELLED, Metrics(tool_calls=calls))


def _nothing() -> None:
    return None


def _terminate(launcher: subprocess.Popen[bytes]) -> None:
    """Ask the launcher to kill the tree (it does on SIGTERM); from any thread. ``_stop`` reaps it after."""
    with contextlib.suppress(ProcessLookupError, OSError):
        if launcher.returncode is None:
            launcher.send_signal(signal.SIGTERM)


def _worker_env() -> dict[str, str]:
    """The worker needs nothing from the server's environment: a fixed minimum."""
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def _err(kind: ErrorKind, code: str, message: str) -> dict[str, Any]:
    return AgentError(kind=kind, code=code, message=message).model_dump(mode="json")


def _protocol(what: str, calls: int) -> ResultEnvelope:
    return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.PROTOCOL,
                                  f"the engine worker sent {what}; it was killed", Metrics(tool_calls=calls))


def _read_line(fd: int, buffer: bytearray, budget_s: float,
               limit: Callable[[], float] | None = None) -> tuple[bytes | None, float]:
    """The next line from the worker (None at end of file) and the budget left. ``limit`` (the run's say:
    how long to wait before asking it again; it raises to end the unit) is asked before every wait."""
    while True:
        end = buffer.find(b"\n")
        if end >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            return line, budget_s
        if len(buffer) > MAX_LINE_BYTES:
            raise _Violation(f"a line over {MAX_LINE_BYTES} bytes")
        if budget_s <= 0:
            raise TimeoutError
        wait = budget_s if limit is None else max(0.0, min(budget_s, limit()))
        before = time.monotonic()
        ready, _, _ = select.select([fd], [], [], wait)
        budget_s -= time.monotonic() - before
        if not ready:
            continue
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not data:
            return (bytes(buffer) if buffer else None), budget_s
        buffer += data


def _write_all(fd: int, data: bytes, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        _, ready, _ = select.select([], [fd], [], left)
        if ready:
            with contextlib.suppress(BlockingIOError):
                view = view[os.write(fd, view):]


def _ended(launcher: subprocess.Popen[bytes], calls: int) -> ResultEnvelope:
    """The worker closed its output without an envelope: killed by an rlimit, or crashed."""
    assert launcher.stderr is not None
    with contextlib.suppress(subprocess.TimeoutExpired):
        launcher.wait(TERMINATE_GRACE_S)
    status = RunResult(capture=OutputCapture())
    with contextlib.suppress(OSError, ValueError):
        os.set_blocking(launcher.stderr.fileno(), False)
        parse_status((launcher.stderr.read() or b"").decode("utf-8", "replace"), status)
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


def _stop(launcher: subprocess.Popen[bytes]) -> None:
    """End the launcher and so the whole tree (SIGTERM: it kills the tree; SIGKILL as a last resort), then
    reap it and close every pipe, the lifeline included."""
    if launcher.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            launcher.send_signal(signal.SIGTERM)
        try:
            launcher.wait(TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
    for stream in (launcher.stdin, launcher.stdout, launcher.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


# ------------------------------------------------------------------------------------- workers, cold and warm


class _Worker:
    """One sandboxed worker process: its scratch directory, the FIFO of its replies, its launcher. It runs one
    unit and ends; ``end`` kills what is left of its tree and removes its scratch directory."""

    def __init__(self, scratch: Path, replies: int, launcher: subprocess.Popen[bytes], warm: bool) -> None:
        self.scratch, self.replies, self.launcher, self.warm = scratch, replies, launcher, warm
        self.buffer = bytearray()  # read from the worker before its unit (nothing, once it said it is ready)

    @classmethod
    def start(cls, restricted: bool, limits: Limits, unit: ExecutionUnit | None) -> _Worker:
        """Start a worker: cold with its `unit` written before it starts, or warm (`unit` None): it prepares
        and then waits for ``hand``. Raises OSError / SandboxUnavailable when it cannot be started."""
        scratch = Path(tempfile.mkdtemp(prefix="phoenix-agent-"))
        fifo = scratch / "replies"
        replies = -1
        try:
            if unit is not None:
                _write_unit(scratch, unit)
            os.mkfifo(fifo, 0o600)
            replies = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)  # never blocks, even alone
            argv = (*worker_argv(), str(fifo))
            if unit is None:
                argv += (WARM_FLAG,)
            request = spawn.SpawnRequest(argv=argv, cwd=scratch, restricted=restricted, limits=limits,
                                         env=_worker_env())
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
            line, _ = _read_line(out, self.buffer, timeout_s)
        except (TimeoutError, _Violation):
            return False
        return line == READY_LINE

    def idle(self) -> bool:
        """A warm worker that is still alive and has said nothing since it was ready."""
        if self.launcher.poll() is not None or self.launcher.stdout is None:
            return False
        readable, _, _ = select.select([self.launcher.stdout.fileno()], [], [], 0)
        return not readable  # anything (even the end of its output) before its unit: not usable

    def hand(self, unit: ExecutionUnit) -> None:
        """Give a warm worker its unit (a file in its scratch directory, then one line on its FIFO)."""
        _write_unit(self.scratch, unit)
        _write_all(self.replies, GO_LINE + b"\n", STARTUP_GRACE_S)

    def end(self) -> None:
        _stop(self.launcher)
        if self.replies >= 0:
            with contextlib.suppress(OSError):
                os.close(self.replies)
            self.replies = -1
        remove_tree(self.scratch)


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


def _write_unit(scratch: Path, unit: ExecutionUnit) -> None:
    # the worker binds each tool by the name scripts call it (``function_name``), not by its URI
    wire = {**unit.model_dump(mode="json", by_alias=True), "functions": sorted(unit.functions())}
    (scratch / "unit.json").write_text(json.dumps(wire), encoding="utf-8")


#: the worker's argument that makes it warm, its word when ready, and the host's word to read its unit
WARM_FLAG = "--warm"
READY_LINE = b'{"ready": true}'
GO_LINE = b'{"go": true}'
#: idle warm workers kept per set of limits, by default, and how many sets of limits are kept warm
WARM_WORKERS = 1
MAX_KEYS = 2


class WarmPool:
    """Workers started ahead of need (REQ-AGENT-037), one server's: each sandboxed and limited exactly as a
    cold worker for the same limits, each handed out once and ended with its unit, so nothing of one unit,
    run or conversation reaches another. ``take`` gives an idle worker for these limits (or waits for one that
    is starting) and starts its replacement in the background; ``None`` means "start one cold". A worker that
    fails to become ready stops the warming of its limits (the cold start then says what is wrong).

    Thread-safe. Idle workers die with the server (the launcher's stdin is its lifeline) or at ``close``."""

    def __init__(self, size: int = WARM_WORKERS, startup_s: float = STARTUP_GRACE_S) -> None:
        self.size = size
        self._startup_s = startup_s
        self._cond = threading.Condition()
        self._idle: dict[tuple[bool, Limits], list[_Worker]] = {}
        self._starting: dict[tuple[bool, Limits], int] = {}
        self._broken: set[tuple[bool, Limits]] = set()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.hits = 0  # units given a warm worker
        self.misses = 0  # units that found none (started cold)
        atexit.register(self.close)  # their scratch directories too, when the server ends without closing it

    def warm(self, restricted: bool, limits: Limits) -> None:
        """Start workers for these limits until `size` are idle or starting (in the background)."""
        key = (restricted, limits)
        stale: list[_Worker] = []
        with self._cond:
            if self._closed or key in self._broken:
                return
            if key not in self._idle:  # limits of their own: only the last MAX_KEYS sets are kept warm
                self._idle[key] = []
                for old in list(self._idle)[:-MAX_KEYS]:
                    stale += self._idle.pop(old)
            wanted = self.size - len(self._idle.get(key, ())) - self._starting.get(key, 0)
            self._starting[key] = self._starting.get(key, 0) + max(0, wanted)
        for worker in stale:
            worker.end()
        for _ in range(max(0, wanted)):
            thread = threading.Thread(target=self._start, args=(key,), name="agent-warm-worker", daemon=True)
            with self._cond:
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def warm_for(self, budgets: Budgets, restricted: bool = True) -> None:
        """Warm workers for units with these budgets (the budgets file's node defaults: most units)."""
        self.warm(restricted, limits_for(budgets))

    def take(self, restricted: bool, limits: Limits) -> _Worker | None:
        """An idle warm worker for these limits, or one that is starting (waited for), else None."""
        key = (restricted, limits)
        worker: _Worker | None = None
        with self._cond:
            while not self._closed:
                idle = self._idle.get(key, [])
                while idle and worker is None:
                    candidate = idle.pop(0)
                    if candidate.idle():
                        worker = candidate
                    else:
                        candidate.end()
                if worker is not None or not self._starting.get(key):
                    break
                self._cond.wait(self._startup_s)
            if worker is None:
                self.misses += 1
            else:
                self.hits += 1
        self.warm(restricted, limits)  # its replacement (or, after a miss, one for the next such unit)
        return worker

    def wait_warm(self, budgets: Budgets, timeout_s: float, restricted: bool = True, count: int = 1) -> bool:
        """Wait until `count` workers for units with these budgets are idle (False: not in time)."""
        key = (restricted, limits_for(budgets))
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._idle.get(key, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed or key in self._broken:
                    return False
                self._cond.wait(left)
            return True

    def idle_count(self) -> int:
        with self._cond:
            return sum(len(workers) for workers in self._idle.values())

    def close(self) -> None:
        """End every idle worker, and those still starting once they are up (waited for)."""
        atexit.unregister(self.close)
        with self._cond:
            self._closed = True
            workers = [w for ws in self._idle.values() for w in ws]
            self._idle.clear()
            threads = list(self._threads)
            self._cond.notify_all()
        for worker in workers:
            worker.end()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(self._startup_s + WATCHDOG_GRACE_S)

    def _start(self, key: tuple[bool, Limits]) -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker.start(key[0], key[1], None)
            ok = worker.ready(self._startup_s)
        except (OSError, spawn.SandboxUnavailable) as exc:
            log.warning("agent: a warm engine worker could not be started (%s); units start cold", exc)
            ok = False
        with self._cond:
            self._starting[key] -= 1
            keep = ok and not self._closed and worker is not None
            if keep and worker is not None:
                self._idle.setdefault(key, []).append(worker)
            elif not self._closed:
                self._broken.add(key)
            self._cond.notify_all()
        if not keep and worker is not None:
            if not ok:
                log.warning("agent: a warm engine worker did not become ready; units with its limits start cold")
            worker.end()
