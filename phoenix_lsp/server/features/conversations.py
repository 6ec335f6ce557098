"""Conversations: create (or continue), list, read with catch-up, and ask for the continuation summary."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import cast

from ... import uris
from ...core import events, values
from ...core import state as core_state
from ...core.state import StatusKind
from ...core.values import InstructionFile
from ...protocol import params as p
from ...protocol import results as res
from ...protocol import views
from ...protocol.views import SandboxInfo
from .. import wire
from ..capabilities import sandbox_info
from ..errors import PhoenixError, invalid
from ..lsp import PhoenixServer
from ..requests import Handler, apply, conversation, hub
from ..runtime import Runtime
from ..usecases import conversations as usecase
from ..usecases.errors import Invalid
from .models import check_model


def sandbox_view(sandbox: object) -> SandboxInfo:
    return views.SandboxInfo.model_validate(sandbox_info(sandbox))


def workspace_roots(ls: PhoenixServer) -> list[Path]:
    """The editor's workspace folders (project instructions are read from the one holding the working
    directory down to it; a file in one may be attached). A folder that names no local file (REQ-URI-001), or
    that could not be a session's folder (``/``, the home folder or above it, REQ-URI-002), is none: in it every
    file would count as the project's."""
    homes = uris.home_folders()
    roots: list[Path] = []
    for uri in [f.uri for f in ls.workspace.folders.values()] + [ls.workspace.root_uri or ""]:
        try:
            roots.append(Path(uris.check_session_folder(uris.file_path(uri), homes)))
        except uris.UriError:
            continue
    return roots


def _root(ls: PhoenixServer) -> str | None:
    """The editor's workspace root as a path, or None when it names no local folder."""
    try:
        return uris.file_path(ls.workspace.root_uri or "")
    except uris.UriError:
        return None


def read_instructions(ls: PhoenixServer, working_directory: str) -> tuple[str, tuple[InstructionFile, ...]]:
    """The instructions in effect; the files are read by the confined reader (a worker thread waited for a
    bounded time when called on the event loop, REQ-READ-005), with the deny-read list (REQ-READ-004)."""
    return instructions_reader(ls, working_directory)()


def instructions_reader(ls: PhoenixServer,
                        working_directory: str) -> Callable[[], tuple[str, tuple[InstructionFile, ...]]]:
    """What :func:`read_instructions` does, as a function that touches no server state (for a thread)."""
    h = hub(ls)
    roots = workspace_roots(ls)

    def read() -> tuple[str, tuple[InstructionFile, ...]]:
        return usecase.project_instructions(h, working_directory, roots)

    return read


def instruction_views(files: tuple[InstructionFile, ...]) -> list[res.InstructionFileView]:
    return [res.InstructionFileView(path=f.path, size=f.size, kept=f.kept, problem=f.problem) for f in files]


def new_conversation(ls: PhoenixServer, p: p.NewConversationParams) -> res.NewConversationResult:
    conversations = hub(ls)
    given = p.working_directory  # absent means the workspace root; empty is refused by its model
    cwd = given if given is not None else _root(ls) or os.getcwd()
    try:  # REQ-URI-002: the one session-folder rule (not /, not the home folder nor one that holds it)
        working_directory = usecase.session_folder(cwd, "workingDirectory")
    except Invalid as exc:
        raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    if p.model is not None:
        check_model(ls, p.model)  # REQ-MODEL-007: the id is validated here too, not only by setModel
    origin: Runtime | None = None
    if p.continue_from:
        origin = conversation(ls, p.continue_from)
        if not isinstance(origin.state.status, core_state.Exhausted):
            raise PhoenixError("notAllowed", "continueFrom must name a conversation whose context is "
                               "exhausted; this one can still take messages.", reason="not_exhausted")
    seed = None
    if origin is not None and p.seed_with_summary:
        summary = origin.state.status.summary  # type: ignore[union-attr]
        text = f"[system] This conversation continues an earlier one ({origin.id}). Its summary:\n{summary}"
        seed = values.Message("user", (values.Text(text),), tag="continuation")
    runtime = conversations.get(usecase.start(conversations, usecase.Start(
        working_directory=working_directory,
        instructions=read_instructions(ls, working_directory),
        model=p.model,
        style=p.style,
        policy=p.policy,
        origin_id=origin.id if origin else None,
        seed=seed,
    )).id)
    state = runtime.state
    return res.NewConversationResult(
        conversation_id=runtime.id,
        mode=state.mode,
        style=state.style,
        policy=state.policy,
        working_directory=state.working_directory,
        model=state.model,
        sandbox=sandbox_view(conversations.sandbox),
        continued_from=origin.id if origin else None,
    )


def list_conversations(ls: PhoenixServer, p: p.ListConversationsParams) -> res.ListConversationsResult:
    folder = None
    if p.working_directory is not None:  # held as newConversation holds a conversation's folder (REQ-URI-002)
        try:
            folder = usecase.session_folder(p.working_directory, "workingDirectory")
        except Invalid as exc:
            raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    rows = usecase.list_conversations(hub(ls), include_subagents=p.include_sub_agents, folder=folder)
    return res.ListConversationsResult(
        conversations=[
            res.ConversationSummary(
                conversation_id=row.id,
                title=row.title,
                status=cast(StatusKind, row.status),  # the store keeps status.kind; the model checks it
                model=row.model,
                created_at=row.created_at,
                updated_at=row.updated_at,
                message_count=row.message_count,
                working_directory=row.working_directory,
                continued_from=row.origin_id,
                parent_conversation_id=row.parent_id,
            )
            for row in rows
        ]
    )


async def get_conversation(ls: PhoenixServer, p: p.GetConversationParams) -> res.GetConversationResult:
    if p.working_directory is not None:  # the client goes on with it there: the one resume rule
        await _resumable(ls, p.conversation_id, p.working_directory)
    runtime = conversation(ls, p.conversation_id)
    store = hub(ls).store
    after = p.after_seq or 0
    start = store.first_index_after_seq(runtime.id, after) if after > 0 else 0
    page = store.load_messages(runtime.id, after=start - 1, limit=p.limit + 1)
    messages = []
    for index, text in page[: p.limit]:
        body = json.loads(text)
        messages.append(wire.message_to_wire(runtime.state.history[index], body["seq"], index, body["time"],
                                               store.image_size))
        if len(messages) % 200 == 0:
            await asyncio.sleep(0)  # let $/cancelRequest in on huge histories
    state = runtime.state
    children = [c for c in store.list_conversations(include_subagents=True) if c.parent_id == runtime.id]
    status = state.status
    approval = None
    if isinstance(status, core_state.AwaitingApproval):  # the same fields as the approvalRequested event
        # the question open is a host call's when one waits (a plan's MCP call, a bash command's review)
        approval = views.PendingApproval(**runtime.tools.approval_fields(status.host_call or status.batch.current))
    return res.GetConversationResult(
        conversation_id=runtime.id,
        is_sub_agent=state.is_subagent,
        status=status.kind,
        mode=state.mode,
        style=state.style,
        policy=state.policy,
        working_directory=state.working_directory,
        model=state.model,
        always_allowed=[r.label for r in state.always_allow],
        always_allow_rules=[wire.rule_to_wire(r) for r in state.always_allow],
        context_usage=runtime.notes.usage(),
        usage=views.TokenUsage.model_validate(runtime.notes.token_fields()),
        sub_agents=[views.SubAgentView(conversation_id=c.id, task=c.title, status=cast(StatusKind, c.status))
                    for c in children],
        messages=messages,
        last_seq=runtime.seq,
        has_more=len(page) > p.limit,
        sandbox=sandbox_view(hub(ls).sandbox),
        pending_approval=approval,
        pending_upgrade=wire.pending_upgrade(state),
        parent_conversation_id=state.parent_id,
        continued_from=state.origin_id,
        continuation_summary=status.summary if isinstance(status, core_state.Exhausted) else None,
        error=status.message if isinstance(status, core_state.Error) else None,
        instructions=instruction_views(state.instruction_files),
    )


async def _resumable(ls: PhoenixServer, conversation_id: str, working_directory: str) -> None:
    """Refuse a conversation the client may not go on with in ``working_directory`` (REQ-TERM-001): another
    folder's (``data.workingDirectory`` names its own, where it goes on) or a sub-agent."""
    try:
        folder = await asyncio.to_thread(usecase.session_folder, working_directory, "workingDirectory")
        usecase.resume(hub(ls), conversation_id, folder)
    except Invalid as exc:
        raise invalid(exc.field, exc.reason) from None
    except usecase.Unknown as exc:
        raise PhoenixError("conversationNotFound", str(exc), conversationId=conversation_id) from None
    except usecase.Unreadable as exc:
        raise PhoenixError("setupFailed", str(exc), conversationId=conversation_id) from None
    except usecase.SubAgent as exc:
        raise PhoenixError("notAllowed", f"{exc}: resume that one.", reason="subAgent") from None
    except usecase.OtherFolder as exc:
        raise PhoenixError("notAllowed", f"{exc}: go on with it in {exc.folder}.", reason="otherFolder",
                           workingDirectory=exc.folder) from None


async def reload_instructions(ls: PhoenixServer, p: p.ConversationRef) -> res.ReloadInstructionsResult:
    runtime = conversation(ls, p.conversation_id)
    before = runtime.state.instructions
    text, files = await asyncio.to_thread(instructions_reader(ls, runtime.state.working_directory))
    apply(runtime, events.SetInstructions(text, files))
    state = runtime.state
    return res.ReloadInstructionsResult(
        instructions=instruction_views(state.instruction_files), changed=state.instructions != before
    )


def trigger_continuation(ls: PhoenixServer, p: p.ConversationRef) -> res.TriggerContinuationResult:
    runtime = conversation(ls, p.conversation_id)
    apply(runtime, events.TriggerContinuation())
    return res.TriggerContinuationResult(status=runtime.state.status.kind)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/newConversation": new_conversation,
    "phoenix/listConversations": list_conversations,
    "phoenix/getConversation": get_conversation,
    "phoenix/reloadInstructions": reload_instructions,
    "phoenix/triggerContinuation": trigger_continuation,
}

