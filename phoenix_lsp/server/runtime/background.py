"""The bash tool's captured background commands as the hub sees them (REQ-BASH-044..046): an ended one reviewed at
once when its conversation is at rest, a running one's changes so far shown or the command stopped for its review,
and one discarded unreviewed told to its conversation.

A captured background command's watcher thread says when its tree is gone (``sandbox.background.on_ended``); the
hub's loop then asks the core to review it (``ReviewBackground``). The core allows that only at rest: while a turn
runs the command waits (requeued), and is reviewed by the turn's next bash call, or here when the conversation
comes to rest (``kick`` on the status). The review itself is the foreground's (``ShellCapture``): its question is a
host call the core decides by the patch tool's policy, asked through the conversation's ``tools`` like a bash
call's; what the model is told goes into the history (``BackgroundReviewed``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from ...core.events import BackgroundReviewed, ChangesDiscarded, ReviewBackground
from ...core.state import RESTING
from ...core.tools import BASH
from ...core.values import ToolUse
from ...sandbox import background as jobs
from ...sandbox import overlay
from ...tools.shell_changes import LayerTooBig, scan
from ...tools.shell_changes.edit import prepare
from ..shell_review import ShellCapture
from .base import NotFound

log = logging.getLogger(__name__)

#: the most paths a discard's message names (the rest are counted)
TOLD_PATHS = 10


class Owner(Protocol):
    """The hub as this part uses it."""

    runtimes: dict[str, Any]
    sink: Any
    store: Any

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...
    def get(self, conversation_id: str) -> Any: ...


def held(layer: overlay.Layer) -> str:
    """What a layer holds, in words: counts by kind and the first paths (read like a review's change set)."""
    try:
        changes = scan(layer)
    except LayerTooBig as exc:
        return f"more than can be read ({exc})"
    if changes.empty:
        return "no change to the working directory"
    kinds = Counter(str(c.kind) for c in changes.changes)
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    paths = [c.path for c in changes.changes]
    shown = ", ".join(paths[:TOLD_PATHS]) + (f" and {len(paths) - TOLD_PATHS} more" if len(paths) > TOLD_PATHS else "")
    return f"{counts} ({shown})" if paths else "refused entries only"


def discarded_text(job: jobs.BackgroundJob, what: str) -> str:
    return (f"The changes of the background command `{job.command[:200]}` (PID {job.pid}) were discarded "
            f"unreviewed, because its conversation or the server ended while it ran or waited for its review: "
            f"{what}. Nothing of them landed; run the command again to have them.")


@dataclass(frozen=True)
class Snapshot:
    """A running captured command's changes so far (REQ-BASH-045): read-only, never accepted from here."""

    pid: int
    command: str
    running: bool
    files: tuple[str, ...]
    summary: str
    diff: str


class Background:
    """The hub's captured background commands (a part of ``hub.Hub``)."""

    def __init__(self, hub: Owner, loop: asyncio.AbstractEventLoop | None) -> None:
        self.hub = hub
        self.loop = loop
        self.reviewing: dict[str, asyncio.Task[Any]] = {}  # conversation id -> its review task under way
        if loop is not None:
            jobs.on_ended(self._ended)
        if held not in jobs.describe_layer:
            jobs.describe_layer.append(held)

    def close(self) -> None:
        """No more reviews at rest: the server stops (its background commands are discarded and told)."""
        self.loop = None

    def _ended(self, job: jobs.BackgroundJob) -> None:
        """From a watcher thread: a captured job of one of our conversations ended."""
        loop = self.loop
        if loop is not None and job.conversation_id in self.hub.runtimes and not loop.is_closed():
            loop.call_soon_threadsafe(self.kick, job.conversation_id)

    def kick(self, conversation_id: str) -> None:
        """Review the conversation's ended captured commands now, if it is at rest (REQ-BASH-044)."""
        if self.loop is None or conversation_id in self.reviewing:
            return
        runtime = self.hub.runtimes.get(conversation_id)
        if runtime is None or not isinstance(runtime.state.status, RESTING):
            return
        task = self.hub.spawn(self._review(runtime))
        self.reviewing[conversation_id] = task
        task.add_done_callback(lambda _: self.reviewing.pop(conversation_id, None))

    async def _review(self, runtime: Any) -> None:
        waiting = jobs.ended_captured(runtime.id)
        while waiting:
            job = waiting.pop(0)
            assert job.layer is not None
            outcome = runtime.apply(ReviewBackground(job.key, job.command))
            if outcome.reject is not None:  # a turn started meanwhile: its next bash call, or its end
                jobs.requeue([job, *waiting])
                return
            told = ""
            try:
                call = ToolUse(job.key, BASH, {"command": job.command, "run": "background"})
                capture = ShellCapture(runtime, runtime.tools, self.hub.sink, call, self.hub.store.path.parent,
                                       self.hub.store.guard.redact)
                try:
                    reviewed = await capture.finish(job.layer, None, command=job.command)
                except asyncio.CancelledError:  # the server stops: the layer went (finish's own rule)
                    jobs.note_discarded(job, "the changes under review when the server stopped")
                    raise
                told = (f"The background command `{job.command[:200]}` (PID {job.pid}) ended while you were not "
                        "working" + (f"; its changes:\n{reviewed}" if reviewed else
                                     "; it changed nothing in the working directory."))
            finally:
                runtime.apply(BackgroundReviewed(job.key, self.hub.store.guard.redact(told)))

    async def settle(self) -> int:
        """At the server's stop (after ``hub.stop``): the reviews under way are over (cancelled), then the discards
        are told. Returns how many were told."""
        await asyncio.gather(*self.reviewing.values(), return_exceptions=True)
        return self.tell_discarded()

    def tell_discarded(self, conversation_id: str | None = None) -> int:
        """Tell each conversation whose captured commands were discarded unreviewed (REQ-BASH-046): the user (an
        error event of kind ``discarded``) and the model (a note in its history). Returns how many were told."""
        told = 0
        for job, what in jobs.take_discarded(conversation_id):
            try:
                runtime = self.hub.runtimes.get(job.conversation_id) or self.hub.get(job.conversation_id)
            except NotFound:
                continue
            try:
                runtime.apply(ChangesDiscarded(self.hub.store.guard.redact(discarded_text(job, what))))
                told += 1
            except Exception:  # the store or the client is gone: the log has said it
                log.exception("the discard of a background command's changes could not be told")
        return told

    async def snapshot(self, conversation_id: str, pid: int | None) -> list[Snapshot]:
        """The conversation's running captured commands' changes so far (the one of ``pid``), read from their
        layers without touching them (REQ-BASH-045)."""
        out: list[Snapshot] = []
        for job in jobs.find_job(conversation_id, pid):
            assert job.layer is not None
            out.append(await asyncio.to_thread(_snapshot, job, self.hub.store.guard.redact))
        return out

    async def stop(self, conversation_id: str, pid: int | None) -> list[jobs.BackgroundJob]:
        """Stop the conversation's running captured commands (the one of ``pid``): each one's tree killed, its
        layer then reviewed as an ended one's (at once at rest, else by the running turn)."""
        found = jobs.find_job(conversation_id, pid)
        for job in found:
            await asyncio.to_thread(job.terminate)
        return found


def _snapshot(job: jobs.BackgroundJob, redact: Any) -> Snapshot:
    assert job.layer is not None
    try:
        changes = scan(job.layer)
    except (LayerTooBig, OSError) as exc:  # it writes while it is read: what it holds now is told another time
        return Snapshot(job.pid, job.command, job.alive(), (), f"its changes could not be read now ({exc})", "")
    review = prepare(job.layer, changes, {})
    return Snapshot(job.pid, job.command, job.alive(), tuple(review.files()), redact(review.summary()),
                    redact(review.diff()))
