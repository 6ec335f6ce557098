"""The terminal client's workspace-edit applier, on real files (LSP positions are UTF-16 code units)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from phoenix_lsp.client.workspace_edit import EditError, apply_text_edits, prepare_workspace_edit, write_prepared

pytestmark = pytest.mark.req("REQ-PROTO-035")


def _edit(line: int, char: int, end_line: int, end_char: int, text: str) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(start=types.Position(line=line, character=char),
                          end=types.Position(line=end_line, character=end_char)),
        new_text=text,
    )


def _doc_edit(path: Path, *edits: types.TextEdit) -> types.TextDocumentEdit:
    return types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=path.as_uri(), version=None),
        edits=list(edits),
    )


def test_columns_count_utf16_code_units() -> None:
    # U+1F600 is one Python character but two UTF-16 code units: "x" sits at column 3, not 2.
    assert apply_text_edits("a\U0001f600x\n", [_edit(0, 3, 0, 4, "Y")]) == "a\U0001f600Y\n"
    assert apply_text_edits("é\U0001f600z", [_edit(0, 1, 0, 3, "")]) == "éz"


def test_line_endings_are_kept_and_columns_clamp_to_the_line() -> None:
    text = "one\r\ntwo\rthree\nfour"
    assert apply_text_edits(text, [_edit(1, 0, 1, 3, "TWO")]) == "one\r\nTWO\rthree\nfour"
    assert apply_text_edits(text, [_edit(0, 99, 0, 99, "!")]) == "one!\r\ntwo\rthree\nfour"
    assert apply_text_edits(text, [_edit(9, 0, 9, 0, "\nfive")]) == text + "\nfive"


def test_edits_refer_to_the_original_and_same_place_inserts_keep_their_order() -> None:
    text = "abc\ndef\n"
    edits = [_edit(1, 0, 1, 3, "DEF"), _edit(0, 0, 0, 0, "1"), _edit(0, 0, 0, 0, "2"), _edit(0, 1, 0, 2, "")]
    assert apply_text_edits(text, edits) == "12ac\nDEF\n"


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(EditError, match="overlap"):
        apply_text_edits("abcdef", [_edit(0, 0, 0, 4, "x"), _edit(0, 2, 0, 5, "y")])


def test_create_then_edit_writes_a_new_file_with_its_folders(tmp_path: Path) -> None:
    target = tmp_path / "pkg" / "new.py"
    edit = types.WorkspaceEdit(document_changes=[
        types.CreateFile(uri=target.as_uri(), options=types.CreateFileOptions(ignore_if_exists=True)),
        _doc_edit(target, _edit(0, 0, 0, 0, "print('hi')\n")),
    ])
    plan = prepare_workspace_edit(edit, root=tmp_path)
    assert "+print('hi')" in plan.diff(tmp_path)
    assert not target.exists()  # planning writes nothing
    write_prepared(plan)
    assert target.read_text() == "print('hi')\n"


def test_a_failing_change_leaves_every_file_untouched(tmp_path: Path) -> None:
    first = tmp_path / "a.txt"
    first.write_text("keep me\n")
    edit = types.WorkspaceEdit(document_changes=[
        _doc_edit(first, _edit(0, 0, 0, 4, "lose")),
        _doc_edit(tmp_path / "missing.txt", _edit(0, 0, 0, 0, "x")),
    ])
    with pytest.raises(EditError, match="does not exist"):
        prepare_workspace_edit(edit, root=tmp_path)
    assert first.read_text() == "keep me\n"


def test_edits_outside_the_working_directory_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    (root / "link").symlink_to(outside)
    for path in (outside, root / "link"):
        edit = types.WorkspaceEdit(changes={path.as_uri(): [_edit(0, 0, 0, 1, "y")]})
        with pytest.raises(EditError, match="outside the working directory"):
            prepare_workspace_edit(edit, root=root)
    assert outside.read_text() == "x"


@pytest.mark.req("REQ-URI-001")
def test_an_edits_uri_is_read_by_the_one_uri_rule(tmp_path: Path) -> None:
    """The server's rule: any case of file:, only localhost, canonical before the working-directory check."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("x")
    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    for uri in (f"FILE://{root}/a.txt", f"file://localhost/{root}/./a.txt"):
        prepared = prepare_workspace_edit(types.WorkspaceEdit(changes={uri: [_edit(0, 0, 0, 1, "y")]}), root=root)
        assert prepared.new == {root / "a.txt": "y"}
    for uri, why in ((f"file://127.0.0.1{root}/a.txt", "host"), (f"file://{root}/%2e%2e/secret.txt", "outside"),
                     (f"file:///{root}/../secret.txt", "outside"), ("file:///~/secret.txt", "~"),
                     ("untitled:Untitled-1", "not a file: URI")):
        with pytest.raises(EditError, match=why):
            prepare_workspace_edit(types.WorkspaceEdit(changes={uri: [_edit(0, 0, 0, 1, "y")]}), root=root)
    assert outside.read_text() == "x"


def test_rename_and_delete(tmp_path: Path) -> None:
    old, new, gone = tmp_path / "old.txt", tmp_path / "new.txt", tmp_path / "gone.txt"
    old.write_text("content\n")
    gone.write_text("bye\n")
    edit = types.WorkspaceEdit(document_changes=[
        types.RenameFile(old_uri=old.as_uri(), new_uri=new.as_uri()),
        types.DeleteFile(uri=gone.as_uri()),
    ])
    write_prepared(prepare_workspace_edit(edit, root=tmp_path))
    assert not old.exists() and not gone.exists()
    assert new.read_text() == "content\n"
