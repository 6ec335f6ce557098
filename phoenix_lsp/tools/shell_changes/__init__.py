"""What a captured command changed (REQ-BASH-029..032): the overlay's upper layer read into a frozen change set,
and that change set accepted (the whole layer moved into the real folder, or nothing) or discarded.

The layer is read after the command's process tree has ended, without touching the real folder:
- a regular file in the layer is created, or modified when its bytes differ from the real file's (a file
  changed and changed back is no change; a new mode alone is a mode change);
- a character device 0/0 is a whiteout: the real entry was deleted;
- a directory marked opaque (xattr ``user.overlay.opaque``) hides every real entry beneath it that the layer
  does not hold again: those were deleted;
- a deleted file and a created one with the same bytes are a rename (the overlay does not record renames);
- symlinks and modes are changes of their own; devices, FIFOs and sockets are refused, never recreated.
Text files outside ignored folders are `editable` (later turned into one WorkspaceEdit); the rest (binary,
too big, ignored folders such as .git or node_modules, directories, modes, symlinks) is summarised.

Conflicts: the command cannot write the real folder, so a real file whose status changed after the command
started (ctime at or after the layer's start, from the same coarse clock the file system stamps with) was
changed by someone else; so was a file the command copied up (xattr ``user.overlay.origin``) that is gone
from a real folder that changed meanwhile. Such a change is never applied: it is listed as a conflict.
Between the scan and the accept, each real file's identity (inode, size, mtime, ctime) is checked again.
Limits: a change made in the same clock tick (4 ms here) just before the command counts as a conflict (the
safe side); a change to a file the command never touched is not a conflict, it is simply kept; a file the
command copied up whose real folder was itself deleted meanwhile is not recognised.

Paths in a change set are relative, made of names read from the layer (no `/`, never `.` or `..`); every
operation on the real folder goes through directory descriptors opened without following symlinks, so an
accept never writes outside the folder, whatever the layer or the folder holds.
"""

from phoenix_lsp.tools.shell_changes.accept import Accepted, accept, undo
from phoenix_lsp.tools.shell_changes.model import (
    IGNORED_FOLDERS,
    MAX_ENTRIES,
    TEXT_LIMIT,
    AcceptFailed,
    Change,
    ChangeKind,
    ChangeSet,
    Conflict,
    Entry,
    Identity,
    LayerTooBig,
    Refused,
)
from phoenix_lsp.tools.shell_changes.scan import scan

__all__ = ["IGNORED_FOLDERS", "MAX_ENTRIES", "TEXT_LIMIT", "AcceptFailed", "Accepted", "Change", "ChangeKind",
           "ChangeSet", "Conflict", "Entry", "Identity", "LayerTooBig", "Refused", "accept", "scan", "undo"]
