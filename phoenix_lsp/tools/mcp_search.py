"""Many MCP tools behind a search (issue 37, REQ-MCP-022): when the definitions of every MCP tool would take more
than a tenth of the model's context window (the product's own estimate, ``tools/patch.estimate_tokens``), the
model is offered one tool, :data:`SEARCH_TOOL`, instead of them: it finds tools by words of their names and
descriptions and gives back the best few whole (name, kind, description, input schema), as ``describe_tools``
gives a plan's tools on the agent route (the same compact schema); the model then calls a tool by its name.

The tools list stays byte-stable for the server's life (the prompt cache keeps working): the search tool's
definition depends only on the gathered definitions, which are themselves stable; what the model loads is in a
tool result, a message, never added to the list.

The ranking is Okapi BM25 over each tool's words, with each word counted once per tool (a description that
repeats a word gains nothing) and a tool's length normalising its score, plus a bonus for a word of the tool's
own name: a description stuffed with every word a search could use is long, so it ranks below a tool whose
short description or name says the word. Written here (twenty lines) rather than taken from a package: the
packages that implement BM25 bring numpy for a few hundred short documents.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..agent.mcp_values import compact_schema

#: the search tool's name: in the MCP family (so the MCP tools' one path runs it) but no server's tool (it has
#: no ``__<tool>`` part, which every server's tool has: ``core/mcp_names.py``)
SEARCH_TOOL = "mcp__search_tools"
#: the share of the context window above which the definitions are not sent inline
INLINE_SHARE = 10
#: the most tools one search gives back, and the most words of a query that count
MOST_FOUND = 5
MOST_QUERY_WORDS = 32
_K1, _B, _NAME_BONUS = 1.2, 0.75, 1.0
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The words of ``text`` as the search reads them: lower case, letters and digits (``_`` splits)."""
    return _WORD.findall(text.lower())


def definition(definitions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The search tool's definition, for the MCP tools ``definitions`` (stable while they are)."""
    servers = sorted({str(d["name"]).split("__")[1] for d in definitions})
    return {
        "name": SEARCH_TOOL,
        "description": (
            f"Find MCP tools by what they do: {len(definitions)} tools of the MCP servers {', '.join(servers)} are "
            "too many to list here. Give words of a tool's name or description (query), or tools' exact names "
            f"(names); you get the best {MOST_FOUND} whole: name, kind (read or write), description and input "
            "schema. Then call a tool by its name (mcp__<server>__<tool>) with arguments that fit its schema."),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "words of what the tool does, e.g. 'open issues'"},
                "names": {"type": "array", "items": {"type": "string"},
                          "description": "exact tool names to load, e.g. from an earlier search"},
            },
        },
    }


def _document(d: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    name = str(d["name"]).split("__", 2)[-1]
    return set(words(name)), set(words(name)) | set(words(str(d.get("description", ""))))


class Index:
    """The words of every tool, read once for the definitions' life (a search then only counts)."""

    def __init__(self, definitions: Sequence[Mapping[str, Any]]) -> None:
        self.definitions = definitions
        self.documents = [_document(d) for d in definitions]
        self.average = sum(len(doc) for _, doc in self.documents) / max(1, len(self.documents))
        self.having: dict[str, int] = {}
        for _, doc in self.documents:
            for word in doc:
                self.having[word] = self.having.get(word, 0) + 1


def rank(definitions: Sequence[Mapping[str, Any]] | Index, query: str) -> list[Mapping[str, Any]]:
    """The tools that match words of ``query``, best first (at most :data:`MOST_FOUND`)."""
    index = definitions if isinstance(definitions, Index) else Index(definitions)
    asked = list(dict.fromkeys(words(query)))[:MOST_QUERY_WORDS]
    total = len(index.documents)
    if not asked or not total:
        return []
    idf = {word: math.log((total - index.having.get(word, 0) + 0.5) / (index.having.get(word, 0) + 0.5) + 1)
           for word in asked}
    scored = []
    for position, (name, doc) in enumerate(index.documents):
        score = 0.0
        for word in asked:
            if word not in doc:
                continue
            score += idf[word] * (_K1 + 1) / (1 + _K1 * (1 - _B + _B * len(doc) / index.average))
            score += _NAME_BONUS * idf[word] if word in name else 0.0
        if score > 0:
            scored.append((-score, position))
    return [index.definitions[position] for _, position in sorted(scored)[:MOST_FOUND]]


def answer(definitions: Sequence[Mapping[str, Any]] | Index, kinds: Mapping[str, str],
           arguments: Mapping[str, Any]) -> tuple[str, bool]:
    """The search tool's result for ``arguments``: the tools found, whole, or why none was."""
    index = definitions if isinstance(definitions, Index) else Index(definitions)
    definitions = index.definitions
    query = arguments.get("query")
    names = arguments.get("names")
    query = query if isinstance(query, str) else ""
    names = [n for n in names if isinstance(n, str)][:MOST_FOUND] if isinstance(names, list) else []
    by_name = {str(d["name"]): d for d in definitions}
    found = [by_name[n] for n in names if n in by_name]
    unknown = [n for n in names if n not in by_name]
    found += [d for d in rank(index, query) if d not in found][:max(0, MOST_FOUND - len(found))]
    if not query.strip() and not names:
        return "Give a query (words of what the tool does) or names (exact tool names).", True
    lines = []
    if unknown:
        lines.append(f"No MCP tool is named {', '.join(unknown)[:300]}.")
    if not found:
        lines.append(f"No MCP tool matches {query[:200]!r}: try other words (what the tool acts on, or does).")
        return "\n".join(lines), True
    lines.append(f"{len(found)} of {len(definitions)} MCP tools, best first; call one by its name with arguments "
                 "that fit its input schema:")
    for d in found:
        schema = json.dumps(compact_schema(d["input_schema"]), sort_keys=True, separators=(",", ":"))
        lines.append(f"- {d['name']} [{kinds.get(str(d['name']), 'write')}]: {d['description']}\n"
                     f"  input schema: {schema}")
    return "\n".join(lines), False


def too_many(estimated_tokens: int, context_window: int) -> bool:
    """Whether definitions of ``estimated_tokens`` are over the share of the window sent inline."""
    return estimated_tokens > context_window // INLINE_SHARE
