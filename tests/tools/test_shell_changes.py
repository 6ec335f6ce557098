"""The change set of a captured command (REQ-BASH-029..031): the real command run in a real overlay through the
launcher, its layer read, accepted, discarded and undone on a real folder. The witness is the folder on disk,
compared with the same command run as today in a copy of it."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.tools import shell_changes as sc
from phoenix_lsp.tools.shell_changes import ChangeKind, Entry
from tests.sandbox.capture import copy_tree, run_captured, run_plain, tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")

COMMAND = (
    "sed -i s/foo/bar/g src/*.py && mv notes.md docs.md && rm gone.txt && rm -rf olddir && mkdir olddir && "
    "echo fresh > olddir/new.txt && echo same > same.txt && chmod +x run.sh && ln -s src/a.py link && "
    "mkdir -p node_modules/pkg && echo 'module.exports = 1' > node_modules/pkg/index.js && "
    "printf '\\000\\001binary' > blob.bin && echo created > created.txt")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "src").mkdir(parents=True)
    (folder / "olddir").mkdir()
    (folder / "src" / "a.py").write_text("foo = 1\n")
    (folder / "src" / "b.py").write_text("foo = foo + 1\n")
    (folder / "src" / "c.py").write_text("untouched = 1\n")
    (folder / "notes.md").write_text("# notes\n" * 20)
    (folder / "gone.txt").write_text("bye\n")
    (folder / "olddir" / "x.txt").write_text("x\n")
    (folder / "same.txt").write_text("same\n")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    return folder


def kinds(changes: sc.ChangeSet) -> dict[str, tuple[str, str, bool]]:
    return {c.path: (c.kind.value, c.entry.value, c.editable) for c in changes.changes}


@pytest.mark.req("REQ-BASH-029")
async def test_the_change_set_names_every_kind_of_change(ws: Path, tmp_path: Path) -> None:
    layer, result = await run_captured(COMMAND, ws, tmp_path / "data")
    assert result.exit_code == 0
    changes = sc.scan(layer)
    found = kinds(changes)
    assert found["src/a.py"] == ("modified", "file", True)
    assert found["src/b.py"] == ("modified", "file", True)
    assert "src/c.py" not in found and "same.txt" not in found  # sed left it alone; rewritten with equal bytes
    assert found["docs.md"] == ("renamed", "file", True)
    assert next(c for c in changes.changes if c.path == "docs.md").old_path == "notes.md"
    assert "notes.md" not in found
    assert found["gone.txt"] == ("deleted", "file", True)
    assert found["olddir/x.txt"] == ("deleted", "file", True)  # hidden by the opaque olddir
    assert found["olddir/new.txt"] == ("created", "file", True)
    assert found["run.sh"] == ("mode", "file", False)
    assert found["link"] == ("created", "symlink", False)
    assert found["node_modules/pkg/index.js"] == ("created", "file", False)
    assert found["blob.bin"] == ("created", "file", False)
    assert found["created.txt"] == ("created", "file", True)
    assert not changes.refused and not changes.conflicts
    summary = changes.summary()
    assert "ignored folder node_modules: 3" in summary and "created link -> src/a.py" in summary
    assert "binary: 1" in summary and "mode run.sh" in summary
    overlay.discard(layer)


@pytest.mark.req("REQ-BASH-030")
async def test_an_accepted_change_set_equals_what_the_command_would_have_produced(ws: Path, tmp_path: Path) -> None:
    expected = copy_tree(ws, tmp_path / "plain")
    run_plain(COMMAND, expected)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    accepted = sc.accept(layer, sc.scan(layer))
    assert not accepted.skipped
    assert tree_digest(ws) == tree_digest(expected)
    overlay.discard(layer)


@pytest.mark.req("REQ-BASH-030")
async def test_a_discarded_change_set_leaves_the_folder_byte_identical(ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    sc.scan(layer)
    overlay.discard(layer, wait=True)
    assert tree_digest(ws) == before and not layer.root.exists()


@pytest.mark.req("REQ-BASH-030")
async def test_undo_of_an_accepted_change_set_restores_the_previous_bytes(ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    accepted = sc.accept(layer, sc.scan(layer))
    assert tree_digest(ws) != before
    sc.undo(layer, accepted)
    assert tree_digest(ws) == before


@pytest.mark.req("REQ-BASH-030")
async def test_an_accept_that_fails_midway_is_undone_whole(ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    changes = sc.scan(layer)
    os.unlink(layer.upper / "src" / "b.py")  # the layer loses a file: placing it fails after others landed
    with pytest.raises(sc.AcceptFailed, match="nothing was changed"):
        sc.accept(layer, changes)
    assert tree_digest(ws) == before


@pytest.mark.req("REQ-BASH-031")
async def test_a_file_changed_in_the_folder_after_the_review_is_kept(ws: Path, tmp_path: Path) -> None:
    layer, _ = await run_captured("echo command > src/a.py && echo c > src/c.py", ws, tmp_path / "data")
    changes = sc.scan(layer)
    assert {c.path for c in changes.changes} == {"src/a.py", "src/c.py"}
    (ws / "src" / "a.py").write_text("the user's edit\n")  # an editor save between the review and the accept
    accepted = sc.accept(layer, changes)
    assert (ws / "src" / "a.py").read_text() == "the user's edit\n"
    assert (ws / "src" / "c.py").read_text() == "c\n"  # the rest follows the decision
    assert [c.path for c in accepted.skipped] == ["src/a.py"]


@pytest.mark.req("REQ-BASH-029")
def test_a_change_set_is_frozen() -> None:
    change = sc.Change("a", ChangeKind.CREATED, Entry.FILE, True, "", 1)
    with pytest.raises(AttributeError):
        change.path = "b"  # type: ignore[misc]


@pytest.mark.req("REQ-BASH-030")
async def test_an_accept_from_a_layer_on_another_file_system_copies_and_still_lands_whole_or_not_at_all(
        ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    expected = copy_tree(ws, tmp_path / "plain")
    run_plain(COMMAND, expected)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    elsewhere = dataclasses.replace(layer, same_fs=False)  # as when the data directory is on another disk
    changes = sc.scan(elsewhere)
    (layer.upper / "src" / "b.py").unlink()
    with pytest.raises(sc.AcceptFailed):
        sc.accept(elsewhere, changes)
    assert tree_digest(ws) == before  # nothing set aside is left behind
    overlay.discard(layer)
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    elsewhere = dataclasses.replace(layer, same_fs=False)
    accepted = sc.accept(elsewhere, sc.scan(elsewhere))
    assert tree_digest(ws) == tree_digest(expected)
    sc.undo(elsewhere, accepted)
    assert tree_digest(ws) == before
