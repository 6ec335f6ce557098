"""The conversation state machine: ``transition(state, event) -> (state, effects)``.

Pure and deterministic (REQ-BED-001). Which events each status accepts, and which statuses each may lead to,
is data (``TABLE``, in ``table.py``); an event the table does not list for the current status is refused with
a ``Reject`` effect and the state is returned unchanged. ``transition`` adds the persistence effects in front
of every other effect (REQ-BED-007).

The handlers live by what they handle: ``turns`` (the user's message, the model's answer, tool results),
``dispatch`` (working through a tool batch), ``approvals`` (the user's answers, a plan's host calls),
``changes`` (mode, style, policy, model, instructions, always-allow rules), ``subagents`` (a parent waiting for
its sub-agents), ``interruptions`` (cancel, stop, restart); ``steps`` holds what they all build with.
"""

from __future__ import annotations

from typing import Any

from .effects import Effect, PersistMessage, PersistState, ShowAnswer
from .events import Event
from .notifications import TOLD_BEFORE_STATUS, StatusChanged
from .state import BUSY, ConversationState, Exhausted
from .steps import Out, busy, context_usage, reject, status_name
from .table import TABLE
from .values import Mode

__all__ = ["TABLE", "context_usage", "new_conversation", "transition"]


def _persistence(old: ConversationState, new: ConversationState) -> tuple[Effect, ...]:
    if new is old:
        return ()
    added = new.history[len(old.history) :]
    start = len(old.history)
    effects: list[Effect] = [PersistMessage(start + i, m) for i, m in enumerate(added)]
    effects.append(PersistState())
    if type(new.status) is not type(old.status) or new.mode is not old.mode:
        effects.append(StatusChanged(new.status.kind, old.status.kind, new.mode))
    return tuple(effects)


def _refuse(state: ConversationState, event: Event) -> Out:
    """An event the table does not take in this status: the refusal says what to do instead."""
    if isinstance(state.status, BUSY):
        return busy(state)
    if isinstance(state.status, Exhausted):
        return reject(
            state,
            "context_exhausted",
            f"{type(event).__name__} is not accepted: this conversation's context window is full. Start a new "
            "conversation from its summary (phoenix/newConversation with continueFrom).",
        )
    return reject(
        state,
        "illegal_event",
        f"{type(event).__name__} is not accepted while the conversation is "
        f"{status_name(state.status)}; nothing was changed.",
    )


def transition(state: ConversationState, event: Event) -> Out:
    """The next state and the effects to carry out, persistence first. Pure and deterministic."""
    entry = TABLE[type(state.status)].get(type(event))
    if entry is None:
        return _refuse(state, event)
    new, effects = entry.handler(state, event)
    if new is state:
        return new, effects
    persistence = _persistence(state, new)
    # What already happened is told before the status it leads to: an error before the status that reports
    # it (a client that prompts on "error" has the message), a response's usage before the status the
    # response settles in (a client that acts on "idle" has the turn's tokens). The status goes after
    # persistence but before anything that acts on the world. A plan's rendered answer is shown before the
    # idle status too, as the model's streamed text is.
    told = tuple(e for e in effects if isinstance(e, (*TOLD_BEFORE_STATUS, ShowAnswer)))
    if told:
        effects = tuple(e for e in effects if e not in told)
        status = tuple(e for e in persistence if isinstance(e, StatusChanged))
        persistence = tuple(e for e in persistence if not isinstance(e, StatusChanged))
        return new, (*persistence, *told, *status, *effects)
    return new, (*persistence, *effects)


def new_conversation(
    conversation_id: str,
    *,
    model: str,
    working_directory: str,
    sandbox: bool,
    **fields: Any,
) -> ConversationState:
    """A fresh conversation: Restricted when the sandbox exists, otherwise Unrestricted only (REQ-BED-014)."""
    mode = Mode.RESTRICTED if sandbox else Mode.UNRESTRICTED
    return ConversationState(
        id=conversation_id, model=model, working_directory=working_directory, sandbox=sandbox, mode=mode, **fields
    )
