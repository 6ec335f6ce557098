"""``phoenix-lsp run``: one headless turn (issue 38, specs/run.md), on the same hub every adapter builds.

Like ``acp_boot.py`` this module knows both sides: it builds the hub with ``boot.build_hub`` (the same store,
settings, model router, sandbox and agent route as the LSP server's) around the run's client (``run/client.py``),
and drives one turn through the use cases: a conversation started, or found (``--resume``, ``--continue``), its
mode and model chosen, the message sent on its route. The run only translates its options to them and their
answers to its output and exit code; every rule (attachments, deny-read list, route, limits, permissions) is
theirs and the core's."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from .. import __name__ as _pkg
from .. import limits
from ..core.events import Restore
from ..core.mcp_names import is_mcp
from ..core.state import RESTING_KINDS
from ..core.tools import TOOL_KINDS
from ..core.values import Mode
from ..protocol.base import to_wire
from ..protocol.run import RunResult, RunStatus
from ..safe_text import terminal_safe
from ..sandbox import probe
from . import logs
from .adapter import Conversation, Conversations
from .boot import build_hub
from .run import exits
from .run.client import RunClient
from .run.prompt import Prompt, PromptError, context_attachment, read_prompt
from .usecases import choices, conversations, models
from .usecases import send_message as send
from .usecases.errors import Invalid, Refused

log = logging.getLogger(_pkg)

@dataclass(frozen=True)
class RunOptions:
    output_format: str = "text"
    mode: str = "restricted"
    allow: tuple[str, ...] = ()
    max_turns: int | None = None
    resume: str | None = None
    latest: bool = False  # --continue
    model: str | None = None
    route: str | None = None
    cwd: str = "."
    data_dir: str | None = None


class RunError(Exception):
    """The run cannot go on: ``code`` is its exit code, the message says what, why and what to do."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _line(stream: TextIO, inert: bool) -> Callable[[str], None]:
    """One line on ``stream``, flushed; once the reader has gone (``| head -1``) the rest is dropped: the turn
    goes on and is stored. ``inert``: the line is for a person (the text answer, a message on stderr), so its
    terminal control sequences are made visible and inert by the one sanitiser (REQ-SEC-004): the model's words
    and a service's error text may carry what a hostile party chose. The JSON formats' lines are for programs
    (JSON escapes the C0 controls, ESC included) and are written as they are."""
    closed: list[bool] = []

    def write(text: str) -> None:
        if closed:
            return
        if inert:
            text = terminal_safe(text)
        try:
            stream.write(text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the stream was closed
            closed.append(True)
    return write


async def _open(hub: Conversations, options: RunOptions) -> Conversation:
    """The run's conversation: the one --resume names, this folder's latest (--continue), or a new one."""
    try:
        folder = await asyncio.to_thread(conversations.session_folder, options.cwd, "--cwd")
    except Invalid as exc:
        raise RunError(exits.USAGE, f"{exc.field}: {exc.reason}") from None
    if options.resume is not None:
        try:
            return conversations.resume(hub, options.resume, folder)
        except conversations.Unknown:
            raise RunError(exits.USAGE, f"--resume: no conversation {options.resume[:80]!r} is stored in "
                           f"{hub.data_dir}: use an id a run printed (its sessionId), or --continue for this "
                           "folder's latest.") from None
        except conversations.Unreadable as exc:
            raise RunError(exits.FAILED, str(exc)) from None
        except conversations.SubAgent as exc:
            raise RunError(exits.USAGE, f"--resume: {exc}: resume that one.") from None
        except conversations.OtherFolder as exc:
            raise RunError(exits.USAGE, f"--resume: {exc}: run phoenix-lsp run --cwd {exc.folder} --resume "
                           f"{exc.conversation_id} to go on with it there.") from None
    if options.latest:
        latest = conversations.latest_in(hub, folder)
        if latest is None:
            raise RunError(exits.USAGE, f"--continue: no conversation of {folder} is stored in {hub.data_dir}: run "
                           "without --continue to start one.")
        return latest
    if options.model is not None:
        try:
            models.check_model(hub.llm, options.model)
        except Invalid as exc:
            raise RunError(exits.USAGE, f"--model: {exc.reason}") from None
    else:
        await models.default_settled(hub, timeout=limits.RUN_LIST_WAIT_S)  # leaves at once, on the listed default
    found_instructions = await asyncio.to_thread(conversations.folder_instructions, hub, folder)
    return conversations.start(hub, conversations.Start(folder, found_instructions, model=options.model))


async def _settle(client: RunClient, conversation: Conversation) -> None:
    """A resumed conversation that an earlier run or server left in a turn: restored (what waits for a person is
    asked, so denied at once, and the rest stopped), and its turn waited for."""
    if conversation.state.status.kind in RESTING_KINDS:
        return
    client.turn = asyncio.get_running_loop().create_future()
    conversation.apply(Restore())
    if conversation.busy:
        await client.turn


def _choose(hub: Conversations, conversation: Conversation, options: RunOptions) -> None:
    try:
        choices.set_mode(conversation, Mode(options.mode))
        if options.model is not None and options.model != conversation.state.model:
            models.choose_model(hub, conversation, options.model)
    except Invalid as exc:
        raise RunError(exits.USAGE, f"--{exc.field}: {exc.reason}") from None
    except Refused as exc:
        raise RunError(exits.USAGE, exc.reject.message) from None


def _send(hub: Conversations, conversation: Conversation, prompt: Prompt, options: RunOptions) -> None:
    context = prompt.context
    message = send.Message(text=prompt.text, attachment_count=0 if context is None else 1,
                           read_attachments=lambda: () if context is None else (context_attachment(context),),
                           route=options.route)
    try:
        send.send_message(hub, conversation, message)
    except Invalid as exc:
        raise RunError(exits.USAGE, f"{'--route' if exc.field == 'route' else exc.field}: {exc.reason}") from None
    except Refused as exc:
        raise RunError(exits.FAILED, f"the message was refused: {exc.reject.message}") from None


def _answer(conversation: Conversation, since: int) -> str:
    for message in reversed(conversation.state.history[since:]):
        if message.role == "assistant" and message.text().strip():
            return str(message.text())
    return ""


def _outcome(conversation: Conversation, client: RunClient, killed: list[int]) -> tuple[RunStatus, int, str | None]:
    status = conversation.state.status
    if killed:
        code = exits.KILLED.get(signal.Signals(killed[0]), 128 + killed[0])
        return "killed", code, (f"stopped by {signal.Signals(killed[0]).name}: the turn was cancelled; what it "
                                "streamed is stored (--resume goes on with it).")
    if client.limited:
        return "limit", exits.LIMIT, (f"the turn was stopped after {client.max_turns} model response(s) "
                                     "(--max-turns): raise the limit, or --resume to go on.")
    if status.kind == "exhausted":
        return "limit", exits.LIMIT, ("the context window is full: the conversation cannot go on; start a new "
                                     "one (without --resume / --continue).")
    if status.kind == "error":
        return "failed", exits.FAILED, str(getattr(status, "message", "") or "the turn failed")
    if client.errors:  # the runtime stopped the turn (a change that could not be stored) and came to rest
        return "failed", exits.FAILED, client.errors[-1]
    return "success", exits.SUCCESS, None


async def _run(options: RunOptions, prompt: Prompt, out: TextIO, err: TextIO) -> int:
    write, tell = _line(out, inert=options.output_format == "text"), _line(err, inert=True)
    client = RunClient(write, options.output_format == "stream-json", options.allow, options.max_turns)
    hub, _settings = build_hub(None, options.data_dir, tell, probe(), client)
    client.hub = hub
    logs.to_stream(err, hub.store.guard, "phoenix-lsp run")  # logs go to stderr (and the log file), never stdout
    loop = asyncio.get_running_loop()
    killed: list[int] = []
    conversation: Conversation | None = None

    def stop(signum: int) -> None:
        killed.append(signum)
        if conversation is not None and conversation.busy:
            conversations.cancel(conversation)  # the turn stops; an open question runs nothing
        client.end_turn("killed")

    try:
        for signum in exits.KILLED:
            loop.add_signal_handler(signum, stop, signum)
        try:
            conversation = await _open(hub, options)
            client.conversation_id = conversation.id
            await _settle(client, conversation)
            _choose(hub, conversation, options)
            since = len(conversation.state.history)
            client.turn = loop.create_future()
            if not killed:
                _send(hub, conversation, prompt, options)
            if conversation.busy and not killed:
                await client.turn
        except RunError as exc:
            tell(f"phoenix-lsp run: {exc}")
            if conversation is None or options.output_format == "text":
                return exc.code
            _result(write, conversation, client, ("usage" if exc.code == exits.USAGE else "failed"), exc.code, str(exc),
                     len(conversation.state.history))
            return exc.code
        await _stop(hub)  # a cancelled tool's last events (its toolEnd) go out before the result
        status, code, error = _outcome(conversation, client, killed)
        if error is not None:
            tell(f"phoenix-lsp run: {error}")
        if options.output_format == "text":
            answer = _answer(conversation, since)
            if answer:
                write(answer)
        else:
            _result(write, conversation, client, status, code, error, since)
        return code
    finally:
        for signum in exits.KILLED:
            loop.remove_signal_handler(signum)
        await _stop(hub)
        hub.close()


async def _stop(hub: Conversations) -> None:
    """End what the turn started (its tasks, background commands, the agent route's workers), each waited for.
    Idempotent."""
    await asyncio.to_thread(hub.stop)  # blocking: off the loop, which the tasks' cancellation needs
    if hub.tasks:
        await asyncio.wait(list(hub.tasks), timeout=10)


def _result(write: Callable[[str], None], conversation: Conversation, client: RunClient,
            status: RunStatus, code: int, error: str | None, since: int) -> None:
    state = conversation.state
    result = RunResult(session_id=conversation.id, status=status, exit_code=code, conversation_status=state.status.kind,
                       answer=_answer(conversation, since), error=error, model=state.model, mode=state.mode,
                       turns=client.turns, usage=client.usage, denied=list(client.denied))
    write(json.dumps(to_wire(result), ensure_ascii=False))


def run(options: RunOptions, prompt: Prompt) -> int:
    """Run one turn; the exit code. The process ends here (as the servers do): every change is stored as made."""
    code = exits.FAILED
    try:
        code = asyncio.run(_run(options, prompt, sys.stdout, sys.stderr))
    except KeyboardInterrupt:
        code = exits.KILLED[signal.SIGINT]
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def check_allow(rules: Sequence[str]) -> None:
    """Each --allow rule names a tool the model can call (``bash``, ``patch``, ``bash: git status *``,
    ``mcp__tracker__*``); whether it is one of a call's Always Allow scopes is the core's to decide when the call
    comes (REQ-RUN-006)."""
    for rule in rules:
        tool = rule.split(":", 1)[0].strip()
        if tool not in TOOL_KINDS and not is_mcp(tool):
            raise RunError(exits.USAGE, f"--allow {rule[:80]!r}: {tool[:40]!r} is not a tool; a rule is written as "
                           "Always Allow offers it: a tool (patch, bash, mcp__server__tool, mcp__server__*) or "
                           "'bash: PREFIX *' (e.g. --allow 'bash: git status *').")


def main(args: argparse.Namespace) -> int:
    """``phoenix-lsp run``: the options and the prompt checked, then one turn (:func:`run`)."""
    options = RunOptions(output_format=args.output_format, mode=args.mode, allow=tuple(args.allow or ()),
                         max_turns=args.max_turns, resume=args.resume, latest=args.latest, model=args.model,
                         route=args.route, cwd=args.cwd, data_dir=args.data_dir)
    try:
        check_allow(options.allow)
        if options.max_turns is not None and options.max_turns < 1:
            raise RunError(exits.USAGE, f"--max-turns {options.max_turns}: give at least 1 (model responses).")
        prompt = read_prompt(args.prompt, sys.stdin.buffer if sys.stdin else None,
                             bool(sys.stdin and sys.stdin.isatty()))
    except (RunError, PromptError) as exc:
        sys.stderr.write(terminal_safe(f"phoenix-lsp run: {exc}") + "\n")
        return exc.code if isinstance(exc, RunError) else exits.USAGE
    return run(options, prompt)
