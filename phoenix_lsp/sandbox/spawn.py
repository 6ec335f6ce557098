"""Running one command under the launcher to its end: restricted or not, with output capture, timeout and
cancellation. The bash tool and the `sandbox run` command both go through here; background jobs are started
by ``background.py`` with the same request, environment and launcher options.

Every command is started by the launcher (compiled helper or Python launcher), never with preexec_fn:
the server is multi-threaded. The launcher is a child subreaper that owns the command's whole process
tree. Its stdin is a "lifeline" pipe held by this process: if the server dies, the pipe closes and the
launcher kills the tree. SIGTERM to the launcher means "kill the tree now" (cancel, timeout, shutdown).

The server does not rely on the launcher alone (REQ-BASH-018, REQ-BASH-025): it watches the launcher
(``watch.py``) and, when the launcher was killed before it could stop the tree, kills what is left itself
(``backstop.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from phoenix_lsp.sandbox import build, cgroups, landlock, launch_options, overlay, private_tmp, seccomp, spare
from phoenix_lsp.sandbox.backstop import kill_leftovers, kill_pipe_holders
from phoenix_lsp.sandbox.env import clean_environment
from phoenix_lsp.sandbox.limits import Limits
from phoenix_lsp.sandbox.outcome import OutputCapture, RunResult, SetupFailure, parse_status
from phoenix_lsp.sandbox.scratch import make_scratch, remove_scratch
from phoenix_lsp.sandbox.watch import TERMINATE_GRACE_S, WatchedLauncher

log = logging.getLogger(__name__)


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
    # REQ-BASH-028: capture the command's changes to the layer's folder in it (Unrestricted only; off unless
    # asked for)
    layer: overlay.Layer | None = None


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
    if req.layer is not None:
        if req.restricted:
            # A restricted command cannot write the workspace, and its disk quota is the scratch's.
            raise ValueError("a captured command runs Unrestricted: a restricted one cannot change the folder")
        args += overlay.overlay_args(req.layer)
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


async def _finish(launcher: WatchedLauncher, result: RunResult) -> None:
    """The launcher has ended: read its status, run the backstop when it did not stop the tree itself,
    then drain the output for a bounded time and kill whatever still holds it (REQ-BASH-018,
    REQ-BASH-025). Never waits on a pipe without a bound: orphans of a killed launcher may hold it."""
    await launcher.drain(launcher.err_eof, TERMINATE_GRACE_S)  # only the launcher writes there
    parse_status(bytes(launcher.status).decode("utf-8", "replace"), result)
    abnormal = launcher.killed_by_signal()
    if abnormal and result.pid is not None:
        # Killed before it could stop the tree (it did not answer SIGTERM in time, or something killed it).
        result.backstop_stopped = await asyncio.to_thread(kill_leftovers, launcher.pid, result.pid)
    elif any(path.exists() for path in cgroups.command_cgroups(launcher.pid)):
        # A launcher that ended normally removed its cgroups; one left behind is emptied all the same.
        await asyncio.to_thread(cgroups.kill_command_cgroups, launcher.pid)
    if not await launcher.drain(launcher.out_eof, 0.05 if abnormal else TERMINATE_GRACE_S):
        # Something outside every cgroup and process group (no cgroup here, or an unrestricted command)
        # still holds the output: those are the tree's survivors. Kill them, then look again.
        found = await asyncio.to_thread(kill_pipe_holders, launcher.out_inode)
        if not await launcher.drain(launcher.out_eof, TERMINATE_GRACE_S):
            await asyncio.to_thread(kill_pipe_holders, launcher.out_inode)
            result.backstop_stopped = False
        elif found and not abnormal:
            log.warning("sandbox: %d process(es) of a finished command still held its output; killed", found)


async def _cancel_cleanup(launcher: WatchedLauncher, result: RunResult) -> None:
    """Cancel: stop the tree through the launcher, with the same backstop as a run's end."""
    await launcher.terminate()
    parse_status(bytes(launcher.status).decode("utf-8", "replace"), result)
    if launcher.killed_by_signal():
        await asyncio.to_thread(kill_leftovers, launcher.pid, result.pid)
    if not await launcher.drain(launcher.out_eof, 0.05):
        found = await asyncio.to_thread(kill_pipe_holders, launcher.out_inode)
        if found:
            await launcher.drain(launcher.out_eof, TERMINATE_GRACE_S)


async def run(req: SpawnRequest, timeout: float | None = None) -> RunResult:
    """Run `req` to completion (or timeout) and return its captured output and status.

    Cancelling the task that awaits this kills the whole process tree before CancelledError propagates.
    Whatever happens to the launcher (killed, stopped), this returns; `backstop_stopped` says what the
    server verified when the launcher could not stop the tree itself.
    """
    started = time.monotonic()
    # REQ-BASH-047: a Restricted command is handed to the spare launcher kept for it, when there is one
    launch = build.launcher()
    sparable = (req.restricted and req.layer is None and req.time_limit_s is None and launch.kind == "compiled"
                and spare.enabled())
    ready = spare.take() if sparable else None
    scratch = ready.scratch if ready is not None else make_scratch(req.restricted)
    capture = OutputCapture()
    result = RunResult(capture=capture)
    try:
        try:
            args = launcher_args(req, scratch)
            env = command_env(req.restricted, scratch, req.env)
        except BaseException:
            if ready is not None:
                spare.let_go(ready, keep_scratch=True)
            raise
        result.launcher = launch.kind
        popen = spare.hand(ready, args, env) if ready is not None else None
        try:
            if popen is None:
                popen = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, close_fds=True)
        except OSError as exc:
            result.setup_failure = SetupFailure("spawn", exc.errno or 0, str(exc))
            return result
        launcher = WatchedLauncher(popen, capture)
        try:
            if not await launcher.drain(launcher.ended, timeout):
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
            launcher.reap()  # the launcher has ended (or told the end) by now; this closes the lifeline too
            if req.layer is not None and result.clock_ns is not None:
                req.layer.mark_started(result.clock_ns)  # REQ-BASH-031: the tick the command started in
        if result.pid is None and result.setup_failure is None and launcher.returncode not in (None, 0):
            result.setup_failure = SetupFailure("spawn", 0, f"launcher exited with {launcher.returncode}")
        return result
    finally:
        remove_scratch(scratch)
        result.duration_s = time.monotonic() - started
        if sparable and result.launcher:  # the next one's, made off this command's path
            limits = req.limits
            spare.replenish(launch.argv, lambda fresh: launch_options.spare_args(limits, fresh))
