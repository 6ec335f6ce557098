"""The `phoenix-lsp` command: the language server (default), the ACP agent, the terminal client, the headless run,
doctor, and the sandbox.

Each command's module is imported when that command runs, so that `phoenix-lsp` starts the server quickly (the
start-up budget is 300 ms) and `--help` loads no server: these few imports are the file's only lazy ones.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .log_redact import guard_last_resort
from .server import startup
from .server.run import exits as run_exits


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
    again = chat.add_mutually_exclusive_group()
    again.add_argument("-c", "--continue", dest="resume", action="store_const", const="--continue",
                       help="go on with this folder's latest conversation")
    again.add_argument("-r", "--resume", dest="resume", nargs="?", const="", metavar="ID",
                       help="go on with conversation ID, or pick one of this folder's from a list")
    _run_parser(commands)
    commands.add_parser("doctor", help="show sandbox support, data directory, model settings and the agent "
                        "route's MCP servers (each started, with a bounded time)")
    try:
        from .tools.sandbox_run import register  # lazy: --help and serve need no sandbox room
    except ImportError:  # the sandbox room is optional at import time: doctor says what is missing
        pass
    else:
        register(commands)
    return parser


def _run_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = commands.add_parser(
        "run", help="run one turn headless, for scripts and CI: the answer (or JSON) on stdout, logs on stderr",
        description="Run one turn of the agent without a person: the prompt from the argument or stdin, the answer, "
        "a JSON result or a JSON event stream on stdout, logs on stderr. Every approval and upgrade request is denied "
        "at once and listed, unless an --allow rule covers it.", epilog=run_exits.HELP)
    run.add_argument("prompt", nargs="?", metavar="PROMPT",
                     help="what to do; '-' or absent: read it from stdin (stdin beside a PROMPT is added as context)")
    run.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text",
                     help="text: the answer; json: one result object; stream-json: one event a line, then the result")
    run.add_argument("--mode", choices=("restricted", "unrestricted"), default="restricted",
                     help="Restricted (default: read-only, sandboxed) or Unrestricted (changes, each call asked about "
                     "by the policy: denied unless --allow covers it)")
    run.add_argument("--allow", action="append", metavar="RULE",
                     help="let calls run that this Always Allow rule covers: patch, bash, 'bash: git status *', "
                     "mcp__server__tool, mcp__server__* (repeatable)")
    run.add_argument("--max-turns", type=int, metavar="N", help="stop after N model responses (exit 3)")
    again = run.add_mutually_exclusive_group()
    again.add_argument("-c", "--continue", dest="latest", action="store_true",
                       help="go on with this folder's latest conversation")
    again.add_argument("-r", "--resume", metavar="ID", help="go on with conversation ID (a result's sessionId)")
    run.add_argument("--model", help="the model that answers (provider/model for another provider)")
    run.add_argument("--route", choices=("ask", "agent"), help="the message's route (default: the one chosen last)")
    run.add_argument("--cwd", metavar="DIR", default=".", help="the conversation's working directory")
    run.add_argument("--data-dir", metavar="DIR", help="where conversations are stored")


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
    return _serve(options.get("--tcp"), options.get("--data-dir"))


def _serve(tcp: str | None, data_dir: str | None) -> int:
    startup.postpone_full_collections()  # until the features load, after initialize is answered
    from .server.app import serve  # lazy: the parser, the doctor and the clients are not loaded to serve

    return serve(tcp=tcp, data_dir=data_dir)


def main(argv: Sequence[str] | None = None) -> int:
    guard_last_resort()  # a warning logged before any handler is installed is redacted too (REQ-SEC-042)
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or words[0] in ("serve", "--tcp", "--data-dir"):
        served = _fast_serve(words)
        if served is not None:
            return served
    args = _parser().parse_args(words)
    if args.command == "doctor":
        from . import doctor  # lazy: the store, the providers and the agent route load for doctor alone

        return doctor.main()
    if args.command == "acp":
        from .server.acp_boot import serve as serve_acp  # lazy: the ACP SDK loads for `acp` alone

        return serve_acp(data_dir=args.data_dir)
    if args.command == "chat":
        from .client.terminal import main as chat_main  # lazy: the terminal client loads for `chat` alone

        return chat_main(cwd=args.cwd, data_dir=args.data_dir, resume=args.resume)
    if args.command == "run":
        from .server.run_boot import main as run_main  # lazy: the hub loads for `run` alone

        return run_main(args)
    if args.command in (None, "serve"):
        return _serve(getattr(args, "tcp", None), getattr(args, "data_dir", None))
    func = getattr(args, "func", None)
    if func is None:
        _parser().print_help()
        return 2
    result: int = func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
