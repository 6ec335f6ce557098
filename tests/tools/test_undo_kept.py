"""The before copies kept for an undo (REQ-BASH-040): a set over the bound is not kept, and its review says so before
the user answers; what is kept is the user's, readable by the server alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp import limits
from phoenix_lsp.sandbox.overlay import Layer
from phoenix_lsp.tools.shell_changes import Change, ChangeKind, ChangeSet, Entry, Identity
from phoenix_lsp.tools.shell_changes.edit import Review
from phoenix_lsp.tools.shell_changes.kept import conversation_dir, kept_sets, load
from phoenix_lsp.tools.shell_changes.record import keep_patch, too_big_note

pytestmark = pytest.mark.req("REQ-BASH-040")


def review_replacing(folder: Path, size: int) -> Review:
    change = Change("big.bin", ChangeKind.MODIFIED, Entry.FILE, False, "binary", 1,
                    before=Identity(1, size, 0, 0))
    changes = ChangeSet(folder, (change,))
    layer = Layer(folder=folder, root=folder / "layer", cap_bytes=1, called_ns=0, same_fs=True)
    return Review(layer, changes, (), changes)


def test_a_set_over_the_bound_is_said_to_be_undoable_no_more_before_the_answer(tmp_path: Path) -> None:
    assert too_big_note(review_replacing(tmp_path, 1024)) is None
    note = too_big_note(review_replacing(tmp_path, limits.UNDO_BYTES + 1))
    assert note is not None and "cannot be undone" in note and f"{limits.UNDO_BYTES // 2**20} MiB" in note


def test_a_set_over_the_bound_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "UNDO_BYTES", 10)
    assert keep_patch(tmp_path, "c1", tmp_path, "a.txt", "x" * 11, "y") is None
    assert kept_sets(tmp_path, "c1") == [] and list(conversation_dir(tmp_path, "c1").iterdir()) == []


def test_what_is_kept_is_readable_by_the_server_alone_and_loads_back(tmp_path: Path) -> None:
    set_id = keep_patch(tmp_path, "c1", tmp_path / "w", "src/a.txt", "before\n", "after\n")
    assert set_id is not None
    kept = load(tmp_path, "c1", "latest")
    assert kept.id == set_id and kept.label == "patch src/a.txt" and [e.path for e in kept.entries] == ["src/a.txt"]
    for path in [conversation_dir(tmp_path, "c1"), *conversation_dir(tmp_path, "c1").rglob("*")]:
        assert os.lstat(path).st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


@pytest.mark.req("REQ-BASH-041")
def test_a_file_gone_from_disk_is_refused_by_name_even_while_the_editor_holds_its_text(tmp_path: Path) -> None:
    """VS Code's own Undo of an accepted change takes the created file off the disk but keeps a document of it with
    the text the set left: the file is gone since the set landed, so the undo refuses it by name instead of asking
    the editor to delete a file that no longer exists (which the real VS Code refused, failing the whole undo)."""
    from phoenix_lsp.tools.shell_changes.restore import plan

    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "made.txt").write_text("made\n", encoding="utf-8")
    assert keep_patch(tmp_path, "c1", folder, "made.txt", None, "made\n") is not None
    kept = load(tmp_path, "c1", "latest")
    held = {folder / "made.txt": "made\n"}
    assert plan(kept, held).refused == ()  # as the set left it: undone by deleting it
    (folder / "made.txt").unlink()  # the editor's own undo took it off the disk; its document stays open
    made = plan(kept, held)
    assert [path for path, _why in made.refused] == ["made.txt"] and made.texts == ()
    assert "deleted since" in made.refused[0][1]
