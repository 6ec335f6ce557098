"""The ACP methods an agent serves (REQ-ACP-001..003, REQ-ACP-011..013): initialize, sessions created and
loaded, modes, prompts and cancel, each against the conversations of the hub the boot gave the client."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import acp
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)

from ...core.values import InstructionFile, Mode
from ..adapter import Conversation, Conversations
from ..usecases import choices, conversations, undo
from ..usecases import send_message as send
from ..usecases.errors import Invalid, Refused, UseCaseError
from ..usecases.warm import warm_up
from . import mcp, prompt, updates
from .client import AcpClient
from .session import Session

VERSION = "0.1.0"

log = logging.getLogger(__name__)


def modes(conversation: Conversation) -> SessionModeState:
    """The session modes (REQ-ACP-003): Restricted and Unrestricted, the conversation's current one."""
    available = [SessionMode(id=mode, name=name, description=about) for mode, (name, about) in updates.MODES.items()]
    return SessionModeState(current_mode_id=conversation.state.mode.value, available_modes=available)


class PhoenixAgent:
    """The agent side of one ACP connection."""

    def __init__(self, client: AcpClient) -> None:
        self.client = client

    @property
    def hub(self) -> Conversations:
        assert self.client.hub is not None
        return self.client.hub

    def on_connect(self, conn: Any) -> None:
        self.client.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None  # both may be absent or null
        self.client.can_read = fs is not None and bool(fs.read_text_file)
        self.client.can_write = fs is not None and bool(fs.write_text_file)
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
        )
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities,
                                  agent_info=Implementation(name="phoenix-lsp", title="Phoenix", version=VERSION))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # no authentication methods are offered: the model keys come from the environment

    # ------------------------------------------------------------------------------------ sessions

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        # REQ-URI-002: the one session-folder rule; the tools' confinement must confine something
        working_directory = await self._folder(cwd)
        found = await asyncio.to_thread(self._instructions, working_directory)
        conversation = conversations.start(self.hub, conversations.Start(working_directory, found))
        await self._attach_servers(mcp_servers)
        self._attach(conversation)
        return NewSessionResponse(session_id=conversation.id, modes=modes(conversation))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        try:
            conversation = conversations.find(self.hub, session_id)
        except conversations.Unknown:
            raise RequestError.resource_not_found(session_id) from None
        except conversations.Unreadable as exc:
            raise RequestError.internal_error({"message": str(exc)}) from None
        await self._folder(cwd)  # REQ-URI-002: the folder a client names is held to the rule a new session's is
        parent = conversation.state.parent_id
        if parent:  # REQ-ACP-016: a sub-agent answers to its parent only (REQ-BED-018)
            raise RequestError.invalid_params({"sessionId": f"{session_id[:120]!r} is a sub-agent of the session "
                                               f"{parent[:80]!r}, not a session: load that one to see its work"})
        warm_up()  # the SDK and the cgroup probes, once a session is in use
        await self._attach_servers(mcp_servers)
        session = self._attach(conversation)
        for update in updates.replay(conversation.state.history, session.root):  # REQ-ACP-012: before the answer
            self.client.update(session.id, update)
        session.calls.announced.update(c.id for m in conversation.state.history for c in m.tool_uses())
        await self.client.sender.drained()
        return LoadSessionResponse(modes=modes(conversation))  # an open request is asked once this is sent

    async def _attach_servers(self, given: list[Any] | None) -> None:
        """The session's MCP servers on the agent route (REQ-ACP-015); what cannot be used is logged."""
        if not given:
            return
        servers, secrets, problems = mcp.servers_of(given)
        route = self.hub.config.agent_route
        if route is not None and servers:
            problems += await asyncio.to_thread(route.add_servers, servers, secrets)
        for problem in problems:
            log.warning("%s", problem)

    def _attach(self, conversation: Conversation) -> Session:
        session = self.client.sessions.get(conversation.id)
        if session is None:
            session = Session(conversation.id, conversation.state.working_directory)
            self.client.sessions[conversation.id] = session
        return session

    async def _folder(self, cwd: str) -> str:
        try:
            return await asyncio.to_thread(conversations.session_folder, cwd, "cwd")
        except Invalid as exc:
            raise RequestError.invalid_params({exc.field: exc.reason}) from None

    def _instructions(self, working_directory: str) -> tuple[str, tuple[InstructionFile, ...]]:
        """The project instructions (REQ-INSTR-001), the repository around the directory standing for the
        workspace folder."""
        here = Path(working_directory)
        roots = [d for d in (here, *here.parents) if (d / ".git").exists()][:1] or [here]
        return conversations.project_instructions(self.hub, working_directory, roots)

    def _session(self, session_id: str) -> tuple[Session, Conversation]:
        session = self.client.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id[:80]!r} on this connection: "
                                               "create one (session/new) or load it (session/load) first"})
        return session, self.hub.runtimes[session_id]

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        conversation = self._session(session_id)[1]
        if mode_id not in updates.MODES:
            raise RequestError.invalid_params({"modeId": f"{mode_id[:40]!r} is not a mode: use "
                                               f"{' or '.join(updates.MODES)}"})
        try:  # the user's own choice, like /execute (REQ-ACP-003)
            choices.set_mode(conversation, Mode(mode_id))
        except Refused as exc:
            raise RequestError.invalid_request({"message": exc.reject.message}) from None
        return SetSessionModeResponse()

    # ------------------------------------------------------------------------------------- prompts

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session, conversation = self._session(session_id)
        try:
            parts = prompt_parts(prompt, send.deny(self.hub), conversation.state.working_directory)
        except prompt_error as exc:
            raise RequestError.invalid_params({"prompt": str(exc)}) from None
        command, _, argument = parts.text.strip().partition(" ")
        if command == "/undo" and not parts.images and not parts.attachments:
            return await self._undo(session, conversation, argument.strip() or "latest")
        message = send.Message(
            text=parts.text,
            images=[send.ImageInput(raw, media, "prompt", prefix=f"image {i + 1}: ")
                    for i, (raw, media) in enumerate(parts.images)],
            attachment_count=len(parts.attachments),
            read_attachments=lambda: parts.attachments,  # read from the prompt, checked by prompt_parts
        )
        # the turn's future is in place before the message is applied (a command ends it at once); a message not
        # sent leaves the session as it was (a turn still running keeps its own)
        kept = session.cancelled, session.turn
        session.cancelled = False
        session.turn = asyncio.get_running_loop().create_future()
        try:
            send.send_message(self.hub, conversation, message)
        except UseCaseError as exc:
            session.cancelled, session.turn = kept
            raise translated(exc) from None
        if not conversation.busy:  # a command (/execute, /plan) or a message that starts no turn
            session.end_turn("end_turn")
        reason = await session.turn
        await self.client.sender.drained()  # every update of the turn before its answer
        return PromptResponse(stop_reason=reason)

    async def _undo(self, session: Session, conversation: Conversation, change_set: str) -> PromptResponse:
        """``/undo [ID]`` (REQ-BASH-041): the latest accepted change set (or ID) taken back, its text files through
        ``fs/write_text_file`` and the rest by the server; the outcome is the turn's answer. A message while a turn
        runs is refused the same way (the core says busy)."""
        try:
            done = await undo.undo_changes(conversation, self.client, self.hub.data_dir, change_set)
            text = done.message
        except UseCaseError as exc:
            text = f"Nothing was undone: {exc.reason if isinstance(exc, Invalid) else str(exc)}"
        self.client.update(session.id, acp.update_agent_message_text(text))
        await self.client.sender.drained()
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """REQ-ACP-011: the turn stops at once; an open request answered ``cancelled`` runs nothing."""
        session = self.client.sessions.get(session_id)
        if session is None:
            return
        session.cancelled = True
        conversation = self.hub.runtimes.get(session_id)
        if conversation is not None:
            conversations.cancel(conversation)
        session.end_turn("cancelled")


def translated(exc: UseCaseError) -> RequestError:
    """A use case's error as ACP's: a refusal of the core is an invalid request (with the conversation's
    status), anything else invalid params about the prompt."""
    if isinstance(exc, Refused):
        return RequestError.invalid_request({"message": exc.reject.message, "status": exc.status})
    assert isinstance(exc, Invalid)
    return RequestError.invalid_params({"prompt": exc.reason})


prompt_parts = prompt.parts_of
prompt_error = prompt.PromptError
