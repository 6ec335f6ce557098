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
from typing import Any

#: the deepest nesting of arrays and objects accepted. LSP messages nest about 10 levels; a tool's input a
#: few more. Deep enough for any real value, shallow enough that a walk of it cannot exhaust the stack.
MAX_DEPTH = 64



class TooDeep(ValueError):
    """JSON nested deeper than the limit; a ValueError, so callers that handle bad JSON handle it too."""

    def __init__(self, limit: int, what: str = "the JSON text") -> None:
        super().__init__(
            f"{what} nests arrays and objects more than {limit} levels deep, the limit for JSON from outside; "
            "it was not decoded. Send the value with less nesting (flatten it, or send it as a string)"
        )
        self.limit = limit


class TooMany(ValueError):
    """JSON holding more tokens (strings, commas, brackets) than its kind may; refused before decoding."""

    def __init__(self, limit: int, what: str = "the JSON text", found: int | None = None) -> None:
        seen = f" ({found:,} or more)" if found is not None else ""
        super().__init__(
            f"{what} holds more than {limit:,} strings, commas and brackets{seen}, the limit for it; it was not "
            "decoded (walking that many values would hold up everything else). Send fewer values, or send them "
            "as one string"
        )
        self.limit = limit


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_OPEN_BYTES = frozenset(b"[{")


def _unescaped(data: str | bytes | bytearray | memoryview) -> bytes | bytearray:
    """The text as bytes with every escape that can hide a quote taken out (``\\\\`` then ``\\"``, left to
    right, as the decoder reads them): what is left of each quote then opens or closes a string. Text without a
    backslash is not copied (a copy of tens of MB holds the GIL, and so every other thread, while it is made)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if isinstance(raw, memoryview):
        raw = raw.tobytes()
    if b"\\" in raw:
        raw = bytes(raw).replace(b"\\\\", b"").replace(b'\\"', b"")
    return raw


#: how much of the text one count looks at: a count over tens of MB is one C call that holds the GIL throughout
#: (every other thread, the event loop's included, waits for it); counted a slice at a time, the thread that
#: counts lets the others run between slices
_SLICE = 1024 * 1024


def _count(raw: bytes | bytearray, what: bytes, stop: int | None = None) -> int:
    """``raw.count(what)`` (``what`` one byte), a slice at a time; once the count is over ``stop`` (when given)
    the rest is not counted: the text is refused whatever it holds, and counting it held the GIL for nothing."""
    if len(raw) <= _SLICE:
        return raw.count(what)
    total = 0
    for start in range(0, len(raw), _SLICE):
        total += raw.count(what, start, start + _SLICE)
        if stop is not None and total > stop:
            break
    return total


#: how much of the text is split on its quotes at a time: the pieces of one part are held at once, not all
_PART = 64 * 1024


def _outside(raw: bytes | bytearray) -> bytes | bytearray:
    """What of ``raw`` (escapes taken out) is outside strings: the pieces between quotes, every other one (the
    text after a string never closed is in that string). Split a part at a time, so that text of millions of
    strings never has all its pieces held at once; whether a part starts inside a string is carried over."""
    if b'"' not in raw:
        return raw
    kept: list[bytes] = []
    inside = False
    for start in range(0, len(raw), _PART):
        pieces = raw[start:start + _PART].split(b'"')
        kept.append(b"".join(pieces[int(inside)::2]))
        inside ^= len(pieces) % 2 == 0  # an odd number of quotes in the part
    return b"".join(kept)


def _deeper(outside: bytes | bytearray, limit: int) -> bool:
    """Whether the brackets of ``outside`` (no strings in it) nest deeper than ``limit``; a close with nothing
    open is ignored, as before. One step per bracket: called only when there are more than ``limit``."""
    level = 0
    for c in outside.translate(None, _NOT_BRACKETS):
        if c in _OPEN_BYTES:
            level += 1
            if level > limit:
                return True
        elif level:
            level -= 1
    return False


def deeper_than(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` nests arrays and objects more than ``limit`` levels deep (brackets inside strings do
    not count). Linear in the length of ``text`` at the speed of C: escapes and strings are cut out with
    ``replace`` and ``split``, and only the brackets left are stepped through, when there are more than
    ``limit`` of them; never recurses. A backslash outside a string (which the decoder stops at, so nothing
    after it is decoded) is read as an escape there too."""
    raw = _unescaped(text)
    if raw.count(b"[") + raw.count(b"{") <= limit:  # the usual case
        return False
    outside = _outside(raw)
    if outside.count(b"[") + outside.count(b"{") <= limit:
        return False
    return _deeper(outside, limit)


def bound(text: str | bytes | bytearray | memoryview, depth: int = MAX_DEPTH, tokens: int = 2**63,
          what: str = "the JSON text") -> None:
    """Raise :class:`TooMany` when ``text`` holds more than ``tokens`` strings, commas and brackets, and
    :class:`TooDeep` when it nests deeper than ``depth``; both found before anything is decoded, in time
    linear in the text at the speed of C: the strings are counted from the quotes before any is cut out, so
    text of millions of short strings is refused without a step per string, and its quotes are counted only
    until there are too many (the refusal then says how many were found, "or more")."""
    raw = _unescaped(text)
    strings = (_count(raw, b'"', stop=2 * tokens) + 1) // 2  # over 2 * tokens quotes: over tokens strings
    if strings > tokens:
        raise TooMany(tokens, what, strings)
    counts = [_count(raw, c) for c in (b"[", b"{", b"]", b"}", b",")]
    if counts[0] + counts[1] <= depth and strings + sum(counts) <= tokens:  # the usual case: no string cut out
        return
    outside = _outside(raw)
    counts = [outside.count(c) for c in (b"[", b"{", b"]", b"}", b",")]
    if strings + sum(counts) > tokens:
        raise TooMany(tokens, what, strings + sum(counts))
    if counts[0] + counts[1] > depth and _deeper(outside, depth):
        raise TooDeep(depth, what)


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


__all__ = ["MAX_DEPTH", "TooDeep", "TooMany", "bound", "check", "deeper_than", "loads", "value_deeper_than"]
