"""Running one command under the launcher: restricted or not, with output capture, timeout, cancellation
and background jobs. The bash tool and the `sandbox run` command both go through here.

Every command is started by the launcher (compiled helper or Python launcher), never with preexec_fn:
the server is multi-threaded. The launcher is a child subreaper that owns the command's whole process
tree. Its stdin is a "lifeline" pipe held by this process: if the server dies, the pipe closes and the
launcher kills the tree. SIGTERM to the launcher means "kill the tree now" (cancel, timeout, shutdown).

The server does not rely on the launcher alone (REQ-BASH-018, REQ-BASH-025): it watches the launcher
through a pidfd, never waits on the output pipe without a bound, and when the launcher was killed (or
stopped, then killed) it kills the command's process group and cgroups itself, before reaping the
launcher whose pid names them; whatever still holds the output pipe after that is killed too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno as errno_mod
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from phoenix_lsp.sandbox import build, cgroups, landlock, launch_options, private_tmp, seccomp
from phoenix_lsp.sandbox.env import clean_environment
from phoenix_lsp.sandbox.limits import Limits

log = logging.getLogger(__name__)

#: Output beyond this many bytes is cut in the middle (REQ-BASH-001).
OUTPUT_LIMIT = 128 * 1024
OUTPUT_HEAD = 4 * 1024
OUTPUT_TAIL = 4 * 1024
#: How long the launcher gets to kill the tree after SIGTERM before it is killed itself.
TERMINATE_GRACE_S = 2.0

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
    import errno as errno_mod

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


@dataclass(frozen=True)
class SpawnRequest:
    """One command to run. `argv` is the program and its arguments (the bash tool passes bash -c)."""

    argv: tuple[str, ...]
    cwd: Path
    restricted: bool
    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] | None = None
    landlock_abi: int | None = None  # None: probe
    seccomp: bool | None = None  # None: probe
    deny_read: tuple[Path, ...] | None = None  # None: denylist.deny_read_paths() (defaults + settings)
    time_limit_s: float | None = None  # wall-clock limit enforced by the launcher (background jobs)


def _parse_status(text: str, result: RunResult) -> None:
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "started":
            result.pid = int(rest)
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


def command_env(restricted: bool, scratch: Path | None, base: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of a command: the server's (or `base`) without credentials (the same
    `clean_environment` the server applies, whoever calls), plus a private TMPDIR in restricted mode and
    settings that keep common tools from prompting or taking optional locks."""
    env = clean_environment(os.environ if base is None else base)
    env["PHOENIX_LSP_SANDBOX"] = "restricted" if restricted else "unrestricted"
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    if restricted and scratch is not None:
        for name in ("TMPDIR", "TMP", "TEMP"):
            env[name] = str(scratch)
        # git status would otherwise try (and fail, harmlessly but noisily) to refresh the index.
        env["GIT_OPTIONAL_LOCKS"] = "0"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def launcher_args(req: SpawnRequest, scratch: Path | None, background: bool = False) -> list[str]:
    """The full argv of the launcher for `req` (restricted options computed by launch_options.py)."""
    launch = build.launcher()
    args = list(launch.argv)
    if req.restricted:
        abi = req.landlock_abi if req.landlock_abi is not None else landlock.landlock_abi()
        if abi is None:
            raise SandboxUnavailable()
        with_seccomp = req.seccomp if req.seccomp is not None else (
            seccomp.seccomp_available() and seccomp.seccomp_supported_arch())
        assert scratch is not None
        # REQ-BASH-027: a private /tmp where the system allows it: other programs' files there, FIFOs included,
        # out of sight
        keep = private_tmp.private_tmp_keep(scratch, req.cwd) if private_tmp.private_tmp() is None else []
        args += launch_options.restricted_args(abi, scratch, req.limits, with_seccomp, req.deny_read, keep)
    if req.time_limit_s is not None:
        args += ["-t", f"{req.time_limit_s:g}"]
    if background:
        args.append("-B")
    args += ["-C", str(req.cwd), "--", *req.argv]
    return args


class SandboxUnavailable(RuntimeError):
    """Restricted was asked for on a kernel without Landlock."""

    def __init__(self) -> None:
        super().__init__(
            "Restricted mode needs the Landlock kernel sandbox, which this system does not offer (Linux "
            ">= 5.13 with Landlock enabled in the LSM list, 6.7+ for network rules). Only Unrestricted "
            "mode is available here.")


def _make_scratch(restricted: bool) -> Path | None:
    if not restricted:
        return None
    return Path(tempfile.mkdtemp(prefix="phoenix-lsp-scratch-"))


def remove_tree(root: Path) -> bool:
    """Delete `root` and everything in it, whatever the command left there; True when it is gone.

    Iterative (a 100,000-level tree does not hit Python's recursion limit), descriptor-relative (paths
    longer than PATH_MAX do not matter, and a directory swapped for a symlink is unlinked, never
    followed), and chmod-aware: a directory the command made without read or search permission for us
    (``mkdir -m 300``) is given u+rwx first. At most one directory descriptor per level is open at a time
    for the walk down; each is closed before its parent is revisited.
    """
    with contextlib.suppress(OSError):
        os.rmdir(root)  # the common case, an empty directory: one syscall
        return True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def open_dir(name: str, parent: int | None) -> int:
        try:
            return os.open(name, flags, dir_fd=parent)
        except PermissionError:
            os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False) if parent is not None else \
                os.chmod(name, 0o700)
            return os.open(name, flags, dir_fd=parent)

    try:
        top = open_dir(str(root), None)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno_mod.ENOTDIR, errno_mod.ELOOP):
            with contextlib.suppress(OSError):
                os.unlink(root)
        return not os.path.lexists(root)
    # Each level: (fd of the directory, name of it in its parent). Children are handled one at a time:
    # descend into the first subdirectory found, unlink files on the way; a directory found empty is
    # removed from its parent and the walk goes back up.
    stack: list[tuple[int, str]] = [(top, "")]
    try:
        while stack:
            fd, _name = stack[-1]
            descended = False
            try:
                with os.scandir(fd) as it:
                    entries = list(it)
            except PermissionError:
                os.fchmod(fd, 0o700)
                with os.scandir(fd) as it:
                    entries = list(it)
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
                    except PermissionError:  # the directory itself lacks write permission for us
                        os.fchmod(fd, 0o700)
                        os.unlink(entry.name, dir_fd=fd)
                    continue
                try:
                    child = open_dir(entry.name, fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    if exc.errno in (errno_mod.ENOTDIR, errno_mod.ELOOP):  # swapped for a file or link
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.name, dir_fd=fd)
                        continue
                    raise
                stack.append((child, entry.name))
                descended = True
                break
            if descended:
                continue
            stack.pop()
            os.close(fd)
            if stack:
                parent_fd = stack[-1][0]
                try:
                    os.rmdir(_name, dir_fd=parent_fd)
                except FileNotFoundError:
                    pass
                except PermissionError:
                    os.fchmod(parent_fd, 0o700)
                    os.rmdir(_name, dir_fd=parent_fd)
        os.rmdir(root)
    except OSError as exc:
        log.warning("could not remove %s completely (%s); remove it by hand", root, exc)
    finally:
        for fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    return not os.path.lexists(root)


def _remove_scratch(scratch: Path | None) -> None:
    if scratch is not None:
        remove_tree(scratch)


def _pipe_holders(pipe_inode: int, exclude: int) -> list[int]:
    """Processes (other than `exclude`, this server) that hold a descriptor on the pipe `pipe_inode`: what
    keeps a command's output open after its launcher is gone. Only this user's processes are visible
    unless we are root, which is exactly the set a command can have started."""
    link = f"pipe:[{pipe_inode}]"
    out: list[int] = []
    with contextlib.suppress(OSError), os.scandir("/proc") as it:
        for entry in it:
            if not entry.name.isdigit() or int(entry.name) == exclude:
                continue
            try:
                fds = os.listdir(f"/proc/{entry.name}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{entry.name}/fd/{fd}") == link:
                        out.append(int(entry.name))
                        break
                except OSError:
                    continue
    return out


def _kill_pipe_holders(pipe_inode: int) -> int:
    """SIGKILL every process that still holds the command's output pipe; how many were found."""
    holders = _pipe_holders(pipe_inode, os.getpid())
    for pid in holders:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(holders)


def _kill_leftovers(launcher_pid: int, command_pid: int | None) -> bool:
    """The server's backstop when the launcher died without killing the tree (it was SIGKILLed after not
    answering SIGTERM, e.g. starved of CPU, or killed by anyone): kill the command's process group and
    every process in its cgroups. True when nothing is left (always the case with a cgroup; without one,
    processes that left the process group cannot be found here and may survive: the caller also kills
    whatever still holds the output pipe). Called before the launcher is reaped, so its pid, which names
    the cgroups, cannot have been reused meanwhile."""
    if command_pid:
        with contextlib.suppress(OSError):
            os.killpg(command_pid, signal.SIGKILL)
    if not any(path.exists() for path in cgroups.command_cgroups(launcher_pid)):
        return False
    return cgroups.kill_command_cgroups(launcher_pid) == 0


class _Launcher:
    """One launcher process watched from the event loop without ever blocking on its pipes.

    asyncio's own subprocess support resolves ``wait()`` only once every pipe is closed (CPython 3.11),
    so a tree member that outlives a killed launcher and keeps the output pipe open hung the call for
    ever. Here the launcher's end is seen through a pidfd (a thread with ``waitid(WNOWAIT)`` where there
    is none), without reaping it: its pid, which names the command's cgroups, stays ours until the
    backstop has run. Output and status are read by non-blocking readers on the loop."""

    def __init__(self, popen: subprocess.Popen[bytes], capture: OutputCapture) -> None:
        assert popen.stdout is not None and popen.stderr is not None
        self.popen = popen
        self.pid = popen.pid
        self.status = bytearray()
        self.loop = asyncio.get_running_loop()
        self.out_fd, self.err_fd = popen.stdout.fileno(), popen.stderr.fileno()
        self.out_inode = os.fstat(self.out_fd).st_ino
        self.out_eof: asyncio.Future[None] = self.loop.create_future()
        self.err_eof: asyncio.Future[None] = self.loop.create_future()
        self.exited: asyncio.Future[None] = self.loop.create_future()
        self.returncode: int | None = None
        self._pidfd = -1
        self._reaped = False
        for fd, sink, eof in ((self.out_fd, capture.feed, self.out_eof),
                              (self.err_fd, self.status.extend, self.err_eof)):
            os.set_blocking(fd, False)
            self.loop.add_reader(fd, self._on_readable, fd, sink, eof)
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (OSError, AttributeError):
            threading.Thread(target=self._wait_thread, daemon=True, name=f"phoenix-wait-{self.pid}").start()
        else:
            self.loop.add_reader(self._pidfd, self._on_exit)

    def _on_readable(self, fd: int, sink: Callable[[bytes], object], eof: asyncio.Future[None]) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            sink(data)
            return
        self.loop.remove_reader(fd)
        if not eof.done():
            eof.set_result(None)

    def _on_exit(self) -> None:
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
        if not self.exited.done():
            self.exited.set_result(None)

    def _wait_thread(self) -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(self._on_exit)

    def killed_by_signal(self) -> bool:
        """The launcher has exited (it is not reaped yet) and a signal ended it."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return self.returncode is not None and self.returncode < 0
        return info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)

    def signal(self, signum: int) -> None:
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    async def terminate(self) -> None:
        """Ask the launcher to kill the tree (SIGTERM) and wait for it to end; SIGKILL it only as a last
        resort (a stopped or starved launcher)."""
        if self.exited.done():
            return
        self.signal(signal.SIGTERM)
        if not await self.drain(self.exited, TERMINATE_GRACE_S):
            self.signal(signal.SIGKILL)
            await asyncio.shield(self.exited)

    @staticmethod
    async def drain(future: asyncio.Future[None], seconds: float | None) -> bool:
        """Wait up to `seconds` (None: without a bound) for `future` (the end of a pipe, of the launcher);
        True when it came."""
        if future.done():
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(future), seconds)
        return future.done()

    def reap(self) -> None:
        """Reap the launcher (waiting if it still runs) and let go of every descriptor, the lifeline
        included. Idempotent."""
        if self._reaped:
            return
        if not self.exited.done():  # only after an unexpected error: never leave a launcher (and tree) behind
            self.signal(signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            _kill_leftovers(self.pid, None)
        self._reaped = True
        for fd in (self.out_fd, self.err_fd):
            self.loop.remove_reader(fd)
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = -1
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.popen.wait()
        self.returncode = self.popen.returncode


async def _finish(launcher: _Launcher, result: RunResult) -> None:
    """The launcher has ended: read its status, run the backstop when it did not stop the tree itself,
    then drain the output for a bounded time and kill whatever still holds it (REQ-BASH-018,
    REQ-BASH-025). Never waits on a pipe without a bound: orphans of a killed launcher may hold it."""
    await launcher.drain(launcher.err_eof, TERMINATE_GRACE_S)  # only the launcher writes there
    _parse_status(bytes(launcher.status).decode("utf-8", "replace"), result)
    abnormal = launcher.killed_by_signal()
    if abnormal and result.pid is not None:
        # Killed before it could stop the tree (it did not answer SIGTERM in time, or something killed it).
        result.backstop_stopped = await asyncio.to_thread(_kill_leftovers, launcher.pid, result.pid)
    elif any(path.exists() for path in cgroups.command_cgroups(launcher.pid)):
        # A launcher that ended normally removed its cgroups; one left behind is emptied all the same.
        await asyncio.to_thread(cgroups.kill_command_cgroups, launcher.pid)
    if not await launcher.drain(launcher.out_eof, 0.05 if abnormal else TERMINATE_GRACE_S):
        # Something outside every cgroup and process group (no cgroup here, or an unrestricted command)
        # still holds the output: those are the tree's survivors. Kill them, then look again.
        found = await asyncio.to_thread(_kill_pipe_holders, launcher.out_inode)
        if not await launcher.drain(launcher.out_eof, TERMINATE_GRACE_S):
            await asyncio.to_thread(_kill_pipe_holders, launcher.out_inode)
            result.backstop_stopped = False
        elif found and not abnormal:
            log.warning("sandbox: %d process(es) of a finished command still held its output; killed", found)


async def _cancel_cleanup(launcher: _Launcher, result: RunResult) -> None:
    """Cancel: stop the tree through the launcher, with the same backstop as a run's end."""
    await launcher.terminate()
    _parse_status(bytes(launcher.status).decode("utf-8", "replace"), result)
    if launcher.killed_by_signal():
        await asyncio.to_thread(_kill_leftovers, launcher.pid, result.pid)
    if not await launcher.drain(launcher.out_eof, 0.05):
        found = await asyncio.to_thread(_kill_pipe_holders, launcher.out_inode)
        if found:
            await launcher.drain(launcher.out_eof, TERMINATE_GRACE_S)


async def run(req: SpawnRequest, timeout: float | None = None) -> RunResult:
    """Run `req` to completion (or timeout) and return its captured output and status.

    Cancelling the task that awaits this kills the whole process tree before CancelledError propagates.
    Whatever happens to the launcher (killed, stopped), this returns; `backstop_stopped` says what the
    server verified when the launcher could not stop the tree itself.
    """
    started = time.monotonic()
    scratch = _make_scratch(req.restricted)
    capture = OutputCapture()
    result = RunResult(capture=capture)
    try:
        args = launcher_args(req, scratch)
        result.launcher = build.launcher().kind
        env = command_env(req.restricted, scratch, req.env)
        try:
            popen = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, close_fds=True)
        except OSError as exc:
            result.setup_failure = SetupFailure("spawn", exc.errno or 0, str(exc))
            return result
        launcher = _Launcher(popen, capture)
        try:
            if not await launcher.drain(launcher.exited, timeout):
                result.timed_out = True
                await launcher.terminate()
            await _finish(launcher, result)
        except asyncio.CancelledError:
            # Kill the tree even if we are cancelled again meanwhile, then let the cancel go on.
            killer = asyncio.ensure_future(_cancel_cleanup(launcher, result))
            while not killer.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(killer)
            raise
        finally:
            launcher.reap()  # the launcher has ended by now; this closes the lifeline too
        if result.pid is None and result.setup_failure is None and launcher.returncode not in (None, 0):
            result.setup_failure = SetupFailure("spawn", 0, f"launcher exited with {launcher.returncode}")
        return result
    finally:
        _remove_scratch(scratch)
        result.duration_s = time.monotonic() - started


# ------------------------------------------------------------------------------------- background jobs


@dataclass
class BackgroundJob:
    """A command started in `background` mode, owned by this server process."""

    pid: int
    pgid: int
    output_path: Path
    command: str
    conversation_id: str
    started_at: float
    _popen: subprocess.Popen[bytes] = field(repr=False)
    restricted: bool = False
    _scratch: Path | None = field(repr=False, default=None)
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    def alive(self) -> bool:
        return not self.finished.is_set()

    def terminate(self, wait: float = TERMINATE_GRACE_S) -> None:
        """Kill the job's whole tree and wait (up to `wait` seconds) for it to be gone."""
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(signal.SIGTERM)
        if not self.finished.wait(wait) and self._popen.poll() is None:
            self._popen.kill()


_jobs: dict[int, BackgroundJob] = {}
_jobs_lock = threading.Lock()


def background_jobs(conversation_id: str | None = None) -> list[BackgroundJob]:
    """Live background jobs (of one conversation, or all)."""
    with _jobs_lock:
        return [j for j in _jobs.values()
                if j.alive() and (conversation_id is None or j.conversation_id == conversation_id)]


def kill_background_jobs(conversation_id: str | None = None) -> int:
    """Kill every live background tree (of one conversation, or all: server shutdown, which also deletes
    every background log this process wrote). Returns how many trees were killed."""
    jobs = background_jobs(conversation_id)
    for job in jobs:
        job.terminate()
    if conversation_id is None:
        remove_background_logs()
    return len(jobs)


def end_restricted_jobs(conversation_id: str) -> int:
    """Kill the conversation's background jobs that run in the sandbox: called when the conversation
    leaves Restricted, so no command of the read-only phase keeps a lock, a lease or a descriptor on the
    user's files once that phase is over (REQ-BASH-023). Their logs stay readable until the conversation
    ends. Returns how many trees were killed."""
    jobs = [j for j in background_jobs(conversation_id) if j.restricted]
    for job in jobs:
        job.terminate()
    return len(jobs)


def end_conversation_jobs(conversation_id: str) -> int:
    """The conversation is over (a sub-agent finished, or the server shuts down): kill its background
    jobs and delete their logs (REQ-BASH-024). Returns how many trees were killed."""
    killed = kill_background_jobs(conversation_id)
    with _jobs_lock:
        logs = [d for d, cid in _log_dirs.items() if cid == conversation_id]
        for d in logs:
            _log_dirs.pop(d, None)
    for directory in logs:
        remove_tree(directory)
    return killed


#: Directories holding background logs, with the conversation each belongs to.
_log_dirs: dict[Path, str] = {}


def background_log_dir(base: Path, conversation_id: str) -> Path:
    """Where this server process keeps the background logs of one conversation: one directory per
    server process and conversation, so ending either deletes exactly its logs. Directories of server
    processes that are gone (a crash) are deleted on the way."""
    server_dir = base / str(os.getpid())
    if not server_dir.exists():
        with contextlib.suppress(OSError):
            for entry in base.iterdir():
                if entry.name.isdigit() and not Path(f"/proc/{entry.name}").exists():
                    remove_tree(entry)
    directory = server_dir / (conversation_id or "no-conversation")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _jobs_lock:
        _log_dirs[directory] = conversation_id
    return directory


def remove_background_logs() -> None:
    """Delete every background log directory this process wrote (server shutdown)."""
    with _jobs_lock:
        logs = list(_log_dirs)
        _log_dirs.clear()
    for directory in logs:
        remove_tree(directory)
        with contextlib.suppress(OSError):
            directory.parent.rmdir()  # the per-process directory, once empty


def _watch(job_future: concurrent.futures.Future[tuple[int, SetupFailure | None]],
           popen: subprocess.Popen[bytes], scratch: Path | None) -> None:
    """Thread body: report the start, then wait for the end and clean up."""
    assert popen.stderr is not None
    result = RunResult(capture=OutputCapture())
    first = ""
    while result.pid is None and result.setup_failure is None:  # notes may come before "started"
        first = popen.stderr.readline().decode("utf-8", "replace")
        if not first:
            break
        _parse_status(first, result)
    if result.pid is None and result.setup_failure is None:
        result.setup_failure = SetupFailure("spawn", 0, f"launcher said {first.strip()!r}")
    job_future.set_result((result.pid or 0, result.setup_failure))
    popen.stderr.read()
    # Wait for the launcher's end without reaping it: its pid names the cgroups the backstop empties.
    try:
        info = os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        info = None
    if info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) and result.pid is not None:
        _kill_leftovers(popen.pid, result.pid)  # the launcher was killed before it stopped the tree
    popen.wait()
    if popen.stdin is not None:
        with contextlib.suppress(OSError):
            popen.stdin.close()
    _remove_scratch(scratch)
    with _jobs_lock:
        job = _jobs.pop(popen.pid, None)
    if job is not None:
        job.finished.set()


async def start_background(req: SpawnRequest, output_path: Path, command: str,
                           conversation_id: str = "") -> BackgroundJob | SetupFailure:
    """Start `req` detached; its combined output goes to `output_path` (opened here, outside the
    sandbox), and the launcher appends the completion status to it. Returns once the command is exec'd."""
    scratch = _make_scratch(req.restricted)
    try:
        args = launcher_args(req, scratch, background=True)
        env = command_env(req.restricted, scratch, req.env)
        output_path.parent.mkdir(parents=True, exist_ok=True)
        with open(output_path, "ab") as out:
            popen = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE,
                                     env=env, close_fds=True)
    except OSError as exc:
        _remove_scratch(scratch)
        return SetupFailure("spawn", exc.errno or 0, str(exc))
    except SandboxUnavailable:
        _remove_scratch(scratch)
        raise
    fut: concurrent.futures.Future[tuple[int, SetupFailure | None]] = concurrent.futures.Future()
    thread = threading.Thread(target=_watch, args=(fut, popen, scratch), daemon=True,
                              name=f"phoenix-bg-{popen.pid}")
    job = BackgroundJob(pid=0, pgid=0, output_path=output_path, command=command,
                        conversation_id=conversation_id, started_at=time.time(), _popen=popen,
                        _scratch=scratch, restricted=req.restricted)
    with _jobs_lock:
        _jobs[popen.pid] = job
    thread.start()
    pid, failure = await asyncio.wrap_future(fut)
    if failure is not None:
        await asyncio.get_running_loop().run_in_executor(None, job.finished.wait, TERMINATE_GRACE_S)
        return failure
    job.pid = job.pgid = pid  # the command leads its own session and process group
    return job
