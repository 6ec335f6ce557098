"""The two interfaces between the runtime and an adapter (``lsp``, ``plain``, ``acp``).

An adapter speaks one protocol to one kind of client. It gives the runtime two things, and the runtime knows
it only through them (specs/protocol.md, "How the server is built"):

- :class:`Editor`: what the editor does for the runtime: the text of its open documents, a patch applied as a
  workspace edit, the editor's sight;
- :class:`User`: what the runtime shows the user: each event, an approval or an upgrade request to answer,
  and a question withdrawn once it is answered elsewhere.

The adapter in turn sees a conversation as a :class:`Conversation` and the conversations of the server as
:class:`Conversations`. Neither side imports the other: the boot module (``boot.py``) wires them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..core.events import Event
from ..core.state import ConversationState
from ..core.values import Decision, InstructionFile, Message, Policy, Style, ToolUse
from ..llm.models import ListedModel
from ..protocol import events as ev
from ..tools.shell_changes import ChangeKind
from ..tools.shell_changes.edit import Review


class Conversation(Protocol):
    """One conversation as an adapter sees it."""

    @property
    def clipboards(self) -> Mapping[str, str]:
        """The patch tool's clipboards (REQ-PATCH-003), as a patch is prepared against them."""
        ...
    def keep_clipboards(self, clipboards: Mapping[str, str]) -> None:
        """A patch applied: its clipboards replace those before it."""
        ...
    @property
    def id(self) -> str: ...
    @property
    def state(self) -> ConversationState: ...
    @property
    def busy(self) -> bool: ...
    def emit(self, event: ev.EventKinds) -> int: ...
    def check(self, event: Event) -> Any: ...
    def apply(self, event: Event) -> Any: ...
    def patch_diff(self, call: ToolUse) -> str | None: ...
    def call_description(self, call: ToolUse) -> str:
        """What an approval question says the call does (a host call's own words, else its tool's description)."""
        ...
    def answer_approval(self, tool_use_id: str, decision: Decision, rule: str | None = None,
                        reason: str | None = None) -> Any: ...
    def answer_upgrade(self, approve: bool) -> Any: ...


class AgentRouteView(Protocol):
    """The agent route (``agent_route.AgentRoute``) as an adapter and a use case see it: why it cannot run
    (None: it can), the MCP servers a client brings, and the artifacts it keeps."""

    @property
    def unavailable(self) -> str | None: ...
    @property
    def artifacts(self) -> Any: ...
    def add_servers(self, servers: Mapping[str, Any], secrets: Sequence[str] = ()) -> list[str]: ...


class ModelRouter(Protocol):
    """The model router (``llm/router.py``'s ``LlmRouter``) as the model use cases see it: whether a model id can
    be used, its context window, and the models each provider lists. Every member is declared: a router that
    cannot list says so by raising, never by a member that is missing."""

    def check(self, model: str) -> str | None:
        """Why ``model`` cannot be used (what to do instead), or None when it can (REQ-MODEL-007)."""
        ...
    def context_window(self, model: str) -> int: ...
    async def prepare(self) -> None:
        """Anthropic's SDK imported and its client made (off the event loop): what its first request does
        first, done ahead; never raises (the request that follows says what is wrong)."""
        ...
    async def list_models(self, limit: int = 1000) -> list[ListedModel]:
        """Anthropic's models, each with its lifecycle (retired ones too)."""
        ...
    def configured(self) -> list[str]:
        """The other providers whose models are listed."""
        ...
    async def probe_ollama(self) -> bool: ...
    async def list_provider(self, name: str) -> list[tuple[str, str, int, bool]]:
        """``(provider/id, name, context window, window known)`` of one provider's models; raises on failure."""
        ...
    def provider_url(self, name: str) -> str:
        """Where provider ``name`` is asked (its base URL), for a message that says which one failed."""
        ...


class Modelled(Protocol):
    """A conversation as the model's context window is learned for it (a :class:`Conversation`, or a
    sub-agent the runtime runs)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> ConversationState: ...
    def apply(self, event: Event) -> Any: ...


class SightSettings(Protocol):
    """The server's config an adapter reads (``HubConfig``'s fields of the same names): the default model (and
    whether the user chose it, else the Models API's newest Sonnet replaces it), how long the editor's sight
    waits, the deny-read list, the agent route."""

    model: str
    model_chosen: bool
    sight_settle_ms: int
    sight_timeout_ms: int
    deny_read: tuple[Path, ...] | None
    config_dir: Path | None

    @property
    def agent_route(self) -> AgentRouteView | None: ...


class BackgroundCommands(Protocol):
    """The captured background commands (``runtime.background.Background``), as an adapter reaches them: a running
    one's changes so far, a running one stopped for its review, the discarded ones told (REQ-BASH-045/046)."""

    async def snapshot(self, conversation_id: str, pid: int | None) -> list[Any]: ...
    async def stop(self, conversation_id: str, pid: int | None) -> list[Any]: ...
    def tell_discarded(self, conversation_id: str | None = None) -> int: ...
    async def settle(self) -> int: ...


class Conversations(Protocol):
    """The server's conversations, as an adapter reaches them."""

    @property
    def runtimes(self) -> Mapping[str, Conversation]: ...
    @property
    def config(self) -> SightSettings: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def tasks(self) -> set[asyncio.Task[Any]]: ...
    @property
    def store(self) -> Any: ...
    @property
    def llm(self) -> ModelRouter: ...
    @property
    def background(self) -> BackgroundCommands: ...
    def learn_window_soon(self, conversation: Modelled) -> None:
        """Ask the model's server for its context window in the background, when nobody has reported it yet."""
        ...
    def create(self, *, working_directory: str, model: str | None, style: Style, policy: Policy,
               origin_id: str | None = None, seed: Message | None = None,
               instructions: tuple[str, tuple[InstructionFile, ...]] = ("", ())) -> Conversation: ...
    def get(self, conversation_id: str) -> Conversation: ...
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...


class Editor(Protocol):
    """What the editor does for the runtime; every member is declared, what a client cannot do is said by its
    data (``editor_sight``) or by an empty answer, never by a member that is missing."""

    #: the client announced the editor's sight (REQ-SIGHT-002); False: ``sight_for`` answers None
    editor_sight: bool

    def open_documents(self) -> Mapping[Path, str]: ...
    async def documents_for(self, conversation: Conversation, call: ToolUse) -> Mapping[Path, str]:
        """The editor's text of the files ``call`` reads, asked for before it runs (an ACP client answers
        ``fs/read_text_file`` but does not say which documents are open); ``{}`` when the open documents say it."""
        ...
    async def apply_patch(self, conversation: Conversation, call: ToolUse) -> tuple[str, bool]: ...
    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]:
        """The editor's text of those of ``paths`` it holds (its unsaved text wins), for a review's conflicts."""
        ...
    def review_kinds(self) -> frozenset[ChangeKind]:
        """Which text changes of a bash command's review the editor carries (REQ-BASH-032); the server places
        the rest after the same approval."""
        ...
    def cannot_apply(self, review: Review) -> str | None:
        """Why the editor cannot apply a review's editor part (then nothing of it lands), or None."""
        ...
    async def apply_review(self, conversation: Conversation, call_id: str, review: Review) -> str | None:
        """Has the editor apply a review's editor part, whole: None when it did, else why not."""
        ...
    def sight_for(self, conversation: Conversation) -> object | None:
        """The editor's sight for one conversation's tools (``server/sight.py``'s ``EditorSight``), or None."""
        ...


class User(Protocol):
    """What the runtime shows the user."""

    def event(self, event: ev.EventKinds, params: dict[str, Any]) -> None: ...
    def event_batch(self, batch: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        """Several stored events at once (``texts``: each one's JSON as stored)."""
        ...
    def log_to_client(self, text: str) -> None:
        """A line for the editor's log (such as the context window in use); a client without one logs it."""
        ...
    def ask_approval(self, conversation: Conversation, tool_use_id: str, call: ToolUse) -> None: ...
    def ask_upgrade(self, conversation: Conversation, tool_use_id: str, reason: str) -> None: ...
    def withdraw(self, conversation: Conversation, tool_use_id: str) -> None: ...
    async def ask_mcp_consent(self, conversation: Conversation, question: Any) -> bool | None:
        """Whether the project's MCP server of ``question`` (``agent_route.ConsentQuestion``) may start: True,
        False (declined), None (no answer: asked again at the next turn). REQ-MCP-009."""
        ...
    def mcp_notice(self, conversation: Conversation, text: str) -> None:
        """What is wrong with an MCP configuration file, for the user to fix (REQ-MCP-008)."""
        ...


class Client(Editor, User, Protocol):
    """An adapter is both: the one object a hub is given."""
