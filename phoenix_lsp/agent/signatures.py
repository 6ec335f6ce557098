"""A tool's call as a script writes it, in one line (issue 25): ``run_plan``'s catalogue shows it, so a model can
write a plan without first asking ``describe_tools`` for the schemas (a whole model turn, the fixed prompt
paid again). ``describe_tools`` still gives the full schemas (descriptions, enums, nested shapes).

``issues_list_issues(state: str = 'open', limit: int = 30, fields: list[str] | None = None) -> list[{number,
title, state, labels, author, comments, body}]``: arguments in the schema's order, required ones first
without a default; the return value as the script gets it (the SDKs' ``{"result": ...}`` wrapper removed);
objects shown by their keys only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
MAX_KEYS = 10


def type_text(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> str:
    """A JSON Schema as a short Python-like type."""
    if not isinstance(schema, Mapping) or depth > 4:
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return type_text(defs.get(ref.rsplit("/", 1)[-1], {}), defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(type_text(o, defs, depth + 1) for o in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(type_text({**schema, "type": k}, defs, depth + 1) for k in kind)
    if kind == "array":
        return f"list[{type_text(schema.get('items', {}), defs, depth + 1)}]"
    if kind == "object" or "properties" in schema:
        keys = list((schema.get("properties") or {}).keys())
        if not keys:
            return "dict"
        more = ", ..." if len(keys) > MAX_KEYS else ""
        return "{" + ", ".join(keys[:MAX_KEYS]) + more + "}"
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"][:6])
    return "any"


def signature(function: str, input_schema: Mapping[str, Any] | None, output: Mapping[str, Any] | None) -> str:
    """``function(arguments) -> result`` (``-> ...`` only when the output's schema is known)."""
    schema = input_schema or {}
    defs = schema.get("$defs") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts: list[str] = []
    for name in sorted(properties, key=lambda n: n not in required):
        prop = properties[name]
        text = f"{name}: {type_text(prop, defs)}"
        if name not in required:  # optional: its default, else None (left out)
            default = prop.get("default") if isinstance(prop, Mapping) else None
            text += f" = {default!r}"
        parts.append(text)
    line = f"{function}({', '.join(parts)})"
    if output is not None:
        line += f" -> {type_text(output, output.get('$defs') or {})}"
    return line
