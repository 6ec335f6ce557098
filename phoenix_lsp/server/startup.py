"""The garbage collector while the server starts: no full collection before ``initialize`` is answered
(REQ-PROTO-050).

CPython runs a full collection (every object the process holds) after ten young ones. Importing pygls and
lsprotocol makes about 50,000 objects that live as long as the process; with the server's own modules on top,
the tenth young collection fell before the InitializeResult was written, and the full pass over them cost
about 20 ms of the editor's wait (a pygls server with no features answers before its first). The young
collections go on as always; the full ones resume when the features load (``lifecycle.load``).
"""

from __future__ import annotations

import gc

#: young collections between two full ones while the server starts: more than it makes before initialize
_POSTPONED = 1_000_000

_saved: tuple[int, int, int] | None = None


def postpone_full_collections() -> None:
    """Until :func:`resume_full_collections`, the collector makes young collections only."""
    global _saved
    if _saved is None:
        _saved = gc.get_threshold()
        gc.set_threshold(_saved[0], _saved[1], _POSTPONED)


def resume_full_collections() -> None:
    """The collector's thresholds as they were before :func:`postpone_full_collections` (nothing if it was not
    called)."""
    global _saved
    if _saved is not None:
        gc.set_threshold(*_saved)
        _saved = None
