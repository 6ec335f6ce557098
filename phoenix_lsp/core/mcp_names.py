"""The names MCP tools take in a conversation (issue 37): ``mcp__<server>__<tool>``, pure.

Every MCP tool offered to the model is named ``mcp__<server>__<tool>``: only ``[A-Za-z0-9_-]`` (what every
provider accepts), at most 64 characters, unique within the server's tools. No built-in tool starts with
``mcp__`` (checked in ``tools.py``), so an MCP server cannot name a tool that shadows one: its ``bash`` is
``mcp__<server>__bash``. The server part holds no ``__`` (runs of ``_`` are folded), so the server of a name is
the part before its second ``__``; an Always Allow rule for a whole server is named ``mcp__<server>__*``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

PREFIX = "mcp__"
SEPARATOR = "__"
#: the longest tool name every provider takes (OpenAI's function names: ^[a-zA-Z0-9_-]{1,64}$)
MAX_NAME = 64
#: the longest server part, so that a tool's own name keeps most of the 64 characters
MAX_SERVER = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_RUNS = re.compile(r"_{2,}")
_NAME = re.compile(r"mcp__[A-Za-z0-9-](?:[A-Za-z0-9-]|_(?!_))*__[A-Za-z0-9_-]+\Z")
#: the suffix a shortened or clashing name gets: ``_`` and 8 hex digits of the original's hash
_HASH_CHARS = 9


def is_mcp(name: str) -> bool:
    """Whether ``name`` is in the MCP family (a name a built-in tool never has)."""
    return name.startswith(PREFIX)


def well_formed(name: str) -> bool:
    """Whether ``name`` is a name ``tool_names`` can give: the family's form, the characters, the length."""
    return len(name) <= MAX_NAME and _NAME.match(name) is not None


def server_part(name: str) -> str | None:
    """The server part of an MCP tool's name (``mcp__github__list_issues`` -> ``github``), or None."""
    if not is_mcp(name):
        return None
    server, sep, tool = name[len(PREFIX):].partition(SEPARATOR)
    return server if sep and server and tool else None


def server_rule(name: str) -> str | None:
    """The name of the Always Allow rule that covers every tool of ``name``'s server (``mcp__github__*``)."""
    server = server_part(name)
    return None if server is None else f"{PREFIX}{server}{SEPARATOR}*"


def rule_names(name: str) -> tuple[str, ...]:
    """The Always Allow rules an MCP tool's call may add, narrowest first: the tool, then its whole server
    (``mcp__github__create_issue``, ``mcp__github__*``). A whole-tool rule of either name covers the call."""
    whole_server = server_rule(name)
    return (name,) if whole_server is None else (name, whole_server)


def _digest(text: str) -> str:
    return "_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[: _HASH_CHARS - 1]


def _clean(text: str) -> str:
    return _UNSAFE.sub("_", text)


def server_names(servers: Iterable[str]) -> dict[str, str]:
    """server -> its part in tool names: safe characters, no ``__``, at most ``MAX_SERVER`` characters,
    distinct (a clash or a shortened name ends with a hash of the server's own name)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for server in servers:
        part = _RUNS.sub("_", _clean(server)).strip("_") or "server"
        if len(part) > MAX_SERVER or part in taken:
            part = (part[: MAX_SERVER - _HASH_CHARS].rstrip("_") or "s") + _digest(server)
        while part in taken:  # a hash that clashes too (never seen): the next one
            part = part[: MAX_SERVER - _HASH_CHARS].rstrip("_") + _digest(part)
        taken.add(part)
        out[server] = part
    return out


def tool_names(server: str, tools: Sequence[str]) -> dict[str, str]:
    """tool -> its name in the conversation, for one server part (from ``server_names``): distinct, at most
    ``MAX_NAME`` characters; a tool whose name had to change keeps the start of it and a hash of it, and a
    name that needed no change is never the one changed."""
    head = f"{PREFIX}{server}{SEPARATOR}"
    room = MAX_NAME - len(head)
    out: dict[str, str] = {}
    taken: set[str] = set()
    # a name that needs no change keeps it, whatever comes before it: only the changed ones can clash
    exact = [tool for tool in tools if tool and _clean(tool) == tool and len(tool) <= room]
    for tool in (*exact, *(tool for tool in tools if tool not in exact)):
        if tool in out:
            continue
        part = _clean(tool) or "tool"
        if len(part) > room or part in taken:
            part = part[: room - _HASH_CHARS] + _digest(tool)
        while part in taken:
            part = part[: room - _HASH_CHARS] + _digest(part)
        taken.add(part)
        out[tool] = head + part
    return out
