"""The terminal client plays the editor for ``workspace/applyEdit``: it shows the change and writes the files
itself (``workspace_edit.py`` prepares and writes them)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from .approval import ApprovedDiffs
from .screen import Screen
from .workspace_edit import EditError, prepare_workspace_edit, write_prepared


def apply_edit(params: types.ApplyWorkspaceEditParams, root: Path, screen: Screen,
               approved: ApprovedDiffs | None = None) -> types.ApplyWorkspaceEditResult:
    """``workspace/applyEdit``: show the change, write it, and say whether it was applied. A change whose diff
    the user approved a moment ago (``approved``) is named, not drawn again (issue 38)."""
    label = params.label or "workspace edit"
    try:
        prepared = prepare_workspace_edit(params.edit, root=root)
        diff = prepared.diff(root)
        if approved is not None and approved.take(diff):
            write_prepared(prepared)
            screen.line(f"[edit] {label}: written, the diff approved above", "cyan")
            return types.ApplyWorkspaceEditResult(applied=True)
        screen.line(f"[edit] {label}", "cyan")
        for line in diff.splitlines()[:200]:
            style = None
            if line.startswith("+") and not line.startswith("+++"):
                style = "green"
            elif line.startswith("-") and not line.startswith("---"):
                style = "red"
            screen.line(f"  {line}", style)
        if diff.count("\n") > 200:
            screen.line(f"  ... {diff.count(chr(10)) - 200} more diff lines", "dim")
        write_prepared(prepared)
    except EditError as exc:
        screen.line(f"[edit] not applied: {exc}", "red")
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason=str(exc))
    except OSError as exc:
        reason = f"writing the file failed ({exc.strerror or exc})"
        screen.line(f"[edit] not applied: {reason}", "red")
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
    return types.ApplyWorkspaceEditResult(applied=True)
