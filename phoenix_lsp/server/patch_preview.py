"""What a patch call would do, before it is sent to the editor: the file's text as the server may read it, and
the diff an approval shows (REQ-PERM-005). Shared by the runtime (approvals) and the LSP adapter (``edits``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .. import confined
from ..core.values import ToolUse
from ..tools.patch import PatchError, prepare_patch, resolve_patch_path

#: the largest file a patch reads from disk (the same as read_file's)
PATCH_MAX_FILE_BYTES = 64 * 1024 * 1024


def read_disk(path: Path, root: Path) -> str | None:
    """The file's text through the confined reader (beneath the working directory, regular file, capped,
    REQ-READ-001); None when there is no file. Raises OSError (with the reader's message) or
    UnicodeDecodeError when it cannot be read as text."""
    try:
        data = confined.read(path, [root], max_bytes=PATCH_MAX_FILE_BYTES).data
    except confined.ReadRefused as refused:
        if refused.reason == "missing":
            return None
        raise OSError(str(refused)) from None
    return data.decode("utf-8")


def preview_diff(root: Path, call: ToolUse, documents: Mapping[Path, str], clipboards: Mapping[str, str]) -> str | None:
    """The unified diff ``call`` would make against the editor's text now, for an approval (REQ-PERM-005).

    None when the patch would be refused anyway (bad path, text not found): the call's own result says why.
    """
    target = resolve_patch_path(dict(call.input), root)
    if isinstance(target, PatchError):
        return None
    original = documents.get(target)
    if original is None:
        try:
            original = read_disk(target, root)
        except (OSError, UnicodeDecodeError):
            return None
    prepared = prepare_patch(dict(call.input), original, clipboards=dict(clipboards))
    return None if isinstance(prepared, PatchError) else prepared.diff
