"""The hub's outbox: text deltas gathered into events, stored in one transaction, then sent (REQ-PROTO-049).

The model's deltas wait in the outbox, each appended to the conversation's pending ``textDelta`` event, until
the event loop has handled what is ready, and at most once every ``HubConfig.event_coalesce_ms`` (a delta
after a quiet spell goes at once; under load the flushes, each one store transaction, are paced), or at once
when the outbox holds ``OUTBOX_FLUSH_BYTES``. A flush stores every pending event of every conversation in one
transaction and only then sends them. Any other event, and any transition, first flushes the outbox, so seqs
stay in order, what is stored is exactly what clients were sent, and nothing is sent that a crash could lose.

Each model request's text goes through its own ``StreamRedactor`` before it joins an event (REQ-SEC-041): a
secret the model writes across deltas that land in different flushes is never sent in pieces a client could
join. The text it holds back is released, redacted, when the request is no longer the one the conversation
awaits (its answer or failure was applied, or it was cancelled: before that transition's events) or when its
stream ends; every adapter (LSP, ACP, the terminal client) gets its text deltas from here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol import events as ev
from ...protocol.base import to_wire
from ...store import Store
from ...store.stream_redact import StreamRedactor
from ..adapter import Client
from .base import HubConfig, Peer

#: The outbox is flushed at once when its text reaches this size (a burst from the model in one read).
OUTBOX_FLUSH_BYTES = 256 * 1024
#: A pending textDelta takes no more text than this; more starts the next event.
MAX_DELTA_EVENT_BYTES = 64 * 1024


@dataclass
class PendingDelta:
    """A textDelta event whose seq is taken and whose text is still being gathered."""

    runtime: Peer
    seq: int
    request_id: int
    parts: list[str]
    size: int


class Outbox:
    """The hub's way to its clients: the text deltas waiting, the redaction of each stream, when to flush."""

    def __init__(self, store: Store, config: HubConfig, sink: Client) -> None:
        self.store = store
        self.config = config
        self.sink = sink
        self.pending: list[PendingDelta] = []  # the textDelta events waiting for the next flush, in seq order
        #: conversation id -> its textDelta event still gathering text (one of ``pending``)
        self.gathering: dict[str, PendingDelta] = {}
        #: the redaction of each model request's text still streaming: (conversation id, request id) -> its
        #: conversation and redactor
        self.streams: dict[tuple[str, int], tuple[Peer, StreamRedactor]] = {}
        self._bytes = 0  # the text in ``pending``
        self._flush_soon: asyncio.Handle | None = None
        self._flushed_at = float("-inf")  # the loop's time of the last flush

    def queue_text(self, runtime: Peer, request_id: int, text: str) -> None:
        """A text delta of the model's answer to ``request_id`` for ``runtime``'s clients: what its stream's
        redactor lets through is added to the pending textDelta event, sent with the next flush."""
        key = (runtime.id, request_id)
        if key in self.streams:
            stream = self.streams[key][1]
        elif _awaited(runtime) == request_id:
            stream = StreamRedactor(self.store.guard)
            self.streams[key] = (runtime, stream)
        else:  # a late piece of a request that is over (cancelled in the same tick): nothing follows it
            stream = None
        text = stream.feed(text) if stream is not None else self.store.guard.redact(text)
        if text:
            self._queue(runtime, request_id, text)

    def end_text(self, runtime: Peer, request_id: int) -> None:
        """The model's answer to ``request_id`` streams no more: the text its redactor held back is queued."""
        ended = self.streams.pop((runtime.id, request_id), None)
        if ended is not None:
            text = ended[1].end()
            if text:
                self._queue(runtime, request_id, text)

    def _end_streams_over(self) -> None:
        """End the streams whose request the conversation no longer awaits (a transition ended it)."""
        for (_id, request_id), (runtime, _stream) in list(self.streams.items()):
            if _awaited(runtime) != request_id:
                self.end_text(runtime, request_id)

    def _queue(self, runtime: Peer, request_id: int, text: str) -> None:
        """Add redacted ``text`` to ``runtime``'s pending textDelta event (a new one when there is none, it
        belongs to another request or it is full)."""
        pending = self.gathering.get(runtime.id)
        if pending is None or pending.request_id != request_id or pending.size >= MAX_DELTA_EVENT_BYTES:
            pending = PendingDelta(runtime, runtime.next_seq(), request_id, [], 0)
            self.gathering[runtime.id] = pending
            self.pending.append(pending)
        pending.parts.append(text)
        pending.size += len(text)
        self._bytes += len(text)
        if self._bytes >= OUTBOX_FLUSH_BYTES:
            self.flush()
        elif self._flush_soon is None:
            # after the callbacks that are ready now (the deltas of one network read travel together), and not
            # sooner than event_coalesce_ms after the previous flush (the deltas of many streams share one)
            loop = asyncio.get_running_loop()
            wait = self._flushed_at + self.config.event_coalesce_ms / 1000 - loop.time()
            self._flush_soon = loop.call_later(wait, self.flush) if wait > 0 else loop.call_soon(self.flush)

    def flush(self) -> None:
        """Store every pending textDelta event in one transaction, then send them, in seq order."""
        if self.streams:
            self._end_streams_over()
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        if not self.pending:
            return
        self._flushed_at = asyncio.get_running_loop().time()
        pending, self._bytes = list(self.pending), 0
        self.pending.clear()
        self.gathering.clear()  # every event still gathering is one of those flushed now
        now = time.time()
        out: list[tuple[ev.TextDelta, dict[str, Any]]] = []
        rows: list[tuple[str, int, str]] = []
        for p in pending:
            runtime = p.runtime
            text = self.store.guard.redact("".join(p.parts))  # redacted already; a secret added since is found
            event = ev.TextDelta(text=text, request_id=p.request_id, conversation_id=runtime.id,
                                 seq=p.seq, time=now, parent_conversation_id=runtime.state.parent_id)
            params = to_wire(event)
            rows.append((runtime.id, p.seq, json.dumps(params)))
            out.append((event, params))
        self.store.append_events(rows)
        self.send(out, [text for _, _, text in rows])

    def send(self, events: Sequence[tuple[ev.EventKinds, dict[str, Any]]], texts: Sequence[str]) -> None:
        """Send stored events (``texts``: each one's JSON as stored). The LSP server sends them in one write,
        framed around the stored JSON, so a big message is not serialised again."""
        self.sink.event_batch(events, texts)


def _awaited(runtime: Peer) -> int | None:
    """The model request ``runtime`` awaits the answer of, if any."""
    return getattr(runtime.state.status, "request_id", None)
