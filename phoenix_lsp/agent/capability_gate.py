"""The capability gate (REQ-AGENT-014): what the capability manifest allows of MCP tools.

The gate answers three questions from the manifest alone, and nothing else:

- ``check_tool(uri)``: may a plan name this tool at all? Allowed when some ``allow`` pattern covers it and
  no ``deny`` pattern does (deny wins). Otherwise ``DENIED``/``CAPABILITY_DENIED``. A URI may carry its own
  scope; it must then stay within the manifest's scope for that tool (it can only narrow it).
- ``check_call(uri, arguments)``: may this call go ahead? ``check_tool``, then the scope, then the rate
  limit. A call that passes is counted against the rate limit.
- ``kind(uri, read_only_hint, trusted)``: ``read`` or ``write``. The manifest's ``tools`` entry wins; else the
  server's ``readOnlyHint`` annotation (True: read); else ``write``, the safe default.

**Read kinds (issue 24).** A glob over tool names is a claim the server makes: it chooses its tools' names,
so ``mcp://records/get_*`` makes a read of a tool it calls ``get_or_purge``, which writes. A ``kind: "read"``
entry therefore counts only when it names the tool exactly (no ``*``), or, for a glob, when the registry
trusts the server (``trustAnnotations: true``, ``trusted`` here). A read glob that does not count is ignored
(the tool is then whatever else says, a write by default) and said: ``effective_kind`` gives the reason,
``agent_config.read_glob_warnings`` the configuration's warning. ``kind: "write"`` entries count in every form (they can
only make a call ask more).

**Scope rule.** A scope is the query of a tool URI: ``argument=value[,value...]`` parts joined by ``&``
(``mcp://records/update_record?fields=status,priority&owner=infra``). Each part restricts the argument of
that name, when the call gives it (an argument absent or ``null`` is not restricted; an argument the
scope does not name is not restricted):

- a string, number or boolean must be one of the values (compared as text: numbers as JSON writes them,
  booleans as ``true``/``false``);
- an object's keys must all be among the values (``fields={"status": "done"}`` passes ``fields=status``);
- an array's items must all be strings, numbers or booleans among the values;
- anything else (an array holding objects, say) is refused.

An empty value list allows nothing but absence. When several ``allow`` entries cover a tool, every one of
them that carries a scope applies (scopes are restrictions: ``mcp://records/*`` together with
``mcp://records/update_record?fields=status`` allows ``update_record`` touching only ``status``).

**Rate limits.** ``rateLimits`` maps a pattern to ``{calls, windowS}``: at most ``calls`` calls of each tool
it covers (counted per tool, not per pattern) in any sliding window of ``windowS`` seconds, on the
injectable ``clock``. Over it: ``DENIED``/``RATE_LIMITED``, and the refused call is not counted.

**What the gate does not decide.** Approvals and modes: whether a write may run now (refused while
``restricted``, approved per policy while ``unrestricted``) is the core's permission function's decision
(REQ-SEC-003, ``modes.md``), asked by whoever wires host functions, with ``kind(uri)`` as the call's kind.
The gate only narrows what the manifest allows; it never grants what the permission function refuses.

Thread-safe: host functions call ``check_call`` from worker threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .agent_config import CapabilityManifest, is_glob, matches, parse_scope, tool_parts
from .contracts import AgentError, ErrorCode, ErrorKind

Kind = Literal["read", "write"]


def _denied(message: str) -> AgentError:
    return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.CAPABILITY_DENIED, message=message)


def _as_text(value: Any) -> str | None:
    """A scalar as the scope compares it; None for anything that is not a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    return None


def scope_violation(scope: Mapping[str, frozenset[str]], arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` break ``scope`` (the rule in this module's docstring), or None."""
    for name, allowed in scope.items():
        value = arguments.get(name)
        if value is None:
            continue
        touched: list[str | None]
        if isinstance(value, dict):
            touched = [str(key) for key in value]
        elif isinstance(value, list):
            touched = [_as_text(item) for item in value]
        else:
            touched = [_as_text(value)]
        texts = [item for item in touched if item is not None]
        if len(texts) != len(touched):
            return f"the argument {name!r} may only hold {sorted(allowed)}, and holds something else"
        outside = sorted({item for item in texts if item not in allowed})
        if outside:
            return f"the argument {name!r} may only touch {sorted(allowed)}, not {outside}"
    return None


class CapabilityGate:
    """The manifest's decisions; ``clock`` (seconds, monotonic) is injectable for tests."""

    def __init__(self, manifest: CapabilityManifest, clock: Callable[[], float] = time.monotonic) -> None:
        self._manifest = manifest
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}

    @property
    def manifest(self) -> CapabilityManifest:
        return self._manifest

    def check_tool(self, uri: str) -> AgentError | None:
        """None if a plan may name ``uri``; else ``DENIED``/``CAPABILITY_DENIED`` saying why."""
        try:
            _, _, scope_text = tool_parts(uri)
            own_scope = parse_scope(scope_text) if scope_text else {}
        except ValueError as exc:
            return _denied(f"{exc}; name tools as mcp://<server>/<tool>")
        bare = uri.split("?", 1)[0]
        denied_by = next((p for p in self._manifest.deny if matches(p, bare)), None)
        if denied_by is not None:
            return _denied(f"{bare} is denied by the capability manifest ({denied_by}); plan without it")
        if not any(matches(p, bare) for p in self._manifest.allow):
            return _denied(f"{bare} is not allowed by the capability manifest (no allow entry covers it); "
                           "plan with the tools it allows, or ask the user to add it")
        for name, values in own_scope.items():
            for manifest_scope in self._scopes(bare):
                if name in manifest_scope and not values <= manifest_scope[name]:
                    return _denied(f"{uri} asks for {name}={sorted(values)}, wider than the manifest allows "
                                   f"({name}={sorted(manifest_scope[name])})")
        return None

    def check_call(self, uri: str, arguments: Mapping[str, Any]) -> AgentError | None:
        """None if this call may go ahead (it is then counted against the rate limit); else
        ``DENIED``/``CAPABILITY_DENIED`` (not allowed, or out of scope) or ``DENIED``/``RATE_LIMITED``."""
        refused = self.check_tool(uri)
        if refused is not None:
            return refused
        bare, _, scope_text = uri.partition("?")
        scopes = self._scopes(bare) + ([parse_scope(scope_text)] if scope_text else [])
        for scope in scopes:
            why = scope_violation(scope, arguments)
            if why is not None:
                return _denied(f"{bare}: {why} (scope of the capability manifest); call it within that scope")
        return self._count(bare)

    def kind(self, uri: str, read_only_hint: bool | None = None, trusted: bool = False) -> Kind:
        """The kind of the tool's calls: the manifest's ``tools`` entry (the last pattern that covers it and
        counts wins: a read glob counts only for a ``trusted`` server), else ``read`` if the server annotated
        it ``readOnlyHint: true``, else ``write``."""
        return effective_kind(self._manifest, uri, read_only_hint, trusted).kind

    def _scopes(self, bare: str) -> list[dict[str, frozenset[str]]]:
        return [parse_scope(p.split("?", 1)[1]) for p in self._manifest.allow if "?" in p and matches(p, bare)]

    def _count(self, bare: str) -> AgentError | None:
        limits = [(p, limit) for p, limit in self._manifest.rate_limits.items() if matches(p, bare)]
        if not limits:
            return None
        with self._lock:
            now = self._clock()
            calls = self._calls.setdefault(bare, deque())
            longest = max(limit.window_s for _, limit in limits)
            while calls and calls[0] <= now - longest:
                calls.popleft()
            for pattern, limit in limits:
                recent = sum(1 for t in calls if t > now - limit.window_s)
                if recent >= limit.calls:
                    oldest = next(t for t in calls if t > now - limit.window_s) if recent else now
                    wait = max(0.0, oldest + limit.window_s - now)
                    return AgentError(kind=ErrorKind.DENIED, code=ErrorCode.RATE_LIMITED, message=(
                        f"{bare} was called {recent} times in the last {limit.window_s:g} s, the limit of the "
                        f"capability manifest ({pattern}: {limit.calls} per {limit.window_s:g} s); retry in "
                        f"{wait:.1f} s or use fewer calls"))
            calls.append(now)
        return None


Source = Literal["manifest", "annotation", "default"]


@dataclass(frozen=True)
class EffectiveKind:
    """A tool's kind, where it came from, and why, in words for the user (``phoenix-lsp doctor``)."""

    kind: Kind
    source: Source
    reason: str
    #: read globs of the manifest that cover the tool and were ignored (its server is not trusted)
    ignored: tuple[str, ...] = ()


def effective_kind(manifest: CapabilityManifest, uri: str, read_only_hint: bool | None = None,
                   trusted: bool = False) -> EffectiveKind:
    """The kind of a tool's calls and why (the rule in this module's docstring). ``read_only_hint`` is the
    server's annotation, ``trusted`` whether the registry trusts that server (``trustAnnotations``): only then
    do its annotation and the manifest's read globs count."""
    chosen: tuple[Kind, str] | None = None
    ignored: list[str] = []
    for pattern, rule in manifest.tools.items():
        if rule.kind is None or not matches(pattern, uri):  # matches leaves the scope out
            continue
        if rule.kind == "read" and is_glob(pattern) and not trusted:
            ignored.append(pattern)
            continue
        chosen = (rule.kind, pattern)
    note = ""
    if ignored:
        note = (f"; the manifest's read glob {', '.join(ignored)} was ignored: its server is not trusted "
                "(trustAnnotations) and chooses its tools' names, so name the tool exactly to make it a read")
    if chosen is not None:
        kind, pattern = chosen
        how = "names it exactly" if not is_glob(pattern) else "covers it with a glob (the server is trusted)"
        return EffectiveKind(kind, "manifest", f"{kind}: the manifest's entry {pattern} {how}{note}",
                             tuple(ignored))
    if read_only_hint is not None and trusted:  # trusted: no read glob was ignored
        kind = "read" if read_only_hint else "write"
        return EffectiveKind(kind, "annotation", f"{kind}: the server's readOnlyHint is {str(read_only_hint).lower()}"
                             " and the registry trusts it")
    why = ("no manifest entry names its kind" if read_only_hint is None or trusted else
           "no manifest entry names its kind and the server's readOnlyHint is not trusted")
    return EffectiveKind("write", "default", f"write: {why} (the safe default){note}", tuple(ignored))


def resolve_kind(manifest: CapabilityManifest, uri: str, read_only_hint: bool | None,
                 trusted: bool = False) -> tuple[Kind, Source]:
    """The kind of a tool and where it came from (see ``effective_kind``)."""
    found = effective_kind(manifest, uri, read_only_hint, trusted)
    return found.kind, found.source
