"""The route rule (REQ-AGENT-001, REQ-AGENT-022): which route a message takes, the same on every surface; the
route the user chooses; and an artifact of the agent route read by its handle (REQ-PROTO-028)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...agent.artifacts import ArtifactNotFound, InvalidHandle
from ...core.values import Route
from ...protocol.params import Route as RouteName
from .. import ui_settings
from ..adapter import AgentRouteView, Conversations
from ..ui_settings import read_route
from .conversations import find
from .errors import Invalid, UseCaseError

log = logging.getLogger(__name__)


def message_route(requested: str | None, data_dir: Path, agent: AgentRouteView | None) -> Route:
    """The route of a message: its own (``requested``), else the one the user chose last (``ui_settings.json``
    in ``data_dir``). The agent route when it is unavailable (an invalid settings file) is refused, saying why
    and what to do, on every surface: a message is never sent on another route than the user chose without
    saying so. ``Invalid`` is about the field ``route``."""
    route = Route(requested or read_route(data_dir))
    if route is Route.AGENT and agent is not None and agent.unavailable is not None:
        raise Invalid("route", f"{agent.unavailable} Send with route 'ask' meanwhile (or choose it: "
                               "phoenix/setRoute, the client's route switch), or fix the settings file.")
    return route


def current_route(data_dir: Path) -> RouteName:
    """The route the user chose last, kept for every client (REQ-AGENT-001). One small file read: an adapter on
    the event loop calls it in a thread (REQ-READ-005)."""
    return read_route(data_dir)


class NotSaved(UseCaseError):
    """The route could not be kept: ``path`` could not be written."""

    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(f"The route was not changed: {path} could not be written ({exc.strerror or exc}). Make the "
                         "data directory writable (phoenix-lsp doctor shows it) and choose the route again.")
        self.path = path


def choose_route(data_dir: Path, route: RouteName) -> RouteName:
    """The user's choice of route, kept in ``ui_settings.json`` for every client of every server on the machine
    (REQ-AGENT-001); the previous one is returned. One small file written atomically: an adapter on the event loop
    calls it in a thread (REQ-READ-005)."""
    try:
        previous = ui_settings.write_route(data_dir, route)
    except OSError as exc:
        path = ui_settings.settings_path(data_dir)
        log.warning("setRoute: could not write %s: %s", path, exc)
        raise NotSaved(path, exc) from None
    log.info("route: %s (was %s), in %s", route, previous, ui_settings.settings_path(data_dir))
    return previous


@dataclass(frozen=True)
class Artifact:
    handle: str
    type: str
    size: int
    data: bytes

    @property
    def media_type(self) -> str:
        return "text/plain; charset=utf-8" if self.type == "text" else "application/json"


def read_artifact(conversations: Conversations, conversation_id: str, handle: str) -> Artifact:
    """An artifact of the conversation's agent route, by its handle (REQ-PROTO-028): only the conversation's own
    (the store is scoped to it); ``Invalid`` about ``handle`` says why none can be read. It reads a file: an
    adapter on the event loop calls it in a thread."""
    route = conversations.config.agent_route
    store: Any = route.artifacts if route is not None else None
    if route is None or store is None:
        why = route.unavailable if route is not None and route.unavailable else "the agent route is not set up"
        raise Invalid("handle", f"no artifacts can be read: {why}")
    find(conversations, conversation_id)  # Unknown names an unknown conversation
    try:
        artifact, data = store.scoped(conversation_id).get(handle)
    except (InvalidHandle, ArtifactNotFound) as exc:
        raise Invalid("handle", str(exc)) from None
    return Artifact(handle=artifact.handle, type=artifact.type, size=artifact.size, data=data)
