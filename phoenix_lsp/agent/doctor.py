"""`phoenix-lsp doctor`'s check of the agent route's MCP servers (issue 25, REQ-AGENT-032).

Each server of the registry is started (connected, for HTTP) with a bounded time, its tools are listed with
the kind each has under the capability manifest and where that kind came from, and each allowed tool with the
name the model is given in the conversation (``mcp__<server>__<tool>``, issue 37), and what is wrong is named
with what to change: a server that does not start (an unset ``secretsRef`` variable included), tools that
count as writes only by the safe default, annotations the registry ignores, manifest entries that match no
tool. It calls the tools of no server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from ..core.mcp_consent import Candidate, decide
from ..core.mcp_names import server_names, tool_names
from .agent_config import AgentConfig, CapabilityManifest, HttpServer, McpRegistry, StdioServer, matches
from .capability_gate import CapabilityGate, EffectiveKind
from .capability_gate import effective_kind as gate_kind
from .mcp_consent_store import ConsentStore
from .mcp_hub import McpHub
from .mcp_sources import ORIGINS, merge, read_project, read_user

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


def with_sources(config: AgentConfig, config_dir: Path, folder: Path,
                 data_dir: Path) -> tuple[AgentConfig, dict[str, str], list[str]]:
    """The registry as a server started for ``folder`` would have it (REQ-MCP-008/009): the registry's servers,
    the user-level file's, and the folder's project servers the user approved (a server not approved is never
    started by doctor either); with the source of each server not from the registry, and the lines about the
    problems and the project's servers that do not start (not answered about yet, or declined)."""
    user, project = read_user(config_dir), read_project(folder)
    merged = merge([user.servers, project.servers], {name: ORIGINS["registry"] for name in config.registry.servers})
    verdict = decide([Candidate(s.name, s.project, s.digest) for s in merged.servers], ConsentStore(data_dir).load())
    servers = dict(config.registry.servers)
    origins: dict[str, str] = {}  # a server listed without a source is the registry's
    lines = [f"MCP sources: {problem}" for problem in [*user.problems, *project.problems, *merged.problems]]
    for server in merged.servers:
        where = server.where()
        if server.name in verdict.start:
            servers[server.name] = server.config
            origins[server.name] = f"{where}, approved by you" if server.project else where
        elif server.name in verdict.declined:
            lines.append(f"MCP server {server.name} (from {where}): declined by you, so not started and its tools "
                         f"not offered: {server.shown}. Change its definition to be asked again")
        else:
            lines.append(f"MCP server {server.name} (from {where}): not approved yet, so not started and its tools "
                         f"not offered: {server.shown}. A conversation in this folder asks you about it")
    named = config.manifest.servers()
    extra = tuple(f"mcp://{s.name}/*" for s in merged.servers if s.name in servers and s.name not in named)
    manifest = config.manifest.model_copy(update={"allow": (*config.manifest.allow, *extra)})
    registry = McpRegistry.model_validate({"servers": servers})
    return config.model_copy(update={"registry": registry, "manifest": manifest}), origins, lines


def mcp_lines(config: AgentConfig, *, connect_s: float = DOCTOR_CONNECT_S,
              origins: Mapping[str, str] | None = None) -> list[str]:
    """What doctor prints about the MCP servers: one block per server (``origins``: where each came from),
    then the manifest's problems."""
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
                source = f", from {origins[name]}" if origins and name in origins else ""
                lines.append(f"MCP server {name} ({server.transport}{source}): NOT WORKING: {why}")
                continue
            own = [t for t in tools if t.server == name]
            source = f", from {origins[name]}" if origins and name in origins else ""
            lines.append(f"MCP server {name} ({server.transport}{source}, version {state.version}): started, "
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
