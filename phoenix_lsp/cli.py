"""The `phoenix-lsp` command: the language server (default), the ACP agent, the terminal client, doctor, and the
sandbox.

Imports are lazy so that `phoenix-lsp` starts the server quickly (the start-up budget is 300 ms).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="phoenix-lsp",
        description="An AI coding agent inside any editor, over the Language Server Protocol. With no "
        "command it serves LSP on stdio.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve LSP (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP address instead of stdio")
    serve.add_argument("--data-dir", metavar="DIR", help="where conversations are stored")
    agent = commands.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed, JetBrains, "
                                "CodeCompanion, agent-shell...)")
    agent.add_argument("--data-dir", metavar="DIR", help="where conversations are stored")
    chat = commands.add_parser("chat", help="talk to the agent in this terminal (starts the server)")
    chat.add_argument("--cwd", metavar="DIR", default=".", help="the conversation's working directory")
    chat.add_argument("--data-dir", metavar="DIR", help="where conversations are stored")
    commands.add_parser("doctor", help="show sandbox support, data directory, model settings and the agent "
                        "route's MCP servers (each started, with a bounded time)")
    try:
        from .tools.sandbox_run import register
    except ImportError:  # the sandbox room is optional at import time: doctor says what is missing
        pass
    else:
        register(commands)
    return parser


def doctor() -> int:
    """Print what protects the user on this machine and where things are kept."""
    import os

    from .store import Store

    print("phoenix-lsp doctor")
    try:
        from .sandbox.cli import doctor_lines

        for line in doctor_lines():
            print(line)
    except Exception as exc:  # doctor must always answer
        print(f"sandbox: could not be checked ({exc})")
    print(f"data directory: {Store.default_path().parent}")
    from .protocol.params import InitializationOptions
    from .server.config import load

    settings, problems = load(InitializationOptions(), os.environ)  # what a server started here would use
    print(f"model: {settings.model}")
    for problem in problems:
        print(f"setting: {problem}")
    for line in agent_lines(settings, settings.lsp_data_dir or Store.default_path().parent):
        print(line)
    key = "set" if os.environ.get("ANTHROPIC_API_KEY") else "NOT set (export ANTHROPIC_API_KEY=... to chat)"
    print(f"ANTHROPIC_API_KEY: {key}")
    base = os.environ.get("ANTHROPIC_BASE_URL")
    if base:
        print(f"ANTHROPIC_BASE_URL: {base}")
    for line in provider_lines(settings):
        print(line)
    for line in instruction_lines(Path.cwd()):
        print(line)
    return 0


def provider_lines(settings: Any) -> list[str]:
    """The other model providers a server started here would use (REQ-MODEL-010): where each one is and
    whether its key is set, never the key; Ollama's default host is asked briefly."""
    import os

    try:
        from .llm import providers
        from .llm.router import OLLAMA_PROBE_S

        configured = providers.load(os.environ, settings.providers)
    except Exception as exc:  # doctor must always answer
        return [f"providers: could not be checked ({exc})"]
    lines = [f"provider {p.describe()}" for p in configured.by_name.values()]
    lines += [f"providers: {problem}" for problem in configured.problems]
    if "ollama" not in configured.by_name:
        import urllib.request

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


def agent_lines(settings: Any, data_dir: Path) -> list[str]:
    """The agent route's files as a server started here would read them (REQ-AGENT-022)."""
    try:
        from .agent.agent_config import AgentConfigError, load_agent_config

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
    try:  # each MCP server started with a bounded time, its tools with their kinds, what is wrong
        from .agent.doctor import mcp_lines

        lines.extend(mcp_lines(agent, connect_s=settings.doctor_connect_s))
    except Exception as exc:  # doctor must always answer
        lines.append(f"MCP servers: could not be checked ({type(exc).__name__}: {exc})")
    return lines


def instruction_lines(working_directory: Path) -> list[str]:
    """The project instructions a conversation started here would get (REQ-INSTR-003)."""
    from .server import instructions
    from .server.config import Config

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


def _fast_serve(argv: Sequence[str]) -> int | None:
    """``phoenix-lsp [serve] [--tcp HOST:PORT] [--data-dir DIR]`` without building the whole CLI: the editor
    starts the server often and waits for it (start-up budget 300 ms)."""
    words = list(argv)
    if words[:1] == ["serve"]:
        words = words[1:]
    options: dict[str, str] = {}
    while words:
        flag = words.pop(0)
        if flag not in ("--tcp", "--data-dir") or not words:
            return None  # anything else: let argparse explain
        options[flag] = words.pop(0)
    from .server.app import serve

    return serve(tcp=options.get("--tcp"), data_dir=options.get("--data-dir"))


def main(argv: Sequence[str] | None = None) -> int:
    from .log_redact import guard_last_resort

    guard_last_resort()  # a warning logged before any handler is installed is redacted too (REQ-SEC-042)
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or words[0] in ("serve", "--tcp", "--data-dir"):
        served = _fast_serve(words)
        if served is not None:
            return served
    args = _parser().parse_args(words)
    if args.command == "doctor":
        return doctor()
    if args.command == "acp":
        from .server.acp_boot import serve as serve_acp

        return serve_acp(data_dir=args.data_dir)
    if args.command == "chat":
        from .client.terminal import main as chat_main

        return chat_main(cwd=args.cwd, data_dir=args.data_dir)
    if args.command in (None, "serve"):
        from .server.app import serve

        return serve(tcp=getattr(args, "tcp", None), data_dir=getattr(args, "data_dir", None))
    func = getattr(args, "func", None)
    if func is None:
        _parser().print_help()
        return 2
    result: int = func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
