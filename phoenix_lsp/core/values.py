"""Plain values of a conversation: modes, styles, policies and the message history.

Everything here is a frozen value. The core never performs I/O; these types are what flows in and out of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Mode(StrEnum):
    """The permission boundary (seeds 000/001 Restricted/Unrestricted, seed 002 planning/execution)."""

    RESTRICTED = "restricted"
    UNRESTRICTED = "unrestricted"


class Style(StrEnum):
    """How the agent talks (seed 002's "conversation mode"): UX only, never a permission."""

    CHAT = "chat"
    DISCUSSION = "discussion"
    PLAN = "plan"
    DEVELOPMENT = "development"
    TASK = "task"


class Policy(StrEnum):
    """Whether write/exec tool calls wait for the user (REQ-PERM-001, REQ-PERM-002)."""

    AUTO = "auto"
    INTERACTIVE = "interactive"


class Route(StrEnum):
    """How a user message is processed (seed 004; ``specs/agent-mode.md``): a third layer beside mode and style
    that never grants or revokes anything. ``ask``: the conversation loop calls tools directly. ``agent``: the
    model also gets ``describe_tools`` and ``run_plan``, whose scripts call MCP tools, each call decided like a
    tool call (``permissions.decide_host``)."""

    ASK = "ask"
    AGENT = "agent"


class Decision(StrEnum):
    """The user's answer to an approval."""

    ALLOW = "allow"
    DENY = "deny"
    ALWAYS_ALLOW = "alwaysAllow"


class Actor(StrEnum):
    """Who caused an audited action."""

    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Text:
    """A text content block."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class Image:
    """A reference to an image kept by the store (the core never holds image bytes)."""

    image_id: str
    media_type: str
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool call requested by the model. ``input`` is treated as immutable.

    ``input_error``: why the input cannot be used (not valid JSON, or not what the tool's schema asks for),
    found by the server before the core sees the call; the core answers such a call with it (REQ-CORE-007).
    """

    id: str
    name: str
    input: Mapping[str, object]
    #: bash only: the words of each simple command the line runs, parsed outside the core
    #: (``tools/bash_scope.py``); None when not parsed or not provably a plain list of simple commands.
    commands: tuple[tuple[str, ...], ...] | None = None
    kind: Literal["tool_use"] = "tool_use"
    input_error: str | None = None
    #: an MCP tool's call (``mcp__<server>__<tool>``, issue 37): its effective kind under the capability manifest
    #: (REQ-AGENT-027), filled by the server for a tool its MCP servers offer; None for any other name, and for
    #: a name no server offers (the core refuses it then: ``mcp_rules.py``)
    mcp_kind: Literal["read", "write"] | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call: its text and, from an MCP tool (REQ-MCP-021), the images it returned, kept by
    the store like an attachment's (the core holds references only)."""

    tool_use_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"
    images: tuple[Image, ...] = ()


Block = Text | Image | ToolUse | ToolResult


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """A project instructions file (REQ-INSTR-001): ``kept`` of its ``size`` bytes are in the prompt; a file
    that could not be used has ``problem`` (why) and nothing kept."""

    path: str
    size: int
    kept: int
    problem: str | None = None

#: Why a message exists when it is not plain conversation: ``note`` (synthetic system message, e.g. a mode
#: change), ``command`` (a user command such as /execute that never reaches the model), ``continuation``
#: (the continuation summary). The clients see these.
WireTag = Literal["note", "command", "continuation"]
#: ... and ``rendered``: an assistant message whose text a plan rendered from tool data (REQ-AGENT-039), shown
#: to the user as the reply but sent to the model as quoted data, never as its own words (REQ-AGENT-043); to
#: the clients it is a plain assistant message.
MessageTag = Literal["note", "command", "continuation", "rendered"]


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the history, in the shape the Messages API expects (role + content blocks)."""

    role: Literal["user", "assistant"]
    content: tuple[Block, ...]
    tag: MessageTag | None = None

    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUse))

    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResult))

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, Text))


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by one LLM response.

    ``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` are the parts of ``cache_creation_input_tokens``
    that the API reported as written with the 5-minute and the 1-hour TTL (its ``cache_creation`` split,
    priced at different rates); both 0 when the split was not reported. They are not added to ``total``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Tokens summed over a conversation's LLM requests (issue 16): what was billed, not what fits in context."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_5m_tokens: int = 0  # the reported TTL split of the cache writes (see Usage)
    cache_write_1h_tokens: int = 0

    def add(self, usage: Usage | UsageTotals) -> UsageTotals:
        """These totals plus one request's usage (or plus other totals)."""
        requests = usage.requests if isinstance(usage, UsageTotals) else 1
        return UsageTotals(
            self.requests + requests,
            self.input_tokens + usage.input_tokens,
            self.output_tokens + usage.output_tokens,
            self.cache_creation_input_tokens + usage.cache_creation_input_tokens,
            self.cache_read_input_tokens + usage.cache_read_input_tokens,
            self.cache_write_5m_tokens + usage.cache_write_5m_tokens,
            self.cache_write_1h_tokens + usage.cache_write_1h_tokens,
        )


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One sub-agent to spawn: its conversation id (derived deterministically) and its task."""

    agent_id: str
    task: str


@dataclass(frozen=True, slots=True)
class AgentSlot:
    """What the parent knows of one sub-agent while it waits."""

    agent_id: str
    task: str
    done: bool = False
    ok: bool = False
    result: str = ""
