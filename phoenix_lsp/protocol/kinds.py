"""The protocol's kinds as lists, for the tables that consume them (REQ-PROTO-055).

Every consumer of ``phoenix/event`` (the ACP adapter's ``live``, the plain-client adapter, the terminal client,
the VS Code reducer, the Neovim plugin) holds a table keyed by event kind, and every display of a tool call (its
icon, its words, its ACP kind) a table keyed by tool name. Each table names every kind: a test compares its
keys with these lists (which the schema carries too), so a kind added to the protocol fails a test until every
consumer decides what it does with it; and an unknown kind that still arrives at run time (a newer server, a
table gone stale) is reported, never silently ignored.

- ``EVENT_KINDS``: the ``kind`` of every ``phoenix/event``, from the events' union (``events.EventKinds``);
- ``TOOL_NAMES``: every tool the model can call, from the core's ``TOOL_KINDS``, and ``mcp__*``, which stands for
  the family of MCP tools (``mcp__<server>__<tool>``, issue 37): a table's entry for it is looked up, through
  ``table_key``, for every name of the family.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import get_args

from pydantic import BaseModel

from ..core.mcp_names import is_mcp, server_part
from ..core.tools import TOOL_KINDS
from .events import EventKinds

__all__ = ["EVENT_KINDS", "MCP_FAMILY", "TOOL_NAMES", "Unknown", "mcp_words", "table_key", "table_problems"]


def _kind(model: type[BaseModel]) -> str:
    """The word an event model names itself with (its ``kind`` field's one literal)."""
    [word] = get_args(model.model_fields["kind"].annotation)
    return str(word)


#: Every event kind, in the union's order (the schema's ``PhoenixEvent`` mapping holds the same words).
EVENT_KINDS: tuple[str, ...] = tuple(_kind(model) for model in get_args(EventKinds))
#: the key that stands for every MCP tool (``mcp__<server>__<tool>``) in the tables keyed by tool name
MCP_FAMILY = "mcp__*"
#: Every tool name, in the core's order, then the MCP tools' family (the schema's ``ToolName``).
TOOL_NAMES: tuple[str, ...] = (*TOOL_KINDS, MCP_FAMILY)


def table_key(name: str) -> str:
    """The key of a tool name in a table keyed by tool name: the name, or ``MCP_FAMILY`` for an MCP tool."""
    return MCP_FAMILY if is_mcp(name) else name


def mcp_words(name: str) -> str:
    """An MCP tool's name as people read it: ``create_issue on tracker`` for ``mcp__tracker__create_issue``."""
    server = server_part(name)
    if server is None:
        return name
    return f"{name[len('mcp__') + len(server) + 2:]} on {server}"


def table_problems(table: str, keys: Collection[str], kinds: Iterable[str]) -> list[str]:
    """What is wrong with a consumer's table against the protocol's kinds: each kind it does not handle and
    each key that is no kind (empty when the table is whole)."""
    wanted = list(kinds)
    problems = [f"{table} does not handle the kind {kind!r}: add it to the table (what the consumer does with "
                "it, or why it ignores it)" for kind in wanted if kind not in keys]
    problems += [f"{table} has the key {key!r}, which is no kind of the protocol: remove it" for key in keys
                 if key not in wanted]
    return problems


class Unknown:
    """Reports a kind a consumer's table does not have, once per kind (a newer server may send many)."""

    def __init__(self, log: logging.Logger, consumer: str) -> None:
        self.log = log
        self.consumer = consumer
        self.seen: set[str] = set()

    def __call__(self, what: str, kind: str) -> None:
        if kind in self.seen:
            return
        self.seen.add(kind)
        self.log.warning("%s does not know the %s %r (the server is newer than this table, or the table is "
                         "stale): it is not shown; update phoenix-lsp", self.consumer, what, kind[:80])
