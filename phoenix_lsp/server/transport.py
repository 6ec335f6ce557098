"""The LSP byte stream, read so that no input ends the process or grows memory without bound (REQ-PROTO-044).

pygls's read loop (``pygls.io_.run_async``) trusts the ``Content-Length`` header: a huge value makes it
allocate or wait for that many bytes, and a 5,000-digit one raises outside its guarded block and kills the
process. :class:`Frames` replaces the loop's framing: header blocks are bounded, a message over the limit is
refused (logged, and answered when its id can be seen in the first bytes) and skipped without being kept, and
after any framing error the stream is resynchronised on the next ``Content-Length`` header. Each well-framed
body goes to the handler's ``handle_body`` (``PhoenixProtocol``'s).

Over 300 lines: the framing reader and the id readers its refusals need are the one place the byte stream is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from .. import limits

log = logging.getLogger(__name__)

#: the default of ``PHOENIX_MAX_MESSAGE_BYTES`` (Config.max_message_bytes): a message's body, not counting
#: its header (``limits``, where every kind of input's bounds are)
DEFAULT_MAX_MESSAGE_BYTES = limits.DEFAULT_MAX_MESSAGE_BYTES
#: a header block (every header line and the blank line) longer than this is not a header
MAX_HEADER_BYTES = 8 * 1024
#: how much is read from the stream at a time
CHUNK = 64 * 1024
#: how far into a refused message its id is looked for
ID_WINDOW = 64 * 1024

_LENGTH = re.compile(rb"^content-length:[ \t]*(\S*)[ \t\r]*$", re.I | re.M)
_START = re.compile(rb"content-length:", re.I)
#: a whole Content-Length line (its value may be broken): where a body that announced more than it sent, or a
#: refused one, ends. No JSON body holds one: such text can only be in a string, which has no raw CR LF and
#: ends with a quote before the body does (hence no quote in the line).
_HEADER = re.compile(rb'content-length:[^\r\n"]*\r\n', re.I)
#: bytes kept at the end of what is thrown away: a header may be split across two reads
_TAIL = 48
_COLON = re.compile(r"\s*:\s*")
_END = b"\r\n\r\n"

Read = Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class Refused:
    """A message that was not read: why, in words for the log and the error, and its id when it was seen."""

    reason: str
    msg_id: int | str | None = None


class Frames:
    """The messages of one stream. ``read()`` gives up to :data:`CHUNK` bytes (``b""`` at the end of the
    stream); ``limit()`` is the largest body accepted, asked for each message (settings load after start)."""

    def __init__(self, read: Read, limit: Callable[[], int]) -> None:
        self._read = read
        self._limit = limit
        self._buffer = bytearray()
        self._eof = False
        self._skip = 0  # bytes of a refused body still to throw away

    async def _more(self) -> bool:
        if self._eof:
            return False
        chunk = await self._read()
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def next(self) -> bytes | Refused | None:
        """The next message's body, a refusal, or None at the end of the stream."""
        while True:
            if self._skip and not await self._discard():
                return None
            start = _START.search(self._buffer)
            if start is None or start.start() > 0:
                # throw away what is not a header; keep a tail that may be a header split across reads
                cut = start.start() if start is not None else max(0, len(self._buffer) - _TAIL)
                if self._buffer[:cut].strip():
                    log.warning("skipped %d bytes that are not an LSP message (no Content-Length header)", cut)
                del self._buffer[:cut]
                if start is None:
                    if not await self._more():
                        return None
                    continue
            end = self._buffer.find(_END, 0, MAX_HEADER_BYTES + len(_END))
            if end < 0:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    del self._buffer[: len(b"content-length:")]  # resynchronise on the next header
                    return Refused(f"its header is longer than {MAX_HEADER_BYTES:,} bytes")
                if not await self._more():
                    return None
                continue
            header = bytes(self._buffer[:end])
            starts = [m.start() for m in _START.finditer(header)]
            if len(starts) > 1:  # which one is meant? none: resynchronise on the second
                del self._buffer[: starts[1]]
                return Refused("its header has more than one Content-Length")
            del self._buffer[: end + len(_END)]
            match = _LENGTH.search(header)
            value = match.group(1) if match else b""
            if not value.isdigit() or len(value) > 19:
                shown = value[:40].decode("ascii", "replace") + ("..." if len(value) > 40 else "")
                return Refused(f"its Content-Length {shown!r} is not a byte count")
            length, limit = int(value), self._limit()
            if length > limit:
                return await self._refuse(length, limit)
            lines = _Lines()
            while True:  # a header inside the body means it announced more than it sent: resynchronise there
                sent = lines.header_before(self._buffer, length)
                if sent is not None:
                    msg_id = request_id(bytes(self._buffer[:sent]))
                    del self._buffer[:sent]
                    return Refused(f"its Content-Length announced {length:,} bytes but the next message began "
                                   f"after {sent:,}", msg_id)
                if len(self._buffer) >= length:
                    break
                if not await self._more():
                    return None
            return self._take(length)

    def _take(self, length: int) -> bytes:
        """The first ``length`` bytes of the buffer, taken out of it. A big body is not copied: the buffer
        becomes the body (cut to its length) and what follows it goes to a new buffer. Copying tens of MB on the
        event loop (a slice, then ``bytes``: each a fresh allocation whose pages fault in) held every other
        request up for tens of ms (REQ-PROTO-062)."""
        if length <= limits.OFF_LOOP_BYTES:
            body = bytes(self._buffer[:length])
            del self._buffer[:length]
            return body
        whole, self._buffer = self._buffer, self._buffer[length:]
        del whole[length:]
        return whole  # type: ignore[return-value]  # a bytearray: every reader of a body takes bytes-like

    async def _refuse(self, length: int, limit: int) -> Refused:
        """Refuse a body over the limit. It is thrown away as it arrives (``_skip``), never kept; its id is
        looked for in its first bytes (up to :data:`ID_WINDOW`, without waiting for more than has been
        sent), so that a request gets an answer."""
        self._skip = length
        window = min(length, ID_WINDOW)
        while True:
            header = _HEADER.search(self._buffer)
            end = min(window, len(self._buffer) if header is None else header.start())
            msg_id = request_id(bytes(self._buffer[:end]))
            if msg_id is not None or header is not None or end >= window or not await self._more():
                break
        return Refused(f"it is {length:,} bytes long, over the limit of {limit:,} bytes", msg_id)

    async def _discard(self) -> bool:
        """Throw away the rest of a refused body, or up to the next header if one comes first (its header
        announced more than it sent). False at the end of the stream."""
        while self._skip > 0:
            header = _HEADER.search(self._buffer)
            if header is not None and header.start() < self._skip:
                del self._buffer[: header.start()]
                self._skip = 0
                break
            keep = 0 if header is not None else _TAIL
            taken = min(self._skip, max(0, len(self._buffer) - keep))
            del self._buffer[:taken]
            self._skip -= taken
            if self._skip and not await self._more():
                self._skip = 0
                return False
        return True


class _Lines:
    """Finds a header line in a body as it arrives, looking only where a line ends (CR LF, which JSON bodies as
    editors send them do not hold): the regular expression never runs over the whole body."""

    def __init__(self) -> None:
        self.pos = 0  # where the next line starts
        self.seen = 0  # how far the buffer holds no line end (beyond pos)

    def header_before(self, buffer: bytearray, length: int) -> int | None:
        """Where a header line starting before ``length`` begins, if one has arrived."""
        while self.pos < length:
            end = buffer.find(b"\r\n", max(self.pos, self.seen))
            if end < 0:
                self.seen = max(0, len(buffer) - 1)  # a CR may be the last byte so far
                return None  # the line goes on in what has not arrived yet
            hit = _HEADER.search(buffer, max(self.pos, end - MAX_HEADER_BYTES), end + 2)
            if hit is not None:
                return hit.start() if hit.start() < length else None
            self.pos = end + 2
        return None


def request_id(head: bytes) -> int | str | None:
    """The top-level ``"id"`` of the JSON object that ``head`` begins, when it is there and valid."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # up to the first byte that is not UTF-8 (the head may be cut in a char)
        text = head[: exc.start].decode("utf-8")
    decoder = json.JSONDecoder()
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            try:
                key, i = decoder.raw_decode(text, i)
            except ValueError:  # cut off, or not JSON
                return None
            if depth == 1 and key == "id" and (colon := _COLON.match(text, i)):
                if text[colon.end():colon.end() + 1] in ("[", "{"):
                    return None  # not a valid id; and decoding it could recurse thousands of levels deep
                try:
                    value, end = decoder.raw_decode(text, colon.end())
                except ValueError:
                    return None
                if isinstance(value, int) and end == len(text):
                    return None  # the digits may go on in bytes not read yet: 181 of 18104 is another request
                valid = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
                return value if valid else None
            continue
        depth += (c in "{[") - (c in "}]")
        i += 1
    return None


#: a top-level id as the last member of a body: ``"id": 12}`` or ``"id": "..."}`` at its very end
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,19}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*\Z')


def message_id(body: bytes) -> int | str | None:
    """The id of a whole message: in its first bytes (:func:`request_id`), else as its last member (a client
    may write the id after a big result). Found without decoding the body."""
    msg_id = request_id(body[:ID_WINDOW])
    if msg_id is not None:
        return msg_id
    tail = _TAIL_ID.search(body, max(0, len(body) - 512))
    if tail is None:
        return None
    try:
        value = json.loads(tail.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class Handler(Protocol):
    """Where the messages go (``lsp.PhoenixProtocol``)."""

    def handle_body(self, body: bytes) -> Awaitable[None] | None: ...
    def refuse(self, refused: Refused) -> None: ...


async def serve(read: Read, protocol: Handler, stop: threading.Event, limit: Callable[[], int]) -> None:
    """Hand every message of the stream to ``protocol`` until the stream ends or ``stop`` is set."""
    frames = Frames(read, limit)
    while not stop.is_set():
        frame = await frames.next()
        if frame is None:
            break
        if isinstance(frame, Refused):
            protocol.refuse(frame)
        else:
            pending = protocol.handle_body(frame)
            if pending is not None:  # a big message decoded off the event loop, to be handled in its turn
                await pending
        await asyncio.sleep(0)  # a burst of buffered messages must not hold back the tasks they started


#: how much of stdin one read may take, and the size asked for its pipe: a big message then crosses in a few reads
#: (with the 64 KiB a pipe holds by default, 36 MB took 576 reads, each a hop to a thread, and every message
#: after it waited for them)
PIPE_BYTES = 1024 * 1024


def stdin_reader(stdin: BinaryIO, pool: Any) -> Read:
    """Chunks of ``stdin`` read in ``pool`` (a blocking read must not hold the event loop). When stdin is a pipe
    it is asked to hold :data:`PIPE_BYTES` (Linux allows this much to any process by default); where it cannot,
    it keeps its size."""
    read1 = getattr(stdin, "read1", stdin.read)
    with contextlib.suppress(OSError, AttributeError, ValueError):
        fcntl.fcntl(stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)

    def read() -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(pool, read1, PIPE_BYTES)

    return read


def stream_reader(reader: asyncio.StreamReader) -> Read:
    def read() -> Awaitable[bytes]:
        return reader.read(CHUNK)

    return read


__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Frames", "Refused", "message_id", "request_id", "serve", "stdin_reader",
           "stream_reader"]
