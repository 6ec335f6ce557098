"""``phoenix-lsp doctor``: what protects the user on this machine, where things are kept, and what a server
started here would use (settings, model providers, the agent route and its MCP servers, project instructions).

Imported by ``cli.py`` only when the command runs: everything it reads is imported here, at the top.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import Any

from .agent.agent_config import AgentConfigError, load_agent_config
from .agent.doctor import mcp_lines, with_sources
from .agent.server_secrets import server_secrets
from .llm import providers
from .llm.router import OLLAMA_PROBE_S
from .log_redact import cleaned
from .protocol.params import InitializationOptions
from .sandbox.cli import doctor_lines
from .server import instructions
from .server.config import Config, load
from .store import Store
from .store.secrets import SecretGuard


def main() -> int:
    """Print what protects the user on this machine and where things are kept. Every line passes the one
    redaction and sanitiser of the log lines (``log_redact.cleaned``): a URL's credentials are not printed, nor a
    control sequence a repository's names or a service's answer carry (REQ-SEC-042, REQ-SEC-004)."""
    guard = SecretGuard()

    def show(line: str) -> None:
        print(cleaned(line, guard))

    show("phoenix-lsp doctor")
    try:
        for line in doctor_lines():
            show(line)
    except Exception as exc:  # doctor must always answer
        show(f"sandbox: could not be checked ({exc})")
    show(f"data directory: {Store.default_path().parent}")
    settings, problems = load(InitializationOptions(), os.environ)  # what a server started here would use
    show(f"model: {settings.model}")
    for problem in problems:
        show(f"setting: {problem}")
    for line in agent_lines(settings, settings.lsp_data_dir or Store.default_path().parent, guard=guard):
        show(line)
    key = "set" if os.environ.get("ANTHROPIC_API_KEY") else "NOT set (export ANTHROPIC_API_KEY=... to chat)"
    print(f"ANTHROPIC_API_KEY: {key}")  # the server's own words (never the key): the scrub would take "set" for one
    base = os.environ.get("ANTHROPIC_BASE_URL")
    if base:
        show(f"ANTHROPIC_BASE_URL: {base}")
    for line in provider_lines(settings):
        show(line)
    for line in instruction_lines(Path.cwd()):
        show(line)
    return 0


def provider_lines(settings: Any) -> list[str]:
    """The other model providers a server started here would use (REQ-MODEL-010): where each one is and
    whether its key is set, never the key; Ollama's default host is asked briefly."""
    try:
        configured = providers.load(os.environ, settings.providers)
    except Exception as exc:  # doctor must always answer
        return [f"providers: could not be checked ({exc})"]
    lines = [f"provider {p.describe()}" for p in configured.by_name.values()]
    lines += [f"providers: {problem}" for problem in configured.problems]
    if "ollama" not in configured.by_name:
        try:
            with urllib.request.urlopen(configured.ollama_host + "/api/tags", timeout=OLLAMA_PROBE_S * 3):
                lines.append(f"provider ollama: answers at {configured.ollama_host} (OLLAMA_HOST not set)")
        except Exception:
            lines.append(f"provider ollama: not running at {configured.ollama_host} (set OLLAMA_HOST if it runs "
                         "elsewhere)")
    if not configured.by_name:
        more = [setting for name, setting in providers.BUILTINS.items() if name != providers.ANTHROPIC]
        lines.append(f"providers: only Anthropic (set {', '.join(more)}, or {providers.PROVIDERS_FILE_VARIABLE} "
                     "for more)")
    return lines


def agent_lines(settings: Any, data_dir: Path, folder: Path | None = None,
                guard: SecretGuard | None = None) -> list[str]:
    """The agent route's files as a server started here would read them (REQ-AGENT-022), with the MCP servers of
    the user-level file and of ``folder`` (the current directory by default). ``guard`` (doctor's, which every
    printed line passes) learns each server's secrets, found by the one function that finds them (REQ-SEC-045)."""
    folder = folder or Path.cwd()
    try:
        agent = load_agent_config(settings, data_dir)
    except Exception as exc:  # doctor must always answer
        return [f"agent route: could not be checked ({exc})"]
    if isinstance(agent, AgentConfigError):
        return [agent.describe()]
    servers = ", ".join(f"{name} ({server.transport})" for name, server in agent.registry.servers.items())
    lines = [f"agent route: engine {settings.agent_engine}; MCP servers: {servers or 'none'}; "
             f"{len(agent.manifest.allow)} allow and {len(agent.manifest.deny)} deny entries; "
             f"artifacts in {agent.artifact_dir}"]
    lines.extend(f"agent route: {warning}" for warning in agent.warnings)
    origins: dict[str, str] = {}
    try:  # the user-level file's servers and this folder's approved ones join them (REQ-MCP-008/009)
        agent, origins, source_lines = with_sources(agent, instructions.config_dir(settings.config_dir), folder,
                                                    data_dir)
        lines.extend(source_lines)
    except Exception as exc:  # doctor must always answer
        lines.append(f"MCP sources: could not be checked ({type(exc).__name__}: {exc})")
    if guard is not None:
        for name, server in agent.registry.servers.items():
            for value, label in server_secrets(name, server):
                guard.add_secret(value, label)
    try:  # each MCP server started with a bounded time, its tools with their kinds, what is wrong
        lines.extend(mcp_lines(agent, connect_s=settings.doctor_connect_s, origins=origins))
    except Exception as exc:  # doctor must always answer
        lines.append(f"MCP servers: could not be checked ({type(exc).__name__}: {exc})")
    return lines


def instruction_lines(working_directory: Path) -> list[str]:
    """The project instructions a conversation started here would get (REQ-INSTR-003)."""
    try:
        configured = Config().config_dir
    except Exception:  # a bad setting is reported by the server at start-up; doctor still answers
        configured = None
    # no editor here: the repository around the directory stands for the workspace folder
    roots = [d for d in (working_directory, *working_directory.parents) if (d / ".git").exists()][:1]
    found = instructions.read(working_directory, roots, user_dir=instructions.config_dir(configured))
    if not found.files:
        return [f"instructions: none (put an AGENTS.md or CLAUDE.md in {working_directory} or a parent in the "
                f"workspace, or in {instructions.config_dir(configured)})"]
    lines = ["instructions (farthest first):"]
    for f in found.files:
        if f.problem:
            lines.append(f"  {f.path}: {f.problem}")
        else:
            cut = "" if f.kept == f.size else f", {f.size - f.kept:,} cut by the {instructions.CAP_BYTES:,}-byte cap"
            lines.append(f"  {f.path} ({f.size:,} bytes{cut})")
    return lines
