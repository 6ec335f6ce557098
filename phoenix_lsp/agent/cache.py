"""The result cache (REQ-AGENT-019/021): a deterministic node's envelope, kept by what determines it.

A cache lives for one plan run only (the executor makes one per run and empties it after every node that
may write): a node's result read from an MCP server is a copy of live data, which any write, by this run or
by anyone else between runs, may change. Nothing is shared between runs or conversations.

The key is sha256 of the canonical JSON of the unit's code, params (its inputs from state included), allowed
tools and budgets, the engine's name, and the tools' versions (``server@version`` from the host): a new tool
version is a miss. Only nodes that call no write tool are cached, and only successful envelopes (a failure
may be transient). A hit returns the identical envelope; the executor compacts it again, and as artifacts
are content-addressed the handles are identical too. In memory, least recently used first out, bounded by
entries and by the bytes of the envelopes' JSON.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping

from .artifacts import canonical_json
from .contracts import ExecutionUnit, ResultEnvelope


def cache_key(unit: ExecutionUnit, engine: str, versions: Mapping[str, str]) -> str:
    """sha256 over everything a deterministic unit's result depends on."""
    material = {
        "code": unit.code,
        "params": unit.params,
        "allowedTools": list(unit.allowed_tools),
        "budgets": unit.budgets.model_dump(mode="json", by_alias=True),
        "engine": engine,
        "versions": dict(versions),
    }
    return hashlib.sha256(canonical_json(material).encode("utf-8", "surrogatepass")).hexdigest()


class ResultCache:
    """An LRU of envelopes, at most `max_entries` and `max_bytes` (their JSON) in all; thread-safe."""

    def __init__(self, *, max_entries: int = 256, max_bytes: int = 32 << 20) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[ResultEnvelope, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry (after a write: what was read may have changed)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def get(self, key: str) -> ResultEnvelope | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: str, envelope: ResultEnvelope) -> None:
        """Keep a successful envelope; a failure, or one bigger than the whole cache, is not kept."""
        if not envelope.ok:
            return
        size = len(envelope.model_dump_json(by_alias=True))
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (envelope, size)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
