"""The lines a client sends, before the SDK reads them (REQ-ACP-016, REQ-ACP-019).

The SDK skips a line that is not JSON (it logs it), but a line of JSON that is not an object (``[1]``, ``42``,
``null``) stops its receive loop, and with it the agent. Only lines that may be JSON-RPC messages (an object,
``{`` first) are passed on; any other is logged and skipped, as the SDK does for a line that is not JSON.

A line over the cap the LSP side has for a message (``PHOENIX_MAX_MESSAGE_BYTES``) is thrown away as it arrives,
never held whole; when its head holds a request's id, that request is answered with an error saying so. A line
nested deeper than ``safe_json.MAX_DEPTH`` or holding more tokens than ``PHOENIX_MAX_MESSAGE_TOKENS`` is skipped
before the SDK reads it (the SDK's observer deep-copies each message: a RecursionError there ended its receive
loop), and its request answered likewise (REQ-PROTO-061)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from dataclasses import replace

from ... import limits
from ..transport import ID_WINDOW, message_id, request_id
from . import errors

log = logging.getLogger(__name__)

#: the buffer of the reader of stdin: the most of a line read at a time
READ_LIMIT = 1024 * 1024
#: JSON-RPC's "Invalid Request", as the LSP side answers a message it refused
INVALID_REQUEST = -32600


async def _line(source: asyncio.StreamReader, cap: int, refuse: Callable[[bytes, int], None]) -> bytes | None:
    """The next line, b"" at the end; None for a line over ``cap`` bytes (its newline aside): that one is read on
    and thrown away chunk by chunk, and ``refuse(head, bytes read so far)`` is called once, when it crosses the
    cap."""
    chunks: list[bytes] = []
    size = 0
    dropped = False
    while True:
        try:
            chunk, done = await source.readuntil(b"\n"), True
        except asyncio.LimitOverrunError as exc:
            chunk, done = await source.readexactly(exc.consumed), False
        except asyncio.IncompleteReadError as exc:
            chunk, done = exc.partial, True
        size += len(chunk)
        if not dropped:
            chunks.append(chunk)
            if size - (done and chunk.endswith(b"\n")) > cap:
                dropped = True
                refuse(b"".join(chunks)[:ID_WINDOW], size)
                chunks.clear()
        if done:
            return None if dropped else b"".join(chunks)


def refusal(msg_id: int | str, size: int, cap: int) -> bytes:
    """The error answer to a request over the cap, as one line."""
    message = (f"Message refused: it is {size:,}+ bytes, over the limit of {cap:,} bytes "
               "(PHOENIX_MAX_MESSAGE_BYTES sets the limit; a longer message could exhaust the agent's memory). It "
               "was not read: send less (e.g. fewer or smaller images or attachments), or raise the limit.")
    return _error_line(msg_id, message)


def _error_line(msg_id: int | str, message: str) -> bytes:
    """An error answer written by the agent itself, in the shape of every other (REQ-ACP-030)."""
    data = {"message": message, "error": message}
    answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INVALID_REQUEST, "message": message, "data": data}}
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8")


def bounds_refusal(msg_id: int | str, reason: str) -> bytes:
    """The error answer to a request over the line's bounds (nesting, tokens), as one line."""
    message = (f"Message refused: {reason}. The agent goes on serving; send the request again with less in it.")
    return _error_line(msg_id, message)


#: the method of a request the agent writes, looked for in the first bytes of what it writes
_METHOD = re.compile(rb'"method"\s*:\s*"([^"\\]{1,64})"')


class Asked:
    """The agent's own requests whose answers have bounds of their own (``limits.ACP_ANSWERS``), by id: seen as
    the SDK writes them (before their bytes leave, so that no answer can come first), forgotten when answered."""

    def __init__(self) -> None:
        self.pending: dict[int | str, str] = {}

    def sent(self, data: bytes) -> None:
        """Note ``data`` (one message the SDK writes) when it is a request of a method with its own bounds."""
        head = data[:512]
        found = _METHOD.search(head)
        if found is None or found[1].decode() not in limits.ACP_ANSWERS:
            return
        msg_id = request_id(data[:ID_WINDOW])
        if msg_id is not None:
            self.pending[msg_id] = found[1].decode()

    def answered(self, msg_id: int | str | None) -> limits.Bounds | None:
        """The bounds of the answer with ``msg_id`` when it answers such a request (then it is forgotten)."""
        if msg_id is None or not self.pending:
            return None
        method = self.pending.pop(msg_id, None)
        return None if method is None else limits.ACP_ANSWERS[method]


def watch(writer: asyncio.StreamWriter, asked: Asked,
          redact: Callable[[str], str] = lambda text: text) -> asyncio.StreamWriter:
    """``writer`` (the agent's stdout, which the SDK takes only as an asyncio StreamWriter) noting each request it
    writes in :class:`Asked` first, and giving an error answer the SDK made itself the shape of the agent's own
    (``errors.shaped``, REQ-ACP-030)."""
    write = writer.write

    def noted(data: bytes | bytearray | memoryview) -> None:
        asked.sent(bytes(data[:ID_WINDOW]))
        write(errors.shaped(data, redact) if isinstance(data, bytes) else data)

    setattr(writer, "write", noted)  # noqa: B010  # the instance's own, in place of the class's
    return writer


def answer_refusal(msg_id: int | str, reason: str) -> bytes:
    """An error answer standing for an answer of the client over its bounds, as one line fed to the SDK: the
    request waiting for it fails with the reason (a read then falls back to the disk, REQ-ACP-020)."""
    message = f"The client's answer was not read: {reason}"
    answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INVALID_REQUEST, "message": message}}
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8")


def objects_only(source: asyncio.StreamReader, writer: asyncio.StreamWriter | None = None,
                 cap: int = 2**31 - 1, tokens: int = limits.DEFAULT_MAX_MESSAGE_TOKENS,
                 asked: Asked | None = None) -> asyncio.StreamReader:
    """A reader that gives the lines of ``source`` that start with ``{`` and hold at most ``cap`` bytes, nest at
    most ``safe_json.MAX_DEPTH`` levels and hold at most ``tokens`` strings, commas and brackets (REQ-PROTO-061);
    the others are logged and skipped, and a request among them is answered on ``writer``. A line over
    ``limits.OFF_LOOP_BYTES`` is measured in a thread. An answer to one of the agent's requests noted in
    ``asked`` has that method's bounds (``limits.ACP_ANSWERS``); over them, or over the line's cap, the SDK is given
    an error answer for it instead."""
    reader = asyncio.StreamReader()
    bounds = limits.message(cap, tokens)

    def measured(line: bytes, kind: limits.Bounds) -> str | None:
        try:
            kind.check(line)
        except limits.Refused as exc:
            return str(exc)
        return None

    def own_answer(head: bytes) -> tuple[int | str, limits.Bounds] | None:
        """The id and bounds of an answer to one of the agent's requests with bounds of their own."""
        if asked is None or not asked.pending:
            return None
        msg_id = request_id(head[:ID_WINDOW])
        kind = asked.answered(msg_id)
        return None if kind is None or msg_id is None else (msg_id, kind)

    async def over(line: bytes) -> bool:
        """Whether the line is over its bounds (then it is logged, and its request answered)."""
        own = own_answer(line)
        kind = bounds if own is None else replace(own[1], max_bytes=min(own[1].max_bytes, cap),
                                                  max_tokens=min(own[1].max_tokens, tokens))
        if len(line) > limits.OFF_LOOP_BYTES:
            reason = await asyncio.get_running_loop().run_in_executor(None, measured, line, kind)
        else:
            reason = measured(line, kind)
        if reason is None:
            return False
        if own is not None:
            log.warning("an answer of the ACP client was not read (%d bytes): %s", len(line), reason)
            reader.feed_data(answer_refusal(own[0], reason))
            return True
        msg_id = message_id(line)
        log.warning("a line from the ACP client was skipped (%d bytes): %s; %s", len(line), reason,
                    "its request is answered an error" if msg_id is not None else "it holds no request id")
        if msg_id is not None and writer is not None:
            writer.write(bounds_refusal(msg_id, reason))
        return True

    def refuse(head: bytes, size: int) -> None:
        own = own_answer(head)
        if own is not None:  # an answer to the agent's request: the request fails (it is not answered back)
            reason = f"it is {size:,}+ bytes, over the limit of {cap:,} bytes for a line (PHOENIX_MAX_MESSAGE_BYTES)"
            log.warning("an answer of the ACP client was not read: %s", reason)
            reader.feed_data(answer_refusal(own[0], reason))
            return
        msg_id = request_id(head)
        log.warning("a line from the ACP client was skipped: it is %d+ bytes, over the limit of %d "
                    "(PHOENIX_MAX_MESSAGE_BYTES); %s", size, cap,
                    "its request is answered an error" if msg_id is not None else "it holds no request id")
        if msg_id is not None and writer is not None:
            # one write of the whole line: the SDK's sender also writes each message in one call, so the two never
            # interleave on stdout
            writer.write(refusal(msg_id, size, cap))

    async def pump() -> None:
        try:
            while (line := await _line(source, cap, refuse)) != b"":
                if line is None:
                    continue
                head = line.lstrip()[:1]
                if head == b"{" and await over(line):  # before the SDK decodes it and walks it (a deep copy)
                    continue
                if head in (b"{", b""):
                    reader.feed_data(line)
                else:
                    log.warning("a line from the ACP client was skipped: it is not a JSON-RPC message (a JSON "
                                "object; it starts %r, %d bytes)", head, len(line))  # its text is not logged
        finally:
            reader.feed_eof()

    _pumps.add(task := asyncio.ensure_future(pump()))
    task.add_done_callback(_pumps.discard)
    return reader


_pumps: set[asyncio.Future[None]] = set()
