"""The JSON Schema of the whole phoenix protocol, generated from the models (specs/protocol.schema.json).

Params are described as the server accepts them (validation); results, events and error data as the server
sends them (serialization): fields that are left out when empty are optional and never null.

Regenerate with ``python -m phoenix_lsp.protocol.schema > specs/protocol.schema.json``; a test fails when
the checked-in file is stale.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from pydantic import TypeAdapter

from . import contracts
from .errors import ErrorData
from .events import Event
from .kinds import TOOL_NAMES
from .methods import METHODS
from .params import InitializationOptions
from .run import RunResult
from .sight import CLIENT_METHODS

REF = "#/$defs/{model}"


def _collect(defs: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    nested = schema.pop("$defs", {})
    for key, value in [*nested.items(), (name, schema)]:
        if key in defs and defs[key] != value:
            raise ValueError(f"two different definitions named {key} (give one model another name)")
        defs[key] = value


def _add(defs: dict[str, Any], name: str, target: Any, mode: Literal["validation", "serialization"]) -> str:
    schema = TypeAdapter(target).json_schema(mode=mode, ref_template=REF)
    if mode == "serialization":
        _sent_form(schema)
    _untitled(schema)
    _collect(defs, name, schema)
    return f"#/$defs/{name}"


def _sent_form(node: Any) -> None:
    """What ``to_wire`` sends: a None is left out, so a nullable field is optional and never null; every
    other field is always present, defaults included."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            required = []
            for key, prop in props.items():
                options = prop.get("anyOf") if isinstance(prop, dict) else None
                if options and {"type": "null"} in options:
                    rest = [o for o in options if o != {"type": "null"}]
                    prop.pop("anyOf")
                    prop.pop("default", None)
                    prop.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
                else:
                    if isinstance(prop, dict):
                        prop.pop("default", None)  # always sent, so the default says nothing
                    required.append(key)
            node["required"] = required
        for value in node.values():
            _sent_form(value)
    elif isinstance(node, list):
        for value in node:
            _sent_form(value)


def _untitled(node: Any) -> None:
    """Drop pydantic's titles of single fields ("Conversationid"): generators would name a type after each."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for prop in props.values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        for value in node.values():
            _untitled(value)
    elif isinstance(node, list):
        for value in node:
            _untitled(value)


def build() -> dict[str, Any]:
    """The whole protocol as one JSON Schema document."""
    defs: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for method in METHODS.values():
        params = _add(defs, method.params.__name__, method.params, "validation")
        result = _add(defs, method.result.__name__, method.result, "serialization")
        requests[method.name] = {
            "type": "object",
            "properties": {"params": {"$ref": params}, "result": {"$ref": result}},
            "required": ["params", "result"],
            "additionalProperties": False,
        }
    # server -> client requests (the editor's sight): params as the server sends them, results as it accepts them
    client_requests: dict[str, Any] = {}
    for cm in CLIENT_METHODS.values():
        client_requests[cm.name] = {
            "type": "object",
            "properties": {"params": {"$ref": _add(defs, cm.params.__name__, cm.params, "serialization")},
                           "result": {"$ref": _add(defs, cm.result.__name__, cm.result, "validation")}},
            "required": ["params", "result"],
            "additionalProperties": False,
        }
    event = _add(defs, "PhoenixEvent", Event, "serialization")
    errors = _add(defs, "ErrorData", ErrorData, "serialization")
    options = _add(defs, "InitializationOptions", InitializationOptions, "validation")
    # phoenix-lsp run (REQ-RUN-003/004): its result, and each line of its stream-json output
    run_result = _add(defs, "RunResult", RunResult, "serialization")
    # the tools' names, as the event kinds are listed by PhoenixEvent: every display of a tool call is keyed by
    # them, and each client's test compares its table with this list (REQ-PROTO-055)
    _collect(defs, "ToolName", {"type": "string", "enum": list(TOOL_NAMES),
                                "description": "the name of a tool the model can call (toolName in events); mcp__* "
                                "stands for the family of MCP tools, each named mcp__<server>__<tool>"})
    # the agent route's contracts (seed 004, REQ-AGENT-011): what run_plan's plans become and what a unit answers
    agent = {model.__name__: {"$ref": _add(defs, model.__name__, model, "serialization")}
             for model in (contracts.Plan, contracts.ExecutionUnit, contracts.ResultEnvelope,
                           contracts.ArtifactHandle, contracts.AgentError)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "PhoenixProtocol",
        "description": "The phoenix/* requests (params and result), the requests the server sends to a client "
        "with the editor's sight (clientRequests), the phoenix/event notification, the data "
        "of JSON-RPC errors, the initialization options, the tools' names, phoenix-lsp run's result and stream lines "
        "and the agent route's contracts. "
        "Generated from phoenix_lsp/protocol and phoenix_lsp/agent/contracts.py; do not edit.",
        "type": "object",
        "properties": {
            "requests": {
                "type": "object",
                "properties": requests,
                "required": list(requests),
                "additionalProperties": False,
            },
            "clientRequests": {
                "type": "object",
                "properties": client_requests,
                "required": list(client_requests),
                "additionalProperties": False,
            },
            "event": {"$ref": event},
            "errorData": {"$ref": errors},
            "initializationOptions": {"$ref": options},
            "toolName": {"$ref": "#/$defs/ToolName"},
            "runResult": {"$ref": run_result},
            "runStreamLine": {"description": "one line of phoenix-lsp run --output-format stream-json: an event "
                              "(phoenix/event's params), then the result", "oneOf": [{"$ref": event},
                                                                                   {"$ref": run_result}]},
            "agentContracts": {"type": "object", "properties": agent, "required": list(agent),
                               "additionalProperties": False},
        },
        "required": ["requests", "clientRequests", "event", "errorData", "initializationOptions", "toolName",
                     "runResult", "runStreamLine", "agentContracts"],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


def render() -> str:
    """The schema file's exact text."""
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
