"""`phoenix-lsp sandbox run`: one command run exactly as the agent's bash tool runs it (REQ-BASH-014).

It goes through `run_bash`, the bash tool's own entry point: same safety checks, launcher, limits, timeout,
environment and output handling as an agent's call; the output is made safe for a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any

from phoenix_lsp.safe_text import terminal_safe

#: Exit codes of `sandbox run` when the command itself did not decide one.
EXIT_TIMEOUT = 124
EXIT_SYSTEM_ERROR = 125
EXIT_REFUSED = 126


def register(subparsers: Any) -> None:
    """Add `sandbox run [--mode restricted|unrestricted] [--cwd DIR] [--timeout S] -- CMD...`.

    The parser's `func` default is `run_command(args) -> int` (the process exit code)."""
    sandbox = subparsers.add_parser("sandbox", help="run a command the way the agent's bash tool does")
    actions = sandbox.add_subparsers(dest="sandbox_action", metavar="ACTION")
    actions.required = True
    run = actions.add_parser(
        "run", help="run one command exactly as the bash tool would and exit with its exit code",
        description="Run CMD with bash -c, in the kernel sandbox unless --mode unrestricted, with the bash "
                    "tool's safety checks, limits, timeout and output handling. Several CMD words are "
                    "joined with shell quoting; a single word is used as the shell command line itself.")
    run.add_argument("--mode", choices=("restricted", "unrestricted"), default="restricted",
                     help="restricted (default): kernel sandbox; unrestricted: no sandbox")
    run.add_argument("--cwd", type=Path, default=None, help="working directory (default: current)")
    run.add_argument("--timeout", type=float, default=None, metavar="S",
                     help="seconds before the whole process tree is killed (default: 30)")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    run.set_defaults(func=run_command)


def _command_line(words: list[str]) -> str:
    if words and words[0] == "--":
        words = words[1:]
    if len(words) == 1:
        return words[0]
    return shlex.join(words)


def run_command(args: argparse.Namespace) -> int:
    """Body of `sandbox run`: prints the output the model would see, returns the exit code."""
    from phoenix_lsp.tools.bash import DEFAULT_TIMEOUT_S, BashContext, run_bash  # lazy: 0.2 s, not for --help

    command = _command_line(list(args.cmd))
    if not command.strip():
        print("phoenix-lsp sandbox run: no command given; usage: phoenix-lsp sandbox run -- CMD...",
              file=sys.stderr)
        return 2
    restricted = args.mode == "restricted"
    cwd = (args.cwd or Path.cwd()).resolve()
    ctx = BashContext(working_directory=cwd, restricted=restricted,
                      default_timeout_s=args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S)
    result = asyncio.run(run_bash({"command": command}, ctx))
    # What the command printed reaches a person's terminal here: no OSC 52 clipboard writes, no title
    # changes, no cursor tricks (REQ-SEC-004). The environment was cleaned like the server's (spawn).
    text = terminal_safe(result.output)
    stream = sys.stdout if result.outcome in ("exited", "timeout") else sys.stderr
    stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()
    if result.outcome == "exited":
        return result.exit_code if result.exit_code is not None else EXIT_SYSTEM_ERROR
    if result.outcome == "timeout":
        return EXIT_TIMEOUT
    if result.outcome == "refused":
        return EXIT_REFUSED
    return EXIT_SYSTEM_ERROR


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (`python -m phoenix_lsp.tools.sandbox_run sandbox run -- CMD`)."""
    parser = argparse.ArgumentParser(prog="phoenix-lsp")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
