"""What every part of the runtime shares: the hub's settings, the answer to one applied event, and the shapes
of the hub and of a conversation as its parts see them (so no part imports the one that builds it).

A part is a plain class that owns its state, set in its own ``__init__``, and is passed what it needs: the
conversation as a :class:`Peer` (or as the adapter's ``Conversation`` where it hands it to the client) and the
hub as a :class:`HubLike`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ...core.effects import Reject, RestoreChanges, UserCommand
from ...core.events import Event
from ...core.state import ConversationState
from ...core.tools import ToolKind
from ...core.values import Message, Policy, Style, ToolUse
from ...llm.cache import CacheSettings
from ...llm.models import PRICES, ListedModel
from ...llm.pricing import Price
from ...protocol import events as ev
from ...protocol.views import StyleSuggestion
from ...sandbox.env import clean_environment  # one rule for the server and `sandbox run` (REQ-BASH-021)
from ...store import Store
from ...tools.mcp_direct import McpDirect
from ...tools.registry import AgentTools
from ..adapter import Client


@dataclass(frozen=True)
class Outcome:
    """What applying one event did, for the request that caused it: the refusal, or what it accepted."""

    reject: Reject | None = None
    command: UserCommand | None = None
    restore: RestoreChanges | None = None  # an undo the core allowed (REQ-BASH-041)
    suggestion: StyleSuggestion | None = None


class LlmLike(Protocol):
    """The model client as the runtime uses it (``llm/router.py``'s ``LlmRouter``): a request streamed, and the
    context window of a model, learned from its server where it can be (issue 27)."""

    async def stream(self, request: Any, on_text: Callable[[str], None],
                     on_withheld: Callable[[Any], None] | None = None,
                     on_tool: Callable[[str, str, str], None] | None = None) -> Any: ...
    def context_window(self, model: str) -> int: ...
    def learnable(self, model: str) -> bool: ...
    async def learn(self, model: str) -> bool: ...
    def window_note(self, model: str) -> str: ...
    # what the model use cases ask of it (``adapter.ModelRouter``, the same members)
    def check(self, model: str) -> str | None: ...
    async def prepare(self) -> None: ...
    async def list_models(self, limit: int = 1000) -> list[ListedModel]: ...
    def configured(self) -> list[str]: ...
    async def probe_ollama(self) -> bool: ...
    async def list_provider(self, name: str) -> list[tuple[str, str, int, bool]]: ...
    def provider_url(self, name: str) -> str: ...


class AgentHost(Protocol):
    """A conversation as the agent route's tools reach it (``conversation_agent.ConversationAgent``): its id, and
    the core's permission function for a running plan's host call (REQ-AGENT-014/015): (allowed, the message,
    who decided)."""

    @property
    def id(self) -> str: ...
    async def host_call(self, tool_use_id: str, call: ToolUse, kind: ToolKind,
                        description: str = "", diff: str | None = None) -> tuple[bool, str, str]: ...


class EarlyPlans(Protocol):
    """The ``run_plan`` calls of one model answer, their read-only nodes started as it streams
    (``early_plans.EarlyPlans``, REQ-AGENT-044): each piece of a tool call's input, and the answer's end without
    a run (cancelled, failed)."""

    def on_tool(self, call_id: str, name: str, piece: str) -> None: ...
    def stop(self) -> None: ...


class AgentRoutePort(Protocol):
    """The agent route (``server/agent_route.py``'s ``AgentRoute``) as the runtime and the boot module use it:
    why it cannot run (None: it can), the MCP catalogue for an agent turn, the route's tools for one
    conversation, and its life (a conversation forgotten, the artifacts swept, closed at shutdown). What an
    adapter sees of it (``adapter.AgentRouteView``) is a part of this."""

    @property
    def unavailable(self) -> str | None: ...
    @property
    def artifacts(self) -> Any: ...  # agent.artifacts.ArtifactStore, or None (loaded with the route)
    @property
    def direct(self) -> McpDirect: ...  # the MCP tools in the conversation itself (issue 37)
    @property
    def ask_prompt(self) -> bool: ...  # measurement only: the route's requests as before REQ-AGENT-040
    async def catalogue_text(self) -> str: ...
    def tools_for(self, runtime: AgentHost) -> AgentTools: ...
    @property
    def early(self) -> Any: ...  # early_plans.EarlyCalls: plans(route, runtime) for a turn, drop(...) the rest
    def add_servers(self, servers: Mapping[str, Any], secrets: Sequence[str] = ()) -> list[str]: ...
    async def project(self, folder: str, ask: Callable[[Any], Coroutine[Any, Any, bool | None]],
                      notice: Callable[[str], None]) -> None: ...
    def sweep_artifacts(self, conversation_ids: Sequence[str]) -> None: ...
    def forget(self, conversation_id: str) -> None: ...
    def close(self) -> None: ...


@dataclass
class HubConfig:
    model: str
    retry_base_ms: int = 1000
    retry_after_max_ms: int = 60_000  # the cap on a provider's retry-after (REQ-BED-006)
    event_coalesce_ms: float = 1.0  # text deltas are flushed (stored, then sent) at most this often (REQ-PROTO-049)
    bash_timeout_s: float | None = None
    subagent_time_limit_s: float = 600.0
    subagent_max_turns: int = 50
    subagent_concurrency: int = 4
    env: Mapping[str, str] = field(default_factory=dict)
    cache: CacheSettings = field(default_factory=CacheSettings)  # prompt caching (issue 16)
    prices: Mapping[str, Price] = field(default_factory=lambda: dict(PRICES))
    deny_read: tuple[Path, ...] | None = None  # None: sandbox defaults (see sandbox/denylist.py)
    background_timeout_s: float | None = None
    config_dir: Path | None = None  # the user-level AGENTS.md's directory; None: the platform's config dir
    agent_route: AgentRoutePort | None = None  # the agent route, or None: not set up
    sight_settle_ms: int = 1500  # after a patch, the longest wait for the editor's problems to change
    sight_timeout_ms: int = 1500  # how long beyond that the editor may take to answer (REQ-SIGHT-003)
    # whether the user chose the default model (the model setting): if not, the newest generally available
    # Sonnet the Models API lists replaces ``model`` once it has answered (issue 38, REQ-MODEL-004)
    model_chosen: bool = True


class NotFound(Exception):
    def __init__(self, conversation_id: str) -> None:
        super().__init__(
            f"No conversation '{conversation_id}': it does not exist on this server (check the id, or list "
            "conversations with phoenix/listConversations)."
        )
        self.conversation_id = conversation_id


class TimeLimited(Protocol):
    """A sub-agent's time limit as its parent starts it (``agents.Agents``, REQ-BED-008)."""

    def limit(self, seconds: float) -> None: ...


class Peer(Protocol):
    """A conversation as its parts, the other conversations (a sub-agent, its parent) and the hub's outbox
    reach it: its id and state, its last seq and the next one taken, an event through the core, an event sent,
    and its sub-agents' part (whose time limit a parent starts)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> ConversationState: ...
    @property
    def seq(self) -> int: ...
    @property
    def agents(self) -> TimeLimited: ...
    def next_seq(self) -> int: ...
    def apply(self, event: Event) -> Outcome: ...
    def emit(self, event: ev.EventKinds) -> int: ...


class OutboxPort(Protocol):
    """The hub's outbox (``outbox.Outbox``) as a conversation uses it: the text deltas of a model's answer
    queued and ended, the outbox flushed before anything else is said, and a stored event sent."""

    def queue_text(self, runtime: Peer, request_id: int, text: str) -> None: ...
    def end_text(self, runtime: Peer, request_id: int) -> None: ...
    def flush(self) -> None: ...
    def send(self, events: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None: ...


class WindowsPort(Protocol):
    """The hub's context windows (``windows.Windows``) as a conversation's turn uses them: the window of its
    model, waited for before a request is measured against it."""

    async def learn_window(self, runtime: Peer) -> None: ...


class BackgroundPort(Protocol):
    """The hub's captured background commands (``background.Background``) as a conversation's notes use them: an
    ended one reviewed once the conversation is at rest, a discarded one told."""

    def kick(self, conversation_id: str) -> None: ...
    def tell_discarded(self, conversation_id: str | None = None) -> int: ...


class HubLike(Protocol):
    """The hub as its conversations use it (``hub.Hub`` is the one there is): its outbox and its windows are
    parts of their own, reached as ``hub.outbox`` and ``hub.windows``."""

    store: Store
    llm: LlmLike
    sandbox: Any
    config: HubConfig
    sink: Client
    subagent_slots: asyncio.Semaphore

    @property
    def outbox(self) -> OutboxPort: ...
    @property
    def windows(self) -> WindowsPort: ...
    @property
    def background(self) -> BackgroundPort: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...
    def get(self, conversation_id: str) -> Peer: ...
    def create(self, *, working_directory: str, model: str | None, style: Style, policy: Policy,
               parent: Any = None, origin_id: str | None = None, conversation_id: str | None = None,
               seed: Message | None = None) -> Peer: ...


def tool_env(keys: Sequence[str] = ()) -> dict[str, str]:
    """The environment of the tools: without credentials (``clean_environment``), nor the variables that hold a
    provider's key (``keys``: a providers file may name its key variable anything, REQ-MODEL-010)."""
    drop = set(keys)
    return {k: v for k, v in clean_environment(os.environ).items() if k not in drop}
