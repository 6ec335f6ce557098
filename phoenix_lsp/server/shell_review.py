"""A bash command's changes to the workspace, reviewed before they land (REQ-BASH-032), for every adapter.

In Unrestricted a foreground command runs with the workspace folder in an overlay (``sandbox/overlay.py``) when
the kernel can mount one. When its process tree has ended (stragglers killed, as for every command), the layer is
read into a change set (``tools/shell_changes``) and, when it holds something, made into a review: the text
files as the editor's part, the rest as the server's part. The running bash call then asks the core, with a host
call named like the patch tool (``core/approvals.py``): the patch tool's policy answers it, and the question
carries the diff of every text file and the summary of the rest. On a yes the server places its part
(``accept``, whole or nothing) and the adapter has the editor apply its part (one workspace edit, or one
``fs/write_text_file`` per file); when the editor refuses, the server's part is undone. On a no, a cancel, or
any failure, the layer is discarded and the folder is as it was. The model is told what happened in the bash
result.

Where the kernel cannot mount the overlay, commands run as before and the first command of each conversation
says so (in its result, which every client shows as the tool's summary).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..core.tools import PATCH, ToolKind
from ..core.values import ToolUse
from ..protocol import events as ev
from ..sandbox import overlay
from ..sandbox.outcome import RunResult
from ..tools.shell_changes import Accepted, AcceptFailed, ChangeKind, ChangeSet, LayerTooBig, accept, scan, undo
from ..tools.shell_changes.edit import Review, prepare, recheck
from ..tools.shell_changes.record import keep_review, too_big_note
from .adapter import Conversation

log = logging.getLogger(__name__)

#: the most paths the review's arguments name (the diff and the summary say the rest)
ARGUMENT_PATHS = 50
_NOTED: set[str] = set()  # the conversations told that their commands' changes are not reviewed here
#: the reviews waiting for the core's answer, by (conversation id, the review's call id): what an adapter shows
_PENDING: dict[tuple[str, str], Review] = {}

NOT_CAPTURED = ("[phoenix-lsp: shell changes are not reviewed on this system: {why}. Commands in Unrestricted "
                "change files at once, without a review or an undo; `phoenix-lsp doctor` says more.]")


class ReviewEditor(Protocol):
    """What an adapter does for a review (``adapter.Editor``'s members of the same names)."""

    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]: ...
    def review_kinds(self) -> frozenset[ChangeKind]: ...
    def cannot_apply(self, review: Review) -> str | None: ...
    async def apply_review(self, conversation: Conversation, call_id: str, review: Review) -> str | None: ...


class Asking(Protocol):
    """Who asks the core about the review (``runtime.tools.Tools``, which keeps the conversation's host calls)."""

    async def host_call(self, tool_use_id: str, call: ToolUse, kind: ToolKind, description: str = "",
                        diff: str | None = None) -> tuple[bool, str, str]: ...


class ShellCapture:
    """The capture of one bash call (``tools/bash.py``'s ``Capture``)."""

    def __init__(self, conversation: Conversation, asking: Asking, editor: ReviewEditor, call: ToolUse, data_dir: Path,
                 redact: Callable[[str], str]) -> None:
        self.conversation = conversation
        self.asking = asking
        self.editor = editor
        self.call = call
        self.data_dir = data_dir
        self.redact = redact  # the process's one redactor: a diff shows a file's text, never a secret in it

    def start(self, folder: Path) -> overlay.Layer | str:
        """A fresh layer for the command, or the note its result starts with when none can be made here ("" once
        the conversation was told)."""
        why = overlay.overlay_support(self.data_dir / "layers")
        if why is None:
            try:
                return overlay.make_layer(folder, self.data_dir)
            except OSError as exc:
                why = f"no layer could be made for {folder} ({exc})"
        if self.conversation.id in _NOTED:
            return ""
        _NOTED.add(self.conversation.id)
        return NOT_CAPTURED.format(why=why)

    async def finish(self, layer: overlay.Layer, result: RunResult | None) -> str:
        """What the command changed, reviewed and applied or discarded; the text the model is told ("" when it
        changed nothing in the folder). Whatever happens (a cancel included), the layer does not outlive it."""
        keep = False
        try:
            try:
                changes = await asyncio.to_thread(scan, layer)
            except LayerTooBig as exc:
                return f"[phoenix-lsp: {exc}. The folder is as it was before the command.]"
            except OSError as exc:
                return (f"[phoenix-lsp: the command's changes could not be read ({exc}); they were discarded and "
                        "the folder is as it was before the command.]")
            if changes.empty:
                return ""
            text, keep = await self._review(layer, changes)
            return text
        finally:
            if not keep:
                overlay.discard(layer)

    async def _review(self, layer: overlay.Layer, changes: ChangeSet) -> tuple[str, bool]:
        # the editor's texts of the files first (an unsaved change is a conflict), then the review is made off the
        # event loop (2,000 files take about half a second here)
        kinds = self.editor.review_kinds()
        named = {rel for c in changes.changes if c.editable and c.kind in kinds for rel in (c.path, c.old_path) if rel}
        held = await self.editor.review_texts(self.conversation, [layer.folder.joinpath(*rel.split("/"))
                                                                 for rel in sorted(named)])
        review = await asyncio.to_thread(prepare, layer, changes, held, kinds)
        if review.empty:
            return _report("none of the command's changes to the workspace can be applied", review), False
        why = self.editor.cannot_apply(review)
        if why is not None:
            return (f"[phoenix-lsp: the command's changes to the workspace were discarded: {why} The folder is "
                    f"as it was before the command.]\n{_listing(review)}"), False
        files = review.files()
        arguments: dict[str, object] = {"command": str(self.call.input.get("command", "")),
                                        "files": files[:ARGUMENT_PATHS]}
        if len(files) > ARGUMENT_PATHS:
            arguments["more"] = len(files) - ARGUMENT_PATHS
        ask = ToolUse(f"{self.call.id}.review", PATCH, arguments)
        description = (f"Apply what the bash command changed in the workspace: {len(review.texts)} text file(s) "
                       f"as editor edits, {len(review.server.changes)} other change(s) placed by the server.")
        too_big = too_big_note(review)  # REQ-BASH-040: said before the answer, in the summary and the question
        if too_big is not None:
            description += f" {too_big}"
        _PENDING[(self.conversation.id, ask.id)] = review
        try:
            diff = await asyncio.to_thread(review.diff)
            diff = self.redact(f"# {too_big}\n{diff}" if too_big is not None else diff)
            allowed, message, by = await self.asking.host_call(self.call.id, ask, ToolKind.WRITE, description,
                                                               diff)
        finally:
            _PENDING.pop((self.conversation.id, ask.id), None)
        if not allowed:
            who = "the user rejected them" if by == "user" else (
                "the conversation is Restricted now" if by == "mode" else message or "they were not allowed")
            return (f"[phoenix-lsp: the command's changes to the workspace were not applied ({who}); they were "
                    f"discarded and the folder is as it was before the command.]\n{_listing(review)}"), False
        # Allowed: the changes land whole or not at all. A cancel from here on waits for that (it cannot cut an
        # accept in its thread, nor take back an edit the editor has been sent), then goes on.
        landing = asyncio.ensure_future(self._land(layer, review, ask.id))
        try:
            return await asyncio.shield(landing), False
        except asyncio.CancelledError:
            while not landing.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(landing)
            raise

    async def _land(self, layer: overlay.Layer, review: Review, call_id: str) -> str:
        named = {rel for t in review.texts for rel in (t.path, t.change.old_path) if rel}
        held = await self.editor.review_texts(self.conversation, [review.path(rel) for rel in sorted(named)])
        review = await asyncio.to_thread(recheck, review, held)
        try:
            accepted = await asyncio.to_thread(accept, layer, review.server)
        except AcceptFailed as exc:
            return f"[phoenix-lsp: {exc}.]"
        try:
            why = await self.editor.apply_review(self.conversation, call_id, review)
        except Exception as exc:  # the editor's side failed: nothing of it is known to have landed
            why = f"the editor's edit failed ({exc})."
        if why is not None:
            await asyncio.to_thread(undo, layer, accepted)
            return (f"[phoenix-lsp: the command's changes to the workspace were not applied: {why} Nothing of "
                    f"them landed; the folder is as it was before the command.]\n{_listing(review)}")
        for text in review.texts:
            self.conversation.emit(ev.Diff(tool_use_id=self.call.id, path=str(review.path(text.path)),
                                           diff=self.redact(text.diff)))
        review = replace(review, dropped=(*review.dropped, *accepted.skipped))
        kept = await self._keep(review, accepted)
        return _report("the command's changes to the workspace were reviewed and applied", review) + kept

    async def _keep(self, review: Review, accepted: Accepted) -> str:
        """The landed change set's before copies kept for an undo (REQ-BASH-040); what the result says of it."""
        label = self.redact(f"bash: {str(self.call.input.get('command', ''))[:200]}")  # shown, stored, told
        try:
            set_id = await asyncio.to_thread(keep_review, self.data_dir, self.conversation.id, label, review,
                                             accepted)
        except OSError as exc:
            log.warning("the before copies of a change set could not be kept (%s)", exc.strerror or type(exc).__name__)
            set_id = None
        if set_id is None:
            return "\n[phoenix-lsp: this change set cannot be undone (its before copies are not kept).]"
        return f"\n[phoenix-lsp: change set {set_id}; the user can undo it.]"


def pending_review(conversation_id: str, call_id: str) -> Review | None:
    """The review a question is about, while the question is open (an ACP client shows its files' diffs)."""
    return _PENDING.get((conversation_id, call_id))


def _listing(review: Review, limit: int = 40) -> str:
    """The changed paths, for the model."""
    lines = []
    for text in review.texts[:limit]:
        lines.append(f"  {text.kind} {text.path}" + (f" (from {text.change.old_path})"
                                                      if text.change.old_path else ""))
    for change in review.server.changes[:limit]:
        lines.append(f"  {change.kind} {change.path} ({change.reason or change.entry})")
    more = len(review.texts) + len(review.server.changes) - len(lines)
    if more > 0:
        lines.append(f"  ... and {more} more")
    for refused in review.changes.refused:
        lines.append(f"  refused: {refused.path}: {refused.why}")
    for conflict in review.conflicts:
        lines.append(f"  not applied: {conflict.path}: {conflict.why}")
    return "\n".join(lines)


def _report(what: str, review: Review) -> str:
    conflicts = f" {len(review.conflicts)} change(s) were not applied because the file changed meanwhile: the " \
                "user's version is kept." if review.conflicts else ""
    return f"[phoenix-lsp: {what}.{conflicts}]\n{_listing(review)}"
