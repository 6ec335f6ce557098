"""The file a patch writes: confined to the working directory, never a directory nor a hard-linked file, and
checked again right before the edit goes to the editor (REQ-PATCH-013)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from phoenix_lsp.tools.patch.values import PatchError
from phoenix_lsp.tools.paths import PathError, resolve_in_workspace


def resolve_patch_path(tool_input: object, root: Path) -> Path | PatchError:
    """The confined, symlink-resolved target of a patch input (writes: never outside root nor in .git)."""
    if not isinstance(tool_input, Mapping) or not isinstance(tool_input.get("path"), str):
        return PatchError("'path' is required: the file to patch, relative to the working directory.")
    try:
        target = resolve_in_workspace(root, tool_input["path"], for_write=True)
    except PathError as exc:
        return PatchError(str(exc))
    if target.is_dir():
        return PatchError(
            f"{tool_input['path']!r} is a directory, not a file. Patch a file inside it (see list_directory)."
        )
    try:
        links = os.lstat(target).st_nlink
    except FileNotFoundError:
        links = 1
    except OSError as exc:
        return PatchError(f"{tool_input['path']!r} cannot be examined ({exc.strerror}); nothing was changed.")
    if links > 1:
        return PatchError(
            f"{tool_input['path']!r} has {links} hard links: the same file also exists under other names, "
            "possibly outside the working directory, and an edit here would change it there too. The patch "
            "tool never writes through a hard link. Ask the user to replace the link by a copy (e.g. "
            "`cp --remove-destination`), or make the change another way."
        )
    return target


def target_identity(target: Path) -> tuple[int, int] | None:
    """(device, inode) of the patch target, or None when it does not exist: taken when the patch is
    prepared and compared again just before the edit is sent (REQ-PATCH-013)."""
    try:
        st = os.stat(target)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def verify_before_sending(tool_input: object, root: Path, prepared: Path,
                          identity: tuple[int, int] | None) -> PatchError | None:
    """Confine the path again right before the edit goes to the editor (REQ-PATCH-013).

    Between preparing and sending, a directory on the way may have been swapped for a symlink that leads
    outside the working directory, or the file replaced by another (a hard link, say). Returns the refusal
    for the model, or None when the target is still the prepared file.
    """
    again = resolve_patch_path(tool_input, root)
    if isinstance(again, PatchError):
        return PatchError(f"The patch was not applied: the path changed while the edit was being prepared. "
                          f"{again.message}")
    if again != prepared or target_identity(again) != identity:
        return PatchError(
            f"The patch was not applied: {prepared.name} changed on disk while the edit was being prepared "
            f"(it now resolves to {again}, a different file than the one prepared). Nothing was sent to "
            "the editor. Read the file again and retry if the change is still wanted."
        )
    return None
