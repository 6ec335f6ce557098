"""How many modules a user message crosses on its way to the model, measured on the real server.

    python scripts/crossings.py                 the LSP server: phoenix/sendMessage
    python scripts/crossings.py --acp           the ACP adapter (``phoenix-lsp acp``): session/prompt
    python scripts/crossings.py --tree DIR      the server of another tree (DIR is its PYTHONPATH), e.g. an old
                                                commit's: git worktree add /tmp/old COMMIT (remove it after)
    python scripts/crossings.py --before DIR    DIR's server, then this tree's, and which modules differ
    python scripts/crossings.py --json          the record as JSON (every column, calls per module)
    python scripts/crossings.py --idle 2        the same window, 2 s long, with no message sent: what the
                                                server runs on its own (nothing on this tree or on 7a7e213
                                                but, at times, the transport's loop: see below)

The server (``python -m phoenix_lsp``, as a client spawns it, with the fake Anthropic server of
``tests/fake_anthropic.py`` as its model) runs under ``scripts/crossings_tracer.py``, which puts a profile
function on every thread before the server's first line. A real client drives it: for LSP the pytest-lsp
client of the end-to-end tests (initialize, phoenix/newConversation), for ACP the ACP SDK's client side
(initialize, session/new). Then the window opens, one user message is sent, the conversation's first
(phoenix/sendMessage; session/prompt), and the window closes when the fake model server receives the model
request, before it answers. Printed: the ``phoenix_lsp`` modules whose Python functions were called in the
window, in the order first called, each with the first function called and the number of calls (a
coroutine's resumption counts as a call, as the profile function sees it).

What is not on the message's path is left out of the count, as far as a profile function can tell:

- start-up: nothing before the window is recorded (the server's imports, initialize, the conversation's
  creation, whose answer the client has before the window opens); inside the window, a call made while a
  module is being imported (a lazy import's module body and what it runs) is listed apart, as ``imports``;
- background jobs: calls on a thread started with ``threading.Thread`` (the warm-up that imports the SDK and
  probes the cgroups, a process watcher) are listed apart, by thread, as ``background``; the count keeps the
  event loop's thread and the threads of ``concurrent.futures`` pools, where the loop's ``to_thread`` and
  ``run_in_executor`` work runs (the transport's reads, a message's decoding, the SDK client's creation);
- the answer: the window ends when the model request arrives, so streaming the answer back is not counted.

A background task on the event loop itself could not be told apart by the profile function; ``--idle`` shows
that there is none: an idle window after the conversation's creation records nothing but, at times, the
transport's read loop going back to read after answering it (the transport is on the message's path anyway;
the outbox's flush is scheduled by the message's own events).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake model server and the clients' harnesses are the tests'

import acp  # noqa: E402

from tests.acp import harness as acp_harness  # noqa: E402
from tests.e2e import harness as lsp_harness  # noqa: E402
from tests.fake_anthropic import FakeAnthropic, Reply  # noqa: E402

TRACER = Path(__file__).resolve().parent / "crossings_tracer.py"
MESSAGE = "crossings: what does this project do?"
WAIT_S = 120.0  # the traced server is slower, the machine may be loaded: a passing run never waits it out


class Control:
    """The tracer's window, through its socket."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, command: str) -> Any:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(WAIT_S)
            s.connect(str(self.path))
            with s.makefile("rwb") as stream:
                stream.write(command.encode() + b"\n")
                stream.flush()
                return json.loads(stream.readline())


class Model:
    """The fake model server's handler: the first request after the window opened closes it."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.armed = False
        self.record: dict[str, Any] | None = None
        self.request: dict[str, Any] | None = None
        self.failed: Exception | None = None
        self.done = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if self.armed and not self.done.is_set():
            try:
                self.record = self.control.send("close")
            except (OSError, ValueError) as exc:  # the tracer went away or answered garbage: say so, not a timeout
                self.failed = exc
            self.request = body
            self.done.set()
        return Reply.text_reply("It serves an AI agent over LSP.")

    def open(self) -> None:
        self.armed = True
        answer = self.control.send("open")
        if answer != "ok":
            raise RuntimeError(f"the tracer did not open the window: {answer!r}")

    async def idle(self, seconds: float) -> None:
        """A window of ``seconds`` with nothing sent."""
        self.open()
        await asyncio.sleep(seconds)
        self.record = await asyncio.to_thread(self.control.send, "close")

    async def wait(self) -> dict[str, Any]:
        if not await asyncio.to_thread(self.done.wait, WAIT_S):
            raise TimeoutError(f"the fake model server received no request within {WAIT_S:.0f} s of the message: "
                               "the server took it but did not ask the model; check that this tree's server "
                               "answers a message (its end-to-end tests) and that the machine is not overloaded")
        if self.failed is not None:
            raise RuntimeError(f"the tracer did not close the window ({self.failed}): did the server exit?")
        assert self.record is not None
        return self.record


async def _lsp(fake: FakeAnthropic, model: Model, launcher: list[str], env: dict[str, str], tmp: Path,
               idle: float | None) -> None:
    async with lsp_harness.session(fake, tmp, launcher=launcher, env=env, check_schema=False) as s:
        conversation = await s.new()
        if idle is not None:
            await model.idle(idle)
            return
        since = s.last_seq(conversation)
        model.open()
        await s.request("phoenix/sendMessage", {"conversationId": conversation, "text": MESSAGE})
        await model.wait()
        await s.wait_status(conversation, "idle", WAIT_S, since=since)


async def _acp(fake: FakeAnthropic, model: Model, launcher: list[str], env: dict[str, str], tmp: Path,
               idle: float | None) -> None:
    async with acp_harness.agent(fake, tmp, env=env, launcher=launcher) as agent:
        session = await agent.new()
        if idle is not None:
            await model.idle(idle)
            return
        model.open()
        answer = await asyncio.wait_for(agent.conn.prompt(session_id=session.session_id,
                                                          prompt=[acp.text_block(MESSAGE)]), WAIT_S)
        await model.wait()
        if answer.stop_reason != "end_turn":
            raise RuntimeError(f"the prompt ended with {answer.stop_reason!r}, not end_turn")


def measure(tree: Path, surface: str, idle: float | None = None) -> dict[str, Any]:
    """The window's record (see the tracer) for one message through ``surface`` ("lsp" or "acp"); with ``idle``,
    for a window of that many seconds in which nothing is sent."""
    with tempfile.TemporaryDirectory(prefix="crossings-") as scratch:
        tmp = Path(scratch)
        control = Control(tmp / "control.sock")
        model = Model(control)
        launcher = [sys.executable, str(TRACER), str(control.path)]
        env = {"PYTHONPATH": str(tree)}
        with FakeAnthropic() as fake:
            fake.handler = model
            drive = _acp if surface == "acp" else _lsp
            asyncio.run(drive(fake, model, launcher, env, tmp, idle))
        record = model.record
        assert record is not None
        if not str(record["package"]).startswith(str(tree) + "/"):
            raise RuntimeError(f"the server ran {record['package']}, not the tree's {tree}: is the tree a checkout "
                               "of this repository?")
        if idle is None and MESSAGE not in json.dumps(model.request):
            raise RuntimeError("the first model request in the window does not carry the message: the window "
                               "ended on another request")
        return record


def label(tree: Path) -> str:
    """The tree by its commit (``commit 7a7e213``; ``+`` when its package differs from it), else by its path."""
    try:
        commit = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h"], capture_output=True,
                                text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "phoenix_lsp"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(tree)
    return f"commit {commit}{'+' if changed else ''}" if commit else str(tree)


def report(record: dict[str, Any], surface: str, tree: Path, idle: float | None = None) -> str:
    counted = sorted(record["counted"].items(), key=lambda item: item[1]["order"])
    if idle is None:
        lines = [f"{surface}: a user message crosses {len(counted)} modules on its way to the model ({label(tree)})"]
    else:
        lines = [f"{surface}: {len(counted)} modules run in {idle:g} s with no message ({label(tree)})"]
    width = max((len(name) for name, _ in counted), default=0)
    for name, seen in counted:
        lines.append(f"  {name:<{width}}  {seen['calls']:>4} calls, first {seen['first']}")
    imported = [name for name in record["imports"] if name not in record["counted"]]
    if imported:
        lines.append(f"not counted, run only by an import in the window: {', '.join(imported)}")
    for thread, names in record["background"].items():
        lines.append(f"not counted, on the background thread {thread}: {', '.join(names)}")
    return "\n".join(lines)


def difference(before: dict[str, Any], after: dict[str, Any]) -> str:
    old, new = set(before["counted"]), set(after["counted"])
    return "\n".join([f"before {len(old)}, after {len(new)} modules",
                      f"  only before: {', '.join(sorted(old - new)) or '-'}",
                      f"  only after: {', '.join(sorted(new - old)) or '-'}"])


def _tree(parser: argparse.ArgumentParser, path: Path) -> Path:
    tree = path.resolve()
    if not (tree / "phoenix_lsp" / "__main__.py").is_file():
        parser.error(f"{tree} has no phoenix_lsp/__main__.py: name a checkout of this repository")
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/crossings.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--acp", action="store_true", help="the ACP adapter (session/prompt) instead of LSP")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the tree whose server runs (its PYTHONPATH; "
                        "default: this one)")
    parser.add_argument("--before", type=Path, metavar="TREE", help="measure this tree too, first, and print "
                        "which modules only one of the two crosses")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.add_argument("--idle", type=float, metavar="SECONDS", help="a window this long with no message sent")
    args = parser.parse_args(argv)
    surface = "acp" if args.acp else "lsp"
    trees = {"before": _tree(parser, args.before)} if args.before else {}
    trees["after" if args.before else "measured"] = _tree(parser, args.tree)
    records = {label: measure(tree, surface, args.idle) for label, tree in trees.items()}
    if args.json:
        print(json.dumps(records if args.before else records["measured"], indent=1))
        return 0
    print("\n\n".join(report(records[label], surface, tree, args.idle) for label, tree in trees.items()))
    if args.before:
        print("\n" + difference(records["before"], records["after"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
