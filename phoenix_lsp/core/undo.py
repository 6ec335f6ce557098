"""Undo afterwards (REQ-BASH-041): whether the user may take back an accepted change set now, and what the model is
told once it was.

An undo is allowed in any mode (it puts back the user's own bytes; Restricted forbids the agent's writes, not the
user's), only while no turn runs (``idle``, ``error``, ``exhausted``: the table refuses it in a busy status, so it
never races a tool that writes) and one at a time. While it runs (``undoing``) no turn starts: a user message and
a continuation summary are refused as busy. Its outcome, ``ChangesUndone``, tells the model with a note which
paths hold their old content again and which were kept because they changed since.
"""

from __future__ import annotations

from dataclasses import replace

from . import texts
from .effects import Audit, RestoreChanges
from .events import ChangesUndone, UndoChanges
from .state import BUSY, ConversationState
from .steps import Out, reject, settle
from .values import Actor

#: the most paths a note names (the rest are counted)
NOTE_PATHS = 30


def on_undo(state: ConversationState, ev: UndoChanges) -> Out:
    if (busy := undoing_refusal(state)) is not None:
        return busy
    state = replace(state, undoing=ev.change_set)
    return state, (RestoreChanges(ev.change_set), Audit(Actor.USER, "undoRequested", {"changeSet": ev.change_set}))


def _paths(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:NOTE_PATHS])
    return shown + (f" and {len(paths) - NOTE_PATHS} more" if len(paths) > NOTE_PATHS else "")


def on_undone(state: ConversationState, ev: ChangesUndone) -> Out:
    if state.undoing != ev.change_set:
        return state, ()  # stale: not the undo in progress
    state = replace(state, undoing=None)
    detail: dict[str, object] = {"changeSet": ev.change_set, "restored": len(ev.restored),
                                 "refused": len(ev.refused)}
    if ev.failed:
        detail["failed"] = ev.failed
    audit = Audit(Actor.USER, "changesUndone", detail)
    if not ev.restored:
        return state, (audit,)  # nothing changed on disk: the model has nothing to learn
    note = texts.UNDO_NOTE.format(change_set=ev.change_set, label=ev.label or "a change set",
                                  restored=_paths(ev.restored))
    if ev.refused:
        note += texts.UNDO_REFUSED_NOTE.format(refused=_paths(ev.refused))
    state = replace(state, notes=(*state.notes, note))
    if not isinstance(state.status, BUSY):
        state = settle(state, state.status)
    return state, (audit,)


def undoing_refusal(state: ConversationState) -> Out | None:
    """The busy refusal of a message, a continuation, an undo or a background review while an undo or a
    background command's review (REQ-BASH-044) is under way, else None."""
    if state.undoing is not None:
        return reject(state, "busy", texts.UNDOING.format(change_set=state.undoing))
    if state.reviewing is not None:
        return reject(state, "busy", texts.REVIEWING)
    return None


def interrupted(state: ConversationState) -> ConversationState:
    """After a restart an undo in progress is over (the server that ran it is gone): the model is told."""
    if state.undoing is None:
        return state
    return replace(state, undoing=None,
                   notes=(*state.notes, texts.UNDO_INTERRUPTED.format(change_set=state.undoing)))


def review_interrupted(state: ConversationState) -> ConversationState:
    """After a restart a background command's review under way is over (REQ-BASH-044): its layer went with the
    server that held it, and the model is told."""
    if state.reviewing is None:
        return state
    return replace(state, reviewing=None, review_question=None, notes=(*state.notes, texts.REVIEW_INTERRUPTED))
