"""Reads and patches through the ACP client's ``fs/*`` methods (REQ-ACP-009, REQ-ACP-010).

When the client announces ``fs.writeTextFile``, an approved patch is written by the editor through
``fs/write_text_file`` (the whole new file at its absolute path): the agent never writes the file itself. Without
it a patch is refused with a message that says so, rather than writing the disk behind the editor's back. When the
client announces ``fs.readTextFile``, the file a ``read_file`` call reads, and the file a patch changes, are read
through it (the editor's unsaved text wins); otherwise, or when it does not answer in time, from disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import acp

from ...core.values import ToolUse
from ...protocol.events import Diff
from ...sandbox.denylist import deny_check
from ...tools.patch import PatchError, prepare_patch, resolve_patch_path, target_identity, verify_before_sending
from ...tools.paths import PathError, resolve_in_workspace
from ...tools.shell_changes.edit import Review, TextChange
from ...tools.shell_changes.restore import Plan, TextRestore
from ..adapter import Conversation
from ..patch_preview import read_disk
from . import updates
from .session import Session, Side

log = logging.getLogger(__name__)

NO_WRITE = (
    "The patch was not applied: this editor does not let the agent write files (it does not announce the ACP "
    "capability fs.writeTextFile), and phoenix-lsp never writes files behind the editor's back. Tell the user "
    "the change, so they can make it by hand or use an editor that offers it:\n{diff}"
)


async def read_for(client: Side, conversation: Conversation, call: ToolUse) -> Mapping[Path, str]:
    """The editor's text of the file a ``read_file`` call reads ({} when it is not asked: no fs.readTextFile,
    another tool, a path outside the working directory or in the deny-read list; the tool then says why)."""
    session = client.session_of(conversation)
    path = call.input.get("path")
    if not client.can_read or session is None or call.name != "read_file" or not isinstance(path, str):
        return {}
    try:
        target = resolve_in_workspace(Path(conversation.state.working_directory), path, for_write=False)
    except PathError:
        return {}
    text = await _editor_text(client, session.id, target)
    return {} if text is None else {target: text}


def _denied(client: Side, target: Path) -> bool:
    assert client.hub is not None
    return deny_check(client.hub.config.deny_read).entry_for(
        target, resolved=True) is not None


async def _editor_text(client: Side, session_id: str, target: Path) -> str | None:
    """The file's text as the editor has it, or None when it cannot tell or must not be asked (then the disk is
    read): the editor is never asked for a file on the deny-read list (REQ-ACP-010, REQ-ACP-016), neither for a
    read nor for the file a patch changes, whatever the mode; an answer that does not come within
    ``read_timeout_s`` is not waited for (REQ-ACP-020)."""
    if not client.can_read or _denied(client, target) or not await asyncio.to_thread(target.is_file):
        return None
    try:
        answer = await asyncio.wait_for(client.conn.read_text_file(session_id=session_id, path=str(target)),
                                        client.read_timeout_s)
    except TimeoutError:  # a client that never answers must not hold the turn (REQ-ACP-020)
        log.warning("the ACP client did not answer fs/read_text_file for %s within %g s "
                    "(PHOENIX_ACP_READ_TIMEOUT_S sets the wait); reading the disk", target, client.read_timeout_s)
        return None
    except Exception as exc:  # the editor could not read it: the disk is the truth left
        log.info("the ACP client did not read %s (%s); reading the disk", target, exc)
        return None
    return str(answer.content)


async def _original(client: Side, session_id: str, target: Path, root: Path) -> str | None:
    text = await _editor_text(client, session_id, target)
    if text is not None:
        return text
    return await asyncio.to_thread(read_disk, target, root)


async def preview(client: Side, conversation: Conversation, call: ToolUse) -> list[Any] | None:
    """A patch's ``diff`` content (absolute path, the old text of an existing file, the new text), or None when
    the patch would fail (the failure is the tool's to tell)."""
    session = client.session_of(conversation)
    root = Path(conversation.state.working_directory)
    target = resolve_patch_path(dict(call.input), root)
    if session is None or isinstance(target, PatchError):
        return None
    try:
        original = await _original(client, session.id, target, root)
    except (OSError, UnicodeDecodeError):
        return None
    prepared = prepare_patch(dict(call.input), original, clipboards=conversation.clipboards)
    if isinstance(prepared, PatchError):
        return None
    return [acp.tool_diff_content(str(target), prepared.new_text, original)]


async def apply_patch(client: Side, conversation: Conversation, call: ToolUse) -> tuple[str, bool]:
    session = client.session_of(conversation)
    root = Path(conversation.state.working_directory)
    target = resolve_patch_path(dict(call.input), root)
    if isinstance(target, PatchError):
        return target.message, True
    if session is None:
        return "The patch was not applied: no editor session holds this conversation now. Nothing changed.", True
    identity = await asyncio.to_thread(target_identity, target)
    try:
        original = await _original(client, session.id, target, root)
    except (OSError, UnicodeDecodeError) as exc:
        return f"The patch was not applied: {target.name} cannot be read as UTF-8 text ({exc}).", True
    prepared = prepare_patch(dict(call.input), original, clipboards=conversation.clipboards)
    if isinstance(prepared, PatchError):
        return prepared.message, True
    if not client.can_write:
        return NO_WRITE.format(diff=prepared.diff[:4000]), True
    diff = [acp.tool_diff_content(str(target), prepared.new_text, original)]
    client.update(session.id, acp.update_tool_call(call.id, content=diff))
    changed = verify_before_sending(dict(call.input), root, target, identity)  # REQ-PATCH-013
    if changed is not None:
        return changed.message, True
    await client.sender.drained()  # the diff is shown before the editor writes
    try:
        await client.conn.write_text_file(session_id=session.id, path=str(target), content=prepared.new_text)
    except Exception as exc:  # the client refused or failed: it says what happened
        return (f"The patch was not applied: the editor did not write {target.name} ({exc}). Nothing changed; "
                "do not retry the same edit blindly."), True
    conversation.keep_clipboards(prepared.clipboards)
    conversation.emit(Diff(tool_use_id=call.id, path=str(target), diff=prepared.diff))
    return prepared.message, False


# ------------------------------------------------------------------------- a bash command's changes (issue 36)


def cannot_write(client: Side, review: Review) -> str | None:
    """Why this client cannot write a review's text files, or None: it must announce fs.writeTextFile."""
    if review.texts and not client.can_write:
        return ("this editor does not let the agent write files (it does not announce the ACP capability "
                "fs.writeTextFile), and phoenix-lsp never writes files behind the editor's back.")
    return None


async def review_texts(client: Side, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]:
    """The editor's text of each of ``paths`` (``fs/read_text_file``: its unsaved text wins; never a file of the
    deny-read list; a file it does not answer for in time is left out, the disk then decides)."""
    session = client.session_of(conversation)
    if session is None or not client.can_read:
        return {}
    texts: dict[Path, str] = {}
    for path in paths:
        text = await _editor_text(client, session.id, path)
        if text is not None:
            texts[path] = text
    return texts


def review_content(client: Side, review: Review) -> list[Any]:
    """A review's ``diff`` content, one per text file (the old text of a file that existed, the new text; a
    deleted file's new text is empty), with every secret the server knows replaced, as in every event."""
    assert client.hub is not None
    redact = client.hub.store.guard.redact
    return [acp.tool_diff_content(str(review.path(t.path)), redact(t.after or ""),
                                  None if t.before is None else redact(t.before)) for t in review.texts]


async def write_review(client: Side, conversation: Conversation, call_id: str, review: Review) -> str | None:
    """The review's text files written by the editor, one ``fs/write_text_file`` each (created and modified
    files: deletions and renames are the server's part). None when every write was made; else why not, after the
    files already written were given their old text back (a file the editor created is named: ACP cannot
    delete it)."""
    session = client.session_of(conversation)
    if session is None:
        return "no editor session holds this conversation now."
    written: list[TextChange] = []
    for text in review.texts:
        path = str(review.path(text.path))
        try:
            await client.conn.write_text_file(session_id=session.id, path=path, content=text.after or "")
        except Exception as exc:  # the client refused or failed: what was written is taken back
            left = await _write_back(client, session.id, review, written)
            why = (f"the editor did not write {text.path} ({exc})." +
                   (f" It had created {', '.join(left)}, which it cannot be asked to delete." if left else ""))
            _end(client, session, call_id, why)
            return why
        written.append(text)
    _end(client, session, call_id, None, len(review.texts) + len(review.server.changes))
    return None


def _end(client: Side, session: Session, call_id: str, why: str | None, count: int = 0) -> None:
    """The review's tool call (shown with its question) ends: applied, or failed with why."""
    text = why if why is not None else f"Applied {count} change(s)."
    for update in session.calls.end(call_id, why is not None, updates.text_content(text)):
        client.update(session.id, update)


async def _write_back(client: Side, session_id: str, review: Review, written: list[TextChange]) -> list[str]:
    left: list[str] = []
    for text in reversed(written):
        if text.before is None:
            left.append(text.path)
            continue
        try:
            await client.conn.write_text_file(session_id=session_id, path=str(review.path(text.path)),
                                              content=text.before)
        except Exception:  # the client refused again: the file is named as left changed
            left.append(text.path)
    return left


# ------------------------------------------------------------------------- undo afterwards (issue 36)

async def write_undo(client: Side, conversation: Conversation, plan: Plan) -> str | None:
    """An undo's text files given their old text by the editor, one ``fs/write_text_file`` each (REQ-BASH-041; the
    server deleted those the change set had created). None when every write was made; else why not, after the
    files already written were given back what they held."""
    session = client.session_of(conversation)
    if session is None:
        return "no editor session holds this conversation now."
    if not client.can_write:
        return ("this editor does not let the agent write files (it does not announce the ACP capability "
                "fs.writeTextFile).")
    written: list[TextRestore] = []
    for text in plan.texts:
        assert text.before is not None  # a file to delete is the server's (undo_deletes)
        path = str(plan.folder.joinpath(*text.path.split("/")))
        try:
            await client.conn.write_text_file(session_id=session.id, path=path, content=text.before)
        except Exception as exc:  # the client refused or failed: what was written is given back
            for done in reversed(written):
                if done.now is not None:
                    with contextlib.suppress(Exception):
                        await client.conn.write_text_file(session_id=session.id, content=done.now,
                                                          path=str(plan.folder.joinpath(*done.path.split("/"))))
            return f"the editor did not write {text.path} ({exc})"
        written.append(text)
    return None
