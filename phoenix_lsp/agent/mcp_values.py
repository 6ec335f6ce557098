"""What an MCP tool's answer is, read with its schemas: the value inside the SDKs' ``{"result": ...}`` wrapper
of a value that is not an object, and the first way arguments break a tool's input schema; and a schema as the
model is shown it on demand (``describe_tools``, the conversation's tool search)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def unwrapped_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """If ``schema`` is the MCP SDKs' wrapper of a value that is not an object (MCP's ``structuredContent`` must
    be an object, so a tool returning a list, a string or a number declares ``{"type": "object", "properties":
    {"result": S}, "required": ["result"]}``), the wrapped value's schema ``S`` (with the wrapper's ``$defs``);
    else None. The SDKs title the wrapper ``<function>Output``; a tool of another origin whose object really has
    one ``result`` key and no such title is left as it is."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or list(properties) != ["result"] or schema.get("required") != ["result"]:
        return None
    if not str(schema.get("title", "")).endswith("Output"):
        return None
    inner = dict(properties["result"]) if isinstance(properties["result"], Mapping) else {}
    if "$defs" in schema:
        inner["$defs"] = schema["$defs"]
    return inner


def unwrap(structured: Any, output_schema: Mapping[str, Any] | None) -> Any:
    """The value the tool returned: ``structuredContent`` without the SDK's ``{"result": ...}`` wrapper, where
    the tool's output schema is that wrapper or, with no output schema, where it holds a value that is not an
    object (a list, a string, a number: what only a wrapper can carry)."""
    if not isinstance(structured, dict) or list(structured) != ["result"]:
        return structured
    if output_schema is not None:
        return structured["result"] if unwrapped_schema(output_schema) is not None else structured
    return structured if isinstance(structured["result"], dict) else structured["result"]


def schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first way ``arguments`` break the input schema, or None (or None if the schema is unusable)."""
    try:
        import jsonschema  # type: ignore[import-untyped]  # lazy: optional, not a dependency
    except ImportError:  # the server checks them too
        return None
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return None
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
    return f"{where}: {error.message[:300]}"


def compact_schema(schema: Any) -> Any:
    """A JSON Schema without what tells a script nothing: ``title`` annotations (the SDKs derive them from
    names already shown) and ``additionalProperties: true`` (the default). Property names are kept, even one
    called ``title``."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = compact_schema(value)
    return out
