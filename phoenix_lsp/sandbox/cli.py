"""Command-line pieces of the sandbox (REQ-BASH-014): `phoenix-lsp sandbox run` and the doctor lines.

`sandbox run` goes through `run_bash`, the bash tool's own entry point: same safety checks, launcher,
limits, timeout and output handling as an agent's call.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from phoenix_lsp.safe_text import terminal_safe
from phoenix_lsp.sandbox import build, denylist, policy, probe

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
    from phoenix_lsp.tools.bash import DEFAULT_TIMEOUT_S, BashContext, run_bash

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


def _self_test() -> str:
    """Run one real restricted command that must be refused a write, to prove the sandbox holds here."""
    from phoenix_lsp.sandbox import spawn

    with tempfile.TemporaryDirectory(prefix="phoenix-lsp-doctor-") as tmp:
        target = Path(tmp) / "must-not-exist"
        req = spawn.SpawnRequest(("bash", "-c", f"echo x > {shlex.quote(str(target))}"), Path(tmp), True)
        try:
            result = asyncio.run(spawn.run(req, timeout=10))
        except RuntimeError as exc:  # called from inside an event loop
            return f"self-test: skipped ({exc})"
        if result.setup_failure is not None:
            return f"self-test: FAILED, the sandbox could not be set up: {result.setup_failure.describe()}"
        if target.exists():
            return "self-test: FAILED, a write outside the scratch directory got through"
        return f"self-test: ok (a write outside the scratch directory was refused; {result.launcher} launcher)"


def doctor_lines(self_test: bool = True) -> list[str]:
    """What `phoenix-lsp doctor` prints about the sandbox: which protections are active and missing."""
    support = probe()
    lines = []
    if support.landlock_abi is None:
        lines.append("Landlock: not available")
    else:
        lines.append(f"Landlock: ABI {support.landlock_abi}")
    lines.append(f"seccomp: {'available' if support.seccomp else 'not available'}")
    if not support.available:
        lines.append(f"Restricted mode: UNAVAILABLE: {support.reason}")
        lines.append("Only Unrestricted mode can be used; the command safety checks still apply.")
        return lines
    lines.append("Restricted mode: available")
    launch = build.launcher()
    if launch.kind == "compiled":
        lines.append(f"launcher: compiled helper ({launch.argv[0]})")
    else:
        lines.append(f"launcher: Python launcher ({launch.note})")
    lines += [f"active: {text}" for text in support.active]
    lines.append(f"active: {policy.process_limit_protection()}")
    lines.append(f"active: {policy.memory_limit_protection()}")
    denied = denylist.deny_read_paths()
    lines.append(f"active: deny-read (Landlock): {len(denied)} paths a restricted command cannot read, "
                 f"extend with {denylist.DENY_READ_ENV} or the denyRead option:")
    lines += [f"  denied: {path}{'' if path.exists() else ' (absent now)'}" for path in denied]
    lines.append("active: devices: only " + ", ".join(denylist.ALLOWED_DEVICES) + " (and the command's own "
                 "/dev/fd, /dev/stdin, /dev/stdout, /dev/stderr)")
    lines += [f"missing: {text}" for text in support.missing]
    if not support.missing:
        lines.append("missing: nothing")
    if self_test:
        lines.append(_self_test())
    return lines


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (`python -m phoenix_lsp.sandbox.cli sandbox run -- CMD` or `... doctor`)."""
    parser = argparse.ArgumentParser(prog="phoenix-lsp")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    subparsers.add_parser("doctor", help="report which sandbox protections are active")
    args = parser.parse_args(argv)
    if args.command == "doctor":
        print("\n".join(doctor_lines()))
        return 0
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
