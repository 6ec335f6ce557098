"""Did the editor really apply the edit it said it applied? (REQ-PROTO-041)

Neovim answers ``workspace/applyEdit`` with ``applied: true`` even when it skipped the edit because the
buffer is newer than the edit's version (the user typed within its change debounce; it prints "Buffer …
newer than edits"). So for a document that is open in the editor, the answer is checked against the
document itself: the next ``didChange`` must pass through the planned text. Its content changes are
replayed one by one, so an edit followed by the user's own typing in the same notification still counts as
applied.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace import TextDocument

if TYPE_CHECKING:
    from .app import PhoenixServer

#: how long to wait for the didChange that shows the edit (Neovim debounces changes by 150 ms)
WAIT_S = 5.0


@dataclass
class _Watch:
    text: str  # the document's text before the notification we wait for
    planned: str
    outcome: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


_watches: dict[str, _Watch] = {}


def did_change(ls: Any, params: types.DidChangeTextDocumentParams) -> None:
    """Settle a watch with the first didChange of its document after the edit's answer."""
    watch = _watches.pop(params.text_document.uri, None)
    if watch is None or watch.outcome.done():
        return
    document = TextDocument(params.text_document.uri, source=watch.text)
    for change in params.content_changes:
        document.apply_change(change)
        if document.source == watch.planned:
            watch.outcome.set_result(True)
            return
    watch.outcome.set_result(False)


async def check(ls: PhoenixServer, uri: str, sent_version: int, original: str, planned: str) -> str | None:
    """None when the open document holds the planned text (now or after its next change); else what to tell
    the model instead of "applied"."""
    document = ls.workspace.text_documents.get(uri)
    if document is None or planned == original:
        return None  # closed meanwhile (the editor saved it), or nothing to see
    if document.source == planned:
        return None
    name = uri.rsplit("/", 1)[-1]
    if document.version != sent_version:  # changes arrived before the answer and none shows the edit alone
        return (
            f"The patch may not have been applied: the editor said it applied it, but {name} was also changed "
            "by the user at the same moment and does not hold the planned text. Read the file again, then "
            "patch what is still needed."
        )
    watch = _Watch(document.source, planned)
    _watches[uri] = watch
    try:
        applied = await asyncio.wait_for(asyncio.shield(watch.outcome), WAIT_S)
    except TimeoutError:
        return (
            f"The patch was probably not applied: the editor said it applied it, but {name} did not change "
            f"within {WAIT_S:g} s. Read the file again before patching it."
        )
    finally:
        if _watches.get(uri) is watch:
            del _watches[uri]
    if applied:
        return None
    return (
        f"The patch was not applied: the editor skipped it because the user was typing in {name} at that moment "
        "(the editor answered applied, but the buffer does not hold the change). Nothing of this patch is in "
        "the file. Read the file again and retry."
    )


def register(server: PhoenixServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
