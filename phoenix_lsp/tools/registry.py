"""The tool registry: every tool the model can call, found by name in one place.

Each :class:`Tool` holds what the server needs to know about it: the builder of its definition (name,
description and the input schema generated from its input model), its input model, its kind (from the core's
``TOOL_KINDS``, which the permission function reads) and its runner. Control tools have no runner: the core
implements them. The set of tools, and which of them a conversation offers, is the core's
(``phoenix_lsp.core.tools``); this module checks at import that both agree.

What the server calls:

- :func:`definitions` — the tool definitions of a conversation, sent with every turn request. They depend
  only on whether it is a sub-agent and on its working directory, both fixed for its life, so they never
  change during a conversation (REQ-BED-017) and are equal, byte for byte, on every request;
- :func:`check` — before the core sees a call: the message for an input that is not valid JSON or does not
  fit the tool's model, or None (REQ-CORE-007);
- :func:`run` — runs a call the core allowed and returns a :class:`ToolOutcome`; never raises for bad input;
- :func:`describe` — a tool's description, for approval prompts;
- :func:`restore_pending` — a state loaded from the store, with calls still to run written in today's field
  names (REQ-BASH-005: the bash field ``mode`` became ``run``).

Over 300 lines: the registry is the one place every tool is found by name; each tool's runner is a few lines beside
it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..agent.helpers import SIGNATURES
from ..core.state import AwaitingAgents, AwaitingApproval, AwaitingUpgrade, Batch, ConversationState, RunningTool
from ..core.tools import (
    BASH,
    CALL_TOOL,
    DESCRIBE_TOOLS,
    EDITOR_PROBLEMS,
    FIND_DEFINITION,
    FIND_REFERENCES,
    LIST_DIRECTORY,
    PATCH,
    READ_FILE,
    REQUEST_MODE_UPGRADE,
    RUN_PLAN,
    SEARCH_FILES,
    SPAWN_AGENTS,
    SUBMIT_RESULT,
    TOOL_KINDS,
    USE_ASK_ROUTE,
    ToolKind,
    tools_for,
)
from ..core.values import Mode, Route, ToolUse
from ..sandbox.denylist import DenyCheck, deny_check
from . import bash, inputs, patch, readonly, sight
from .inputs import ToolInput

__all__ = [
    "REGISTRY",
    "Registry",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "check",
    "definitions",
    "describe",
    "restore_pending",
    "run",
]


class AgentTools(Protocol):
    """What the agent route's two tools need from the server (``server/agent_route.py``)."""

    async def describe(self, tools: list[str]) -> tuple[str, bool]: ...

    async def run_plan(self, plan: inputs.RunPlanInput, call: ToolUse) -> tuple[str, bool, str | None]: ...


@dataclass(frozen=True)
class ToolContext:
    """Everything a runner may need about the conversation the call belongs to."""

    working_directory: Path
    mode: Mode  # the mode the core let the call run under
    conversation_id: str = ""
    open_documents: Callable[[], Mapping[Path, str]] = dict  # the editor's unsaved texts, by absolute path
    apply_patch: Callable[[ToolUse], Awaitable[tuple[str, bool]]] | None = None  # through the editor
    env: Mapping[str, str] | None = None  # the tools' environment (None: the server's)
    sandbox: Any = None  # SandboxSupport (None: probe)
    bash_timeout_s: float | None = None  # the default bash timeout (None: 30 s)
    deny_read: tuple[Path, ...] | None = None  # what Restricted may not read (None: the sandbox's defaults)
    background_timeout_s: float | None = None  # a background job's time limit (None: bash's default)
    agent: AgentTools | None = None  # the agent route's MCP tools and orchestrator (None: not available)
    agent_unavailable: str = "the agent route is not configured on this server"  # why, when agent is None
    editor: Any = None  # the editor's sight (server/sight.py ``EditorSight``), or None: not offered now
    #: Unrestricted bash: the review of a call's changes (REQ-BASH-032), or None: they land at once
    capture: Callable[[ToolUse], bash.Capture] | None = None


@dataclass(frozen=True)
class ToolOutcome:
    """What the model is told, and whether the kernel sandbox (likely) refused part of it."""

    output: str
    is_error: bool
    refused_by_sandbox: bool = False
    #: a plan's rendered answer (run_plan with ``answer``, REQ-AGENT-039): the reply itself, no second request
    answer: str | None = None


Runner = Callable[[Any, ToolUse, ToolContext], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_model: type[ToolInput]
    runner: Runner | None = None  # None: a control tool, implemented by the core
    states_working_directory: bool = False  # the description ends with the conversation's directory
    legacy_fields: Mapping[str, str] = field(default_factory=dict)  # old field name -> today's (restored calls)

    @property
    def kind(self) -> ToolKind:
        return TOOL_KINDS[self.name]

    def definition(self, working_directory: str, catalogue: str = "", compact: bool = False) -> dict[str, Any]:
        """The tool definition the model is given: name, description and the generated input schema.
        ``catalogue``: run_plan's list of the MCP tools scripts may call. ``compact``: the schema without
        validation-only keywords (the agent route's tools, REQ-AGENT-040)."""
        description = self.description
        if self.name == RUN_PLAN and catalogue:
            description += "\n\n" + catalogue
        if self.states_working_directory:
            description += f"\n\nWorking directory: {working_directory}"
        schema = inputs.input_schema(self.input_model)
        if compact or self.name in (DESCRIBE_TOOLS, RUN_PLAN):  # every agent-route request: only what guides
            schema = _compact(schema)
        return {"name": self.name, "description": description, "input_schema": schema}

    def validate(self, tool_input: object) -> ToolInput | str:
        return inputs.validate(self.input_model, self.name, tool_input)


class Registry:
    """Tools by name."""

    def __init__(self, tools: tuple[Tool, ...]) -> None:
        self.tools: dict[str, Tool] = {t.name: t for t in tools}

    def names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    def definitions(self, is_subagent: bool, working_directory: str, route: Route = Route.ASK,
                    catalogue: str = "", sight: bool = False) -> list[dict[str, Any]]:
        """The conversation's tool definitions on ``route``, in the core's order; fresh dicts, equal on every
        call of the same route (the agent route's are its own, compact, REQ-AGENT-040). ``sight``: the
        conversation has the editor's tools (REQ-SIGHT-002)."""
        compact = route is Route.AGENT and not is_subagent  # sent with every agent-route request (REQ-AGENT-040)
        return [self.tools[name].definition(working_directory, catalogue, compact)
                for name in tools_for(is_subagent, route, sight)]

    def definitions_of(self, names: tuple[str, ...], working_directory: str,
                       catalogue: str = "") -> list[dict[str, Any]]:
        """The definitions of ``names``, in that order (fresh dicts)."""
        return [self.tools[name].definition(working_directory, catalogue) for name in names]

    def describe(self, name: str) -> str:
        tool = self.tools.get(name)
        return tool.description if tool else ""

    def check(self, name: str, tool_input: object, json_error: str | None = None) -> str | None:
        """Why the input of a call cannot be used (the message for the model), or None when it can.

        ``json_error``: the parser's message when the streamed input was not a JSON object. An unknown name
        gives None: the core refuses it, naming the conversation's tools (REQ-SEC-002)."""
        tool = self.tools.get(name)
        if tool is None:
            return None
        if json_error is not None:
            return inputs.invalid_json(name, json_error)
        checked = tool.validate(tool_input)
        return checked if isinstance(checked, str) else None

    async def run(self, call: ToolUse, context: ToolContext) -> ToolOutcome:
        """Run one call the core allowed. Bad input and unknown names are error outcomes, never exceptions."""
        tool = self.tools.get(call.name)
        if tool is None or tool.runner is None:
            what = "is not a tool" if tool is None else "is carried out by the conversation itself, not run"
            return ToolOutcome(
                f"Unknown tool '{call.name}': it {what}. The tools that run are: "
                f"{', '.join(n for n, t in self.tools.items() if t.runner is not None)}.",
                True,
            )
        if call.input_error is not None:
            return ToolOutcome(call.input_error, True)
        checked = tool.validate(call.input)
        if isinstance(checked, str):
            return ToolOutcome(checked, True)
        return await tool.runner(checked, call, context)

    def restore_call(self, call: ToolUse) -> ToolUse:
        """``call`` with field names of an older release renamed to today's (a value given under both
        names keeps today's)."""
        tool = self.tools.get(call.name)
        if tool is None or not tool.legacy_fields or not isinstance(call.input, Mapping):
            return call
        renamed = dict(call.input)
        for old, new in tool.legacy_fields.items():
            if old in renamed:
                value = renamed.pop(old)
                renamed.setdefault(new, value)
        return call if renamed == dict(call.input) else replace(call, input=renamed)

    def restore_pending(self, state: ConversationState) -> ConversationState:
        """A state loaded from the store, with the calls of its open batch that may still run restored."""
        status = state.status
        if not isinstance(status, RunningTool | AwaitingApproval | AwaitingUpgrade | AwaitingAgents):
            return state
        done = len(status.batch.results)
        calls = (*status.batch.calls[:done], *(self.restore_call(c) for c in status.batch.calls[done:]))
        if calls == status.batch.calls:
            return state
        return replace(state, status=replace(status, batch=Batch(calls, status.batch.results)))


# ------------------------------------------------------------------------------------------------ runners


def _read_tool(
    function: Callable[[object, Path, Mapping[Path, str], DenyCheck | None], readonly.ToolOutput],
) -> Runner:
    async def run_read(tool_input: ToolInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
        documents = dict(ctx.open_documents())
        deny = None
        if ctx.mode is Mode.RESTRICTED:  # the same list the kernel keeps commands from (REQ-BASH-026)
            deny = deny_check(ctx.deny_read)
        result = await asyncio.to_thread(function, tool_input, ctx.working_directory, documents, deny)
        return ToolOutcome(result.text, result.is_error)

    return run_read


async def _run_bash(tool_input: ToolInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
    assert isinstance(tool_input, inputs.BashInput)
    context = bash.BashContext(
        working_directory=ctx.working_directory,
        restricted=ctx.mode is Mode.RESTRICTED,
        conversation_id=ctx.conversation_id,
        env=ctx.env,
        sandbox=ctx.sandbox,
        default_timeout_s=ctx.bash_timeout_s or bash.DEFAULT_TIMEOUT_S,
        deny_read=ctx.deny_read,
        background_timeout_s=ctx.background_timeout_s or bash.BACKGROUND_TIMEOUT_S,
        capture=ctx.capture(call) if ctx.capture is not None and ctx.mode is Mode.UNRESTRICTED else None,
    )
    result = await bash.run_bash(tool_input, context)
    return ToolOutcome(result.output, result.is_error, result.sandbox_refused)


async def _run_patch(tool_input: ToolInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
    if ctx.apply_patch is None:
        return ToolOutcome("The patch was not applied: this server has no editor to apply it through.", True)
    text, is_error = await ctx.apply_patch(call)
    return ToolOutcome(text, is_error)


async def _run_describe(tool_input: inputs.DescribeToolsInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
    if ctx.agent is None:
        return ToolOutcome(f"describe_tools is not available: {ctx.agent_unavailable}.", True)
    return ToolOutcome(*await ctx.agent.describe(list(tool_input.tools)))


async def _run_plan(tool_input: inputs.RunPlanInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
    if ctx.agent is None:
        return ToolOutcome(f"run_plan is not available: {ctx.agent_unavailable}. Nothing was run.", True)
    text, is_error, answer = await ctx.agent.run_plan(tool_input, call)
    return ToolOutcome(text, is_error, answer=answer)


#: a sight tool called where no editor answers it (the conversation was resumed in a client without the sight)
NO_SIGHT = ("{tool} is not available now: the client connected to this conversation does not offer the editor's "
            "sight (it is offered by the VS Code extension and the Neovim plugin). Use read_file and search_files.")


async def _run_problems(tool_input: sight.EditorProblemsInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
    if ctx.editor is None:
        return ToolOutcome(NO_SIGHT.format(tool=call.name), True)
    return ToolOutcome(*await ctx.editor.problems(tool_input, ctx.mode))


def _locations(kind: str) -> Runner:
    async def run(tool_input: sight.SymbolInput, call: ToolUse, ctx: ToolContext) -> ToolOutcome:
        if ctx.editor is None:
            return ToolOutcome(NO_SIGHT.format(tool=call.name), True)
        return ToolOutcome(*await ctx.editor.locations(kind, tool_input, ctx.mode, dict(ctx.open_documents())))

    return run


_DESCRIBE = "Full schemas (arguments, result) of catalogue tools."
_RUN_PLAN = (
    "Nodes, each a Python-subset script (no imports, files, clock), run in order; a script calls catalogue tools "
    "as server_tool(**arguments) and helpers " + SIGNATURES + "; later nodes read the variables earlier ones "
    "assign. Put each independent read first, a node of its own: it starts while you write the rest (one call and "
    "its reply: one node). A last node ending in an expression (not a dict) renders it as your whole reply and "
    "ends the turn; else you get each node's status and small results (large: artifact:// handles), failures as "
    "KIND/CODE."
)


#: JSON Schema keywords the model need not read: the server validates every input against its model anyway
_VALIDATION_ONLY = frozenset({"pattern", "maxLength", "minLength", "maxItems", "minItems", "additionalProperties"})


def _compact(schema: Any) -> Any:
    """``schema`` without validation-only keywords (the input is still validated in full)."""
    if isinstance(schema, list):
        return [_compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: ({name: _compact(sub) for name, sub in value.items()} if key == "properties" else _compact(value))
            for key, value in schema.items() if key not in _VALIDATION_ONLY or key == "properties"}

_CALL = 'One catalogue tool called directly, {"server_tool": {arguments}}, when you must read its result to answer.'
_ASK_ROUTE = "The ask route's tools (files, bash, patch) for the rest of this turn."

_UPGRADE = (
    "Request upgrade from Restricted to Unrestricted mode. Only available in Restricted mode. User must approve "
    "the request."
)
_SPAWN = (
    "Run independent sub-agents in parallel, one per task. Each starts with a fresh history, works in the same "
    "directory with the standard tools (Restricted: read-only, sandboxed, whenever the sandbox exists) and "
    "returns one result. You get all results together in one answer."
)
_SUBMIT = (
    "Submit the result of your task to the parent conversation. Call it exactly once, when done; it ends your "
    "work."
)

REGISTRY = Registry(
    (
        Tool(READ_FILE, readonly.READ_FILE_DESCRIPTION, inputs.ReadFileInput, _read_tool(readonly.run_read_file)),
        Tool(
            LIST_DIRECTORY,
            readonly.LIST_DIRECTORY_DESCRIPTION,
            inputs.ListDirectoryInput,
            _read_tool(readonly.run_list_directory),
        ),
        Tool(
            SEARCH_FILES,
            readonly.SEARCH_FILES_DESCRIPTION,
            inputs.SearchFilesInput,
            _read_tool(readonly.run_search_files),
        ),
        Tool(
            BASH,
            bash.DESCRIPTION,
            inputs.BashInput,
            _run_bash,
            states_working_directory=True,  # REQ-BASH-005
            legacy_fields={"mode": "run"},  # the field's name until issue 9
        ),
        Tool(PATCH, patch.DESCRIPTION, inputs.PatchInput, _run_patch),
        Tool(REQUEST_MODE_UPGRADE, _UPGRADE, inputs.RequestModeUpgradeInput),
        Tool(SPAWN_AGENTS, _SPAWN, inputs.SpawnAgentsInput),
        Tool(SUBMIT_RESULT, _SUBMIT, inputs.SubmitResultInput),
        Tool(DESCRIBE_TOOLS, _DESCRIBE, inputs.DescribeToolsInput, _run_describe),
        Tool(RUN_PLAN, _RUN_PLAN, inputs.RunPlanInput, _run_plan),
        Tool(CALL_TOOL, _CALL, inputs.CallToolInput),
        Tool(USE_ASK_ROUTE, _ASK_ROUTE, inputs.UseAskRouteInput),
        Tool(EDITOR_PROBLEMS, sight.EDITOR_PROBLEMS_DESCRIPTION, sight.EditorProblemsInput, _run_problems),
        Tool(FIND_DEFINITION, sight.FIND_DEFINITION_DESCRIPTION, sight.SymbolInput, _locations("definition")),
        Tool(FIND_REFERENCES, sight.FIND_REFERENCES_DESCRIPTION, sight.SymbolInput, _locations("references")),
    )
)

if set(REGISTRY.names()) != set(TOOL_KINDS):  # the core decides permissions by kind: one set of tools
    raise RuntimeError(f"tool registry {sorted(REGISTRY.names())} != core TOOL_KINDS {sorted(TOOL_KINDS)}")
for _tool in REGISTRY.tools.values():
    if (_tool.runner is None) != (_tool.kind is ToolKind.CONTROL):
        raise RuntimeError(f"{_tool.name}: a control tool has no runner, every other tool has one")

definitions = REGISTRY.definitions
definitions_of = REGISTRY.definitions_of
describe = REGISTRY.describe
check = REGISTRY.check
run = REGISTRY.run
restore_pending = REGISTRY.restore_pending
