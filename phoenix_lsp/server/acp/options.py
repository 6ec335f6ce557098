"""A session's config options (REQ-ACP-023, REQ-ACP-024) and its slash commands (REQ-ACP-025), as ACP shows them.

Pure translation: the mode (Restricted / Unrestricted, the conversation's), the model (the conversation's, among
the models the models use case listed) and the route (the user's choice, kept for every client) as
``configOptions``; the same set as a ``config_option_update`` whenever one of them changes; and the core's user
commands (``/execute``, ``/plan``) as ``available_commands_update``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    UnstructuredCommandInput,
)

from ...core.turns import USER_COMMANDS
from ...core.values import Mode, Route
from . import updates

MODE, MODEL, ROUTE = "mode", "model", "route"
#: what each route does, in a few words
ROUTES = {Route.ASK.value: ("Ask", "The model calls the tools directly."),
          Route.AGENT.value: ("Agent", "The model also writes plans whose scripts call the MCP tools, each call "
                                       "decided like a tool call.")}


@dataclass
class Choices:
    """What the options offer beside a conversation's own mode and model: the models listed (by the models use
    case when a session is created or loaded) and the route the user chose last (kept for every client)."""

    models: list[SessionConfigSelectOption] = field(default_factory=list)
    route: str = Route.ASK.value


def modes(mode: str) -> SessionModeState:
    """The session modes (REQ-ACP-003), for the clients that predate config options: Restricted and
    Unrestricted, the conversation's current one."""
    available = [SessionMode(id=value, name=name, description=about) for value, (name, about) in updates.MODES.items()]
    return SessionModeState(current_mode_id=mode, available_modes=available)


def model_choices(listed: Sequence[Any]) -> list[SessionConfigSelectOption]:
    """The models of a ``ListModelsResult`` as options (the provider named when it is not Anthropic)."""
    return [SessionConfigSelectOption(value=m.id, name=m.name or m.id,
                                      description=f"{m.provider} model" if getattr(m, "provider", None) else None)
            for m in listed]


def config_options(mode: str, model: str, choices: Choices) -> list[Any]:
    """The full set, with the current values."""
    modes = [SessionConfigSelectOption(value=value, name=name, description=about)
             for value, (name, about) in updates.MODES.items()]
    models = list(choices.models)
    if model not in {m.value for m in models}:  # a model the list does not hold (chosen by id) is still shown
        models.insert(0, SessionConfigSelectOption(value=model, name=model))
    routes = [SessionConfigSelectOption(value=value, name=name, description=about)
              for value, (name, about) in ROUTES.items()]
    return [
        SessionConfigOptionSelect(id=MODE, name="Mode", category="mode", type="select", current_value=mode,
                                  options=modes, description="Restricted is read-only (kernel sandbox); "
                                  "Unrestricted may change files and run commands, as the approval policy says."),
        SessionConfigOptionSelect(id=MODEL, name="Model", category="model", type="select", current_value=model,
                                  options=models, description="The model that answers from the next turn."),
        SessionConfigOptionSelect(id=ROUTE, name="Route", type="select", current_value=choices.route,
                                  options=routes, description="How a message is worked on; kept for every "
                                  "client."),
    ]


def changed(mode: str, model: str, choices: Choices) -> ConfigOptionUpdate:
    return ConfigOptionUpdate(session_update="config_option_update",
                              config_options=config_options(mode, model, choices))


def said(before: Mode, now: Mode) -> str:
    """The line a mode command (``/execute``, ``/plan``) is answered with (REQ-ACP-029)."""
    name, about = updates.MODES[now.value]
    if now is before:
        return f"Already in {name} mode: nothing changed."
    return f"Switched to {name} mode. {about}"


def commands() -> AvailableCommandsUpdate:
    """The core's user commands (``/execute``, ``/plan``): each switches the mode, as the user's own choice."""
    made = []
    for command, mode in USER_COMMANDS.items():
        name, about = updates.MODES[mode.value]
        made.append(AvailableCommand(name=command.removeprefix("/"),
                                     description=f"Switch to {name} mode. {about}"))
    made.append(AvailableCommand(  # the agent's /undo (REQ-BASH-041): answered by the adapter, not the core
        name="undo", description="Take back the latest accepted change set of this conversation (or the one named): "
        "its files as they were before it landed; a file changed since is kept and named.",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="change set id (default: the latest)"))))
    made.append(AvailableCommand(  # a running background command's review (REQ-BASH-045): the adapter's, too
        name="background", description="Show what a running background command changed so far (nothing lands), or "
        "with stop: stop it, then review all it changed like any command's changes.",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="[PID] [stop]"))))
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=made)
