"""The check an MCP tool's declared output schema promises (REQ-AGENT-017): a result whose structured content
does not match the ``outputSchema`` the tool was listed with is an error of that one call (the server is at
fault; the session goes on), and a tool that declares one must return structured content.

The MCP SDK makes the same check inside ``ClientSession.call_tool`` with the pure-Python ``jsonschema``: about
0.18 s for the aggregate's 1,000 records, on the hub's one event loop, so every other call and listing of every
server waited behind it (issue 37). Here it is made once, by the hub (``mcp_calls.py``), after the result's
depth is bounded, with ``jsonschema-rs`` (a compiled Rust validator, about 0.2 ms for the same records): one
validator per tool's schema, compiled on first use and kept while its ``server@version`` lives, at most
``MAX_VALIDATORS`` of them. The rule is the SDK's: the schema's own draft (``$schema``, else 2020-12), ``format``
an annotation only, no ``$ref`` fetched from anywhere (``offline``: a result cannot make the client reach out),
and a schema that is not usable fails the call. Error messages show no value of the result (``mask``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import jsonschema_rs

#: compiled output-schema validators kept at once (tools of every server); the oldest goes first
MAX_VALIDATORS = 256
#: what stands for a value of the result in an error message
MASK = "[value]"


class OutputSchemas:
    """Compiled validators of the tools' output schemas, keyed by ``server@version`` and tool name, each kept with
    the schema it was compiled from (a schema that changed under the same key is compiled again). Thread-safe."""

    def __init__(self, max_validators: int = MAX_VALIDATORS) -> None:
        self._max = max_validators
        self._lock = threading.Lock()
        # (server@version, tool) -> (the schema, its validator or why it is unusable)
        self._cache: OrderedDict[tuple[str, str], tuple[Mapping[str, Any], jsonschema_rs.Validator | str]] = (
            OrderedDict())

    def problem(self, key: str, tool: str, schema: Mapping[str, Any], value: Any) -> str | None:
        """The first way ``value`` breaks ``schema`` (the tool's declared output schema), or None."""
        validator = self._validator(key, tool, schema)
        if isinstance(validator, str):
            return f"its declared output schema is not usable ({validator})"
        error = next(iter(validator.iter_errors(value)), None)
        if error is None:
            return None
        where = "/".join(str(part) for part in error.instance_path) or "(the result)"
        return f"at {where}: {error.message[:300]}"

    def forget(self, key: str) -> None:
        """The validators of ``server@version`` (that version was replaced, or the server left)."""
        with self._lock:
            for entry in [entry for entry in self._cache if entry[0] == key]:
                del self._cache[entry]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)

    def _validator(self, key: str, tool: str, schema: Mapping[str, Any]) -> jsonschema_rs.Validator | str:
        entry = (key, tool)
        with self._lock:
            kept = self._cache.get(entry)
            if kept is not None and kept[0] == schema:
                self._cache.move_to_end(entry)
                return kept[1]
        try:
            compiled: jsonschema_rs.Validator | str = jsonschema_rs.validator_for(
                dict(schema), validate_formats=False, offline=True, mask=MASK)
        except Exception as exc:  # whatever a server's schema makes the compiler raise: the schema is unusable
            compiled = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        with self._lock:
            self._cache[entry] = (schema, compiled)
            self._cache.move_to_end(entry)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return compiled
