"""The pydantic-monty engine, host side (REQ-AGENT-008/009/013).

One execute = one worker process (``phoenix_lsp.agent.worker``, the same Python), started by the project's sandbox
launcher in Restricted mode: Landlock (read-only filesystem, writes only to a private scratch directory, no TCP),
seccomp, no capabilities, rlimits (CPU, address space, open files, processes) and a memory cgroup where available.
The launcher's stdin is the lifeline: if this process dies the tree dies. pydantic-monty itself runs the script in
a ``monty`` subprocess of the worker, which inherits all of that.

The watchdog here: each wait for the worker is bounded (start-up grace + the unit's CPU budget + a grace, with the
time spent in host functions not counted); past it the tree is killed and the unit ends with ``ENGINE``/``TIMEOUT``.
Anything on the channel that is not the protocol ends it with ``ENGINE``/``PROTOCOL``. Two more ends, for the run
(issue 24): its wall clock (``remaining``, host calls counted) spent while the unit runs is ``BUDGET``/
``WALL_CLOCK``, and a cancel (``cancelled``) kills the tree at once (``ENGINE``/``CANCELLED``): with a
``host.Cancellation`` from the moment it is set, even while the script loops without calling a tool; with a plain
``threading.Event`` within ``CANCEL_POLL_S``.

Warm workers (REQ-AGENT-037): with a :class:`WarmPool` (``warm_pool.py``), a unit is handed to a worker started
ahead of need, and its tree is ended by the pool off the unit's path once the unit's answer is in (``retire``);
without one (or with no warm worker for the unit's limits) the worker is started cold. The worker process itself
is ``worker_process.py``; the lines of its channel, ``worker_lines.py``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pydantic_monty
from pydantic import ValidationError
from pydantic_monty._binary import find_monty_binary

from .. import safe_json
from ..sandbox import landlock, spawn
from ..sandbox.limits import Limits
from . import static_check
from .contracts import AgentError, ErrorCode, ErrorKind, ExecutionUnit, Metrics, ResultEnvelope, ToolFailure
from .engine_types import EngineHealth, HostFunction
from .timing import Stopwatch
from .warm_pool import WarmPool
from .worker_lines import MAX_LINE_BYTES, Violation, read_line, write_all
from .worker_process import (
    ADDRESS_SPACE,
    MEMORY_OVERHEAD,
    STARTUP_GRACE_S,
    WATCHDOG_GRACE_S,
    Worker,
    ended_envelope,
    is_worker,
    limits_for,
    terminate,
    worker_argv,
)

__all__ = ["ADDRESS_SPACE", "CANCEL_POLL_S", "MAX_LINE_BYTES", "MEMORY_OVERHEAD", "STARTUP_GRACE_S",
           "WATCHDOG_GRACE_S", "MontyEngine", "WarmPool", "is_worker", "limits_for", "worker_argv"]

log = logging.getLogger(__name__)

#: how often a plain threading.Event cancel flag is looked at while a unit runs (a Cancellation is immediate)
CANCEL_POLL_S = 0.05


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
        self._timing = Stopwatch("unit")
        self._restricted = restricted
        self._check_scripts = check_scripts

    def capabilities(self) -> list[str]:
        return sorted(self._functions)

    def health(self) -> EngineHealth:
        try:
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
        self._timing = timing = Stopwatch("unit")  # where its time goes (``timing.py``), logged at its end
        try:
            worker = self._pool.take(self._restricted, limits) if self._pool is not None else None
            timing.mark("take")
            if worker is not None:
                try:
                    return self._run_on(worker, unit)
                except _NeverTook:  # alive when handed out, dead before it read its go line: the unit never ran
                    log.info("agent: a warm engine worker died before it took its unit; it runs on a fresh one")
            return self._run_on(Worker.start(self._restricted, limits, unit), unit)
        finally:
            timing.log(log)

    def _run_on(self, worker: Worker, unit: ExecutionUnit) -> ResultEnvelope:
        forget: Callable[[], None] = _nothing
        try:
            if worker.warm:  # a warm worker reads its unit once it is told to go, never before
                worker.hand(unit)
                self._timing.mark("hand")
            on_cancel = getattr(self._cancelled, "on_cancel", None)
            if callable(on_cancel):  # a cancel ends the tree now: the launcher kills it on SIGTERM
                forget = on_cancel(functools.partial(terminate, worker.launcher))
            return self._converse(unit, worker.launcher, worker.replies, worker.buffer, worker if worker.warm else None)
        finally:
            self._timing.mark("worker")
            forget()
            if self._pool is not None:  # its answer is in (or it failed): its tree ends off the unit's path
                self._pool.retire(worker)
            else:
                worker.end()
            self._timing.mark("end")

    def _converse(self, unit: ExecutionUnit, launcher: subprocess.Popen[bytes], replies: int,
                  buffer: bytearray | None = None, warm: Worker | None = None) -> ResultEnvelope:
        """The unit's exchange with its worker; `warm`: the warm worker it was handed to (None: a cold one)."""
        assert launcher.stdout is not None
        out = launcher.stdout.fileno()
        os.set_blocking(out, False)
        budget_s = STARTUP_GRACE_S + unit.budgets.cpu_s + WATCHDOG_GRACE_S  # host-call time not counted
        buffer = bytearray() if buffer is None else buffer
        calls = 0
        while True:
            try:
                line, budget_s = read_line(out, buffer, budget_s, self._run_limit)
            except _RunEnded as ended:
                return ResultEnvelope.failure(ended.kind, ended.code, ended.message, Metrics(tool_calls=calls))
            except TimeoutError:
                return ResultEnvelope.failure(
                    ErrorKind.ENGINE, ErrorCode.TIMEOUT,
                    f"the worker did not finish within its budget ({unit.budgets.cpu_s:g} s of execution "
                    f"plus {STARTUP_GRACE_S + WATCHDOG_GRACE_S:g} s of grace); it was killed",
                    Metrics(tool_calls=calls))
            except Violation as exc:
                return _protocol(str(exc), calls)
            if line is None:
                if self._cancelled is not None and self._cancelled.is_set():
                    return _cancelled_envelope(calls)
                if warm is not None and calls == 0 and warm.never_took_unit():
                    raise _NeverTook
                return ended_envelope(launcher, calls, b"" if warm is None else bytes(warm.status))
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
            self._timing.mark("worker")
            reply = self._call(unit, message)
            self._timing.mark("calls")
            try:
                write_all(replies, reply, STARTUP_GRACE_S)
            except TimeoutError:
                return _protocol("a worker that does not read its replies", calls)
            self._timing.mark("reply")

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

    def _call(self, unit: ExecutionUnit, message: dict[str, Any]) -> bytes:
        """Run one host call for the worker: only a tool the unit allows (checked again here, whatever the
        worker says), with JSON arguments; the reply's line: the answer as JSON (encoded once), or a typed error."""
        name, args, kwargs = message.get("call"), message.get("args", []), message.get("kwargs", {})
        if not isinstance(name, str) or name not in unit.functions() or name not in self._functions:
            return _line({"error": _err(ErrorKind.DENIED, ErrorCode.CAPABILITY_DENIED, f"{name!r} is not allowed")})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return _line({"error": _err(ErrorKind.ENGINE, ErrorCode.PROTOCOL, "malformed call")})
        try:
            return _line({"return": self._functions[name](*args, **kwargs)})
        except ToolFailure as failure:
            return _line({"error": failure.error.model_dump(mode="json")})
        except Exception as exc:  # a tool's failure is the script's business (TOOL), not the server's
            return _line({"error": _err(ErrorKind.TOOL, ErrorCode.TOOL_ERROR, f"{name}: {type(exc).__name__}: {exc}")})


_CANCELLED = "the run was cancelled while this unit ran; its process tree was killed"


class _NeverTook(Exception):
    """A warm worker ended before it read its go line: its unit never ran and may go to another worker."""


class _RunEnded(Exception):
    """The run (not the unit) ends the unit: cancelled, or out of wall-clock time."""

    def __init__(self, kind: ErrorKind, code: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.code, self.message = kind, code, message


def _cancelled_envelope(calls: int) -> ResultEnvelope:
    return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.CANCELLED, _CANCELLED, Metrics(tool_calls=calls))


def _line(reply: dict[str, Any]) -> bytes:
    """A reply as its line on the worker's FIFO (a value that is not JSON fails here, as the tool's error)."""
    return (json.dumps(reply) + "\n").encode()


def _nothing() -> None:
    return None


def _err(kind: ErrorKind, code: str, message: str) -> dict[str, Any]:
    return AgentError(kind=kind, code=code, message=message).model_dump(mode="json")


def _protocol(what: str, calls: int) -> ResultEnvelope:
    return ResultEnvelope.failure(ErrorKind.ENGINE, ErrorCode.PROTOCOL,
                                  f"the engine worker sent {what}; it was killed", Metrics(tool_calls=calls))
