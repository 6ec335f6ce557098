"""JSON from outside, decoded with its nesting bounded (REQ-PROTO-044, REQ-SEC-002).

Python's ``json`` decoder recurses once per nested array or object, and so does everything that walks the
value afterwards (pygls's converter, pydantic, ``json.dumps``, our scrubbers). Text nested a few thousand
levels deep (``[[[[...``) raises RecursionError, which is not a ValueError: a caller that catches only
ValueError lets it end the process. So every decode of JSON that a client, a model, an MCP server or a
script's worker can shape goes through :func:`loads`, which first measures the nesting with a scan that
cannot recurse (strings are skipped with ``find``, the brackets between them counted in one loop) and
refuses text nested deeper than :data:`MAX_DEPTH` with :class:`TooDeep`, a ValueError whose message says
what happened and what to do. Standard library only: the transport imports it before pydantic is loaded.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: the deepest nesting of arrays and objects accepted. LSP messages nest about 10 levels; a tool's input a
#: few more. Deep enough for any real value, shallow enough that a walk of it cannot exhaust the stack.
MAX_DEPTH = 64

_BRACKETS_B = re.compile(rb"[\[\]{}]")
_BRACKETS_S = re.compile(r"[\[\]{}]")


class TooDeep(ValueError):
    """JSON nested deeper than the limit; a ValueError, so callers that handle bad JSON handle it too."""

    def __init__(self, limit: int, what: str = "the JSON text") -> None:
        super().__init__(
            f"{what} nests arrays and objects more than {limit} levels deep, the limit for JSON from outside; "
            "it was not decoded. Send the value with less nesting (flatten it, or send it as a string)"
        )
        self.limit = limit


def deeper_than(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` nests arrays and objects more than ``limit`` levels deep (brackets inside strings do
    not count). Linear in the length of ``text``, strings skipped at the speed of ``find``; never recurses."""
    data: Any = bytes(text) if isinstance(text, (bytearray, memoryview)) else text
    binary = isinstance(data, bytes)
    quote, backslash, opens = (b'"', 0x5C, (b"[", b"{")) if binary else ('"', "\\", ("[", "{"))
    if data.count(opens[0]) + data.count(opens[1]) <= limit:  # the usual case, at the speed of C
        return False
    brackets = _BRACKETS_B if binary else _BRACKETS_S
    level, i, n = 0, 0, len(data)
    while i < n:
        start = data.find(quote, i)
        end = n if start < 0 else start
        for match in brackets.finditer(data, i, end):  # the brackets before the next string
            if match.group() in opens:
                level += 1
                if level > limit:
                    return True
            elif level:
                level -= 1
        if start < 0:
            return False
        close = start + 1
        while True:  # the string's closing quote: one not escaped by an odd run of backslashes
            close = data.find(quote, close)
            if close < 0:
                return False  # a string never closed: nothing after it is outside a string
            k = close - 1
            while k > start and data[k] == backslash:
                k -= 1
            if (close - 1 - k) % 2 == 0:
                break
            close += 1
        i = close + 1
    return False


def check(text: str | bytes, limit: int = MAX_DEPTH, what: str = "the JSON text") -> None:
    """Raise :class:`TooDeep` when ``text`` nests deeper than ``limit``."""
    if deeper_than(text, limit):
        raise TooDeep(limit, what)


def loads(text: str | bytes, limit: int = MAX_DEPTH, what: str = "the JSON text") -> Any:
    """``json.loads`` for text from outside: :class:`TooDeep` (a ValueError) instead of a RecursionError."""
    check(text, limit, what)
    return json.loads(text)


def value_deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether an already decoded value nests lists/tuples and dicts more than ``limit`` levels deep, found
    without recursion (for values another library decoded, such as an MCP result's structured content)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if level + 1 > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


__all__ = ["MAX_DEPTH", "TooDeep", "check", "deeper_than", "loads", "value_deeper_than"]
