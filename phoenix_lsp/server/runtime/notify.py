"""The core's notifications as phoenix/events (``core/notifications.py``), and the usage figures they carry."""

from __future__ import annotations

from typing import Any

from ...core import machine
from ...core.notifications import (
    ApprovalResolved,
    ModeChanged,
    ModelChanged,
    Notification,
    StatusChanged,
    UpgradeResolved,
)
from ...core.values import Mode
from ...protocol.views import ContextUsage
from ...sandbox.background import end_conversation_jobs, end_restricted_jobs
from .. import wire
from ..adapter import Conversation
from ..usage import token_usage
from .base import HubLike


class Notes:
    """A conversation's notifications (a part of ``conversation.Runtime``), and the usage figures they carry."""

    def __init__(self, conversation: Conversation, hub: HubLike) -> None:
        self.conversation = conversation  # as the client sees it: a question answered is withdrawn from it
        self.hub = hub

    def notify(self, effect: Notification) -> None:
        """Send the core's notification as its phoenix/event (the core said everything it says), and do what the
        server does on it."""
        conversation = self.conversation
        if isinstance(effect, ModelChanged):
            self.hub.store.update_model(conversation.id, effect.model)  # listings name the model in use
        conversation.emit(wire.notification_event(effect, self.token_fields))
        match effect:
            case ApprovalResolved() | UpgradeResolved():
                self.hub.sink.withdraw(conversation, effect.tool_use_id)
            case StatusChanged(status="finished"):
                end_conversation_jobs(conversation.id)  # its background jobs and their logs end with it
                self.hub.background.tell_discarded(conversation.id)  # REQ-BASH-046: what was thrown away
                if self.hub.config.agent_route is not None:
                    self.hub.config.agent_route.forget(conversation.id)  # and its artifacts
            case StatusChanged(status="idle" | "error" | "exhausted"):
                self.hub.background.kick(conversation.id)  # REQ-BASH-044: ended while the turn ran
            case ModeChanged(previous=Mode.RESTRICTED, mode=mode) if mode is not Mode.RESTRICTED:
                end_restricted_jobs(conversation.id)  # no lock or lease taken while Restricted outlives it

    def usage(self) -> ContextUsage:
        return wire.usage_to_wire(machine.context_usage(self.conversation.state))

    def token_fields(self) -> dict[str, Any]:
        """Billed tokens of the latest request and of the whole conversation, with a cost estimate (issue 16)."""
        return token_usage(self.conversation.state, self.hub.config.prices, self.hub.config.cache.ttl)
