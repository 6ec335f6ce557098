"""What the terminal client does with a line typed at the prompt (a message or a ``/command``) and with the
answer to an open question (REQ-PROTO-035).

Over 300 lines: one dispatcher of the chat's slash commands, each a short translation to one request and its answer.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from pygls.exceptions import JsonRpcException

from ..protocol.results import (
    GetConversationResult,
    GetRouteResult,
    ListModelsResult,
    ReviewBackgroundResult,
    SendMessageResult,
    SetModelResult,
    SetRouteResult,
    SetStyleResult,
    UndoChangesResult,
)
from .conversation import Conversation, Question
from .screen import Screen
from .sessions import Found, folder_conversations, pick_line, picked
from .wording import group_by_provider, lifecycle_words, usage_lines

HELP = """\
Type a message and press Enter; the answer streams below. Commands:
  /execute          switch to Unrestricted mode (the agent may change files, after your approvals)
  /plan             switch back to Restricted mode (read-only, sandboxed)
  /style NAME       chat | discussion | plan | development | task
  /policy POLICY    interactive (ask before each write or command) | auto (do not ask)
  /model [ID]       list the models this key can use, or switch to one from the next turn
  /route [ask|agent] show the route, or switch every message from now on (agent: orchestrated scripts with
                    the MCP tools; the choice is kept for every client of this machine)
  /new              start a new conversation in this folder
  /conversations [N] list this folder's conversations, or switch to number N of that list
  /undo [ID]        take back the latest accepted change set (a command's reviewed changes, a patch), or
                    the one named ID; a file changed since is kept as it is
  /background [PID] [stop]  what a running background command changed so far (read-only), or with
                    stop: stop it, then review all it changed like any command's changes
  /usage            tokens used so far (sub-agents included), how much came from the cache, estimated cost
  /help             this text
  /quit             leave (Ctrl-D at the prompt does the same)
While the agent works, Ctrl-C cancels the current turn. Approvals: y = allow, n = deny, a = always allow
this tool in this conversation. Upgrade requests: y = approve, n = deny."""


ROUTES = ("ask", "agent")
STYLES = ("chat", "discussion", "plan", "development", "task")
POLICIES = ("auto", "interactive")

_COMMAND = re.compile(r"^/[a-z]+$")


class Sessions(Protocol):
    """What opens a conversation for ``/new`` and ``/conversations`` (the chat: terminal.py)."""

    cwd: Path

    async def open_new(self) -> bool: ...

    async def open_existing(self, conversation_id: str) -> bool: ...


class Commands:
    """Turns the user's lines into requests to the server."""

    def __init__(self, conv: Conversation, screen: Screen,
                 request: Callable[[str, dict[str, Any]], Awaitable[Any]], sessions: Sessions | None = None) -> None:
        self.conv = conv
        self.screen = screen
        self.request = request
        self.sessions = sessions

    async def handle_line(self, line: str) -> bool:
        """A line typed at the prompt: a command or a message. False = leave."""
        text = line.strip()
        if not text:
            return True
        command, _, argument = text.partition(" ")
        argument = argument.strip()
        if not _COMMAND.match(command):
            await self.send(line)
            return True
        if command in ("/quit", "/exit"):
            return False
        if command == "/help":
            self.screen.line(HELP)
        elif command in ("/execute", "/plan"):
            if argument:
                self.screen.line(f"{command} takes no argument; send it alone, then your message.", "yellow")
            else:
                await self.send(command)
        elif command == "/style":
            if argument not in STYLES:
                self.screen.line(f"Usage: /style NAME, where NAME is one of {', '.join(STYLES)}.", "yellow")
            else:
                result = await self.call("phoenix/setStyle", style=argument)
                suggestion = SetStyleResult.model_validate(result).suggestion if result is not None else None
                if suggestion is not None:
                    self.screen.line(f"[style] tip: type {suggestion.command} to switch modes.", "dim")
        elif command == "/model":
            await self.model(argument)
        elif command == "/route":
            await self.route(argument)
        elif command == "/new":
            if self.sessions is not None:
                await self.sessions.open_new()
        elif command == "/conversations":
            await self.conversations(argument)
        elif command == "/undo":
            await self.undo(argument)
        elif command == "/background":
            await self.background(argument)
        elif command == "/usage":
            result = await self.call("phoenix/getConversation", limit=1)
            if result is not None:
                for line in usage_lines(GetConversationResult.model_validate(result).usage):
                    self.screen.line(line, "dim")
        elif command == "/policy":
            if argument not in POLICIES:
                self.screen.line("Usage: /policy auto|interactive.", "yellow")
            else:
                await self.call("phoenix/setApprovalPolicy", policy=argument)
        else:
            self.screen.line(f"Unknown command {command}; /help lists the commands.", "yellow")
        return True

    async def undo(self, change_set: str) -> None:
        """``/undo [ID]``: the latest accepted change set (or ID) taken back (REQ-BASH-041); the text files arrive
        as one workspace edit, which this client shows and writes like any other."""
        if " " in change_set:
            self.screen.line("Usage: /undo [ID] (the change set's id, as a command's result named it).", "yellow")
            return
        result = await self.call("phoenix/undoChanges", changeSetId=change_set or "latest")
        if result is None:
            return
        done = UndoChangesResult.model_validate(result)
        self.screen.line(f"[undo] {done.message}", "green" if done.undone and not done.refused else "yellow")
        for refused in done.refused:
            self.screen.line(f"  kept: {refused.path}: {refused.why}", "yellow")

    async def background(self, argument: str) -> None:
        """``/background [PID] [stop]``: a running background command's changes so far, read-only, or the command
        stopped so that all it changed is reviewed (REQ-BASH-045)."""
        words = argument.split()
        stop = "stop" in words
        rest = [w for w in words if w != "stop"]
        if len(rest) > 1 or (rest and not rest[0].isdigit()):
            self.screen.line("Usage: /background [PID] [stop] (the PID its result named).", "yellow")
            return
        params: dict[str, object] = {"stop": stop}
        if rest:
            params["pid"] = int(rest[0])
        result = await self.call("phoenix/reviewBackground", **params)
        if result is None:
            return
        done = ReviewBackgroundResult.model_validate(result)
        self.screen.line(f"[background] {done.message}", "green")
        for command in done.commands:
            self.screen.line(f"  PID {command.pid} `{command.command[:80]}`: {command.summary.splitlines()[0]}")
            for path in command.files[:40]:
                self.screen.line(f"    {path}")
            if command.diff and not stop:
                self.screen.line(command.diff.rstrip("\n"))

    async def route(self, route: str) -> None:
        """``/route``: the route in use; ``/route ask|agent``: switch to it (REQ-PROTO-051, REQ-PROTO-052)."""
        try:
            if not route:
                current = GetRouteResult.model_validate(await self.request("phoenix/getRoute", {})).route
                self.screen.line(f"[route] {current} (switch with /route ask|agent)", "cyan")
            elif route not in ROUTES:
                self.screen.line(f"Usage: /route ask|agent ({route!r} is neither).", "yellow")
            else:
                result = SetRouteResult.model_validate(await self.request("phoenix/setRoute", {"route": route}))
                if result.route == result.previous:
                    self.screen.line(f"[route] already {result.route}", "dim")
                else:
                    self.screen.line(f"[route] {result.route} from the next message (was {result.previous})", "cyan")
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")

    async def conversations(self, argument: str) -> None:
        """``/conversations``: this folder's conversations, numbered; ``/conversations N``: switch to one."""
        if self.sessions is None:
            return
        try:
            found: list[Found] = await folder_conversations(self.request, self.sessions.cwd)
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return
        if not argument:
            self.screen.line(f"Conversations in {self.sessions.cwd} (latest first; * = this one):", "bold")
            for number, one in enumerate(found, 1):
                mark = "*" if one.id == self.conv.id else " "
                self.screen.line(mark + pick_line(number, one)[1:])
            self.screen.line("Switch with /conversations N; /new starts another.", "dim")
            return
        choice = picked(argument, found)
        if choice is None:
            self.screen.line(f"{argument!r} is not in the list of this folder's conversations: /conversations "
                             "lists them with their numbers.", "yellow")
        elif choice.id == self.conv.id:
            self.screen.line(f"[conversations] already in {choice.id[:8]}", "dim")
        else:
            await self.sessions.open_existing(choice.id)

    async def model(self, model: str) -> None:
        """``/model``: the models to choose from (the one in use marked); ``/model ID``: switch to it."""
        if model:
            result = await self.call("phoenix/setModel", model=model)
            if result is not None and not SetModelResult.model_validate(result).changed:
                self.screen.line(f"[model] already {model}", "dim")
            return
        current = await self.call("phoenix/getConversation", limit=1)
        try:
            listed = ListModelsResult.model_validate(await self.request("phoenix/listModels", {}))
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return
        in_use = GetConversationResult.model_validate(current).model if current is not None else None
        for provider, models in group_by_provider(listed.models):  # one heading per provider (issue 27)
            self.screen.line(f"{provider}:", "bold")
            for m in models:
                mark = "*" if m.id == in_use else " "
                unknown = m.context_window_known is False
                window = f"{m.context_window:,} tokens" + (", assumed: set it in the providers file" if unknown else "")
                stage = lifecycle_words(m)  # REQ-MODEL-014: a deprecated model says when it retires
                self.screen.line(f"{mark} {m.id:<28} {m.name} ({window}{'; ' + stage if stage else ''})",
                                 "yellow" if stage else "dim")
        if listed.reason:
            self.screen.line(listed.reason, "yellow")
        for listing in listed.providers or []:
            if listing.reason:
                self.screen.line(listing.reason, "yellow")
        self.screen.line("Switch with /model ID (from the next turn).", "dim")

    async def call(self, method: str, **params: Any) -> dict[str, Any] | None:
        try:
            result = await self.request(method, {"conversationId": self.conv.id, **params})
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
            return None
        except Exception as exc:  # the server went away mid-request: the loop reports it
            self.screen.line(f"[error] {method} failed: {exc}", "red")
            return None
        return result if isinstance(result, dict) else {}

    async def send(self, text: str) -> None:
        """Send a message (or /execute, /plan); the turn's progress arrives as events."""
        mode_before = self.conv.mode
        result = await self.call("phoenix/sendMessage", text=text)
        if result is None:
            return
        sent = SendMessageResult.model_validate(result)
        if sent.command:
            mode = sent.mode.value if sent.mode else self.conv.mode
            self.conv.mode = mode
            if mode == mode_before:
                self.screen.line(f"[mode] already {mode}.", "cyan")

    async def answer(self, question: Question, text: str) -> None:
        """Answer the open question with the user's line (asks again on anything but a valid answer)."""
        word = text.strip().lower()
        params: dict[str, Any]
        if question.kind == "choice":  # the server's window/showMessageRequest: a number, or y / n for two
            picks = {str(n): t for n, t in enumerate(question.choices, 1)}
            if len(question.choices) == 2:
                picks |= {"y": question.choices[0], "yes": question.choices[0], "n": question.choices[1],
                          "no": question.choices[1]}
            title = picks.get(word)
            if title is None:
                self.screen.prompt(f"Please answer a number from 1 to {len(question.choices)}: ", "bold+yellow")
                return
            if question in self.conv.questions:
                self.conv.questions.remove(question)
            question.settle(title)
            return
        if question.kind == "approval" and word in ("w", "whole") and question.whole:
            for line in question.whole:  # the whole call, then the same question again
                self.screen.line(line, "dim")
            self.screen.prompt(question.ask, "bold+yellow")
            return
        if question.kind == "approval":
            words = {"y": "allow", "yes": "allow", "n": "deny", "no": "deny", "a": "alwaysAllow",
                     "always": "alwaysAllow"}
            wide = (question.wide_key, "server" if question.wide_key == "s" else "tool")
            if len(question.scopes) > 1:
                words |= dict.fromkeys(wide, "alwaysAllow")
            decision = words.get(word)
            if decision is None:
                self.screen.prompt(question.retry_prompt, "bold+yellow")
                return
            method = "phoenix/respondToApproval"
            params = {"conversationId": question.conversation_id, "toolUseId": question.tool_use_id,
                      "decision": decision}
            if decision == "alwaysAllow" and question.scopes:  # REQ-PERM-020: the scope the user chose
                params["rule"] = question.scopes[-1 if word in wide else 0][0]
        else:
            approve = {"y": True, "yes": True, "n": False, "no": False}.get(word)
            if approve is None:
                self.screen.prompt("Please answer y (approve) or n (deny): ", "bold+yellow")
                return
            method = "phoenix/respondToModeUpgrade"
            params = {"conversationId": question.conversation_id, "approve": approve,
                      "toolUseId": question.tool_use_id}
        if question in self.conv.questions:
            self.conv.questions.remove(question)
        if question.diff and params.get("decision") in ("allow", "alwaysAllow"):
            self.conv.approved.add(question.diff)
        try:
            await self.request(method, params)
        except JsonRpcException as exc:
            self.screen.line(f"[error] {exc.message}", "red")
        except Exception as exc:
            self.screen.line(f"[error] the answer could not be sent ({exc}).", "red")

