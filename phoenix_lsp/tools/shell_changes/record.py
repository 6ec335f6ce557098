"""An accepted change set written down for an undo (REQ-BASH-040): a bash command's reviewed changes (the texts
the editor applied, and what the server placed: its replaced and deleted entries are moved in from the layer's
``before/``) or a patch's file. What each path holds after the set landed is read now, for the undo's check that
nobody changed it since."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from phoenix_lsp import limits
from phoenix_lsp.tools.shell_changes.accept import Accepted
from phoenix_lsp.tools.shell_changes.edit import Review
from phoenix_lsp.tools.shell_changes.kept import ABSENT, Draft, Entry, State, digest, identity
from phoenix_lsp.tools.shell_changes.model import ChangeKind


def before_bytes(review: Review) -> int:
    """About how many bytes keeping the review's before copies takes (the files it replaces or deletes), for the
    review's word on whether it can be undone (a deleted folder counts as its entry only)."""
    total = sum(len(t.before.encode("utf-8")) for t in review.texts if t.before is not None)
    for change in review.server.changes:
        for ident in (change.before, change.old_before):
            if ident is not None:
                total += ident.size
    return total


def too_big_note(review: Review) -> str | None:
    """The review's line saying that accepting cannot be undone, when its before copies are over the bound."""
    size = before_bytes(review)
    if size <= limits.UNDO_BYTES:
        return None
    return (f"This change set cannot be undone: what it replaces or deletes ({size // (1024 * 1024)} MiB) is over "
            f"the {limits.UNDO_BYTES // (1024 * 1024)} MiB the server keeps for an undo.")


def _after(folder: Path, rel: str) -> State:
    """What ``rel`` holds now that the set landed. Read by path (one lstat, not a folder descriptor per name): it
    only reads, and a folder on the way swapped for a link would only make the undo refuse this path later (the
    undo checks and writes through descriptors opened without following links)."""
    path = folder.joinpath(*rel.split("/"))
    try:
        st = os.lstat(path)
    except OSError:
        return ABSENT
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            return ABSENT
        return State("symlink", target=target)
    if stat.S_ISDIR(st.st_mode):
        return State("dir", mode=stat.S_IMODE(st.st_mode))
    return State("file", mode=stat.S_IMODE(st.st_mode), size=st.st_size, ident=identity(st))


def keep_review(data_dir: Path, conversation_id: str, label: str, review: Review, accepted: Accepted) -> str | None:
    """The accepted review kept for an undo: its id, or None when it is too big to keep (or holds nothing)."""
    draft = Draft(data_dir, conversation_id)
    try:
        entries: dict[str, Entry] = {}
        layer_before = review.layer.before
        for op, rel, extra in accepted.steps:
            if op == "saved" and extra is not None:
                for sub, state in draft.adopt(layer_before / extra):
                    path = f"{rel}/{sub}" if sub else rel
                    entries.setdefault(path, Entry(path, state, ABSENT))
            elif op in ("placed", "made"):
                entries.setdefault(rel, Entry(rel, ABSENT, ABSENT))
            elif op == "mode" and extra is not None:
                entries.setdefault(rel, Entry(rel, State("mode", mode=int(extra, 8)), ABSENT))
            if draft.size > limits.UNDO_BYTES:
                draft.abandon()
                return None
        folder = review.folder
        entries = {rel: Entry(rel, e.before, _after(folder, rel)) for rel, e in entries.items()}
        for text in review.texts:
            after = State("file", sha=digest(text.after.encode("utf-8"))) if text.after is not None else ABSENT
            if text.kind is ChangeKind.RENAMED:
                assert text.change.old_path is not None and text.before is not None
                if text.change.old_path not in entries:
                    entries[text.change.old_path] = Entry(text.change.old_path,
                                                          draft.keep_bytes(text.before.encode("utf-8")), ABSENT, True)
                if text.path not in entries:
                    entries[text.path] = Entry(text.path, ABSENT, after, True)
            elif text.path not in entries:
                before = draft.keep_bytes(text.before.encode("utf-8")) if text.before is not None else ABSENT
                entries[text.path] = Entry(text.path, before, after, True)
        return draft.commit(label, folder, list(entries.values()))
    except BaseException:
        draft.abandon()
        raise


def keep_patch(data_dir: Path, conversation_id: str, folder: Path, rel: str, before: str | None,
               after: str) -> str | None:
    """A patch the editor applied, kept for an undo: its file's text before (None: the patch created it)."""
    draft = Draft(data_dir, conversation_id)
    try:
        state = draft.keep_bytes(before.encode("utf-8")) if before is not None else ABSENT
        entry = Entry(rel, state, State("file", sha=digest(after.encode("utf-8"))), editor=True)
        return draft.commit(f"patch {rel}", folder, [entry])
    except BaseException:
        draft.abandon()
        raise
