"""What the terminal client knows of the conversation it talks in: its status, mode and open questions, kept
up to date by the events and read by the prompt loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..core.mcp_names import server_part
from ..protocol.catch_up import EventSeq
from ..protocol.statuses import StatusKind
from .approval import ApprovedDiffs
from .wording import scope_words


@dataclass
class Question:
    """An open approval or upgrade request, or the server's ``window/showMessageRequest`` (such as a project's MCP
    server asking for consent, REQ-MCP-009), waiting for the user's answer."""

    kind: str  # "approval" | "upgrade" | "choice"
    conversation_id: str
    tool_use_id: str
    text: list[str] = field(default_factory=list)
    shown: bool = False
    #: Always Allow's scopes as (rule, label), narrowest first: `a` takes the first, `t` the whole tool (`s`
    #: the whole server, for an MCP tool)
    scopes: list[tuple[str, str]] = field(default_factory=list)
    #: a choice's titles, and where the one the user picks goes (None: no answer)
    choices: list[str] = field(default_factory=list)
    answered: asyncio.Future[str | None] | None = None

    def settle(self, title: str | None) -> None:
        """A choice is answered (or dropped, with None)."""
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(title)
    #: the whole call, shown when the user answers ``w`` (an approval)
    whole: list[str] = field(default_factory=list)
    #: the diff the approval showed: once approved, the edit that makes it is not drawn again
    diff: str | None = None

    @property
    def ask(self) -> str:
        if self.kind == "choice":
            return " / ".join(f"[{n}] {t}" for n, t in enumerate(self.choices, 1)) + ": "
        if self.kind != "approval":
            return "Approve? [y/n]: "
        if len(self.scopes) > 1:
            return f"Allow? [y]es / [n]o / [a]lways / [{self.wide_key}]{self.wide_word}: "
        return "Allow? [y]es / [n]o / [a]lways: "

    @property
    def wide_key(self) -> str:
        """The key of the widest Always Allow: ``s`` for an MCP tool's whole server, else ``t`` (the whole tool)."""
        return "s" if self.scopes and server_part(self.scopes[-1][0]) is not None else "t"

    @property
    def wide_word(self) -> str:
        return "erver" if self.wide_key == "s" else "ool"

    @property
    def retry_prompt(self) -> str:
        if len(self.scopes) > 1:
            narrow, wide = (scope_words(label) for _, label in (self.scopes[0], self.scopes[-1]))
            every = "" if self.wide_key == "s" else ", every call"
            return (f"Please answer y (allow), n (deny), a (always allow {narrow}) or {self.wide_key} (always allow "
                    f"{wide}{every}): ")
        return "Please answer y (allow), n (deny) or a (always allow): "



@dataclass
class Conversation:
    """The conversation as the client sees it."""

    id: str = ""
    status: StatusKind = "idle"
    mode: str = ""
    questions: list[Question] = field(default_factory=list)
    #: tool names by tool use id, from each call's start until its end
    tool_names: dict[str, str] = field(default_factory=dict)
    #: the event kinds this client could not read, each said once (REQ-PROTO-055)
    unknown_kinds: set[str] = field(default_factory=set)
    #: the catch-up rule (REQ-PROTO-007)
    seq: EventSeq = field(default_factory=EventSeq)
    #: the status turned to ``error``; its ``error`` event (sent just after) is shown before the prompt
    error_pending: bool = False
    #: the diffs the user approved, until their edits are written (then not drawn again)
    approved: ApprovedDiffs = field(default_factory=ApprovedDiffs)

    def switch(self, conversation_id: str, mode: str, status: StatusKind = "idle", last_seq: int = 0) -> None:
        """The client now talks in another conversation (a new one, or one resumed): what it knew of the
        previous one is dropped, and its events are counted from ``last_seq``."""
        self.id, self.mode, self.status = conversation_id, mode, status
        for question in self.questions:
            question.settle(None)
        self.questions.clear()
        self.tool_names.clear()
        self.seq = EventSeq(last_seq)
        self.error_pending = False

    def drop_questions(self) -> None:
        """The turn is over: its open questions (not a sub-agent's) can no longer be answered."""
        for question in self.questions:
            if question.conversation_id == self.id:
                question.settle(None)
        self.questions = [q for q in self.questions if q.conversation_id != self.id]
