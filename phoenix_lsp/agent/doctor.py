"""`phoenix-lsp doctor`'s check of the agent route's MCP servers (issue 25, REQ-AGENT-032).

Each server of the registry is started (connected, for HTTP) with a bounded time, its tools are listed with
the kind each has under the capability manifest and where that kind came from, and each allowed tool with the
name the model is given in the conversation (``mcp__<server>__<tool>``, issue 37), and what is wrong is named
with what to change: a server that does not start (an unset ``secretsRef`` variable included), tools that
count as writes only by the safe default, annotations the registry ignores, manifest entries that match no
tool. It calls the tools of no server.
"""

from __future__ import annotations

from typing import Literal

from ..core.mcp_names import server_names, tool_names
from .agent_config import AgentConfig, CapabilityManifest, HttpServer, McpRegistry, StdioServer, matches
from .capability_gate import CapabilityGate, EffectiveKind
from .capability_gate import effective_kind as gate_kind
from .mcp_hub import McpHub

#: the longest doctor waits for one server to start and list its tools, unless told otherwise (the default of
#: ``PHOENIX_DOCTOR_CONNECT_S``, the config model's ``doctor_connect_s``)
DOCTOR_CONNECT_S = 10.0

Kind = Literal["read", "write"]
Source = Literal["manifest", "annotation", "default"]


def effective_kind(manifest: CapabilityManifest, server: StdioServer | HttpServer, uri: str,
                   read_only_hint: bool | None) -> EffectiveKind:
    """A tool's kind under the manifest, where it came from and why: the gate's own rule
    (:func:`capability_gate.effective_kind`, REQ-AGENT-027), with the registry's trust in ``server``."""
    return gate_kind(manifest, uri, read_only_hint, server.trust_annotations)


def mcp_lines(config: AgentConfig, *, connect_s: float = DOCTOR_CONNECT_S) -> list[str]:
    """What doctor prints about the MCP servers: one block per server, then the manifest's problems."""
    if not config.registry.servers:
        return ["MCP servers: none in the registry (PHOENIX_MCP_REGISTRY); plans can only compute"]
    gate = CapabilityGate(config.manifest)
    bounded = McpRegistry.model_validate({"servers": {
        name: server.model_copy(update={"connect_timeout_s": min(server.connect_timeout_s or connect_s, connect_s)})
        for name, server in config.registry.servers.items()}})
    lines: list[str] = []
    seen: list[str] = []
    parts = server_names(config.registry.servers)  # the names the model is given (issue 37, REQ-MCP-007)
    with McpHub(bounded, manifest=config.manifest, connect_timeout_s=connect_s) as hub:
        try:
            tools = hub.catalogue()
        except Exception as exc:  # doctor must always answer
            return [f"MCP servers: could not be checked ({type(exc).__name__}: {exc})"]
        health = {h.server: h for h in hub.health()}
        for name, server in config.registry.servers.items():
            state = health.get(name)
            if state is None or state.error or not state.connected:
                why = (state.error if state is not None else None) or "it did not connect"
                lines.append(f"MCP server {name} ({server.transport}): NOT WORKING: {why}")
                continue
            own = [t for t in tools if t.server == name]
            lines.append(f"MCP server {name} ({server.transport}, version {state.version}): started, "
                         f"{len(own)} tools")
            defaulted: list[str] = []
            ignored: list[str] = []
            named = tool_names(parts[name], [t.name for t in own if gate.check_tool(t.uri) is None])
            for tool in own:
                seen.append(tool.uri)
                found = effective_kind(config.manifest, server, tool.uri, tool.read_only_hint)
                kind, source = found.kind, found.source
                refused = gate.check_tool(tool.uri)
                allowed = "allowed" if refused is None else "not allowed by the manifest"
                lines.append(f"  {tool.uri} [{kind}, from the {_SOURCES[source]}] {allowed}")
                lines.append(f"    why: {found.reason}")
                if tool.name in named:
                    lines.append(f"    in the conversation: {named[tool.name]} ({kind})")
                if refused is None and kind == "write" and source == "default":
                    defaulted.append(tool.name)
                    if tool.read_only_hint and not server.trust_annotations:
                        ignored.append(tool.name)
            if defaulted:
                lines.append(
                    f"  problem: {len(defaulted)} allowed tools count as writes only because nothing says they "
                    f"read ({', '.join(defaulted[:8])}{'...' if len(defaulted) > 8 else ''}): Restricted "
                    "refuses them and the interactive policy asks about every call. For a tool that only reads, "
                    "add it to the manifest's \"tools\" with {\"kind\": \"read\"} (PHOENIX_CAPABILITIES)"
                    + (f", or set \"trustAnnotations\": true for {name} in the registry: it marks "
                       f"{len(ignored)} of them read-only, which is ignored now" if ignored else "") + ".")
    for pattern in config.manifest.allow:
        bare = pattern.split("?", 1)[0]
        if seen and not any(matches(bare, uri) for uri in seen):
            lines.append(f"manifest: problem: the allow entry {pattern!r} matches no tool of a started server "
                         "(a typo in the server or tool name?)")
    return lines


_SOURCES: dict[str, str] = {"manifest": "manifest", "annotation": "server's readOnlyHint",
                            "default": "safe default"}
