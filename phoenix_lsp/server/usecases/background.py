"""A running background command's changes, asked for by the user before it ends (REQ-BASH-045), once for every
adapter.

Its layer is mounted while it runs, and the kernel leaves changing a mounted overlay's layers undefined: so what it
changed so far is only read (the upper layer, without touching it) and shown like a review, never accepted from
here. To have the changes land, the user stops it (``stop``): its whole tree is killed first, and only then is its
layer reviewed, as an ended command's (at once when the conversation is at rest, else by the running turn's next
bash call or at its end), through the core and the patch tool's policy. A command that goes on writing after the
request cannot put anything in the review: the review reads the layer only once no process of it is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..adapter import Conversations
from .errors import Invalid


@dataclass(frozen=True)
class Reviewed:
    commands: tuple[Any, ...]  # runtime.background.Snapshot: what each changed so far
    stopped: tuple[int, ...]
    message: str


async def review_background(conversations: Conversations, conversation_id: str, pid: int | None,
                            stop: bool) -> Reviewed:
    """What the conversation's running captured commands (the one of ``pid``) changed so far; with ``stop``, each
    stopped for its review. Invalid when there is none."""
    background = conversations.background
    shots = await background.snapshot(conversation_id, pid)
    if not shots:
        which = f"with PID {pid} " if pid is not None else ""
        raise Invalid("pid", f"this conversation has no running background command {which}whose changes are held "
                             "for a review (only a background command started in Unrestricted, where shell changes "
                             "are captured, has them; one that ended is reviewed already). Nothing was changed.")
    lines = [f"`{s.command[:120]}` (PID {s.pid}): " + (f"{len(s.files)} path(s) changed so far" if s.files
                                                      else "no change so far") for s in shots]
    if not stop:
        message = ("What the background command(s) changed so far (read-only; nothing lands before the command "
                   "has ended and its review is accepted; stop it to review it now): " + "; ".join(lines))
        return Reviewed(tuple(shots), (), message)
    stopped = await background.stop(conversation_id, pid)
    message = ("Stopped " + "; ".join(lines) + ". Its changes are reviewed now, in full, as the command left them "
               "(while a turn runs: at its next bash call or when it ends); nothing of them lands before that "
               "review is accepted.")
    return Reviewed(tuple(shots), tuple(j.pid for j in stopped), message)
