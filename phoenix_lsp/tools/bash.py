"""The bash tool (REQ-BASH-001..014): one shell command per call, sandboxed while Restricted.

Stateless (REQ-BASH-010): everything a call needs arrives in its `BashContext`. The only process-wide
state is the registry of live background jobs in `phoenix_lsp.sandbox.background` (so the server can cap and
kill them), keyed by conversation id.

Over 300 lines: the tool's description is the model's whole contract (about 60 lines), and the one run path
(validate, check, review the ended background commands, spawn, capture, format) reads every part of it.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal as signal_mod
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from phoenix_lsp.sandbox import SandboxSupport, overlay, probe, spawn, unavailable_message
from phoenix_lsp.sandbox.background import (
    background_jobs,
    background_log_dir,
    ended_captured,
    launcher_exited,
    start_background,
)
from phoenix_lsp.sandbox.limits import Limits
from phoenix_lsp.sandbox.outcome import RunResult, SetupFailure
from phoenix_lsp.sandbox.watch import TERMINATE_GRACE_S
from phoenix_lsp.tools.bash_safety import check_command
from phoenix_lsp.tools.inputs import BashInput, validate

DEFAULT_TIMEOUT_S = 30.0
SLOW_TIMEOUT_S = 15 * 60.0
BACKGROUND_LIMIT = 8
#: Wall-clock limit of a background job (REQ-BASH-024); PHOENIX_BACKGROUND_TIMEOUT_S or the
#: backgroundTimeoutS initialization option change it.
BACKGROUND_TIMEOUT_S = 60 * 60.0

DESCRIPTION = """\
Run one shell command with `bash -c` and return its combined stdout and stderr.

- The command runs in the conversation's working directory. There is no terminal: stdin is empty and \
there is no controlling TTY, so interactive programs (editors, pagers, password prompts) will not work; \
pass non-interactive flags instead.
- run: "default" stops the command after 30 seconds, "slow" after 15 minutes; on timeout the whole \
process tree is killed and the output so far is returned. "background" starts the command detached and \
returns at once with its PID, process group and the path of a file that receives its output; the exit \
status is appended to that file when it ends; a background command is stopped after an hour.
- Output over 128 KB is cut in the middle (the first and last 4 KB are kept, with a marker): filter \
large outputs with grep, head or tail.
- A non-zero exit is reported with its exit code; a failure to start the command is reported separately.
- Safety checks refuse `git add -A` / `git add .` / `git add --all` / `git add *` (name the files), \
`git push --force` / `-f` (use --force-with-lease) and `rm -rf` on /, ~, $HOME, .git, * or .*.

Sandbox: while the conversation is Restricted, every command runs inside a kernel sandbox (Landlock and \
seccomp). It can read and execute files, except the user's credentials (~/.ssh, ~/.aws, ~/.gnupg, \
browser profiles and the like), phoenix-lsp's own data and devices other than /dev/null, /dev/zero, \
/dev/full and /dev/urandom; listing / or the home directory itself is refused, their contents are not. It \
cannot write, create, delete, rename, truncate or chmod anything except in a private temporary directory \
($TMPDIR, deleted after the command) and /dev/null, and it has no network at all (no TCP, UDP or \
Unix-socket connections). It cannot signal, trace, renice or reschedule processes it did not start, and \
runs with resource limits (memory including shared memory, CPU time, processes, file size, disk space in \
$TMPDIR, open files). An operation the sandbox blocks fails with the kernel's own error, typically "Permission denied" \
(EACCES) or "Operation not permitted" (EPERM). That is the sandbox working as intended: do not retry, \
and do not look for a way around it. If the task needs writes or network, ask the user to switch the \
conversation to Unrestricted with the request_mode_upgrade tool. While the conversation is Unrestricted \
commands run without the sandbox, with the same safety checks and timeouts.

Review: while the conversation is Unrestricted, what a command (run "default" or "slow") changes in the working \
directory is held back and shown to the user when the command has ended, like a patch: it lands only if the \
user (or the approval policy) allows it, and the result says what was applied, rejected or kept because the \
user changed the file meanwhile. The command itself sees its own changes while it runs. Limits of this \
capture: renaming a folder that existed before fails with EXDEV ("Invalid cross-device link"; `mv` copes by \
copying); hard links are split (the other name keeps the old content); writes outside the working directory \
(home caches, /tmp) are not captured and land at once. A background command's changes are held back in a \
layer of its own while it runs and reviewed once it has ended: at once when you are not working (you are told \
at the next turn), else at your next bash call (before that call's command runs); they are discarded if the \
conversation or the server ends first."""

def _default_background_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"phoenix-lsp-{os.getuid()}" / "background"


_KILLED_NOTES = {
    "time-limit": "[phoenix-lsp: the background command was stopped after its time limit; its whole process "
                  "tree was killed.]",
    "disk-quota": "[phoenix-lsp: the sandbox killed the command because its temporary files ($TMPDIR) and "
                  "output file grew beyond the disk quota of {disk} bytes (limit on disk space); its whole "
                  "process tree was stopped.]",
}


@dataclass(frozen=True)
class BashContext:
    """Everything one bash call needs (REQ-BASH-010)."""

    working_directory: Path
    restricted: bool  # True -> run inside the kernel sandbox
    conversation_id: str = ""
    limits: Limits = field(default_factory=Limits)
    default_timeout_s: float = DEFAULT_TIMEOUT_S
    slow_timeout_s: float = SLOW_TIMEOUT_S
    background_dir: Path | None = None  # None: <tmp>/phoenix-lsp-<uid>/background
    background_limit: int = BACKGROUND_LIMIT  # live background jobs per conversation
    env: Mapping[str, str] | None = None  # None: the server's environment (credentials removed either way)
    sandbox: SandboxSupport | None = None  # None: probe()
    deny_read: tuple[Path, ...] | None = None  # None: the defaults plus PHOENIX_LSP_DENY_READ
    background_timeout_s: float = BACKGROUND_TIMEOUT_S
    #: Unrestricted: holds the command's changes for a review (REQ-BASH-032); None: they land at once
    capture: Capture | None = None


class Capture(Protocol):
    """The review of an Unrestricted command's changes (``server/shell_review.py``'s ``ShellCapture``)."""

    def start(self, folder: Path) -> overlay.Layer | str:
        """The layer the command runs with, or the note its result starts with when none can be made."""
        ...

    async def finish(self, layer: overlay.Layer, result: RunResult | None, command: str | None = None) -> str:
        """The command's changes reviewed and applied or discarded (the layer with them); what the model is
        told. `command`: the command the layer is of, when not this call's (an ended background command)."""
        ...


@dataclass(frozen=True)
class BashResult:
    """The outcome of one call. `output` is exactly what the model sees."""

    output: str
    is_error: bool
    exit_code: int | None
    outcome: str  # "exited" | "timeout" | "refused" | "system_error" | "background"
    error_id: str | None = None  # stable id (REQ-BASH-006): bash.safety_check, bash.timeout, ...
    sandbox_refused: bool = False  # the output shows an operation the sandbox (likely) refused
    restricted: bool = False
    pid: int | None = None
    pgid: int | None = None
    output_file: str | None = None
    truncated: bool = False
    duration_s: float = 0.0


def cancelled_result(restricted: bool = False) -> BashResult:
    """The synthetic result for a call cancelled by the user (REQ-BED-005), for the server to record."""
    return BashResult("[phoenix-lsp: cancelled by the user; the command and every process it started were "
                      "killed]", True, None, "cancelled", "bash.cancelled", restricted=restricted)


def _error(message: str, error_id: str, outcome: str = "system_error", restricted: bool = False,
           ) -> BashResult:
    return BashResult(message, True, None, outcome, error_id, restricted=restricted)


def _validate(tool_input: object) -> tuple[str, str] | BashResult:
    checked = tool_input if isinstance(tool_input, BashInput) else validate(BashInput, "bash", tool_input)
    if isinstance(checked, str):
        return _error(checked, "bash.invalid_input")
    return checked.command, checked.run


# Messages that kernel refusals (EACCES / EPERM) produce in common tools and runtimes.
_REFUSAL = re.compile(r"Permission denied|Operation not permitted|\bEACCES\b|\bEPERM\b|\[Errno (?:1|13)\]")

_SANDBOX_NOTE = (
    "[phoenix-lsp: this conversation is Restricted, so the command ran in the kernel sandbox. A "
    '"Permission denied" / "Operation not permitted" error above most likely comes from the sandbox, which '
    "forbids writes outside $TMPDIR, network access and signalling other processes. This is intended: "
    "do not retry or work around it. If the task needs it, ask the user for Unrestricted mode with "
    "request_mode_upgrade.]")


def _signal_name(num: int) -> str:
    try:
        return signal_mod.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _format(result: RunResult, ctx: BashContext, run: str, timeout: float) -> BashResult:
    head, omitted, tail = result.capture.parts()
    text = head.decode("utf-8", "replace")
    if omitted:
        text += (f"\n\n[... {omitted} bytes cut from the middle of {result.capture.total} bytes of output: "
                 "the first and last 4 KB are shown. Filter the output (grep, head, tail) to see more ...]\n\n")
        text += tail.decode("utf-8", "replace")
    notes: list[str] = []
    refused = ctx.restricted and bool(_REFUSAL.search(text))
    if result.timed_out:
        stopped = ("its whole process tree was stopped" if result.backstop_stopped is not False else
                   "the launcher did not stop the whole tree (see the warning below)")
        notes.append(f"[phoenix-lsp: timeout: the command was killed after {timeout:g} s (run {run!r}); "
                     f"{stopped} and the output so far is shown above. Use run "
                     '"slow" (15 min) for long commands, or "background" for servers and watchers.]')
    elif result.killed == "process-limit":
        notes.append(f"[phoenix-lsp: the sandbox killed the command because its process tree grew beyond "
                     f"{ctx.limits.max_processes} processes (limit on processes).]")
        refused = True
    elif result.killed in _KILLED_NOTES:
        notes.append(_KILLED_NOTES[result.killed].format(disk=ctx.limits.disk))
        refused = refused or result.killed == "disk-quota"
    elif result.killed:
        notes.append(f"[phoenix-lsp: the command's process tree was killed ({result.killed}).]")
    elif result.signal is not None:
        why = {int(signal_mod.SIGXCPU): " (CPU time limit reached)",
               int(signal_mod.SIGXFSZ): " (file size limit reached)"}.get(result.signal, "")
        notes.append(f"[exit code {result.exit_code}: killed by {_signal_name(result.signal)}{why}]")
        refused = refused or bool(why and ctx.restricted)
    elif result.exit_code not in (0, None):
        notes.append(f"[exit code {result.exit_code}]")
    if result.memory_limit_hits and ctx.restricted:
        notes.append(f"[phoenix-lsp: the command reached the sandbox's memory limit of {ctx.limits.memory} "
                     "bytes for its whole process tree (shared memory included); allocations beyond it "
                     "failed or a process was killed.]")
        refused = True
    if result.backstop_stopped is True and not result.timed_out:
        notes.append("[phoenix-lsp: the sandbox launcher was killed while the command ran (not by phoenix-lsp); "
                     "the server stopped the command's whole process tree itself. Run the command again if "
                     "you need its result.]")
    if result.backstop_stopped is False:
        notes.append("[phoenix-lsp: warning: the sandbox launcher was killed before it could stop the "
                     "command, and some of the command's processes may still be running (no cgroup could "
                     "hold them here). Check with `ps` before relying on them being gone.]")
    if refused:
        notes.append(_SANDBOX_NOTE)
    if not text and not notes:
        text = "(no output)"
    output = text
    if notes:
        output = (text.rstrip("\n") + "\n" if text else "") + "\n".join(notes)
    if result.timed_out:
        return BashResult(output, True, None, "timeout", "bash.timeout", refused, ctx.restricted,
                          result.pid, result.pid, None, bool(omitted), result.duration_s)
    return BashResult(output, result.exit_code != 0, result.exit_code, "exited", None, refused, ctx.restricted,
                      result.pid, result.pid, None, bool(omitted), result.duration_s)


def _setup_failed(failure: SetupFailure, ctx: BashContext) -> BashResult:
    if failure.stage == "chdir":
        msg = (f"[phoenix-lsp: system error: the command did not run: the working directory "
               f"{ctx.working_directory} is not usable ({failure.describe()}). Check that it exists.]")
        return _error(msg, "bash.spawn_failed", restricted=ctx.restricted)
    if failure.sandbox:
        msg = (f"[phoenix-lsp: system error: the command did not run: setting up the kernel sandbox failed "
               f"({failure.describe()}). This is not the command's fault; retrying will not help. Run "
               "`phoenix-lsp doctor` to see what this system supports.]")
        return _error(msg, "bash.sandbox_setup_failed", restricted=ctx.restricted)
    msg = f"[phoenix-lsp: system error: the command did not run: {failure.describe()}.]"
    return _error(msg, "bash.spawn_failed", restricted=ctx.restricted)


def _request(command: str, ctx: BashContext, support: SandboxSupport,
             background: bool = False, layer: overlay.Layer | None = None) -> spawn.SpawnRequest:
    return spawn.SpawnRequest(
        argv=("bash", "-c", command), cwd=ctx.working_directory, restricted=ctx.restricted,
        limits=ctx.limits, env=ctx.env,
        landlock_abi=support.landlock_abi if ctx.restricted else None,
        seccomp=support.seccomp if ctx.restricted else None, deny_read=ctx.deny_read,
        time_limit_s=ctx.background_timeout_s if background else None, layer=layer)


async def _background(command: str, ctx: BashContext, support: SandboxSupport) -> BashResult:
    live = background_jobs(ctx.conversation_id)
    if len(live) >= ctx.background_limit:
        listing = "; ".join(f"PID {j.pid} `{j.command[:60]}` -> {j.output_path}" for j in live)
        return _error(f"[phoenix-lsp: refused: this conversation already has {len(live)} background commands "
                      f"running (limit {ctx.background_limit}): {listing}. Wait for one to finish or stop "
                      "one first.]", "bash.background_limit", "refused", ctx.restricted)
    directory = background_log_dir(ctx.background_dir or _default_background_dir(), ctx.conversation_id)
    path = directory / f"bash-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}.log"
    layer: overlay.Layer | None = None
    note = ""
    if ctx.capture is not None and not ctx.restricted:  # REQ-BASH-043: a layer of its own while it runs
        made = ctx.capture.start(ctx.working_directory)
        layer, note = (None, made) if isinstance(made, str) else (made, "")
    try:
        started = await start_background(_request(command, ctx, support, background=True, layer=layer), path,
                                          command, ctx.conversation_id)
    except BaseException:
        if layer is not None:
            overlay.discard(layer)
        raise
    if isinstance(started, SetupFailure):
        if layer is not None:
            overlay.discard(layer)
        return _setup_failed(started, ctx)
    stop = ("it cannot be signalled from another sandboxed command; it ends by itself or when the "
            "server shuts down" if ctx.restricted else f"stop it with `kill -TERM -- -{started.pgid}`")
    output = (f"Started in the background: PID {started.pid}, process group {started.pgid}. Its combined "
              f"output goes to {path}; a line with its exit status is appended there when it ends. Read "
              f"it with `tail -n 50 {path}`; {stop}. It is stopped after {ctx.background_timeout_s:g} s"
              + (" or when the conversation leaves Restricted" if ctx.restricted else "") + ".")
    if layer is not None:
        output += (" What it changes in the working directory is held back and reviewed when it has ended (at "
                   "your next bash call if you are still working); it is discarded if the conversation or the "
                   "server ends first.")
    if note:
        output = f"{note}\n{output}"
    return BashResult(output, False, None, "background", None, False, ctx.restricted, started.pid,
                      started.pgid, str(path))


async def run_bash(tool_input: Mapping[str, Any] | BashInput, ctx: BashContext) -> BashResult:
    """Run one bash tool call. Never raises for bad input or failures (they become error results);
    cancelling the awaiting task kills the command's whole process tree, then CancelledError propagates."""
    try:
        return await _run_bash(tool_input, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # last-resort boundary: the model gets a system error, the server lives on
        return _error(f"[phoenix-lsp: system error: the bash tool failed unexpectedly: {exc!r}]",
                      "bash.spawn_failed", restricted=getattr(ctx, "restricted", False))


async def _run_bash(tool_input: Mapping[str, Any] | BashInput, ctx: BashContext) -> BashResult:
    checked = _validate(tool_input)
    if isinstance(checked, BashResult):
        return checked
    command, run = checked
    verdict = check_command(command)
    if not verdict.allowed:
        return _error(verdict.message or "Refused by the safety check.", "bash.safety_check", "refused",
                      ctx.restricted)
    support = ctx.sandbox or probe()
    if ctx.restricted and not support.available:
        return _error(f"[phoenix-lsp: system error: the command did not run. {unavailable_message()}]",
                      "bash.sandbox_unavailable", restricted=True)
    if not ctx.working_directory.is_dir():
        return _error(f"[phoenix-lsp: system error: the command did not run: the working directory "
                      f"{ctx.working_directory} does not exist or is not a directory.]", "bash.spawn_failed",
                      restricted=ctx.restricted)
    earlier = await _review_ended(ctx)  # REQ-BASH-043: before this command runs, on the folder they leave
    if earlier:
        result = await _run_checked(command, run, ctx, support)
        return replace(result, output=f"{earlier}\n{result.output}")
    return await _run_checked(command, run, ctx, support)


async def _review_ended(ctx: BashContext) -> str:
    """The reviews of the conversation's captured background commands that ended since its last bash call
    (REQ-BASH-043), through the very review a foreground command gets; what the model is told of them."""
    told: list[str] = []
    for job in background_jobs(ctx.conversation_id):  # ended a moment ago: its watcher is finishing
        if job.layer is not None and launcher_exited(job):
            await asyncio.to_thread(job.finished.wait, TERMINATE_GRACE_S)
    for job in ended_captured(ctx.conversation_id):
        if job.layer is None:
            continue
        if ctx.capture is None:  # no review to be had here: nothing of it lands
            overlay.discard(job.layer)
            told.append(f"[phoenix-lsp: the background command `{job.command[:200]}` (PID {job.pid}) ended; its "
                        "changes to the working directory were discarded: they cannot be reviewed here.]")
            continue
        reviewed = await ctx.capture.finish(job.layer, None, command=job.command)
        told.append(f"[phoenix-lsp: the background command `{job.command[:200]}` (PID {job.pid}) ended"
                    + (f"; its changes:]\n{reviewed}" if reviewed else
                       "; it changed nothing in the working directory.]"))
    return "\n".join(told)


async def _run_checked(command: str, run: str, ctx: BashContext, support: SandboxSupport) -> BashResult:
    if run == "background":
        return await _background(command, ctx, support)
    timeout = ctx.slow_timeout_s if run == "slow" else ctx.default_timeout_s
    layer: overlay.Layer | None = None
    note = ""
    if ctx.capture is not None and not ctx.restricted:  # REQ-BASH-032: its changes are reviewed first
        started = ctx.capture.start(ctx.working_directory)
        layer, note = (None, started) if isinstance(started, str) else (started, "")
    try:
        result = await spawn.run(_request(command, ctx, support, layer=layer), timeout=timeout)
    except BaseException:
        if layer is not None:
            overlay.discard(layer)
        raise
    if result.setup_failure is not None:
        if layer is not None:
            overlay.discard(layer)
        return _setup_failed(result.setup_failure, ctx)
    formatted = _format(result, ctx, run, timeout)
    reviewed = await ctx.capture.finish(layer, result) if layer is not None and ctx.capture is not None else ""
    if reviewed:
        formatted = replace(formatted, output=f"{formatted.output}\n{reviewed}")
    return replace(formatted, output=f"{note}\n{formatted.output}") if note else formatted
