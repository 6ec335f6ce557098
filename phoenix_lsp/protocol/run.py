"""What ``phoenix-lsp run`` writes on stdout besides the events (REQ-RUN-003, REQ-RUN-004): the result of a
headless run (``--output-format json``, and the last line of ``stream-json``, whose other lines are
``phoenix/event`` params, the same events every client gets)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..core.state import StatusKind
from ..core.values import Mode
from .base import Wire
from .views import TokenUsage

#: the exit codes of a run (REQ-RUN-005), as ``status`` names them
RunStatus = Literal["success", "failed", "usage", "limit", "killed"]


class DeniedCall(Wire):
    """A call the run denied at once because nobody was there to approve it (REQ-RUN-006)."""

    kind: Literal["approval", "upgrade"] = Field(
        description="approval: a tool call the policy asks about; upgrade: the model's request for Unrestricted mode")
    tool_use_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(description="the call's arguments, as the model sent them (secrets replaced)")
    allow_rule: str | None = Field(
        default=None, description="the narrowest --allow rule that would let it run next time (approvals only)")


class RunResult(Wire):
    """The outcome of ``phoenix-lsp run``: its last stdout line (``json``: its only one)."""

    kind: Literal["result"] = "result"
    session_id: str = Field(description="the conversation's id: --resume takes it")
    status: RunStatus = Field(description="success (exit 0), failed (1), usage (2), limit (3), killed (130/143)")
    exit_code: int
    conversation_status: StatusKind = Field(description="the conversation's status when the run ended")
    answer: str = Field(description="the model's last answer of the run (empty when it gave none)")
    error: str | None = Field(default=None, description="what went wrong, why, and what to do (not on success)")
    model: str
    mode: Mode
    turns: int = Field(description="how many model responses the run took")
    usage: TokenUsage | None = Field(default=None, description="tokens and estimated cost, from the last usage event")
    denied: list[DeniedCall] = Field(description="the approvals and upgrade requests denied for want of a person")
