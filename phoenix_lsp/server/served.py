"""Everything the server serves besides the lifecycle, by name: each feature's module-level handler, put in
place of the light dispatcher that stood for it until now (``features/lifecycle.py``; the names and options are
``capabilities.py``'s).

Imported once, when the features load (at ``initialized``, or by the first request that comes before it):
the boot line of REQ-PROTO-050. Below it, every module imports at the top (REQ-PROTO-053)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol import types

from . import commands, confirm, requests
from .capabilities import OPTIONS
from .features import audit, background, conversations, messages, models, modes, route, undo
from .lsp import PhoenixServer
from .plain import PlainClient

#: the phoenix/* requests (their handlers wrapped by requests.py: params parsed, results in wire form), then what
#: plain clients use (code actions, a transcript's save) and the check that an open document shows an edit the
#: editor says it applied (confirm.py)
FEATURES: dict[str, Callable[..., Any]] = {
    **{name: requests.serve(name, handler)
       for feature in (conversations, messages, modes, models, audit, route, undo, background)
       for name, handler in feature.HANDLERS.items()},
    types.TEXT_DOCUMENT_CODE_ACTION: commands.code_actions,
    types.TEXT_DOCUMENT_DID_SAVE: commands.did_save,
    types.TEXT_DOCUMENT_DID_CHANGE: confirm.did_change,
}


def install(ls: PhoenixServer) -> None:
    """Give ``ls`` its plain client and put every handler in place of its dispatcher: from now on pygls runs
    the handlers themselves (a coroutine stays a task that ``$/cancelRequest`` stops, REQ-PROTO-025)."""
    ls.plain = PlainClient(ls, ls.spawn)
    registered = ls.protocol.fm
    for name, handler in FEATURES.items():
        registered.features.pop(name, None)  # its dispatcher: pygls keeps one handler per method
        ls.feature(name, OPTIONS.get(name))(handler)
    for name, command in commands.HANDLERS.items():
        registered.commands.pop(name, None)
        ls.command(name)(command)
