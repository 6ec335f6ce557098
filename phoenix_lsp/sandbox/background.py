"""Background jobs: commands started in ``background`` mode, owned by this server process, with their output
in a log file of the conversation (REQ-BASH-023, REQ-BASH-024).

Over 300 lines: the registry of jobs, their watcher threads and the hand-offs of a captured job's layer (ended,
requeued, discarded and told, REQ-BASH-043..046) share one lock and one table of jobs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.sandbox.backstop import kill_leftovers
from phoenix_lsp.sandbox.outcome import OutputCapture, RunResult, SetupFailure, parse_status
from phoenix_lsp.sandbox.scratch import make_scratch, remove_scratch, remove_tree
from phoenix_lsp.sandbox.spawn import SandboxUnavailable, SpawnRequest, command_env, launcher_args
from phoenix_lsp.sandbox.watch import TERMINATE_GRACE_S

log = logging.getLogger(__name__)


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
    # REQ-BASH-028: the job's own layer while it runs (None: not captured). Its changes can be read at any
    # time (tools.shell_changes.scan: a snapshot while it runs) and are accepted or discarded once it ended.
    layer: overlay.Layer | None = None
    discarded: bool = False  # its layer was thrown away (its conversation or the server ended)
    #: names it in the server's run (a pid is reused): the core's review of it (REQ-BASH-044) is asked by it
    key: str = field(default_factory=lambda: f"background-{secrets.token_hex(6)}")
    ending: bool = False  # killed with its conversation or the server: its layer is discarded, never reviewed

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
#: REQ-BASH-043: captured jobs that ended, by conversation, whose layers wait for their review (the
#: conversation's next bash call reviews them, before its own command runs)
_ended: dict[str, list[BackgroundJob]] = {}


#: REQ-BASH-044: told, from the job's watcher thread, that a captured job ended and waits for its review
_ended_listeners: list[Callable[[BackgroundJob], None]] = []
#: REQ-BASH-046: what a layer discarded unreviewed held, in words ("2 created, 1 modified: a.txt, ..."); the server
#: sets it (the change set is read by ``tools/shell_changes``, which the sandbox does not import)
describe_layer: list[Callable[[overlay.Layer], str]] = []
#: the captured jobs discarded unreviewed, with what they held, until the server tells their conversations
_discarded: list[tuple[BackgroundJob, str]] = []


def on_ended(listener: Callable[[BackgroundJob], None]) -> None:
    """``listener`` is called (in the job's watcher thread) when a captured job has ended and waits for its review."""
    _ended_listeners.append(listener)


def take_discarded(conversation_id: str | None = None) -> list[tuple[BackgroundJob, str]]:
    """The captured jobs discarded unreviewed (of one conversation, or all), each with what its layer held, taken:
    the caller tells the user and the model (REQ-BASH-046)."""
    with _jobs_lock:
        taken = [d for d in _discarded if conversation_id in (None, d[0].conversation_id)]
        _discarded[:] = [d for d in _discarded if d not in taken]
    return taken


def note_discarded(job: BackgroundJob, what: str) -> None:
    """A captured job's layer discarded unreviewed elsewhere (its review at rest cut by the server's stop): told
    like the others (``take_discarded``)."""
    job.discarded = True
    with _jobs_lock:
        _discarded.append((job, what))


def requeue(jobs: list[BackgroundJob]) -> None:
    """Ended captured jobs taken for a review that could not start now (a turn runs): they wait again."""
    with _jobs_lock:
        for job in jobs:
            if not job.discarded:
                _ended.setdefault(job.conversation_id, []).append(job)


def find_job(conversation_id: str, pid: int | None) -> list[BackgroundJob]:
    """The conversation's live captured jobs (the one of ``pid`` when given)."""
    return [j for j in background_jobs(conversation_id) if j.layer is not None and pid in (None, j.pid)]


def ended_captured(conversation_id: str) -> list[BackgroundJob]:
    """The conversation's captured background jobs that ended since the last call, taken: the caller reviews
    their layers (or discards them)."""
    with _jobs_lock:
        return _ended.pop(conversation_id, [])


def launcher_exited(job: BackgroundJob) -> bool:
    """Whether the job's launcher has exited (its tree is gone), reaped or not: it is about to be ended (checked
    without reaping it, which is _watch's)."""
    try:
        return os.waitid(os.P_PID, job._popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _discard_layers(jobs: list[BackgroundJob]) -> list[BackgroundJob]:
    """Throw away the layers of `jobs` (their trees are gone): nothing of them lands. Returns those with one."""
    captured = list({id(j): j for j in jobs if j.layer is not None and not j.discarded}.values())  # each once
    for job in captured:
        job.discarded = True
        assert job.layer is not None
        held = ""
        for describe in describe_layer:
            try:
                held = describe(job.layer)
            except Exception as exc:  # what it held is not known: the discard is told all the same
                held = f"what it held could not be read ({type(exc).__name__})"
        overlay.discard(job.layer)
        with _jobs_lock:
            _discarded.append((job, held))
    return captured


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
        job.ending = True
    for job in jobs:
        job.terminate()
    # REQ-BASH-043: a captured job's layer is never applied half: with its conversation or the server, it goes
    for job in jobs:
        job.finished.wait(TERMINATE_GRACE_S)
    with _jobs_lock:
        waiting = [j for cid in list(_ended) if conversation_id in (None, cid) for j in _ended.pop(cid)]
    discarded = _discard_layers([*jobs, *waiting])
    for job in discarded:
        log.warning("the changes of the background command %s (PID %d) were discarded, never reviewed: its "
                    "conversation or the server ended first", job.command[:80], job.pid)
    if conversation_id is None:
        remove_background_logs()
    return len(jobs)


def end_restricted_jobs(conversation_id: str) -> int:
    """Kill the conversation's background jobs that run in the sandbox: called when the conversation
    leaves Restricted, so no command run while Restricted keeps a lock, a lease or a descriptor on the
    user's files after that (REQ-BASH-023). Their logs stay readable until the conversation
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
           popen: subprocess.Popen[bytes], scratch: Path | None, layer: overlay.Layer | None = None) -> None:
    """Thread body: report the start, then wait for the end and clean up."""
    assert popen.stderr is not None
    result = RunResult(capture=OutputCapture())
    first = ""
    while result.pid is None and result.setup_failure is None:  # notes may come before "started"
        first = popen.stderr.readline().decode("utf-8", "replace")
        if not first:
            break
        parse_status(first, result)
    if layer is not None and result.clock_ns is not None:
        layer.mark_started(result.clock_ns)  # REQ-BASH-031: the tick the command started in
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
        kill_leftovers(popen.pid, result.pid)  # the launcher was killed before it stopped the tree
    popen.wait()
    if popen.stdin is not None:
        with contextlib.suppress(OSError):
            popen.stdin.close()
    remove_scratch(scratch)
    with _jobs_lock:
        job = _jobs.pop(popen.pid, None)
        if job is not None and job.layer is not None and not job.discarded:
            _ended.setdefault(job.conversation_id, []).append(job)
    if job is not None:
        job.finished.set()
        if job.layer is not None and not job.discarded and not job.ending:
            for listener in _ended_listeners:
                try:
                    listener(job)
                except Exception:
                    log.exception("a listener of the end of background command %d failed", job.pid)


async def start_background(req: SpawnRequest, output_path: Path, command: str,
                           conversation_id: str = "") -> BackgroundJob | SetupFailure:
    """Start `req` detached; its combined output goes to `output_path` (opened here, outside the
    sandbox), and the launcher appends the completion status to it. Returns once the command is exec'd."""
    scratch = make_scratch(req.restricted)
    try:
        args = launcher_args(req, scratch, background=True)
        env = command_env(req.restricted, scratch, req.env)
        output_path.parent.mkdir(parents=True, exist_ok=True)
        with open(output_path, "ab") as out:
            popen = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE,
                                     env=env, close_fds=True)
    except OSError as exc:
        remove_scratch(scratch)
        return SetupFailure("spawn", exc.errno or 0, str(exc))
    except SandboxUnavailable:
        remove_scratch(scratch)
        raise
    fut: concurrent.futures.Future[tuple[int, SetupFailure | None]] = concurrent.futures.Future()
    thread = threading.Thread(target=_watch, args=(fut, popen, scratch, req.layer), daemon=True,
                              name=f"phoenix-bg-{popen.pid}")
    job = BackgroundJob(pid=0, pgid=0, output_path=output_path, command=command,
                        conversation_id=conversation_id, started_at=time.time(), _popen=popen,
                        _scratch=scratch, restricted=req.restricted, layer=req.layer)
    with _jobs_lock:
        _jobs[popen.pid] = job
    thread.start()
    pid, failure = await asyncio.wrap_future(fut)
    if failure is not None:
        await asyncio.get_running_loop().run_in_executor(None, job.finished.wait, TERMINATE_GRACE_S)
        return failure
    job.pid = job.pgid = pid  # the command leads its own session and process group
    return job
