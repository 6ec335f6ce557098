"""The route rule (REQ-AGENT-001, REQ-AGENT-022): which route a message takes, the same on every surface."""

from __future__ import annotations

from pathlib import Path

from ...core.values import Route
from ..adapter import AgentRouteView
from ..ui_settings import read_route
from .errors import Invalid


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
