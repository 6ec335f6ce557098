"""How much of each kind of input from outside is read, in one place (REQ-PROTO-061..063).

Every message from outside is bounded in size, nesting and token count (strings, commas and brackets) before it
is decoded or walked (``safe_json.bound``), with limits per kind: an answer to one of the server's own requests
needs far less than a message a client sends. The LSP transport, the ACP lines and the editor's sight read their
limits here; the message-wide ones are settings (``PHOENIX_MAX_MESSAGE_BYTES``, ``PHOENIX_MAX_MESSAGE_TOKENS``,
``server/config.py``). Standard library only: the transport imports it before pydantic is loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from . import safe_json

#: the default of ``PHOENIX_MAX_MESSAGE_BYTES``: a message's body (LSP) or line (ACP). 64 MiB holds the largest
#: legitimate message (a sendMessage with 20 pasted images).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: the default of ``PHOENIX_MAX_MESSAGE_TOKENS``: strings, commas and brackets in one message. A message with 20
#: images holds a few hundred; a didChangeWatchedFiles of 50,000 files about 600,000.
DEFAULT_MAX_MESSAGE_TOKENS = 1_000_000
#: what ``phoenix-lsp run`` reads from its standard input (the prompt, or context beside it: REQ-RUN-002): more is
#: refused before it is decoded. A message's text holds at most 1,000,000 characters (``MESSAGE_TEXT_MAX``).
RUN_STDIN_MAX_BYTES = 1_000_000
#: a message longer than this is checked and decoded off the event loop: other requests go on meanwhile
OFF_LOOP_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    """What one kind of input may hold, and how it is named in a refusal."""

    what: str
    max_bytes: int
    max_tokens: int
    max_depth: int = safe_json.MAX_DEPTH

    def too_long(self, size: int, unit: str = "bytes") -> str:
        """Why input of ``size`` (over :attr:`max_bytes`) was not read."""
        return (f"{self.what} is {size:,} {unit} long, over the limit of {self.max_bytes:,} {unit} for it; it was "
                "not decoded")

    def check(self, body: bytes) -> None:
        """Raise :class:`Refused` when ``body`` is over a bound (a ValueError saying which, and what to do)."""
        if len(body) > self.max_bytes:
            raise Refused(self.too_long(len(body)))
        try:
            safe_json.bound(body, self.max_depth, self.max_tokens, self.what)
        except ValueError as exc:
            raise Refused(str(exc)) from None


class Refused(ValueError):
    """Input over its kind's bounds, refused before it was decoded; the message says what, why and what to do."""


def message(max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, max_tokens: int = DEFAULT_MAX_MESSAGE_TOKENS) -> Bounds:
    """The bounds of one message a client sends (an LSP message, an ACP line), from the settings."""
    return Bounds("the message", max_bytes, max_tokens)


#: answers to the server's own requests, by method: checked before they are decoded (the message-wide bounds
#: apply to an answer of any other method). A diagnostics answer of 4 MiB holds some 30,000 problems; more
#: than the model is ever shown (``core/sight.py`` lists the first ones).
ANSWERS: dict[str, Bounds] = {
    "phoenix/editorDiagnostics": Bounds("the editor's answer to phoenix/editorDiagnostics", 4 * 1024 * 1024,
                                        200_000),
    "phoenix/editorLocations": Bounds("the editor's answer to phoenix/editorLocations", 1024 * 1024, 50_000),
    "workspace/applyEdit": Bounds("the editor's answer to workspace/applyEdit", 64 * 1024, 1_000),
    "window/showMessageRequest": Bounds("the editor's answer to window/showMessageRequest", 64 * 1024, 1_000),
    "window/workDoneProgress/create": Bounds("the editor's answer to window/workDoneProgress/create", 64 * 1024,
                                             1_000),
    "workspace/configuration": Bounds("the editor's answer to workspace/configuration", 1024 * 1024, 50_000),
}


#: the largest file the read tool reads (``tools/readonly.py``), from the disk or from the editor
READ_FILE_BYTES = 64 * 1024 * 1024

#: answers of an ACP client to the agent's own requests, by method: checked before the SDK decodes them (an
#: answer of another method has a line's bounds). The text of a file the editor returns is bounded by what the
#: read tool reads at most (in the JSON text, escapes included), and the answer holds a few members around it.
ACP_ANSWERS: dict[str, Bounds] = {
    "fs/read_text_file": Bounds("the editor's answer to fs/read_text_file", READ_FILE_BYTES, 1_000),
}


#: the input of one tool call as a model streams it (both providers): 16 MiB holds a patch that writes a big file
TOOL_INPUT = Bounds("the tool input", 16 * 1024 * 1024, 1_000_000)


@dataclass(frozen=True)
class HttpBounds:
    """What one kind of HTTP answer may hold as it arrives (``bounded_http``): ``unit`` bounds each SSE event
    (or a whole JSON answer) in bytes, nesting and tokens; ``whole`` the answer's bytes; ``advice`` says what to
    do when one is over."""

    what: str
    unit: Bounds
    whole: int
    advice: str


#: one event of a model's stream: it holds at most a piece of a tool's input (each provider streams a tool input
#: in pieces; one piece is never above :data:`TOOL_INPUT`), with room for the event around it
_PROVIDER_EVENT = Bounds("one event of the model's stream", TOOL_INPUT.max_bytes + 1024 * 1024,
                         TOOL_INPUT.max_tokens)
#: a model's answer (both providers): its text is bounded by the request's ``max_tokens`` (a few MiB of events
#: at most) and each tool input by :data:`TOOL_INPUT`; 256 MiB is room for several whole tool inputs
PROVIDER_STREAM = HttpBounds("the model's answer", _PROVIDER_EVENT, 256 * 1024 * 1024,
                             "The provider (or a proxy before it) sent more than any answer holds; if this persists, "
                             "check its base URL setting")
#: the provider's listing of its models (``/v1/models``), and any other answer of a provider that is no stream
PROVIDER_LISTING = HttpBounds("the provider's listing", Bounds("the provider's listing", 4 * 1024 * 1024, 200_000),
                              4 * 1024 * 1024, "The provider's listing is not used; the built-in list is")


#: a conversation's rows as the store holds them, read back when it is opened (``server/runtime/hub.py``): the
#: store's file is on the disk, where another program may have changed it, so each row is measured before it is
#: read (``store/conversations.py``) and bounded before it is decoded (REQ-SEC-044). The largest row a server
#: writes is a model's whole answer (:data:`PROVIDER_STREAM`); the deepest, a tool's input (64 levels, checked as
#: it streamed) inside the message around it.
STORED_ROW_BYTES = PROVIDER_STREAM.whole
STORED_MESSAGE = Bounds("the stored message", STORED_ROW_BYTES, 4_000_000, 2 * safe_json.MAX_DEPTH)
STORED_STATE = Bounds("the stored state", STORED_ROW_BYTES, 4_000_000, 2 * safe_json.MAX_DEPTH)


def provider_answer(url_path: str) -> HttpBounds:
    """The bounds of a provider's answer to a request for ``url_path``: the models listing is small."""
    return PROVIDER_LISTING if url_path.rstrip("/").endswith("/models") else PROVIDER_STREAM


#: room around an MCP result (the JSON-RPC envelope, the escapes of its text) in one MCP message
MCP_MARGIN = 64 * 1024

#: images in one MCP tool result (REQ-MCP-021): the most given to the model (the rest are named in a note and
#: never decoded), the most bytes one may have as the server sent it (before Pillow opens it), and the room the
#: images of one result have in its message, as base64 text (a result whose images need more is not read)
MCP_IMAGES = 8
MCP_IMAGE_BYTES = 5 * 1024 * 1024
MCP_IMAGE_ROOM = 12 * 1024 * 1024
#: the most pixels an image's header may claim before its pixels are decoded (a decompression bomb: Pillow's own
#: limit is 89 million, which decodes to some 350 MB; 25 million is a 5000 x 5000 screenshot)
IMAGE_PIXELS = 25_000_000


def mcp_message(max_result_bytes: int) -> Bounds:
    """The bounds of one message from an MCP server (a stdio line, an HTTP answer or SSE event): the MCP client's
    result cap plus :data:`MCP_MARGIN` and the images' room :data:`MCP_IMAGE_ROOM`; nesting 64 (REQ-SEC-005)."""
    return Bounds("a message from the MCP server", max_result_bytes + MCP_MARGIN + MCP_IMAGE_ROOM, 1_000_000)


def mcp_http(max_result_bytes: int) -> HttpBounds:
    """The bounds of an MCP server's HTTP answer: each event (or a JSON answer) one message; a stream of events
    (a long-running call's notifications, then its result) at most 64 of them without images, and one
    result's images."""
    unit = mcp_message(max_result_bytes)
    return HttpBounds("the MCP server's answer", unit, 64 * (max_result_bytes + MCP_MARGIN) + MCP_IMAGE_ROOM,
                      "Ask the tool for less (a narrower query); the next call is read as usual")


#: an MCP configuration file (``.mcp.json``, ``.vscode/mcp.json``, the user-level ``mcp.json``, the registry):
#: read no further than this, then decoded within these bounds (``agent/mcp_sources.py``)
MCP_CONFIG = Bounds("an MCP configuration file", 1024 * 1024, 100_000, 64)
#: the user's answers about the project's MCP servers (``agent/mcp_consent_store.py``): one entry per definition
MCP_CONSENTS = Bounds("the MCP consents file", 8 * 1024 * 1024, 1_000_000, 8)


def decode(text: str | bytes, bounds: Bounds) -> Any:
    """``json.loads`` of input of the kind ``bounds`` stands for, checked first: :class:`Refused` (a ValueError)
    over its bounds, the decoder's ValueError when it is no JSON."""
    bounds.check(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return json.loads(text)


def answer(method: str | None, whole: Bounds) -> Bounds:
    """The bounds of an answer to the server's request ``method``: its own, never above the message's."""
    own = ANSWERS.get(method or "")
    if own is None:
        return whole
    return replace(own, max_bytes=min(own.max_bytes, whole.max_bytes), max_tokens=min(own.max_tokens,
                                                                                      whole.max_tokens))


__all__ = ["ACP_ANSWERS", "ANSWERS", "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_MAX_MESSAGE_TOKENS", "MCP_CONFIG",
           "MCP_CONSENTS",
           "MCP_MARGIN", "OFF_LOOP_BYTES", "PROVIDER_LISTING", "PROVIDER_STREAM", "READ_FILE_BYTES", "STORED_MESSAGE",
           "STORED_ROW_BYTES", "STORED_STATE", "TOOL_INPUT",
           "Bounds", "HttpBounds", "Refused", "answer", "decode", "mcp_http", "mcp_message", "message",
           "provider_answer"]



#: the accepted change sets whose "before" copies the server keeps for an undo, per conversation (REQ-BASH-040):
#: the most recent sets, and the bytes they may hold on disk together; the oldest set is dropped first, and a set
#: that alone is over the bytes is accepted but cannot be undone (the review says so before it is accepted)
UNDO_SETS = 10
UNDO_BYTES = 256 * 1024 * 1024
#: the most entries one kept set's manifest may name (a bound on the walk of a kept folder and on its reading)
UNDO_ENTRIES = 200_000
#: the largest manifest read back (checked before it is decoded)
UNDO_MANIFEST = Bounds("a kept change set's manifest", 64 * 1024 * 1024, 4 * UNDO_ENTRIES * 12)

#: How long a run without --model waits for the Models API's answer, once its request is out (the SDK's import
#: and client, which the message needs anyway, are not counted), before its message leaves on the built-in
#: table's default: the API lists in well under a second, and a run is a turn someone waits for, not kept
#: waiting on an API that does not list (REQ-MODEL-004).
RUN_LIST_WAIT_S = 10.0
