"""After the editor says a patch was applied, the server checks the result (REQ-PATCH-013): a path that
now leads elsewhere, or a file that holds neither the original nor the prepared text, is told to the model
as a warning instead of a plain success."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from phoenix_lsp.core.values import ToolUse
from phoenix_lsp.server.edits import apply_patch

pytestmark = pytest.mark.req("REQ-PATCH-013")


class _Editor:
    """A client that reports every edit applied and does `effect` instead of (or besides) applying it."""

    def __init__(self, effect: Any) -> None:
        caps = types.WorkspaceClientCapabilities(apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(
            resource_operations=[types.ResourceOperationKind.Create]))
        self.client_capabilities = types.ClientCapabilities(workspace=caps)
        self.workspace = SimpleNamespace(text_documents={})
        self.effect = effect

    async def workspace_apply_edit_async(self, params: types.ApplyWorkspaceEditParams) -> Any:
        self.effect()
        return types.ApplyWorkspaceEditResult(applied=True)


def _runtime(root: Path) -> Any:
    return SimpleNamespace(state=SimpleNamespace(working_directory=str(root), editor_sight=False), clipboards={},
                           keep_clipboards=lambda clipboards: None, emit=lambda event: None)


def _call() -> ToolUse:
    return ToolUse("t1", "patch", {"path": "sub/f.txt", "patches": [{"operation": "replace", "oldText": "one",
                                                                     "newText": "two"}]})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "ws" / "sub" / "f.txt").write_text("one\n")
    return tmp_path / "ws"


async def test_an_edit_that_lands_as_planned_is_a_plain_success(root: Path) -> None:
    editor = _Editor(lambda: (root / "sub" / "f.txt").write_text("two\n"))
    text, is_error = await apply_patch(editor, _runtime(root), _call())  # type: ignore[arg-type]
    assert not is_error and "WARNING" not in text


async def test_a_file_holding_something_else_after_the_edit_is_reported(root: Path) -> None:
    editor = _Editor(lambda: (root / "sub" / "f.txt").write_text("three\n"))
    text, is_error = await apply_patch(editor, _runtime(root), _call())  # type: ignore[arg-type]
    assert is_error and "does not hold the prepared text" in text and "Read the file again" in text


async def test_a_directory_swapped_while_the_editor_applied_is_reported(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("two\n")

    def swap() -> None:
        os.rename(root / "sub", tmp_path / "moved")
        os.symlink(elsewhere, root / "sub")

    text, is_error = await apply_patch(_Editor(swap), _runtime(root), _call())  # type: ignore[arg-type]
    assert is_error and "no longer leads to the prepared file" in text and "Tell the user" in text
