"""The ACP client as the runtime sees it: the runtime's ``Editor`` and ``User`` (``adapter.Client``).

Each event of a conversation that is an attached session becomes ``session/update`` notifications, sent in
order; approvals and upgrade requests become ``session/request_permission``; reads and patches go through the
client's ``fs/*`` methods when it offers them (``files.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acp.connection import StreamDirection, StreamEvent

from ...core.state import RESTING_KINDS, AwaitingApproval, AwaitingUpgrade
from ...core.values import ToolUse
from ...protocol import events as ev
from ...tools.shell_changes import ChangeKind
from ...tools.shell_changes.edit import WRITE_KINDS, Review
from ...tools.shell_changes.restore import Plan
from ..adapter import Conversation, Conversations
from ..config import ACP_READ_TIMEOUT_S
from . import asking, files, options, results, updates
from .sender import Sender
from .session import Session

log = logging.getLogger(__name__)


class AcpClient:
    """What the runtime is given as its client (``Hub(..., client)``); the connection comes with ``on_connect``."""

    def __init__(self) -> None:
        self.conn: Any = None  # acp.AgentSideConnection
        self.hub: Conversations | None = None
        self.can_read = False  # the client announced fs.readTextFile
        self.editor_sight = False  # ACP has no editor's sight (REQ-SIGHT-002 is the LSP extension's)
        self.can_write = False  # the client announced fs.writeTextFile
        self.read_timeout_s = ACP_READ_TIMEOUT_S  # PHOENIX_ACP_READ_TIMEOUT_S (set at start)
        self.sessions: dict[str, Session] = {}
        self.sender = Sender(self.spawn)
        self.loading: dict[Any, str] = {}  # session/load request id -> session id, until it is answered
        self.choices = options.Choices()  # the models and the route the config options offer (REQ-ACP-023)
        self.models_pending: asyncio.Task[Any] | None = None  # the model list a session was answered without

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        assert self.hub is not None
        return self.hub.spawn(coro)

    def update(self, session_id: str, update: Any) -> None:
        """Send one ``session/update`` after everything sent before (a ``results.Later`` made then)."""
        self.sender.send(lambda: self.conn.session_update(
            session_id=session_id, update=update.make() if isinstance(update, results.Later) else update))

    # ------------------------------------------------------------------------------- the runtime's User

    def event_batch(self, batch: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        for event, params in batch:  # each becomes its own session/update notifications
            self.event(event, params)

    def log_to_client(self, text: str) -> None:
        log.info("%s", text)  # ACP has no log of the editor's: the agent's own log keeps it

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None:
        session = self.sessions.get(event.conversation_id)
        if session is None or self.conn is None:
            return
        try:
            made = updates.live(event, session.calls, session.root)
        except Exception:  # a translation that fails must not fail the conversation's effect
            log.exception("could not turn a %s event into ACP updates", event.kind)
            made = []
        for update in made:
            self.update(session.id, update)
        if isinstance(event, ev.ModeChanged | ev.ModelChanged) and event.conversation_id == session.id:
            self.options_changed(session, event)
        if isinstance(event, ev.Status) and event.status in RESTING_KINDS:
            session.end_turn("cancelled" if session.cancelled else "end_turn")

    def options_changed(self, session: Session, event: ev.ModeChanged | ev.ModelChanged) -> None:
        """The config options again, whoever changed the mode or the model (a command, an upgrade, set_mode, a
        config option; REQ-ACP-024)."""
        assert self.hub is not None
        conversation = self.hub.runtimes.get(session.id)
        if conversation is None:
            return
        state = conversation.state
        mode = event.mode.value if isinstance(event, ev.ModeChanged) else state.mode.value
        model = event.model if isinstance(event, ev.ModelChanged) else state.model
        self.update(session.id, options.changed(mode, model, self.choices))

    async def _models_listed(self, listing: asyncio.Task[Any]) -> None:
        """The model list a session was answered without, told to every session once it is known."""
        try:
            listed = await listing
        except Exception as exc:  # the use case answers the built-in list rather than fail; never the turn's
            log.warning("the model list could not be read for the config options: %s", exc)
            return
        self.choices.models = options.model_choices(listed.models)
        assert self.hub is not None
        for session in list(self.sessions.values()):
            conversation = self.hub.runtimes.get(session.id)
            if conversation is not None:
                state = conversation.state
                self.update(session.id, options.changed(state.mode.value, state.model, self.choices))

    def ask_approval(self, conversation: Conversation, tool_use_id: str, call: ToolUse) -> None:
        session = self.session_of(conversation) if self.hub is not None else None  # a sub-agent's: its parent's
        if session is None or self.conn is None:
            return  # not a session of this connection: asked again when it is loaded (REQ-ACP-013)
        session.asks[tool_use_id] = self.spawn(asking.approval(self, session, conversation, call))

    def ask_upgrade(self, conversation: Conversation, tool_use_id: str, reason: str) -> None:
        session = self.session_of(conversation) if self.hub is not None else None
        if session is None or self.conn is None:
            return
        session.asks[tool_use_id] = self.spawn(asking.upgrade(self, session, conversation, tool_use_id, reason))

    async def ask_mcp_consent(self, conversation: Conversation, question: Any) -> bool | None:
        """A project's MCP server asks for consent as ``session/request_permission`` (REQ-MCP-009)."""
        session = self.session_of(conversation) if self.hub is not None else None
        if session is None or self.conn is None:
            return None  # no client to ask: not started
        return await asking.mcp_consent(self, session, question)

    def mcp_notice(self, conversation: Conversation, text: str) -> None:
        log.warning("%s", text)  # ACP has no message of the agent's own to the user outside a turn's text

    def withdraw(self, conversation: Conversation, tool_use_id: str) -> None:
        """Answered elsewhere (a cancel, a mode command): the client's request is answered by the client, and
        whatever it answers then changes nothing."""
        session = self.session_of(conversation) if self.hub is not None else None
        if session is not None:
            session.asks.pop(tool_use_id, None)

    def ask_again(self, session: Session) -> None:
        """The approval or upgrade request the conversation still waits for, asked again (after a restart)."""
        assert self.hub is not None
        conversation = self.hub.runtimes.get(session.id)
        if conversation is None:
            return
        status = conversation.state.status
        if isinstance(status, AwaitingApproval) and status.host_call is None:
            call = status.batch.current
            if call.id not in session.asks:
                self.ask_approval(conversation, call.id, call)
        elif isinstance(status, AwaitingUpgrade):
            call = status.batch.current
            if call.id not in session.asks:
                self.ask_upgrade(conversation, call.id, status.reason)

    def observe(self, event: StreamEvent) -> None:
        """The connection's messages: once a ``session/new`` or ``session/load`` is answered, the slash commands
        are announced, and what a loaded session still waits for is asked."""
        message = event.message
        if event.direction is StreamDirection.INCOMING and message.get("method") == "session/load":
            params = message.get("params") or {}
            if "id" in message and isinstance(params, dict):
                self.loading[message["id"]] = str(params.get("sessionId"))
        elif event.direction is StreamDirection.OUTGOING and "method" not in message:
            session_id = self.loading.pop(message.get("id"), None)
            result = message.get("result")
            created = result.get("sessionId") if session_id is None and isinstance(result, dict) else None
            session = self.sessions.get(session_id or (created if isinstance(created, str) else ""))
            if session is not None and "result" in message:  # a session/load's or a session/new's answer
                self.update(session.id, options.commands())  # REQ-ACP-025: once the client knows the session
                if self.models_pending is not None:
                    self.spawn(self._models_listed(self.models_pending))
                    self.models_pending = None
                self.ask_again(session)

    # ------------------------------------------------------------------------------ the runtime's Editor

    def open_documents(self) -> Mapping[Path, str]:
        return {}  # ACP does not say which files the editor has open: reads ask it (documents_for)

    def sight_for(self, conversation: Conversation) -> None:
        return None  # see editor_sight

    async def documents_for(self, conversation: Conversation, call: ToolUse) -> Mapping[Path, str]:
        """The editor's text of the file a call reads, unsaved changes included (REQ-ACP-010)."""
        return await files.read_for(self, conversation, call)

    async def apply_patch(self, conversation: Conversation, call: ToolUse) -> tuple[str, bool]:
        return await files.apply_patch(self, conversation, call)

    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]:
        return await files.review_texts(self, conversation, paths)

    def review_kinds(self) -> frozenset[ChangeKind]:
        return WRITE_KINDS  # fs/write_text_file writes a file; the server places deletions and renames

    def cannot_apply(self, review: Review) -> str | None:
        return files.cannot_write(self, review)

    async def apply_review(self, conversation: Conversation, call_id: str, review: Review) -> str | None:
        return await files.write_review(self, conversation, call_id, review)

    async def apply_undo(self, conversation: Conversation, plan: Plan) -> str | None:
        return await files.write_undo(self, conversation, plan)

    def undo_deletes(self) -> bool:
        return False  # ACP has no delete: the server deletes the files an undo takes away

    def session_of(self, conversation: Conversation) -> Session | None:
        """The session a conversation belongs to (a sub-agent's is its parent's)."""
        assert self.hub is not None
        current: Conversation | None = conversation
        while current is not None:
            session = self.sessions.get(current.id)
            if session is not None:
                return session
            parent = current.state.parent_id
            current = self.hub.runtimes.get(parent) if parent else None
        return None
