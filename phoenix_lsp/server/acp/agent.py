"""The ACP methods an agent serves (REQ-ACP-001..003, REQ-ACP-011..013, REQ-ACP-023..027): initialize, sessions
created, loaded, listed and closed, modes and config options, prompts and cancel, each against the conversations
of the hub the boot gave the client, through the use cases.

Over 300 lines: the SDK's Agent interface is one class whose methods are each a short translation to a use case."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import acp
from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from ...core.values import InstructionFile, Mode, Route
from ...protocol.params import Route as RouteName
from ..adapter import Conversation, Conversations
from ..usecases import background, choices, conversations, images, models, undo
from ..usecases import route as routes
from ..usecases import send_message as send
from ..usecases.errors import Invalid, Refused, UseCaseError
from ..usecases.warm import warm_up
from . import errors, listing, mcp, options, prompt, replay, updates
from .client import AcpClient
from .session import Session

VERSION = "0.1.0"
#: how long session/new and session/load wait for the model list before answering without it (REQ-ACP-023)
MODELS_WAIT_S = 0.3

log = logging.getLogger(__name__)


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
            session_capabilities=SessionCapabilities(list=SessionListCapabilities(), close=SessionCloseCapabilities()),
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
        await mcp.attach(self.hub, mcp_servers)
        self._attach(conversation)
        await self._choices()
        # the slash commands are announced once this answer is out (client.observe): the client knows the session
        return NewSessionResponse(session_id=conversation.id, modes=options.modes(conversation.state.mode.value),
                                  config_options=self._options(conversation))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        folder = await self._folder(cwd)  # REQ-URI-002: the folder a client names is held to a new session's rule
        try:  # the one resume rule (REQ-ACP-012): its own folder only, never a sub-agent on its own
            conversation = conversations.resume(self.hub, session_id, folder)
        except conversations.Unknown:
            raise errors.not_found(f"There is no session {session_id[:80]!r} in this agent's store, so nothing was "
                                   "loaded: session/list lists the sessions of a folder, session/new starts one.",
                                   uri=session_id[:80]) from None
        except conversations.Unreadable as exc:
            raise errors.internal(str(exc), sessionId=session_id[:80]) from None
        except conversations.SubAgent as exc:  # REQ-ACP-016: a sub-agent answers to its parent only (REQ-BED-018)
            why = (f"{session_id[:120]!r} is a sub-agent of the session {exc.parent_id[:80]!r}, not a session, so it "
                   "was not loaded: load that one to see its work")
            raise errors.invalid_params(why, sessionId=why) from None
        except conversations.OtherFolder as exc:
            why = (f"the session {exc.conversation_id[:8]} belongs to {exc.folder}, not to {exc.asked} (its edits "
                   f"and commands belong to its own folder), so it was not loaded: load it with the cwd "
                   f"{exc.folder} to go on with it there")
            raise errors.invalid_params(why, cwd=why) from None
        warm_up()  # the SDK and the cgroup probes, once a session is in use
        await mcp.attach(self.hub, mcp_servers)
        session = self._attach(conversation)
        await self._choices()
        pictures = await images.for_replay(self.hub.store, conversation.state)  # REQ-ACP-031: through the gate
        for update in replay.history(conversation.state.history, session.root, pictures):  # before the answer
            self.client.update(session.id, update)
        session.calls.announced.update(c.id for m in conversation.state.history for c in m.tool_uses())
        session.calls.ended.update(r.tool_use_id for m in conversation.state.history for r in m.tool_results())
        await self.client.sender.drained()
        # an open request is asked, and the slash commands announced, once this is sent (client.observe)
        return LoadSessionResponse(modes=options.modes(conversation.state.mode.value),
                                   config_options=self._options(conversation))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """This folder's sessions (``cwd``, else the folder the agent runs in), most recently updated first, a
        page at a time (REQ-ACP-026)."""
        folder = await self._folder(cwd if cwd is not None else os.getcwd())
        return listing.page(self.hub, folder, cursor)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """What runs for the session ends (the turn, a command, an open request); the store keeps the
        conversation, and session/load takes it up again (REQ-ACP-027)."""
        session, conversation = self._session(session_id)
        session.cancelled = True
        conversations.cancel(conversation)
        for asking in session.asks.values():
            asking.cancel()
        session.asks.clear()
        session.end_turn("cancelled")
        await self.client.sender.drained()  # what the cancel said goes out before the session is gone
        self.client.sessions.pop(session_id, None)
        return CloseSessionResponse()

    async def _choices(self) -> None:
        """The models the keys can use (the models use case) and the route the user chose last, for the config
        options (REQ-ACP-023). The list is waited for ``MODELS_WAIT_S`` at most (the first listing imports the
        providers' SDKs): later, it is told with ``config_option_update`` once the answer is out (client.py)."""
        listing = self.hub.spawn(models.list_models(self.hub))
        try:
            listed = await asyncio.wait_for(asyncio.shield(listing), MODELS_WAIT_S)
        except TimeoutError:
            self.client.models_pending = listing
        else:
            self.client.choices.models = options.model_choices(listed.models)
        self.client.choices.route = await asyncio.to_thread(routes.current_route, self.hub.data_dir)

    def _options(self, conversation: Conversation) -> list[Any]:
        state = conversation.state
        return options.config_options(state.mode.value, state.model, self.client.choices)

    def _attach(self, conversation: Conversation) -> Session:
        session = self.client.sessions.get(conversation.id)
        if session is None:
            # the calls read a call's whole output from the conversation's state
            session = Session(conversation.id, conversation.state.working_directory,
                              calls=updates.Calls(lambda: conversation.state))
            self.client.sessions[conversation.id] = session
        return session

    async def _folder(self, cwd: str) -> str:
        try:
            return await asyncio.to_thread(conversations.session_folder, cwd, "cwd")
        except Invalid as exc:
            raise errors.invalid_params(f"cwd: {exc.reason}", **{exc.field: exc.reason}) from None

    def _instructions(self, working_directory: str) -> tuple[str, tuple[InstructionFile, ...]]:
        """The project instructions (REQ-INSTR-001), the repository around the directory standing for the
        workspace folder."""
        here = Path(working_directory)
        roots = [d for d in (here, *here.parents) if (d / ".git").exists()][:1] or [here]
        return conversations.project_instructions(self.hub, working_directory, roots)

    def _session(self, session_id: str) -> tuple[Session, Conversation]:
        session = self.client.sessions.get(session_id)
        if session is None:
            raise errors.no_session(session_id)
        return session, self.hub.runtimes[session_id]

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        self._set_mode(self._session(session_id)[1], mode_id, "modeId")
        return SetSessionModeResponse()

    def _set_mode(self, conversation: Conversation, mode_id: str, field: str) -> None:
        if mode_id not in updates.MODES:
            why = (f"{mode_id[:40]!r} is not a mode of this agent, so the mode was not changed: use "
                   f"{' or '.join(updates.MODES)}")
            raise errors.invalid_params(why, **{field: why})
        try:  # the user's own choice, like /execute (REQ-ACP-003)
            choices.set_mode(conversation, Mode(mode_id))
        except Refused as exc:
            raise errors.invalid_request(exc.reject.message, status=exc.status) from None

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """The mode, the model or the route, as the user picked it from the config options (REQ-ACP-024)."""
        conversation = self._session(session_id)[1]
        known = (options.MODE, options.MODEL, options.ROUTE)
        if config_id not in known:
            raise errors.invalid_params(f"{config_id[:40]!r} is not a config option of this agent, so nothing was "
                                        f"changed: it has {', '.join(known)} (session/new and session/load list "
                                        "them with their values).", configId=config_id[:40])
        if not isinstance(value, str):
            raise errors.invalid_params(f"The option {config_id!r} takes one of its values, not a boolean: nothing "
                                        "was changed; pick one of the values session/new listed.", value=value)
        if config_id == options.MODE:
            self._set_mode(conversation, value, "value")
        elif config_id == options.MODEL:
            self._set_model(conversation, value)
        else:
            await self._set_route(session_id, value)
        return SetSessionConfigOptionResponse(config_options=self._options(conversation))

    def _set_model(self, conversation: Conversation, model: str) -> None:
        try:  # REQ-MODEL-003, REQ-MODEL-007: the rules every adapter calls
            models.choose_model(self.hub, conversation, model)
        except Invalid as exc:
            raise errors.invalid_params(f"The model {model[:80]!r} was not chosen: {exc.reason}",
                                        value=model[:80]) from None
        except Refused as exc:
            raise errors.invalid_request(exc.reject.message, status=exc.status) from None

    async def _set_route(self, session_id: str, value: str) -> None:
        if value not in [r.value for r in Route]:
            raise errors.invalid_params(f"{value[:40]!r} is not a route, so the route was not changed: use "
                                        f"{' or '.join(r.value for r in Route)}.", value=value[:40])
        route: RouteName = "agent" if value == Route.AGENT.value else "ask"
        try:  # kept for every client (REQ-AGENT-001)
            await asyncio.to_thread(routes.choose_route, self.hub.data_dir, route)
        except routes.NotSaved as exc:
            raise errors.internal(str(exc), path=str(exc.path)) from None
        self.client.choices.route = route
        for other in self.client.sessions.values():  # the route is every session's: each is told
            conversation = self.hub.runtimes.get(other.id)
            if other.id != session_id and conversation is not None:
                state = conversation.state
                self.client.update(other.id, options.changed(state.mode.value, state.model, self.client.choices))

    # ------------------------------------------------------------------------------------- prompts

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session, conversation = self._session(session_id)
        try:
            parts = prompt_parts(prompt, send.deny(self.hub), conversation.state.working_directory)
        except prompt_error as exc:
            raise errors.invalid_params(str(exc), prompt=str(exc)) from None
        command, _, argument = parts.text.strip().partition(" ")
        if command == "/undo" and not parts.images and not parts.attachments:
            return await self._undo(session, conversation, argument.strip() or "latest")
        if command == "/background" and not parts.images and not parts.attachments:
            return await self._background(session, conversation, argument.split())
        message = send.Message(
            text=parts.text,
            images=[send.ImageInput(raw, media, "prompt", prefix=f"image {i + 1}: ")
                    for i, (raw, media) in enumerate(parts.images)],
            attachment_count=len(parts.attachments),
            read_attachments=lambda: parts.attachments,  # read from the prompt, checked by prompt_parts
        )
        try:  # the images through the gate off the event loop, before the session changes (REQ-SEC-043)
            message = await send.gate_images(message)
        except UseCaseError as exc:
            raise errors.translated(exc) from None
        # the turn's future is in place before the message is applied (a command ends it at once); a message not
        # sent leaves the session as it was (a turn still running keeps its own)
        kept = session.cancelled, session.turn
        session.cancelled = False
        session.turn = asyncio.get_running_loop().create_future()
        mode = conversation.state.mode
        try:
            sent = send.send_message(self.hub, conversation, message)
        except UseCaseError as exc:
            session.cancelled, session.turn = kept
            raise errors.translated(exc) from None
        if sent.outcome.command is not None:  # /execute, /plan: answered with a line (REQ-ACP-029)
            said = options.said(mode, conversation.state.mode)
            self.client.update(session.id, acp.update_agent_message_text(said))
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

    async def _background(self, session: Session, conversation: Conversation, words: list[str]) -> PromptResponse:
        """``/background [PID] [stop]`` (REQ-BASH-045): what a running background command changed so far, read-only,
        or the command stopped so that all it changed is reviewed (its question then comes as any review's); the
        outcome is the turn's answer."""
        stop = "stop" in words
        rest = [w for w in words if w != "stop"]
        if len(rest) > 1 or (rest and not rest[0].isdigit()):
            text = "Usage: /background [PID] [stop] (the PID the command's result named). Nothing was changed."
        else:
            try:
                done = await background.review_background(self.hub, conversation.id,
                                                          int(rest[0]) if rest else None, stop)
                text = done.message + "".join(
                    f"\n\nPID {c.pid} `{c.command[:120]}`:\n{c.summary}" + (f"\n```diff\n{c.diff}\n```" if c.diff and
                                                                           not stop else "")
                    for c in done.commands)
            except UseCaseError as exc:
                text = f"Nothing was shown: {exc.reason if isinstance(exc, Invalid) else str(exc)}"
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


prompt_parts = prompt.parts_of
prompt_error = prompt.PromptError
