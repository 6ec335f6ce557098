"""The input of every tool as one pydantic model: the one source of its schema and of its validation.

The JSON schema the model is given (a tool definition's ``input_schema``) is generated from these models by
:func:`input_schema`, and what the model sends is checked with :func:`validate`, which runs
``model_validate`` on the same model — so a field's description, its enum and its limits (``minItems``,
``maxItems``, ``minimum``, ...) are written once, here. A failed validation becomes one message for the
model (:func:`explain`) that names each bad field, says what is wrong with it and what to send instead.

Conventions shared by every model: unknown fields are refused (``additionalProperties: false``); types are
strict (no ``"3"`` for 3, no ``true`` for 1); a ``null`` value means the field was left out.

The control tools (``request_mode_upgrade``, ``spawn_agents``, ``submit_result``) are implemented by the
pure core, which cannot import pydantic. Their inputs are validated here, before the core, like every
other tool's: the server puts the result on the call (``ToolUse.input_error``) and the core answers an
invalid call with that message (REQ-CORE-007). The one limit the core also needs, the number of sub-agents
per call, is the core's constant :data:`~phoenix_lsp.core.tools.MAX_AGENTS_PER_CALL`, used by the model.

Over 300 lines: every tool's input model in one file is the point (the one source of the schemas), with the
validation that explains a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema, ErrorDetails

from ..core.tools import MAX_AGENTS_PER_CALL

__all__ = [
    "OPERATIONS",
    "RUNS",
    "BashInput",
    "CallToolInput",
    "DescribeToolsInput",
    "ListDirectoryInput",
    "PatchInput",
    "PatchItem",
    "PlanNodeInput",
    "ReadFileInput",
    "Reindent",
    "RequestModeUpgradeInput",
    "RunPlanInput",
    "SearchFilesInput",
    "SpawnAgentsInput",
    "SubmitResultInput",
    "ToolInput",
    "UseAskRouteInput",
    "explain",
    "input_schema",
    "invalid_json",
    "validate",
]

Run = Literal["default", "slow", "background"]
RUNS: tuple[str, ...] = get_args(Run)
"""The values of the bash input's ``run`` field (REQ-BASH-002/003/005)."""
Operation = Literal["replace", "append_eof", "prepend_bof", "overwrite"]
OPERATIONS: tuple[str, ...] = get_args(Operation)
"""The patch operations (REQ-PATCH-001)."""


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL byte, which no shell command can hold")
    return value


NotBlank = Annotated[str, AfterValidator(_not_blank)]
NonEmpty = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(ge=1)]


class ToolInput(BaseModel):
    # No docstrings on input models: pydantic would put them into the schema the model sees.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if v is not None}
        return data


# ------------------------------------------------------------------------------------------ read tools


class ReadFileInput(ToolInput):
    path: str = Field(description="File path, relative to the working directory.")
    offset: Positive | None = Field(None, description="First line to return (1-based).")
    limit: Positive | None = Field(None, description="Number of lines to return.")


class ListDirectoryInput(ToolInput):
    path: str = Field(".", description="Directory path, relative to the working directory.")


class SearchFilesInput(ToolInput):
    pattern: NonEmpty = Field(description="Regular expression to find.")
    path: str = Field(".", description="Directory (or file) to search; default: all.")
    glob: NonEmpty | None = Field(
        None, description="Only files whose name (or relative path, if it has '/') matches, e.g. '*.py'."
    )


# ------------------------------------------------------------------------------------------------ bash


class BashInput(ToolInput):
    command: Annotated[str, AfterValidator(_not_blank), AfterValidator(_no_nul)] = Field(
        description="The shell command to run with bash -c."
    )
    run: Run = Field(
        "default",
        description='How to run it: "default" stops it after 30 s, "slow" after 15 min, "background" starts it '
        "detached with its output going to a file.",
    )


# ----------------------------------------------------------------------------------------------- patch


class Reindent(ToolInput):
    strip: str | None = Field(None, description="Prefix removed from every non-blank inserted line.")
    add: str | None = Field(None, description="Prefix added to every non-blank inserted line.")


class PatchItem(ToolInput):
    operation: Operation
    old_text: str | None = Field(
        None, alias="oldText", description="replace only: the text to replace; must occur exactly once."
    )
    new_text: str | None = Field(
        None, alias="newText", description='The text to insert ("" deletes). Omit when fromClipboard is set.'
    )
    to_clipboard: NonEmpty | None = Field(
        None, alias="toClipboard", description="replace only: store the matched old text in this clipboard."
    )
    from_clipboard: NonEmpty | None = Field(
        None, alias="fromClipboard", description="Use this clipboard's text as the new text."
    )
    reindent: Reindent | None = Field(None, description="Change the indentation of the inserted text.")

    @model_validator(mode="after")
    def _fields_fit_the_operation(self) -> PatchItem:
        op = self.operation
        if op == "replace":
            if not self.old_text:
                raise ValueError(
                    "oldText is required by replace and must not be empty. To add text at the start or end of "
                    "the file use prepend_bof or append_eof"
                )
        elif self.old_text is not None:
            raise ValueError(f"oldText is only used by replace, not by {op}; remove it or use replace")
        elif self.to_clipboard is not None:
            raise ValueError(
                f"toClipboard stores the text matched by oldText, so it works only with replace, not with {op}"
            )
        if self.from_clipboard is not None:
            if self.new_text:
                raise ValueError("both newText and fromClipboard are set; keep only one of them")
        elif self.new_text is None:
            raise ValueError(f'newText is required by {op} (use "" to delete), unless fromClipboard is set')
        return self


class PatchInput(ToolInput):
    path: NotBlank = Field(description="Path of the file, relative to the working directory.")
    patches: list[PatchItem] = Field(
        min_length=1, description="Patches to apply together to the file, located in its original content."
    )


# ---------------------------------------------------------------------------------------- control tools


class RequestModeUpgradeInput(ToolInput):
    reason: NotBlank = Field(description="Explanation of why write access is needed")


class SpawnAgentsInput(ToolInput):
    tasks: list[NotBlank] = Field(
        min_length=1,
        max_length=MAX_AGENTS_PER_CALL,
        description="Self-contained task descriptions, one per sub-agent.",
    )


class SubmitResultInput(ToolInput):
    result: str = Field(description="The complete result of the task.")


# ------------------------------------------------------------------------------------ the agent route

ToolUri = Annotated[str, Field(pattern=r"^mcp://[A-Za-z][A-Za-z0-9_-]*/[A-Za-z][A-Za-z0-9_.-]*(\?\S*)?$")]
Key = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=64)]


class DescribeToolsInput(ToolInput):
    tools: list[ToolUri] = Field(min_length=1, max_length=20, description="Tool URIs.")


class PlanNodeInput(ToolInput):
    id: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$", max_length=64)]
    code: NonEmpty
    tools: list[ToolUri] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    inputs: list[Key] = Field(default_factory=list, description="Outputs of nodes it depends on, as variables.")
    outputs: list[Key] = Field(default_factory=list)


def _plan_schema(schema: dict[str, Any]) -> None:
    """run_plan's schema as the model is shown it: nodes as scripts (REQ-AGENT-045). The object form of a node
    (id, code, tools, depends_on, inputs, outputs), ``goal``, ``constraints`` and ``answer`` are still accepted
    (plans of restored conversations), not shown: every token of the tools is paid by every request of the route,
    and each write a plan makes is asked about with its own arguments, so a goal adds nothing the user needs."""
    schema["properties"] = {"nodes": {"type": "array", "items": {"type": "string"}}}
    schema["required"] = ["nodes"]


class RunPlanInput(ToolInput):
    model_config = ConfigDict(json_schema_extra=_plan_schema)

    goal: str = ""
    constraints: list[str] = Field(default_factory=list)
    nodes: list[PlanNodeInput | NonEmpty] = Field(min_length=1, max_length=50)
    # True when the last node's result holds 'answer', the whole reply as a string (REQ-AGENT-039); a last node
    # written as a script that ends with an expression says so itself (REQ-AGENT-045)
    answer: bool = False


class CallToolInput(ToolInput):
    # one catalogue tool called directly (REQ-AGENT-041): {"server_tool": {arguments}}, the function name of the
    # catalogue as the key (or its mcp:// URI); the server turns it into the MCP tool's own call
    model_config = ConfigDict(extra="allow", strict=True, frozen=True, json_schema_extra={
        "minProperties": 1, "maxProperties": 1, "additionalProperties": {"type": "object"}})

    @model_validator(mode="after")
    def _one_call(self) -> CallToolInput:
        calls = self.model_extra or {}
        if len(calls) != 1 or not isinstance(next(iter(calls.values())), dict):
            raise ValueError('must be one catalogue tool and its arguments: {"server_tool": {...}}')
        return self


class UseAskRouteInput(ToolInput):
    reason: NotBlank


# ---------------------------------------------------------------------------------------------- schemas


class _Schema(GenerateJsonSchema):
    """Schemas as the model should read them: ``X | None`` is just ``X`` (null means absent)."""

    def nullable_schema(self, schema: Any) -> Any:
        inner: CoreSchema = schema["schema"]
        return self.generate_inner(inner)


def _clean(node: Any, defs: Mapping[str, Any]) -> Any:
    """Inline ``$ref``s and drop what only adds noise for the model (titles, null defaults)."""
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _clean(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {**target, **_clean({k: v for k, v in node.items() if k != "$ref"}, defs)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs") or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {name: _clean(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _clean(value, defs)
    return out


@cache
def _schema_text(model: type[ToolInput]) -> str:
    raw = model.model_json_schema(by_alias=True, schema_generator=_Schema)
    schema = _clean(raw, raw.get("$defs", {}))
    schema.pop("description", None)
    return json.dumps(schema)


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The JSON schema of ``model`` for a tool definition: a fresh dict, equal on every call (generated once)."""
    loaded: dict[str, Any] = json.loads(_schema_text(model))
    return loaded


# ------------------------------------------------------------------------------------------- validation


M = TypeVar("M", bound=ToolInput)


def validate(model: type[M], tool: str, tool_input: object) -> M | str:
    """``tool_input`` as ``model``, or the message that tells the model what to fix."""
    try:
        return model.model_validate(tool_input)
    except ValidationError as exc:
        return explain(tool, model, exc)


def invalid_json(tool: str, error: str) -> str:
    """The answer to a call whose input the model sent was not a JSON object."""
    return (
        f"Invalid {tool} input: your input was not valid JSON: {error}. The call was not run; send the call "
        "again with a valid JSON object as its input."
    )


def explain(tool: str, model: type[ToolInput], exc: ValidationError) -> str:
    """One message for the model naming every bad field, what is wrong with it, and what to do."""
    schema = input_schema(model)
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        problem = _problem(error, schema)
        if problem not in problems:
            problems.append(problem)
    return (
        f"Invalid {tool} input: {'; '.join(problems)}. The call was not run; send it again with its input "
        "fixed."
    )


def _where(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)[:60]}"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _node(schema: Mapping[str, Any], loc: tuple[int | str, ...]) -> Mapping[str, Any]:
    """The schema of the value at ``loc`` (empty when it cannot be found)."""
    node: Mapping[str, Any] = schema
    for part in loc:
        node = node.get("items", {}) if isinstance(part, int) else node.get("properties", {}).get(part, {})
    return node


def _problem(error: ErrorDetails, schema: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    field = f"'{_where(loc)}'" if loc else "the input"
    node = _node(schema, loc)
    if kind == "missing":
        description = node.get("description")
        return f"{field} is required" + (f" ({description.rstrip('.')})" if description else "")
    if kind == "extra_forbidden":
        parent = _node(schema, loc[:-1])
        allowed = ", ".join(parent.get("properties", {}))
        return f"unknown field {field} (the fields are: {allowed})"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        fields = ", ".join(node.get("properties", {}))
        return f"{field} must be a JSON object (with {fields}), not {_json_type(value)}"
    if kind == "string_type":
        return f"{field} must be a string, not {_json_type(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{field} must be a whole number, not {_json_type(value)}"
    if kind == "list_type":
        return f"{field} must be an array, not {_json_type(value)}"
    if kind == "greater_than_equal":
        return f"{field} must be at least {ctx.get('ge')}, not {value!r}"
    if kind == "literal_error":
        return f"{field} must be one of {ctx.get('expected')}, not {json.dumps(value) if value is not None else 'null'}"
    if kind == "string_too_short":
        return f"{field} must not be empty"
    if kind == "too_short":
        return f"{field} must hold at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return (
            f"{field} holds {ctx.get('actual_length')} items but at most {ctx.get('max_length')} are allowed; "
            "split the work into several calls"
        )
    if kind == "value_error":
        message = str(ctx.get("error", error["msg"]))
        if node.get("type") == "string":  # a rule on one string: "'command' must not be empty ..."
            return f"{field} {message}"
        return f"{_where(loc) or 'the input'}: {message}"  # a rule across fields: "patches[0]: ..."
    return f"{field}: {error['msg']}"
