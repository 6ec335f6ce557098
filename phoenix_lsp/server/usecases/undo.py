"""Undo afterwards (REQ-BASH-041), once for every adapter: an accepted change set taken back from its kept before
copies.

The kept set is found (``latest`` or its id; an id of any other form is refused before it names a path), the core
is asked (``UndoChanges``: refused while a turn runs or another undo does), then the plan is made against the folder
and the editor's open documents: a path that changed since the set landed is refused by name and keeps what it
holds. The server's part is restored first, whole or not at all, then the editor applies the text part as one
edit (an LSP client's versioned ``workspace/applyEdit``, which it shows and its own undo can redo); when the
editor refuses, the server's part is taken back. Whatever happens, the core hears the outcome
(``ChangesUndone``), which tells the model what was restored. The kept set goes once something was restored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...core.events import ChangesUndone, UndoChanges
from ...tools.shell_changes import kept as kept_sets
from ...tools.shell_changes.restore import Plan, Tampered, plan, restore, settle, take_back
from ..adapter import Conversation
from .errors import Invalid, Refused

log = logging.getLogger(__name__)


class UndoEditor(Protocol):
    """What an adapter does for an undo: the editor's text of the files it holds, and the text part applied."""

    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]: ...
    async def apply_undo(self, conversation: Conversation, plan: Plan) -> str | None:
        """Has the editor restore ``plan.texts`` as one edit: None when it did, else why not."""
        ...
    def undo_deletes(self) -> bool:
        """The editor deletes files (an LSP workspace edit); else the server deletes those an undo takes away."""
        ...


@dataclass(frozen=True)
class Undone:
    change_set: str
    label: str
    restored: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    failed: str

    @property
    def message(self) -> str:
        if self.failed:
            return f"Change set {self.change_set} ({self.label}) was not undone: {self.failed}"
        if not self.restored:
            return (f"Change set {self.change_set} ({self.label}) was not undone: every file it changed has changed "
                    "since, and what they hold now is kept.")
        text = f"Change set {self.change_set} ({self.label}) was undone: {len(self.restored)} path(s) restored."
        if self.refused:
            text += (" Not restored, because they changed since it landed (kept as they are): "
                     + "; ".join(f"{p} ({why})" for p, why in self.refused[:20]))
        return text


async def undo_changes(conversation: Conversation, editor: UndoEditor, data_dir: Path, change_set: str) -> Undone:
    """Takes back the kept change set ``change_set`` (or ``latest``) of ``conversation``. Invalid when there is
    none of that id; Refused when the core refuses (a turn runs, another undo does)."""
    try:
        kept = await asyncio.to_thread(kept_sets.load, data_dir, conversation.id, change_set)
    except kept_sets.NotKept as exc:
        raise Invalid("changeSetId", f"{exc}. Nothing was changed.") from None
    outcome = conversation.apply(UndoChanges(kept.id))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    restored: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    failed = ""
    try:
        folder = Path(conversation.state.working_directory).resolve()
        if Path(kept.folder) != folder:
            raise Tampered(f"the kept set names another folder than this conversation's ({folder})")
        paths = [folder.joinpath(*e.path.split("/")) for e in kept.entries if e.editor]
        held = await editor.review_texts(conversation, paths)
        made = await asyncio.to_thread(plan, kept, held, editor.undo_deletes())
        refused = made.refused
        steps = await asyncio.to_thread(restore, made)
        try:
            why = await editor.apply_undo(conversation, made) if made.texts else None
        except Exception as exc:  # the editor's side failed: nothing of it is known to have landed
            why = f"the editor's edit failed ({exc})"
        if why is not None:
            await asyncio.to_thread(take_back, made, steps)
            failed = f"the editor did not restore the text files ({why}); nothing was changed."
        else:
            await asyncio.to_thread(settle, made, steps)
            restored = tuple(t.path for t in made.texts) + tuple(e.path for e in made.server)
            if restored:
                await asyncio.to_thread(kept_sets.remove, kept.root)
    except Tampered as exc:
        failed = f"{exc}; nothing was changed."
    except OSError as exc:
        failed = f"{exc.strerror or exc}; nothing was changed."
    finally:
        conversation.apply(ChangesUndone(kept.id, kept.label, restored, tuple(p for p, _ in refused), failed))
    return Undone(kept.id, kept.label, restored, refused, failed)
