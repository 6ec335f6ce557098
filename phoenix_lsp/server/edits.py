"""The patch tool, and a bash command's reviewed changes, as LSP workspace edits (REQ-PATCH-010/011,
REQ-BASH-032): the server never writes a text file itself.

The patch is prepared against the text the editor has (the unsaved buffer, with its version, when the
document is open; the disk file otherwise), sent as one ``workspace/applyEdit`` with minimal text edits, and
the editor's answer decides what the model is told. An undo's text part (REQ-BASH-041) is sent the same way.

Over 300 lines: the three workspace edits the server sends (a patch, a review's text part, an undo's) share the
conversions to LSP edits and the capability checks; apart, each would copy them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ..core.values import ToolUse
from ..protocol.events import Diff
from ..tools.patch import PatchError, prepare_patch, resolve_patch_path, target_identity, verify_before_sending
from ..tools.patch.edits import minimize, normalize, to_text_edits
from ..tools.patch.values import TextEdit as PatchTextEdit
from ..tools.shell_changes import ChangeKind
from ..tools.shell_changes.edit import ALL_KINDS, Review
from ..tools.shell_changes.record import keep_patch
from ..tools.shell_changes.restore import Plan
from .adapter import Conversation, SightSettings
from .confirm import check
from .patch_preview import read_disk
from .sight import EditorSight, editor_for

log = logging.getLogger(__name__)

NO_APPLY_EDIT = (
    "The patch was not applied: this editor does not support workspace/applyEdit, and phoenix-lsp never "
    "writes files behind the editor's back. Use an editor client that supports workspace edits, or make "
    "the change by hand: {diff}"
)

NO_CREATE_FILE = (
    "The patch was not applied: {path} does not exist and this editor cannot create files through a workspace "
    "edit (it does not announce the CreateFile resource operation), and phoenix-lsp never writes files behind "
    "the editor's back. Ask the user to create the file, then patch it."
)


def sight_for(ls: LanguageServer, runtime: Conversation, config: SightSettings) -> EditorSight:
    """The editor's sight for one conversation's tools (``PhoenixServer.sight_for``, which loads this module)."""
    return EditorSight(ls, runtime, config)


async def apply_patch(ls: LanguageServer, runtime: Conversation, call: ToolUse,
                      data_dir: Path | None = None) -> tuple[str, bool]:
    root = Path(runtime.state.working_directory)
    target = resolve_patch_path(dict(call.input), root)
    if isinstance(target, PatchError):
        return target.message, True
    identity = await asyncio.to_thread(target_identity, target)
    uri = target.as_uri()
    document = ls.workspace.text_documents.get(uri)
    if document is not None:
        original: str | None = document.source
        version: int | None = document.version
    else:
        try:
            original = await asyncio.to_thread(read_disk, target, root)
        except (OSError, UnicodeDecodeError) as exc:
            return f"The patch was not applied: {target.name} cannot be read as UTF-8 text ({exc}).", True
        version = None
    prepared = prepare_patch(dict(call.input), original, clipboards=runtime.clipboards)
    if isinstance(prepared, PatchError):
        return prepared.message, True
    workspace_caps = ls.client_capabilities.workspace
    if not (workspace_caps and workspace_caps.apply_edit):
        return NO_APPLY_EDIT.format(diff=prepared.diff[:4000]), True
    edit_caps = workspace_caps.workspace_edit
    operations = (edit_caps.resource_operations if edit_caps else None) or ()
    if prepared.creates_file and types.ResourceOperationKind.Create not in operations:
        return NO_CREATE_FILE.format(path=target.relative_to(root)), True
    edits = _reach_end_of_empty_document(_lsp_edits(prepared.edits), original)
    changes: list[Any] = []
    if prepared.creates_file:
        changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
    changes.append(
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=edits,
        )
    )
    edit = types.WorkspaceEdit(document_changes=changes)
    label = f"phoenix: patch {target.relative_to(root)}"
    sight = editor_for(ls, runtime)  # REQ-SIGHT-001: the problems just before the edit, to compare with after
    before = await sight.before(uri) if sight is not None else None
    changed = verify_before_sending(dict(call.input), root, target, identity)  # REQ-PATCH-013
    if changed is not None:
        return changed.message, True
    try:
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
    except Exception as exc:  # the client went away or answered with an error
        return f"The patch was not applied: the editor did not answer the edit ({exc}). Nothing changed.", True
    if document is not None and ls.workspace.text_documents.get(uri) is not None:
        current = ls.workspace.text_documents[uri].version
        if not result.applied and current != version:
            return (
                f"The patch was not applied: {target.name} changed in the editor while the edit was prepared "
                f"(version {version} -> {current}). Read the file again and retry.",
                True,
            )
    if not result.applied:
        reason = result.failure_reason or "the user or the editor rejected it"
        return f"The patch was not applied: {reason}. Nothing changed; do not retry the same edit blindly.", True
    unconfirmed = await _confirm_applied(ls, uri, version, original, prepared.new_text)
    if unconfirmed is not None:
        return unconfirmed, True
    runtime.keep_clipboards(prepared.clipboards)
    if data_dir is not None:  # REQ-BASH-040: the file's text before, kept for an undo
        await _keep_patch(data_dir, runtime, root, target, original, prepared.new_text)
    runtime.emit(Diff(tool_use_id=call.id, path=str(target), diff=prepared.diff))
    mismatch = await _check_result(ls, root, call, target, uri, original, prepared.new_text)
    if mismatch is not None:
        return f"{prepared.message}\n\nWARNING: {mismatch}", True
    if sight is not None and before is not None:
        problems = await sight.after(uri, str(target.relative_to(root)), before, prepared.edits)
        if problems is not None:
            return f"{prepared.message}\n\n{problems}", False
    return prepared.message, False


async def _keep_patch(data_dir: Path, runtime: Conversation, root: Path, target: Path, before: str | None,
                      after: str) -> None:
    folder = root.resolve()
    try:
        rel = target.relative_to(folder).as_posix()
        await asyncio.to_thread(keep_patch, data_dir, runtime.id, folder, rel, before, after)
    except (ValueError, OSError) as exc:  # the patch landed; only its undo is lost (never its text in the log)
        log.warning("a patch's text before could not be kept for an undo (%s)", type(exc).__name__)


async def _check_result(ls: LanguageServer, root: Path, call: ToolUse, target: Path, uri: str,
                        original: str | None, prepared: str) -> str | None:
    """What does not match the prepared once the editor says it applied the edit (REQ-PATCH-013), or None.

    The path is confined once more. An open document's buffer was checked by ``_confirm_applied`` (it waits
    for the editor's didChange); for a file that is not open, the disk file may legitimately still hold the
    original text (the editor keeps the change unsaved) but must hold nothing else.
    """
    again = resolve_patch_path(dict(call.input), root)
    if isinstance(again, PatchError) or again != target:
        where = again.message if isinstance(again, PatchError) else f"it now resolves to {again}"
        return (f"the editor reports the edit applied, but the path no longer leads to the prepared file "
                f"({where}); the editor may have written elsewhere. Tell the user and check the file.")
    if ls.workspace.text_documents.get(uri) is not None:
        return None  # the buffer is the editor's truth, and _confirm_applied has compared it
    try:
        on_disk = await asyncio.to_thread(read_disk, target, root)
    except (OSError, UnicodeDecodeError):
        on_disk = None
    if on_disk in (prepared, original):
        return None
    return ("the editor reports the edit applied, but the file does not hold the prepared text (it differs "
            "from both the original and the prepared result). Read the file again before the next change.")


def _reach_end_of_empty_document(edits: list[types.TextEdit], original: str | None) -> list[types.TextEdit]:
    """Edits of a new (or empty) file end on the line after the document (REQ-PROTO-040).

    An editor shows an empty document as one empty line. Text inserted at (0, 0) goes in front of that line,
    so Neovim kept it and the file ended with an extra empty line. A range that ends past the last line
    replaces it: Neovim then drops the extra line (its end-of-file rule), and other editors clamp the end to
    the document's end, so every editor ends up with exactly the prepared text.
    """
    if original:
        return edits
    end = types.Position(line=1, character=0)
    return [types.TextEdit(range=types.Range(start=e.range.start, end=end), new_text=e.new_text) for e in edits]


async def _confirm_applied(
    ls: LanguageServer, uri: str, version: int | None, original: str | None, prepared: str
) -> str | None:
    """None when an open document really holds the edit an editor said it applied (REQ-PROTO-041)."""
    if version is None or original is None:
        return None  # not open in the editor when the edit was sent: its answer is all there is
    return await check(ls, uri, original, prepared)


# ------------------------------------------------------------------------- a bash command's changes (issue 36)

#: what a workspace edit carries of a bash command's changes: created, deleted, renamed and modified text files
REVIEW_KINDS = ALL_KINDS
NO_APPLY_REVIEW = ("this editor does not support workspace/applyEdit, and phoenix-lsp never writes files behind the "
                   "editor's back. Use an editor client that supports workspace edits, or run the command in a "
                   "terminal of your own.")
_OPERATIONS = {ChangeKind.CREATED: (types.ResourceOperationKind.Create, "create"),
               ChangeKind.DELETED: (types.ResourceOperationKind.Delete, "delete"),
               ChangeKind.RENAMED: (types.ResourceOperationKind.Rename, "rename")}


def cannot_apply(ls: LanguageServer, review: Review) -> str | None:
    """Why this editor cannot apply the editor's part of a review as one workspace edit, or None when it can:
    it needs applyEdit and the resource operations the part uses (the edit's documentChanges are sent as the
    patch tool's are: Neovim applies them without announcing them)."""
    if not review.texts:
        return None
    workspace_caps = ls.client_capabilities.workspace
    if not (workspace_caps and workspace_caps.apply_edit):
        return NO_APPLY_REVIEW
    edit_caps = workspace_caps.workspace_edit
    announced = (edit_caps.resource_operations if edit_caps else None) or ()
    missing = sorted(word for kind, (operation, word) in _OPERATIONS.items()
                     if kind in review.operations() and operation not in announced)
    if missing:
        return (f"this editor cannot {' or '.join(missing)} files through a workspace edit (it does not announce "
                f"those resource operations), and phoenix-lsp never writes files behind the editor's back.")
    return None


def review_edit(ls: LanguageServer, review: Review) -> types.WorkspaceEdit:
    """The editor's part of a review as ONE versioned workspace edit: deletions and renames, then created files
    with their text, then the modified files' minimal edits (with the editor's version of an open document)."""
    order = {ChangeKind.DELETED: 0, ChangeKind.RENAMED: 1, ChangeKind.CREATED: 2, ChangeKind.MODIFIED: 3}
    changes: list[Any] = []
    for text in sorted(review.texts, key=lambda t: (order[t.kind], t.path)):
        uri = review.path(text.path).as_uri()
        if text.kind is ChangeKind.DELETED:
            changes.append(types.DeleteFile(uri=uri))
        elif text.kind is ChangeKind.RENAMED:
            assert text.change.old_path is not None
            changes.append(types.RenameFile(old_uri=review.path(text.change.old_path).as_uri(), new_uri=uri,
                                            options=types.RenameFileOptions(overwrite=False,
                                                                            ignore_if_exists=False)))
        elif text.kind is ChangeKind.CREATED:
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False,
                                                                                     ignore_if_exists=False)))
            if text.after:
                edits = _reach_end_of_empty_document(_lsp_edits(text.edits), "")
                changes.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None), edits=edits))
        else:
            document = ls.workspace.text_documents.get(uri)
            version = document.version if document is not None else None
            changes.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=_lsp_edits(text.edits)))
    return types.WorkspaceEdit(document_changes=changes)


async def apply_review(ls: LanguageServer, review: Review) -> str | None:
    """Sends the editor's part of a review as one ``workspace/applyEdit``: None when the editor applied it, else
    why not (nothing of it landed, the editor says)."""
    if not review.texts:
        return None
    edit = review_edit(ls, review)
    why = await _send_edit(ls, edit, f"phoenix: a bash command's changes ({len(review.texts)} file(s))")
    return None if why is None else f"{why}."


async def _send_edit(ls: LanguageServer, edit: types.WorkspaceEdit, label: str) -> str | None:
    """One ``workspace/applyEdit``: None when the editor applied it, else why not (nothing of it landed)."""
    try:
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
    except Exception as exc:  # the client went away or answered with an error
        return f"the editor did not answer the edit ({exc})"
    if not result.applied:
        return f"the editor did not apply the edit ({result.failure_reason or 'the user or the editor rejected it'})"
    return None


def _lsp_edits(edits: Sequence[PatchTextEdit]) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=types.Range(
                start=types.Position(line=e.range.start.line, character=e.range.start.character),
                end=types.Position(line=e.range.end.line, character=e.range.end.character),
            ),
            new_text=e.new_text,
        )
        for e in edits
    ]


# ------------------------------------------------------------------------- undo afterwards (REQ-BASH-041)

def undo_edit(ls: LanguageServer, plan: Plan) -> types.WorkspaceEdit | str:
    """The text part of an undo as ONE versioned workspace edit (deletions, then re-created files with their text,
    then the minimal edits of the files that are there, with the editor's version of an open document), or why
    this editor cannot apply it."""
    workspace_caps = ls.client_capabilities.workspace
    if not (workspace_caps and workspace_caps.apply_edit):
        return NO_APPLY_REVIEW
    edit_caps = workspace_caps.workspace_edit
    announced = (edit_caps.resource_operations if edit_caps else None) or ()
    needs = {types.ResourceOperationKind.Delete: any(t.before is None for t in plan.texts),
             types.ResourceOperationKind.Create: any(t.now is None for t in plan.texts)}
    missing = sorted(kind.value for kind, needed in needs.items() if needed and kind not in announced)
    if missing:
        return (f"this editor cannot {' or '.join(missing)} files through a workspace edit (it does not announce "
                "those resource operations), and phoenix-lsp never writes files behind the editor's back.")
    deletions: list[Any] = []
    creations: list[Any] = []
    edits: list[Any] = []
    for text in sorted(plan.texts, key=lambda t: t.path):
        uri = plan.folder.joinpath(*text.path.split("/")).as_uri()
        if text.before is None:
            deletions.append(types.DeleteFile(uri=uri))
        elif text.now is None:
            creations.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False,
                                                                                       ignore_if_exists=False)))
            if text.before:
                raw = normalize("", minimize("", 0, 0, text.before))
                creations.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                    edits=_reach_end_of_empty_document(_lsp_edits(to_text_edits("", raw)), "")))
        elif text.now != text.before:
            document = ls.workspace.text_documents.get(uri)
            raw = normalize(text.now, minimize(text.now, 0, len(text.now), text.before))
            edits.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=document.version if document is not None else None),
                edits=_lsp_edits(to_text_edits(text.now, raw))))
    return types.WorkspaceEdit(document_changes=[*deletions, *creations, *edits])


async def apply_undo(ls: LanguageServer, plan: Plan) -> str | None:
    """Sends the text part of an undo as one ``workspace/applyEdit``: None when the editor applied it."""
    edit = undo_edit(ls, plan)
    if isinstance(edit, str):
        return edit
    return await _send_edit(ls, edit, f"phoenix: undo {plan.kept.label[:80]} ({len(plan.texts)} file(s))")
