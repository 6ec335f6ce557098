"""Did the editor really apply the edit it said it applied? (REQ-PROTO-041)

Neovim answers ``workspace/applyEdit`` with ``applied: true`` even when it skipped the edit because the
buffer is newer than the edit's version (the user typed within its change debounce; it prints "Buffer …
newer than edits"). So for a document that is open in the editor, the answer is checked against the
document itself: its text must pass through the prepared text, now or in the didChange notifications that
follow within a few seconds. Their content changes are replayed one by one, so an edit followed by the
user's own typing in the same notification still counts, and so does an edit whose pieces arrive in
several notifications (Neovim sends the first change at once and debounces the rest).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

#: how long to wait for the didChange that shows the edit (Neovim debounces changes by 150 ms)
WAIT_S = 5.0


@dataclass
class _Watch:
    text: str  # the document's text before the notification we wait for
    prepared: str
    outcome: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


_watches: dict[str, _Watch] = {}


def did_change(ls: Any, params: types.DidChangeTextDocumentParams) -> None:
    """Settle a watch when a change of its document passes through the prepared text."""
    watch = _watches.get(params.text_document.uri)
    if watch is None or watch.outcome.done():
        return
    document = TextDocument(params.text_document.uri, source=watch.text)
    for change in params.content_changes:
        document.apply_change(change)
        if document.source == watch.prepared:
            watch.outcome.set_result(True)
            return
    watch.text = document.source


async def check(ls: LanguageServer, uri: str, original: str, prepared: str) -> str | None:
    """None when the open document holds the prepared text (now or within ``WAIT_S``); else what to tell the
    model instead of "applied"."""
    document = ls.workspace.text_documents.get(uri)
    if document is None or prepared == original or document.source == prepared:
        return None  # closed meanwhile (the editor saved it), nothing to see, or already there
    watch = _Watch(document.source, prepared)
    _watches[uri] = watch
    try:
        await asyncio.wait_for(asyncio.shield(watch.outcome), WAIT_S)
        return None
    except TimeoutError:
        name = uri.rsplit("/", 1)[-1]
        return (
            f"The patch was not applied: the editor answered that it applied it, but {name} did not take the "
            f"change within {WAIT_S:g} s (Neovim skips an edit when the user typed in the buffer at that moment). "
            "Nothing of this patch is known to be in the file: read it again, then patch what is still needed."
        )
    finally:
        if _watches.get(uri) is watch:
            del _watches[uri]

