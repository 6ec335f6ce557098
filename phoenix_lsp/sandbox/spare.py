"""A spare launcher (REQ-BASH-047): the compiled helper started ahead of a Restricted command, before the command is
known, so that what every Restricted command needs the same way is done off the command's path.

A spare is the helper run with ``-R fd`` and only the options of what it makes ahead (``SPARE_OPTIONS``: the
pids and memory cgroups with their limits, the scratch quota): it makes its cgroups, forks its child, which joins
them and starts its own session (the scheduler autogroup of REQ-BASH-004), then waits. The command comes later as a
request on the socket ``fd``: the command's other options (its Landlock rules, seccomp filters, rlimits, private /tmp,
working directory), the command and its environment. The child applies them as a freshly started helper would and
runs the command. Joining a cgroup waits for an RCU grace period after a pause (cgroup v1 here) and a fresh
autogroup waits its turn on a loaded machine: the spare paid both while the server was idle.

What a spare never does: hold anything of one command for the next (each spare serves one command and ends with
it; the next one is a new process started by the server), run anything before its request (it waits in the
helper's own code), or hold a policy (every rule comes with the request, computed when the command is run). A
spare that is gone, stopped or made for other limits is not used: the command is started as before (a new
helper with the full command line), never without the sandbox.

The spare is this process's child like any launcher, so its end, status and backstop are watched the same way
(``watch.py``). One spare is kept at a time, made again after each Restricted command by a thread of its own. The
Python launcher (no C compiler) has no spares. ``PHOENIX_LSP_SANDBOX_SPARE=0`` turns them off.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from phoenix_lsp.sandbox.scratch import make_scratch, remove_scratch

log = logging.getLogger(__name__)

#: the helper's options that a spare takes when it starts, each with a value (helper.c's SPARE_OPTIONS, -R aside)
SPARE_OPTIONS = frozenset({"-m", "-g", "-G", "-u", "-Q"})
#: the helper's options without a value (every other option has one)
FLAGS = frozenset({"-n", "-k", "-B"})
#: the request's largest size the helper reads (helper.c's REQUEST_MAX)
REQUEST_MAX = 4 << 20
#: the send buffer asked for the request socket, so that one send hands any common request over
SEND_BUFFER = 1 << 20


def enabled() -> bool:
    """Whether this process keeps a spare launcher (on unless PHOENIX_LSP_SANDBOX_SPARE=0)."""
    return os.environ.get("PHOENIX_LSP_SANDBOX_SPARE", "1").strip() != "0"


def split_options(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """The helper options `words` (without the launcher's own argv) split into the spare's (SPARE_OPTIONS) and the
    request's (every other option, ``--`` and the command), each in its order."""
    spare: list[str] = []
    request: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            request += words[i:]
            break
        if word in FLAGS:
            request.append(word)
            i += 1
            continue
        (spare if word in SPARE_OPTIONS else request).extend(words[i:i + 2])
        i += 2
    return spare, request


def encode_request(words: Sequence[str], env: Mapping[str, str]) -> bytes:
    """A spare's request: a header of three numbers of 10 digits (words, environment entries, bytes of the body),
    then each word and each ``NAME=value`` entry NUL-terminated (helper.c's read_request)."""
    entries = [f"{name}={value}" for name, value in env.items()]
    strings = [*words, *entries]
    if any("\0" in s for s in strings):
        raise ValueError("a command's word or environment entry holds a NUL byte")
    body = b"".join(s.encode("utf-8", "surrogateescape") + b"\0" for s in strings)
    return f"{len(words):010d} {len(entries):010d} {len(body):010d}\n".encode() + body


@dataclass
class Spare:
    """One spare launcher: its process (this process's child), this end of its request socket, the launcher argv
    and spare options it was started with, and the scratch directory made for its command."""

    popen: subprocess.Popen[bytes]
    sock: socket.socket
    launcher: tuple[str, ...]
    options: tuple[str, ...]
    scratch: Path
    ready: bool = False

    def is_ready(self) -> bool:
        """Whether its child waits for the command (it said so on the socket); never waits."""
        if not self.ready:
            with contextlib.suppress(OSError):
                self.ready = self.sock.recv(1, socket.MSG_DONTWAIT) == b"R"
        return self.ready


_lock = threading.Lock()
_held: Spare | None = None
#: every spare process from its start until it took a command or was reaped; held while one is being started
_pids_lock = threading.Lock()
_pids: set[int] = set()
_jobs: queue.Queue[Callable[[], None]] = queue.Queue()
_thread: threading.Thread | None = None


def take() -> Spare | None:
    """The spare kept for the next Restricted command (it is this caller's from now on), or None. One still
    getting ready is taken all the same: it gets there sooner than a new launcher would."""
    global _held
    with _lock:
        spare, _held = _held, None
    return spare


def pids() -> frozenset[int]:
    """The process ids of the spares of this process that have no command: the one kept, one being started, ones
    let go and ending (each one's child, still waiting or being killed, is that process's own)."""
    with _pids_lock:
        return frozenset(_pids)


def wait_ready(timeout: float) -> bool:
    """Wait up to `timeout` seconds until a spare is kept and ready (benchmarks, tests); whether one is."""
    deadline = time.monotonic() + timeout
    while True:
        with _lock:
            held = _held
            if held is not None and held.is_ready():
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def hand(spare: Spare, args: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
    """Hand the command whose full launcher command line is `args` to `spare`: its process, now running the
    command, or None when the spare cannot take it (made with another launcher or other spare options, gone, or a
    request that does not fit its socket); the spare is then let go, its scratch directory kept for the caller, who
    starts the command as before."""
    words = list(args[len(spare.launcher):])
    options, request = split_options(words)
    handed = False
    try:
        if tuple(args[:len(spare.launcher)]) != spare.launcher or tuple(options) != spare.options:
            return None
        if spare.popen.poll() is not None:
            log.warning("sandbox: the spare launcher had ended (%s); the command starts its own launcher",
                        spare.popen.returncode)
            return None
        data = encode_request(request, env)
        if len(data) > REQUEST_MAX:
            return None
        try:
            sent = spare.sock.send(data, socket.MSG_DONTWAIT)  # never waits on a spare that does not read
        except OSError:  # its child is gone (EPIPE), or its socket is full (EAGAIN)
            return None
        if sent != len(data):
            return None  # part of a request: the spare is let go (it reads a cut request as an error and ends)
        handed = True
        with _pids_lock:
            _pids.discard(spare.popen.pid)  # a command's launcher from now on
        return spare.popen
    finally:
        spare.sock.close()  # the request is whole in the socket (or the spare is let go): end of file after it
        if not handed:
            let_go(spare, keep_scratch=True)


def let_go(spare: Spare, keep_scratch: bool = False) -> None:
    """A spare unused: its request socket and lifeline closed, it kills its child and ends (reaped by the spare
    thread); its scratch directory removed unless the caller keeps it."""
    spare.sock.close()
    for stream in (spare.popen.stdin, spare.popen.stdout, spare.popen.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if not keep_scratch:
        remove_scratch(spare.scratch)
    _submit(lambda: _reap(spare.popen))  # it ends at once (its lifeline closed): reaped off the caller's path


def _reap(popen: subprocess.Popen[bytes]) -> None:
    popen.wait()
    with _pids_lock:
        _pids.discard(popen.pid)


def replenish(launcher: Sequence[str], options_for: Callable[[Path], Sequence[str]]) -> None:
    """Have a spare ready for the next Restricted command, started by the spare thread: `launcher` is the helper's
    argv, `options_for(scratch)` the spare options of a command run with that scratch directory. A kept spare made
    for other options is let go when a command finds it so."""
    if enabled():
        _submit(lambda: _make(tuple(launcher), options_for))


def _make(launcher: tuple[str, ...], options_for: Callable[[Path], Sequence[str]]) -> None:
    global _held
    with _lock:
        held = _held
        if held is not None and held.launcher == launcher and held.popen.poll() is None:
            return  # one is kept already
        _held = None
    if held is not None:
        let_go(held)
    scratch = make_scratch(True)
    assert scratch is not None
    options = tuple(options_for(scratch))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(OSError):
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        # No environment: the command's comes with its request, and nothing of the server's reaches the spare.
        with _pids_lock:  # pids() waits for its start: the spare is never a process of no one's
            popen = subprocess.Popen([*launcher, "-R", str(theirs.fileno()), *options], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}, close_fds=True,
                                     pass_fds=(theirs.fileno(),))
            _pids.add(popen.pid)
    except OSError as exc:
        ours.close()
        remove_scratch(scratch)
        log.warning("sandbox: no spare launcher (%s); each Restricted command starts its own, as before", exc)
        return
    finally:
        theirs.close()
    with _lock:  # only this thread makes spares: none was kept meanwhile
        _held = Spare(popen, ours, launcher, options, scratch)


def _submit(job: Callable[[], None]) -> None:
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_run_jobs, name="phoenix-spare", daemon=True)
            _thread.start()
            atexit.register(discard)
    _jobs.put(job)


def _run_jobs() -> None:
    while True:
        job = _jobs.get()
        try:
            job()
        except Exception:  # one failed spare must not stop the next
            log.exception("sandbox: making or reaping a spare launcher failed")


def discard() -> None:
    """Let go of the kept spare (at this process's exit, tests): it kills its child and ends; its scratch directory
    (empty: nothing ran) is removed here."""
    spare = take()
    if spare is not None:
        let_go(spare, keep_scratch=True)
        remove_scratch(spare.scratch, wait=True)
