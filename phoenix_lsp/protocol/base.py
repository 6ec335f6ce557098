"""The base of every wire model: camelCase JSON, validated with pydantic, dumped in one place.

Params models ignore unknown fields and accept ``[]`` where an empty object is expected (Neovim sends an
empty Lua table so). A validation failure becomes JSON-RPC -32602 naming the field (see ``parse``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class Wire(BaseModel):
    """A phoenix/* params, result or event object."""

    # defer_build: schemas are built on first use, not at import (server start-up budget)
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
        defer_build=True,
        use_enum_values=False,
    )


W = TypeVar("W", bound=Wire)


class InvalidParams(Exception):
    """Params failed validation; ``field`` is the JSON path of the first problem."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "params"


def _on_the_wire(params: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """pydantic's error location as a path in the params sent: without the tags it adds for a union's member
    (``attachments[0].file.range`` is ``attachments[0].range`` on the wire)."""
    out: list[int | str] = []
    node = params
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and part not in node and not last:
            continue  # a union member's tag
        out.append(part)
        node = node.get(part) if isinstance(node, dict) else (
            node[part] if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node) else None)
    return tuple(out)


def _lone_surrogate(value: Any, loc: tuple[int | str, ...] = ()) -> tuple[int | str, ...] | None:
    """Where in raw params a string (or an object's key) holds a lone UTF-16 surrogate (``"\\ud800"`` in JSON),
    which no file name, store or UTF-8 text can hold; None when nowhere."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return loc
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, loc) if isinstance(key, str) else None
            if found is None:
                found = _lone_surrogate(item, (*loc, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if (found := _lone_surrogate(item, (*loc, index))) is not None:
                return found
    return None


def parse(model: type[W], params: Any) -> W:
    """Validate raw params (a dict, ``None`` or Neovim's ``[]``) into ``model`` or raise InvalidParams."""
    if params is None or params == []:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("params", f"Invalid params: expected an object, got {type(params).__name__}.")
    if (where := _lone_surrogate(params)) is not None:
        field = _path(where)
        raise InvalidParams(field, f"Invalid params: '{field}': holds a lone UTF-16 surrogate, which is not text; "
                            "send valid Unicode.")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = tuple(to_camel(p) if isinstance(p, str) else p for p in first["loc"])
        field = _path(_on_the_wire(params, loc))
        raise InvalidParams(field, f"Invalid params: '{field}': {first['msg']}.") from None


def to_wire(model: BaseModel) -> dict[str, Any]:
    """The one place a model becomes its wire form: camelCase, JSON types, absent optional fields left out."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
