"""HTTP answers from outside bounded as they arrive, before an SDK reads them (REQ-PROTO-063).

The providers' SDKs (Anthropic, OpenAI) and the MCP SDK's streamable-HTTP transport read their answers through
an httpx client; they gather an SSE line, or a whole JSON answer, before they decode it, however long it grows.
:func:`response_hook` is an httpx response event hook that wraps the answer's byte stream before anything reads
it: a line longer than the kind's line bound, lines nesting deeper or holding more tokens than it allows, or an
answer longer than its whole bound end the read with :class:`TooBig` (a :class:`limits.Refused`), which names
the bound. Nothing past the bound is held: a line is kept only up to its bound. The line checks cost time linear
in the answer at the speed of C (``bytes.split`` and ``safe_json.bound``).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

from . import limits


class TooBig(limits.Refused):
    """An answer over its kind's bounds; the read was ended there (what, the limit, and what to do). Raised as
    an ``httpx2.StreamError`` and ``SSEError`` too (:func:`_refusal_class`), which an SDK handles as a broken
    answer: the MCP SDK answers the call waiting for it with an error carrying this message, and its session goes
    on."""


#: words every refusal's message holds, by which a refusal is known after an SDK passed on only its text
MARK = "the answer was not read further"


class BoundedStream:  # an httpx2.AsyncByteStream: made one by _stream_class (httpx is imported when first used)
    """An httpx ``AsyncByteStream`` passing on the chunks of ``inner`` while they stay within ``bounds``.

    The unit checked is the text up to a blank line: one SSE event (its lines joined, as an SDK joins them), or
    a whole JSON answer (which has no blank line). Its size is checked as each chunk arrives, its nesting and
    tokens when it is complete, before the chunk that completes it is passed on."""

    def __init__(self, inner: Any, bounds: limits.HttpBounds) -> None:
        self._inner = inner
        self._bounds = bounds
        self._total = 0
        self._unit = bytearray()  # the current event's bytes so far, never more than its bound
        self._cr = False  # whether the last chunk ended with a CR, held back

    def _refuse(self, why: str) -> TooBig:
        return _refusal_class()(f"{why.removesuffix('; it was not decoded')}; {MARK}. {self._bounds.advice}")

    def _grow(self, piece: bytes) -> None:
        unit = self._bounds.unit
        if len(self._unit) + len(piece) > unit.max_bytes:
            raise self._refuse(unit.too_long(len(self._unit) + len(piece)).replace(" long,", " long or more,"))
        self._unit += piece

    def _end_unit(self) -> None:
        if self._unit.strip():
            try:
                self._bounds.unit.check(bytes(self._unit))
            except limits.Refused as exc:
                raise self._refuse(str(exc)) from None
        self._unit = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Account for ``chunk``: :class:`TooBig` when the answer or its current event is now over a bound."""
        self._total += len(chunk)
        whole = self._bounds.whole
        if self._total > whole:
            raise self._refuse(f"{self._bounds.what} is {self._total:,} bytes long or more, over the limit of "
                               f"{whole:,} bytes for it")
        if self._cr:  # a CR that ended the last chunk: a line end of its own, or the first half of CRLF
            chunk, self._cr = b"\r" + chunk, False
        if chunk.endswith(b"\r"):
            chunk, self._cr = chunk[:-1], True
        if b"\r" in chunk:  # SSE ends a line with CRLF, LF or CR
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if chunk.startswith(b"\n") and (not self._unit or self._unit.endswith(b"\n")):
            self._end_unit()  # a blank line whose first line end came in an earlier chunk
            chunk = chunk[1:]
        parts = chunk.split(b"\n\n")  # one step per event, not per line
        self._grow(parts[0])
        for part in parts[1:]:
            self._end_unit()
            self._grow(part)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self.feed(chunk)
            yield chunk
        self._end_unit()

    async def aclose(self) -> None:
        await self._inner.aclose()


def found(exc: BaseException) -> TooBig | None:
    """The :class:`TooBig` that ``exc`` is or was caused by (an SDK may wrap it), else None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, TooBig):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def httpx() -> ModuleType:
    """httpx2, the HTTP client under the model SDKs and MCP, imported on first use: the server loads its
    features in ``initialized`` without it, and every module that needs it asks here."""
    import httpx2  # lazy: about 30 ms; initialized loads this module, httpx loads with the first call

    return httpx2


@functools.cache
def _refusal_class() -> type[TooBig]:
    """:class:`TooBig` as an ``httpx2.StreamError`` and ``SSEError`` too: what the MCP SDK takes as a broken JSON
    answer or SSE stream, and answers the call waiting for it with an error carrying the message."""
    httpx2 = httpx()
    return type("TooBigAnswer", (TooBig, httpx2.StreamError, httpx2.SSEError), {})


@functools.cache
def _stream_class() -> type[BoundedStream]:
    """:class:`BoundedStream` as an ``httpx2.AsyncByteStream`` (httpx reads only those from an async client)."""
    httpx2 = httpx()
    return type("BoundedAsyncStream", (BoundedStream, httpx2.AsyncByteStream), {})


def response_hook(bounds_for: Callable[[Any], limits.HttpBounds]) -> Callable[[Any], Awaitable[None]]:
    """An httpx response event hook bounding each answer by ``bounds_for(request)`` before anything reads it."""

    async def bound(response: Any) -> None:
        response.stream = _stream_class()(response.stream, bounds_for(response.request))

    return bound


def provider_client(make: Callable[..., Any]) -> Any:
    """A model SDK's own default HTTP client (``make``: its ``DefaultAsyncHttpxClient``, so its pool, keep-alive
    and redirects stay the SDK's), each answer bounded as it arrives by ``limits.provider_answer``: one place for
    every provider's client."""
    return make(event_hooks={"response": [response_hook(lambda request: limits.provider_answer(request.url.path))]})


__all__ = ["MARK", "BoundedStream", "TooBig", "found", "provider_client", "response_hook"]
