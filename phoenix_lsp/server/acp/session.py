"""One ACP session (a conversation this connection created or loaded), and the client side as the modules that
ask and write through it see it (``Side``, which ``client.AcpClient`` is)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp.schema import StopReason

from ..adapter import Conversation, Conversations
from . import updates
from .sender import Sender


@dataclass
class Session:
    """One ACP session: a conversation this connection created or loaded."""

    id: str
    root: str
    calls: updates.Calls = field(default_factory=updates.Calls)
    turn: asyncio.Future[StopReason] | None = None  # the running prompt's stop reason
    cancelled: bool = False  # session/cancel came during the running prompt
    asks: dict[str, asyncio.Task[Any]] = field(default_factory=dict)  # open request_permission by call id

    def end_turn(self, reason: StopReason) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.set_result(reason)


class Side(Protocol):
    """The ACP client's side of the connection: what ``asking`` and ``files`` use."""

    conn: Any  # acp.AgentSideConnection
    hub: Conversations | None
    can_read: bool
    can_write: bool
    read_timeout_s: float  # the longest wait for fs/read_text_file's answer
    sender: Sender

    def update(self, session_id: str, update: Any) -> None: ...
    def session_of(self, conversation: Conversation) -> Session | None: ...
