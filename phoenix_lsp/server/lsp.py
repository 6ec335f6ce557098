"""The language server object: what it knows about its client, and the way from conversations to it.

Rich clients (``capabilities.experimental.phoenix``) get ``phoenix/event``; plain clients get the
standard-LSP fallbacks of ``plain.PlainClient``. The server is the LSP adapter: the runtime's ``Editor`` and
``User`` (``adapter.py``), and it never imports the runtime.

Hostile input (REQ-PROTO-044..048): the stream is read by ``transport``; ``PhoenixProtocol.handle_body`` checks
each message before pygls handles it, answers every malformed request with the JSON-RPC error that says what is
wrong, and keeps the lifecycle (one ``initialize``, nothing before it, no requests after ``shutdown``). Errors
caused by the client go to the log, rate-limited, never to a popup.

Over 300 lines: pygls's protocol subclass (the hostile-input checks before pygls) and the server object are the one
LSP adapter; split, each would import the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from cattrs import transform_error
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from .. import limits, uris
from ..protocol.codes import CODES
from ..protocol.converter import plain_converter
from . import logs, transport

if TYPE_CHECKING:
    from ..core.values import ToolUse
    from ..protocol.events import EventKinds
    from ..tools.shell_changes import ChangeKind
    from ..tools.shell_changes.edit import Review
    from ..tools.shell_changes.restore import Plan
    from .adapter import Conversation, Conversations
    from .plain import PlainClient
    from .sight import EditorSight

VERSION = "0.1.0"


#: hostile input is logged here (rate-limited, logs.HOSTILE_INPUT_LOGGERS), never shown as a popup
hostile = logging.getLogger(transport.__name__)


def envelope(data: Any) -> tuple[str | None, Any]:
    """What is wrong with a parsed message as JSON-RPC 2.0 (None when nothing), and the id to answer it with:
    its own when it is a request with a valid id, else None (JSON-RPC's ``null``)."""
    if not isinstance(data, dict):
        what = "a batch (an array), which LSP does not use" if isinstance(data, list) else type(data).__name__
        return f"a message must be a JSON object, got {what}", None
    msg_id = data.get("id")
    valid_id = isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))
    answer_id = msg_id if valid_id else None
    if data.get("jsonrpc") != "2.0":
        return 'its "jsonrpc" member must be "2.0"', answer_id
    if "id" in data and not valid_id:
        return f'its "id" must be a string or an integer, got {json.dumps(msg_id)[:40]}', None
    if "method" in data:
        if not isinstance(data["method"], str):
            return 'its "method" must be a string', answer_id
    elif "id" not in data or ("result" not in data and "error" not in data):
        return 'it is neither a request, a notification nor an answer (no "method", or no "result"/"error")', None
    return None, answer_id


class PhoenixProtocol(LanguageServerProtocol):
    """Adds ``capabilities.experimental.phoenix`` to the InitializeResult (pygls builds it after our handler),
    and checks every message before pygls handles it."""

    _server: PhoenixServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_received = False
        #: the method of each request the server sent and whose answer has not come (its answer's bounds)
        self.sent_methods: dict[Any, str] = {}
        #: big requests being decoded off the event loop (kept so that they are not collected)
        self.big_requests: set[asyncio.Future[None]] = set()

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        if self.initialize_received:  # LSP: initialize is sent once; a second one must not change the client
            raise JsonRpcInvalidRequest(
                "initialize was already received: a server is initialized once and keeps the capabilities of its "
                "first initialize. Start a new server process to initialize again."
            )
        self.initialize_received = True
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = self._server.experimental
        return result

    # ------------------------------------------------------------------------------ hostile input

    def handle_body(self, body: bytes) -> Awaitable[None] | None:
        """One message's body: bounded, parsed, checked, then handled by pygls. A malformed request is answered
        with the error that says what is wrong; whatever the body, nothing raises out of here (SystemExit of
        ``exit`` excepted). The bounds are those of its kind (``limits``: an answer to one of the server's own
        requests has its method's, REQ-PROTO-063), checked before anything is decoded. A body longer than
        ``limits.OFF_LOOP_BYTES`` is checked and decoded in a thread, so the event loop goes on serving
        (REQ-PROTO-062): a big request is then handled when it is ready while the messages after it are read
        and handled; for any other big message an awaitable is returned, which the stream waits for (the order
        of notifications and answers is kept)."""
        # the id, found without decoding, is needed only when the body may answer one of our requests (its kind's
        # bounds) or is big (a request is then handled apart); else only for an error, and found then
        maybe_answer = bool(self.sent_methods) or len(body) > limits.OFF_LOOP_BYTES
        msg_id = transport.message_id(body) if maybe_answer else None
        sent = self.sent_methods.get(msg_id) if msg_id is not None else None
        bounds = limits.answer(sent, self._server.message_bounds())
        if len(body) <= limits.OFF_LOOP_BYTES:
            self.receive(body, msg_id, sent, *self.prepare(body, bounds))
            return None
        prepared = asyncio.get_running_loop().run_in_executor(None, self.prepare, body, bounds)

        async def finish() -> None:
            try:
                self.receive(body, msg_id, sent, *await prepared)
            except Exception:
                hostile.exception("failed to handle a message of %d bytes", len(body))

        if msg_id is not None and sent is None and _REQUEST.search(body, 0, transport.ID_WINDOW):
            task = asyncio.ensure_future(finish())
            self.big_requests.add(task)
            task.add_done_callback(self.big_requests.discard)
            return None
        return finish()

    def prepare(self, body: bytes, bounds: limits.Bounds) -> tuple[Any, Any]:
        """The body decoded (or why not, :func:`_decode`) and, for a well-formed request or notification, its
        message structured (or the error); run in a thread for a big body, so nothing here touches the state
        of the protocol. An answer is structured by :meth:`receive` (its result type is taken from the
        requests sent)."""
        decoded = _decode(body, bounds)
        if not isinstance(decoded, dict) or envelope(decoded)[0] is not None or "method" not in decoded:
            return decoded, None
        if "params" not in decoded:
            decoded["params"] = None  # JSON-RPC: params may be omitted (Neovim's request(method, nil)), REQ-PROTO-045
        try:
            return decoded, self.structure_message(decoded)
        except Exception as exc:
            return decoded, _Unstructured(exc)

    def receive(self, body: bytes, msg_id: Any, sent: str | None, decoded: Any, structured: Any = None) -> None:
        """A message prepared by :meth:`prepare`: answered, or handled by pygls. ``msg_id`` is the id found
        without decoding (or None when it was not looked for: then it is, for an error)."""
        if isinstance(decoded, BaseException) and msg_id is None:
            msg_id = transport.message_id(body)
        if isinstance(decoded, limits.Refused):
            if sent is not None:  # an answer to our request: that request fails, saying why
                self.refuse_answer(msg_id, str(decoded))
            else:
                self.answer_malformed(msg_id, JsonRpcInvalidRequest(f"Message refused: {decoded}."))
            return
        if isinstance(decoded, BaseException):  # UnicodeDecodeError is a ValueError
            why = "it is nested too deeply" if isinstance(decoded, RecursionError) else str(decoded)[:200]
            if sent is not None:  # an answer to our request that is not JSON: that request fails
                self.refuse_answer(msg_id, f"the answer is not JSON ({why})")
                return
            # the id when it can still be read (a body cut short or padded): the request gets its answer
            self.answer_malformed(msg_id, JsonRpcParseError(f"Parse error: the message is not JSON ({why})."))
            return
        data = decoded
        problem, msg_id = envelope(data)
        if problem is not None:
            is_request = not isinstance(data, dict) or "method" in data
            self.answer_malformed(msg_id if is_request else None, JsonRpcInvalidRequest(
                f"Invalid request: {problem}. Send JSON-RPC 2.0 as LSP does."), answer=is_request)
            return
        method = data.get("method")
        if method is None:
            self.sent_methods.pop(msg_id, None)
        try:
            if isinstance(structured, _Unstructured):
                raise structured.error
            message = structured if structured is not None else self.structure_message(data)
        except Exception as exc:
            detail = _why(exc)
            error = JsonRpcInvalidParams(f"Invalid params for {method}: {detail}.") if method else None
            if method is not None and "id" in data:
                assert error is not None
                self.answer_malformed(msg_id, error)
            else:
                kind = f"notification {method!r}" if method else f"answer to request {msg_id!r}"
                hostile.warning("ignored a malformed %s: %s", kind, detail)
            return
        try:
            self.handle_message(message)
        except Exception:  # a bug of ours, or of pygls: logged, and the server goes on
            hostile.exception("failed to handle a %s message", method or "response")

    def send_request(self, method: str, params: Any | None = None, callback: Any = None,
                     msg_id: Any = None) -> Any:
        """pygls's, remembering which method each id asks: its answer gets that method's bounds."""
        if msg_id is None:
            msg_id = str(uuid.uuid4())
        self.sent_methods[msg_id] = method
        return super().send_request(method, params, callback, msg_id)

    def refuse_answer(self, msg_id: Any, reason: str) -> None:
        """An answer over its method's bounds: logged, and the request it answers fails with ``reason``."""
        method = self.sent_methods.pop(msg_id, None)
        hostile.warning("refused the client's answer to %s: %s", method, reason)
        self._result_types.pop(msg_id, None)
        future = self._request_futures.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_exception(limits.Refused(reason))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls's, for a checked envelope, without its per-message traceback in the log."""
        if "id" in data and "method" not in data:
            if "error" in data:
                return self._converter.structure(data, types.ResponseErrorMessage)
            kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
            return self._converter.structure(data, kind)
        default = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
        return self._converter.structure(data, self.get_message_type(data["method"]) or default)

    def answer_malformed(self, msg_id: Any, error: JsonRpcException, *, answer: bool = True) -> None:
        """Log a malformed message (rate-limited) and, for a request, answer it with ``error``."""
        hostile.warning("malformed message (request %r): %s", msg_id, error.message)
        if answer:
            self.answer_error(msg_id, error.to_response_error())

    def answer_error(self, msg_id: Any, error: types.ResponseError) -> None:
        """Answer a request with an error; with ``"id": null`` when its id could not be read (JSON-RPC)."""
        if msg_id is None:  # pygls would leave the id out, and JSON-RPC wants it there, null
            body = {"code": error.code, "message": error.message}
            self._send_data({"jsonrpc": "2.0", "id": None, "error": body})
        else:
            self._send_response(msg_id, error=error)

    def refuse(self, refused: transport.Refused) -> None:
        """A message the transport did not read (too long, broken header): logged, and answered when its id
        was seen."""
        hostile.error("refused a message: %s. It was skipped; the stream goes on with the next message.",
                      refused.reason)
        if refused.msg_id is not None and refused.msg_id in self.sent_methods:  # an answer to our request
            self.refuse_answer(refused.msg_id, f"the answer was not read: {refused.reason}")
        elif refused.msg_id is not None:
            self._send_response(refused.msg_id, error=JsonRpcInvalidRequest(
                f"Message refused: {refused.reason} (PHOENIX_MAX_MESSAGE_BYTES sets the limit). It was not read: "
                "send less (e.g. fewer or smaller images or attachments)."
            ).to_response_error())

    def handle_message(self, message: Any) -> None:
        """The LSP lifecycle around pygls's dispatch: before ``initialize`` a request is answered -32002 and a
        notification dropped (``exit`` excepted); after ``shutdown`` a request is answered -32600."""
        method = getattr(message, "method", None)
        is_request = method is not None and hasattr(message, "id")
        if method is not None and not self.initialize_received and method not in (types.INITIALIZE, types.EXIT):
            hostile.warning("dropped %r received before initialize", method)
            if is_request:
                self._send_response(message.id, error=types.ResponseError(
                    CODES["notInitialized"], f"{method} came before initialize: send initialize first.",
                    {"kind": "notInitialized"}))
            return
        if self._shutdown and is_request and method != types.EXIT:
            self._send_response(message.id, error=JsonRpcInvalidRequest(
                f"{method} came after shutdown: the server is stopping and answers nothing more; send exit."
            ).to_response_error())
            return
        super().handle_message(message)


#: a top-level "method" member near the start of a body: a big message with an id and this is a request
_REQUEST = re.compile(rb'"method"\s*:\s*"')


@dataclass(frozen=True)
class _Unstructured:
    """A request or notification whose params did not structure (the error is raised again on the loop)."""

    error: Exception


def _decode(body: bytes, bounds: limits.Bounds) -> Any:
    """The decoded body, or the exception that says why it was not decoded (returned, not raised: this runs
    in a thread for a big body): ``limits.Refused`` over its bounds, else the decoder's error."""
    try:
        bounds.check(body)
    except limits.Refused as exc:
        return exc
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        return exc


def warn(ls: LanguageServer, text: str, kind: types.MessageType = types.MessageType.Warning) -> None:
    """A message the user must act on (window/showMessage)."""
    ls.window_show_message(types.ShowMessageParams(type=kind, message=text))


def _why(exc: BaseException) -> str:
    """A cattrs structuring error in one line: the first problem and where it is."""
    cause = exc.__cause__ or exc
    try:
        problems = transform_error(cause)
    except Exception:
        problems = [str(cause)]
    return "; ".join(problems[:3])[:300] or type(cause).__name__


def _editor_side() -> ModuleType:
    """``edits.py``, with ``sight.py`` under it: what the server does in the editor for a tool, loaded below the
    boot line with the features."""
    from . import edits  # lazy: it loads the core and the tools, which initialize is answered without

    return edits


class PhoenixServer(LanguageServer):
    """One hub of conversations, and what the server knows about its client."""

    protocol: PhoenixProtocol
    #: what a client without the phoenix protocol is shown (set when the features load, ``served.install``)
    plain: PlainClient

    def __init__(self, data_dir: str | None = None) -> None:
        super().__init__("phoenix-lsp", VERSION, protocol_cls=PhoenixProtocol, converter_factory=plain_converter)
        logs.limit_hostile_input_logs()
        #: the largest message body read (Config.max_message_bytes, set with the settings in initialized)
        self.max_message_bytes = transport.DEFAULT_MAX_MESSAGE_BYTES
        #: the most strings, commas and brackets in one message (Config.max_message_tokens, REQ-PROTO-061)
        self.max_message_tokens = limits.DEFAULT_MAX_MESSAGE_TOKENS
        self.started = False  # initialized was received (a second one changes nothing)
        self.consents_asked = 0  # numbers the MCP consent dialogs, so a cancelled turn takes its dialog back
        self.experimental: dict[str, Any] = {}
        self.init_options: Any = None
        self.setup_error: str | None = None
        self.sandbox: Any = None
        self.data_dir = data_dir
        self.hub: Conversations | None = None  # the runtime's hub, set up in initialized (boot.py)
        self.rich = False
        self.editor_sight = False  # the client announced experimental.phoenix.editorSight (REQ-SIGHT-002)
        self.loaded = False  # the features are loaded (the boot line, ``features/lifecycle.py``)

    # --------------------------------------------------------------------------- transport (REQ-PROTO-044)

    def message_limit(self) -> int:
        return self.max_message_bytes

    def message_bounds(self) -> limits.Bounds:
        return limits.message(self.max_message_bytes, self.max_message_tokens)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls's ``start_io`` with the stream read by ``transport``."""
        self._stop_event = stop = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        read = transport.stdin_reader(stdin or sys.stdin.buffer, self.thread_pool)
        try:
            asyncio.run(transport.serve(read, self.protocol, stop, self.message_limit))
        except BrokenPipeError:
            logging.getLogger(__name__).error("the connection to the client is lost: shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls is untyped here

    def start_tcp(self, host: str, port: int) -> None:
        """pygls's ``start_tcp`` with each connection read by ``transport``."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # pygls writes bytes to it
            await transport.serve(transport.stream_reader(reader), self.protocol, stop, self.message_limit)
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls is untyped here

        async def listen() -> None:
            self._server = server = await asyncio.start_server(connection, host, port)
            addresses = ", ".join(str(sock.getsockname()) for sock in server.sockets)
            logging.getLogger(__name__).info("Serving on %s", addresses)
            async with server:
                await server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(listen())

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls shows every error as an "Error in server" popup; here they go to the log (rate-limited).
        Requests already carry their error in the answer; popups are for what the user must act on, and the
        features show those themselves (REQ-PROTO-048)."""
        hostile.error("%s: %s", getattr(source, "__name__", source), error)

    def spawn(self, coro: Any) -> Any:
        assert self.hub is not None
        return self.hub.spawn(coro)

    # ------------------------------------------------------------- the runtime's Editor and User (adapter.py)

    def log_to_client(self, text: str) -> None:
        """A line for the editor's log of this server (window/logMessage), such as the context size in use."""
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=text))

    def event(self, event: EventKinds, params: dict[str, Any]) -> None:
        if self.rich:
            self.protocol.notify("phoenix/event", params)
        else:
            self.plain.event(event, params)

    def event_batch(self, batch: Sequence[tuple[EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        """Events already stored, ``texts`` being each one's params as JSON (REQ-PROTO-049). To a rich client
        on stdio or TCP they go in one write, framed as pygls frames every message, around the JSON already
        made: one write instead of one per event keeps many streams cheap (each write is a system call, and
        blocks while the client reads), and a 20 MB answer is not serialised a second time."""
        protocol = self.protocol
        writer = protocol.writer
        if not self.rich or writer is None or not getattr(protocol, "_include_headers", False):
            for event, params in batch:
                self.event(event, params)
            return
        header = f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
        frames = []
        for text in texts:  # json.dumps escapes everything beyond ASCII: characters are bytes
            body = f'{{"jsonrpc": "2.0", "method": "phoenix/event", "params": {text}}}'
            frames.append(f"Content-Length: {len(body)}\r\n{header}{body}")
        writer.write("".join(frames).encode(protocol.CHARSET))  # stdio and TCP writers write at once

    def ask_approval(self, runtime: Conversation, tool_use_id: str, call: ToolUse) -> None:
        if not self.rich and self.hub is not None:
            self.plain.ask_approval(runtime, tool_use_id, call)

    def ask_upgrade(self, runtime: Conversation, tool_use_id: str, reason: str) -> None:
        if not self.rich and self.hub is not None:
            self.plain.ask_upgrade(runtime, tool_use_id, reason)

    def withdraw(self, runtime: Conversation, tool_use_id: str) -> None:
        self.plain.withdraw(tool_use_id)

    async def ask_mcp_consent(self, runtime: Conversation, question: Any) -> bool | None:
        """A project's MCP server asks for the user's consent (REQ-MCP-009) as ``window/showMessageRequest``,
        which every LSP client shows (VS Code and Neovim natively, the terminal chat at its prompt)."""
        params = types.ShowMessageRequestParams(type=types.MessageType.Warning, message=question.text, actions=[
            types.MessageActionItem(title=question.APPROVE), types.MessageActionItem(title=question.DECLINE)])
        self.consents_asked += 1
        msg_id = f"phoenix-mcp-consent-{self.consents_asked}"
        try:
            result = await self.protocol.send_request_async("window/showMessageRequest", params, msg_id=msg_id)
        except asyncio.CancelledError:  # the turn was cancelled meanwhile: the dialog is taken back
            with contextlib.suppress(Exception):
                self.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # never approve by default: not started, asked again at the next turn
            logging.getLogger(__name__).warning("could not ask the client about the MCP server %s (%s); it is not "
                                                "started", question.name, exc)
            return None
        title = result.get("title") if isinstance(result, dict) else getattr(result, "title", None)
        if title == question.APPROVE:
            return True
        return False if title == question.DECLINE else None

    def mcp_notice(self, runtime: Conversation, text: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    def open_documents(self) -> Mapping[Path, str]:
        docs: dict[Path, str] = {}
        for uri, doc in self.workspace.text_documents.items():
            try:  # keyed by the canonical path (REQ-URI-001), the one the attachment and sight checks see
                docs[Path(uris.file_path(uri))] = doc.source
            except uris.UriError:
                continue  # names no local file (untitled:, another host, ...)
        return docs

    async def documents_for(self, runtime: Conversation, call: ToolUse) -> Mapping[Path, str]:
        return {}  # the open documents say it (open_documents)

    def sight_for(self, runtime: Conversation) -> EditorSight | None:
        """The editor's sight for one conversation's tools, or None when this client does not offer it."""
        if not self.editor_sight or self.hub is None:
            return None
        sight: EditorSight = _editor_side().sight_for(self, runtime, self.hub.config)
        return sight

    async def apply_patch(self, runtime: Conversation, call: ToolUse) -> tuple[str, bool]:
        data_dir = self.hub.data_dir if self.hub is not None else None
        result: tuple[str, bool] = await _editor_side().apply_patch(self, runtime, call, data_dir)
        return result

    async def review_texts(self, conversation: Conversation, paths: Sequence[Path]) -> Mapping[Path, str]:
        wanted = set(paths)
        return {path: text for path, text in self.open_documents().items() if path in wanted}

    def review_kinds(self) -> frozenset[ChangeKind]:
        kinds: frozenset[ChangeKind] = _editor_side().REVIEW_KINDS
        return kinds

    def cannot_apply(self, review: Review) -> str | None:
        why: str | None = _editor_side().cannot_apply(self, review)
        return why

    async def apply_review(self, conversation: Conversation, call_id: str, review: Review) -> str | None:
        why: str | None = await _editor_side().apply_review(self, review)
        return why

    async def apply_undo(self, conversation: Conversation, plan: Plan) -> str | None:
        """The text part of an undo as one versioned workspace edit (REQ-BASH-041)."""
        why: str | None = await _editor_side().apply_undo(self, plan)
        return why

    def undo_deletes(self) -> bool:
        return True  # a DeleteFile of the workspace edit
