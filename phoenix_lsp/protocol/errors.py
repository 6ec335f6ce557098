"""JSON-RPC errors of the phoenix/* requests: codes and the ``data`` each carries (REQ-PROTO-003)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..core.state import StatusKind
from .base import Wire


class InvalidParamsData(Wire):
    kind: Literal["invalidParams"] = "invalidParams"
    field: str = Field(description="JSON path of the first bad field, e.g. images[0].mediaType")


class ConversationNotFoundData(Wire):
    kind: Literal["conversationNotFound"] = "conversationNotFound"
    conversation_id: str


class AgentBusyData(Wire):
    kind: Literal["agentBusy"] = "agentBusy"
    status: StatusKind


class RequestNotOpenData(Wire):
    kind: Literal["requestNotOpen"] = "requestNotOpen"
    tool_use_id: str | None = None
    status: StatusKind | None = None
    reason: str | None = None


class SandboxUnavailableData(Wire):
    kind: Literal["sandboxUnavailable"] = "sandboxUnavailable"
    reason: str
    status: StatusKind | None = None


class ContextExhaustedData(Wire):
    kind: Literal["contextExhausted"] = "contextExhausted"
    status: StatusKind | None = None
    reason: str | None = None


class NotAllowedData(Wire):
    kind: Literal["notAllowed"] = "notAllowed"
    reason: str
    status: StatusKind | None = None
    working_directory: str | None = Field(
        default=None, description="reason otherFolder: the conversation's own folder, where it goes on")


class NotInitializedData(Wire):
    kind: Literal["notInitialized"] = "notInitialized"


class SetupFailedData(Wire):
    kind: Literal["setupFailed"] = "setupFailed"


class SettingsNotSavedData(Wire):
    kind: Literal["settingsNotSaved"] = "settingsNotSaved"
    path: str = Field(description="the settings file that could not be written")


ErrorData = Annotated[
    InvalidParamsData
    | ConversationNotFoundData
    | AgentBusyData
    | RequestNotOpenData
    | SandboxUnavailableData
    | ContextExhaustedData
    | NotAllowedData
    | NotInitializedData
    | SetupFailedData
    | SettingsNotSavedData,
    Field(discriminator="kind"),
]
