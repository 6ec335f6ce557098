"""A captured command's change set made into a review (REQ-BASH-032): the editor's part with texts, minimal edits
and diffs, the server's part, and what the user changed meanwhile dropped by name. Real commands in a real
overlay."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.tools import shell_changes as sc
from phoenix_lsp.tools.shell_changes import ChangeKind
from phoenix_lsp.tools.shell_changes.edit import WRITE_KINDS, prepare, recheck
from tests.sandbox.capture import run_captured

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}"),
              pytest.mark.req("REQ-BASH-032")]

COMMAND = ("sed -i s/one/ONE/ a.txt && echo new > new.txt && rm gone.txt && mv old.txt moved.txt && "
           "mkdir -p node_modules/x && echo dep > node_modules/x/i.js && printf '\\0bin' > b.bin")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("zero\none\ntwo\n")
    (folder / "gone.txt").write_text("bye\n")
    (folder / "old.txt").write_text("kept text\n")
    return folder


async def test_text_files_are_the_editors_part_the_rest_the_servers(ws: Path, tmp_path: Path) -> None:
    layer, result = await run_captured(COMMAND, ws, tmp_path / "data")
    assert result.exit_code == 0
    review = prepare(layer, sc.scan(layer), {})
    kinds = {t.path: t.kind for t in review.texts}
    assert kinds == {"a.txt": ChangeKind.MODIFIED, "new.txt": ChangeKind.CREATED, "gone.txt": ChangeKind.DELETED,
                     "moved.txt": ChangeKind.RENAMED}
    server = {c.path for c in review.server.changes}
    assert server == {"node_modules", "node_modules/x", "node_modules/x/i.js", "b.bin"}
    a = next(t for t in review.texts if t.path == "a.txt")
    assert (a.before, a.after) == ("zero\none\ntwo\n", "zero\nONE\ntwo\n")
    assert len(a.edits) == 1 and a.edits[0].range.start.line == 1 and a.edits[0].new_text == "ONE"
    diff = review.diff()
    assert "-one\n+ONE\n" in diff and "+++ /dev/null" in diff and "--- a/old.txt\n+++ b/moved.txt" in diff
    assert "# ignored folder node_modules: 3" in diff and "binary: 1" in diff
    assert review.operations() == {ChangeKind.CREATED, ChangeKind.DELETED, ChangeKind.RENAMED}
    overlay.discard(layer, wait=True)


async def test_an_acp_client_writes_only_created_and_modified_files(ws: Path, tmp_path: Path) -> None:
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    review = prepare(layer, sc.scan(layer), {}, WRITE_KINDS)
    assert {t.path for t in review.texts} == {"a.txt", "new.txt"}
    assert {"gone.txt", "moved.txt"} <= {c.path for c in review.server.changes}
    overlay.discard(layer, wait=True)


@pytest.mark.req("REQ-BASH-031")
async def test_an_unsaved_editor_change_or_a_change_on_disk_is_dropped_by_name(ws: Path, tmp_path: Path) -> None:
    layer, _ = await run_captured(COMMAND, ws, tmp_path / "data")
    changes = sc.scan(layer)
    same = prepare(layer, changes, {ws / "a.txt": "zero\none\ntwo\n"})  # open, equal to the disk: no conflict
    assert "a.txt" in {t.path for t in same.texts}
    review = prepare(layer, changes, {ws / "a.txt": "zero\none\ntwo\nthe user's line\n"})
    assert "a.txt" not in {t.path for t in review.texts}
    assert [(c.path, "editor" in c.why) for c in review.conflicts] == [("a.txt", True)]
    # after the question: the user saved gone.txt and opened new.txt's name in the editor
    (ws / "gone.txt").write_text("still wanted\n")
    later = recheck(review, {ws / "new.txt": ""})
    assert {t.path for t in later.texts} == {"moved.txt"}
    assert {c.path for c in later.conflicts} == {"a.txt", "gone.txt", "new.txt"}
    overlay.discard(layer, wait=True)
