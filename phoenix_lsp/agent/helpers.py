"""Helpers for the shapes plan scripts keep writing (issue 25, REQ-AGENT-036): short scripts by default.

``pick``, ``where``, ``having``, ``count``, ``index``, ``join`` and ``top`` are plain functions of every script,
beside its MCP tools. They run in the engine worker (not in monty, not in the server): pure, deterministic
(stable order, no clock, no randomness), and they never call a tool. The worker counts their time in the
unit's ``cpuS`` and checks what they are given and what they return against ``maxArraySize`` and
``maxStringLength``, like every value that crosses the engine's boundary; none of them returns more items
than it is given. One word each, so a helper can never share a name with a tool (a tool's function is
``server_tool``).

A helper given what it cannot work on (not a list of objects, a field name that is not a string, ``n`` not
a whole number) raises ``HelperError``: the script sees a ``TypeError`` it may catch, and if it does not,
the unit fails with ``CODE``/``INVALID_ARGUMENTS`` naming the helper, what it got and what to pass. A missing
field is not an error: ``pick`` gives None, ``where`` / ``having`` do not match, ``count`` counts it under
None, ``index`` / ``join`` skip the row or leave it unmatched, ``top`` puts it last.

Standard library only: the worker imports this at its start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: how run_plan's description shows them (one line; REQ-AGENT-036)
SIGNATURES = (
    "pick(rows, *fields) where(rows, field=value) having(rows, field, text) count(rows, field) "
    "index(rows, field) join(rows, other, field, other_field=field) top(rows, field, n)"
)


class HelperError(TypeError):
    """A helper was given what it cannot work on; the message says what to pass instead."""


def _what(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)[:5]
        return f"an object with keys {keys}" + (" (pass the list inside it)" if len(value) <= 3 else "")
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"a {type(value).__name__}"


def _rows(helper: str, rows: Any, name: str = "rows") -> list[dict[str, Any]]:
    if not isinstance(rows, list | tuple):
        raise HelperError(f"{helper}: {name} must be a list of objects, got {_what(rows)}")
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            raise HelperError(f"{helper}: {name} must be a list of objects; item {position} is {_what(row)}")
    return list(rows)


def _field(helper: str, field: Any, name: str = "field") -> str:
    if not isinstance(field, str):
        raise HelperError(f"{helper}: {name} must be a field name (a string), got {_what(field)}")
    return field


def _key(value: Any) -> Any:
    """A value usable as a dict key (lists and objects as their text)."""
    return value if value is None or isinstance(value, str | int | float | bool) else repr(value)


def pick(rows: Any, *fields: Any) -> list[dict[str, Any]]:
    """Each row cut to these fields, in this order (a missing field is None)."""
    names = [_field("pick", f) for f in fields]
    if not names:
        raise HelperError("pick: name at least one field, e.g. pick(rows, 'id', 'title')")
    return [{name: row.get(name) for name in names} for row in _rows("pick", rows)]


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(value, list) and not isinstance(wanted, list):
        return wanted in value
    return bool(value == wanted)


def where(rows: Any, **equals: Any) -> list[dict[str, Any]]:
    """The rows whose every named field equals the value (a list field: contains it); a missing field does not
    match."""
    if not equals:
        raise HelperError("where: name at least one field=value, e.g. where(rows, state='open')")
    return [row for row in _rows("where", rows)
            if all(name in row and _matches(row[name], wanted) for name, wanted in equals.items())]


def having(rows: Any, field: Any, text: Any) -> list[dict[str, Any]]:
    """The rows whose field contains text, in any case (a list field: any of its items does)."""
    name = _field("having", field)
    if not isinstance(text, str):
        raise HelperError(f"having: text must be a string, got {_what(text)}")
    needle = text.casefold()

    def hit(value: Any) -> bool:
        if isinstance(value, list):
            return any(hit(item) for item in value)
        return isinstance(value, str) and needle in value.casefold()

    return [row for row in _rows("having", rows) if hit(row.get(name))]


def count(rows: Any, field: Any) -> dict[Any, int]:
    """How many rows have each value of field (a list field counts each of its items; missing is None), most
    frequent first, ties in the order first seen."""
    name = _field("count", field)
    counts: dict[Any, int] = {}
    for row in _rows("count", rows):
        value = row.get(name)
        for item in value if isinstance(value, list) else [value]:
            key = _key(item)
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda pair: -pair[1]))


def index(rows: Any, field: Any) -> dict[Any, dict[str, Any]]:
    """The rows by their value of field (the first row wins a repeated value; rows without it are left out)."""
    name = _field("index", field)
    out: dict[Any, dict[str, Any]] = {}
    for row in _rows("index", rows):
        if name in row:
            out.setdefault(_key(row[name]), row)
    return out


def join(rows: Any, other: Any, field: Any, other_field: Any = None) -> list[dict[str, Any]]:
    """Each row with the fields of the first row of other whose other_field (default: field) equals its field;
    the row's own values win; a row with no match is kept as it is. Never more rows than rows."""
    name = _field("join", field)
    other_name = name if other_field is None else _field("join", other_field, "other_field")
    by_key = index(_rows("join", other, "other"), other_name)
    out = []
    for row in _rows("join", rows):
        match = by_key.get(_key(row.get(name)), {})
        out.append({**row, **{key: value for key, value in match.items() if key not in row}})
    return out


def top(rows: Any, field: Any, n: Any = 10) -> list[dict[str, Any]]:
    """The n rows with the largest values of field, largest first (ties in their order; missing ones last)."""
    name = _field("top", field)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise HelperError(f"top: n must be a whole number >= 0, got {_what(n)}")
    items = _rows("top", rows)
    present = [row for row in items if row.get(name) is not None]
    missing = [row for row in items if row.get(name) is None]
    try:
        ranked = sorted(present, key=lambda row: row[name], reverse=True)
    except TypeError as exc:
        raise HelperError(f"top: the values of {name!r} cannot be ordered ({exc}); "
                          "filter the rows to one type first") from None
    # sorted(reverse=True) keeps equal values in their order: stable, so ties stay as given
    return (ranked + missing)[:n]


HELPERS: dict[str, Callable[..., Any]] = {
    "pick": pick, "where": where, "having": having, "count": count, "index": index, "join": join, "top": top,
}
