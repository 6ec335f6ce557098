"""How one command ended, as the launcher reports it: its captured output (bounded), its exit code or signal,
what killed it, and the step that failed when it never ran.

The launcher (``helper.c`` or ``launcher/``) writes one status line per fact on its stderr; ``parse_status``
reads them into a :class:`RunResult`.
"""

from __future__ import annotations

import errno as errno_mod
import logging
import os
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: Output beyond this many bytes is cut in the middle (REQ-BASH-001).
OUTPUT_LIMIT = 128 * 1024
OUTPUT_HEAD = 4 * 1024
OUTPUT_TAIL = 4 * 1024

_STAGE_TEXT = {
    "chdir": "changing to the working directory",
    "stdin": "opening /dev/null as stdin",
    "stderr": "joining stderr to stdout",
    "setsid": "starting a new session",
    "pdeathsig": "tying the command to its launcher",
    "setrlimit": "setting resource limits",
    "close-fds": "closing inherited file descriptors",
    "no-new-privs": "setting no_new_privs",
    "capget": "reading capabilities",
    "capbset-drop": "dropping capabilities",
    "cap-ambient": "clearing ambient capabilities",
    "capset": "dropping capabilities",
    "landlock-create-ruleset": "creating the Landlock ruleset",
    "landlock-open-rule-path": "opening a path for a Landlock rule",
    "landlock-add-rule": "adding a Landlock rule",
    "landlock-restrict-self": "applying Landlock",
    "seccomp": "installing the seccomp filter",
    "exec": "executing the program",
    "spawn": "starting the sandbox launcher",
    "subreaper": "becoming a child subreaper",
    "signalfd": "setting up signal handling",
    "fork": "forking the command",
    "usage": "parsing the launcher's arguments",
}


@dataclass(frozen=True)
class SetupFailure:
    """The command never ran: a step before exec failed."""

    stage: str
    errno: int
    detail: str = ""

    @property
    def sandbox(self) -> bool:
        """True when the failing step is part of the sandbox (not a missing directory or program)."""
        return self.stage not in ("chdir", "exec", "spawn")

    def describe(self) -> str:
        what = _STAGE_TEXT.get(self.stage, self.stage)
        reason = os.strerror(self.errno) if self.errno else "unknown error"
        name = _errno_name(self.errno)
        text = f"{what} failed: {reason} ({name})"
        return f"{text}: {self.detail}" if self.detail else text


def _errno_name(number: int) -> str:
    return errno_mod.errorcode.get(number, f"errno {number}")


class OutputCapture:
    """Keeps at most `limit` bytes; beyond that only the first `head` and last `tail` bytes survive, so
    memory stays bounded whatever the command prints."""

    def __init__(self, limit: int = OUTPUT_LIMIT, head: int = OUTPUT_HEAD, tail: int = OUTPUT_TAIL) -> None:
        self.limit, self.head_size, self.tail_size = limit, head, tail
        self.total = 0
        self._buf = bytearray()
        self._head: bytes | None = None

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        if self._head is None and len(self._buf) > self.limit:
            self._head = bytes(self._buf[: self.head_size])
            del self._buf[: len(self._buf) - self.tail_size]
        elif self._head is not None and len(self._buf) > 4 * self.tail_size:
            del self._buf[: len(self._buf) - self.tail_size]

    @property
    def cut(self) -> bool:
        return self._head is not None

    def parts(self) -> tuple[bytes, int, bytes]:
        """(head, omitted byte count, tail); when nothing was cut the whole output is the head."""
        if self._head is None:
            return bytes(self._buf), 0, b""
        tail = bytes(self._buf[-self.tail_size:])
        return self._head, self.total - len(self._head) - len(tail), tail


@dataclass
class RunResult:
    """How one command ended."""

    capture: OutputCapture
    exit_code: int | None = None  # shell convention: 128 + signal when killed by a signal
    signal: int | None = None
    killed: str | None = None  # "terminate" | "lifeline" | "process-limit" | "time-limit" | "disk-quota"
    timed_out: bool = False
    setup_failure: SetupFailure | None = None
    pid: int | None = None
    maxrss_kb: int | None = None
    launcher: str = ""
    duration_s: float = 0.0
    memory_limit_hits: int = 0  # times the tree's memory (shared memory included) reached its limit
    #: None when the launcher ended normally (it killed the tree itself); otherwise what the server's
    #: backstop found: True when every process of the tree is gone, False when some may survive.
    backstop_stopped: bool | None = None
    #: with a layer (-w): the coarse clock's reading the command was started after (overlay.Layer.mark_started)
    clock_ns: int | None = None


def parse_status(text: str, result: RunResult) -> None:
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "started":
            result.pid = int(rest)
        elif word == "clock":
            result.clock_ns = int(rest)
        elif word == "error":
            stage, _, num = rest.partition(" ")
            number, _, detail = num.partition(" ")
            try:
                code = int(number)
            except ValueError:
                code, detail = 0, num
            result.setup_failure = SetupFailure(stage, code, detail)
        elif word == "exit":
            result.exit_code = int(rest)
        elif word == "signal":
            result.signal = int(rest)
            result.exit_code = 128 + result.signal
        elif word == "killed":
            result.killed = rest
        elif word == "maxrss":
            result.maxrss_kb = int(rest)
        elif word == "memlimit":
            result.memory_limit_hits = int(rest)
        elif word == "note" and rest.startswith("memcg"):
            log.warning("sandbox launcher: %s (no memory cgroup for this command; memfd_create is refused "
                        "instead)", rest)
        elif word == "note":
            log.warning("sandbox launcher: %s (no pids cgroup for this command; the process-count watchdog "
                        "keeps the limit)", rest)
