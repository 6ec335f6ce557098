"""The outbox redacts each model request's text as one stream (REQ-SEC-041): a secret written across deltas
that land in different textDelta events is never sent in pieces, what the stream held is sent before the
transition that ends it (answer, cancel), and what is stored is what was sent."""

from __future__ import annotations

import asyncio
import json

import pytest

from phoenix_lsp.core.events import Cancel, UserMessage
from tests.server.test_runtime import Rig, Step, rig, stored_events, text

__all__ = ["rig"]  # the fixture

SECRET = "sk-ant-api03-outbox-secret-0123456789"


@pytest.mark.req("REQ-SEC-041", "REQ-PROTO-049")
async def test_a_secret_across_two_flushes_is_held_then_redacted(rig: Rig) -> None:
    rig.store.guard.add_secret(SECRET)
    runtime = rig.new()
    gate = asyncio.Event()
    rig.llm.enqueue(Step(text(f"Your key: {SECRET} ok"), deltas=(f"Your key: {SECRET[:12]}",), gate=gate))
    runtime.apply(UserMessage("go"))
    first = await rig.sink.wait_event(runtime.id, "textDelta")
    assert first["text"] == "Your key: ", "the start of the key waits"
    request_id = runtime.state.status.request_id  # type: ignore[union-attr]
    rig.hub.outbox.queue_text(runtime, request_id, SECRET[12:] + " ok")
    await rig.sink.wait_until(lambda: len(rig.sink.of(runtime.id, "textDelta")) == 2, "the second flush")
    gate.set()
    await rig.sink.rest(runtime.id)
    sent = [d["text"] for d in rig.sink.of(runtime.id, "textDelta")]
    assert sent == ["Your key: ", "[REDACTED] ok"]
    assert stored_events(rig.store, runtime.id) == rig.sink.of(runtime.id), "persisted = what the client saw"
    assert SECRET[:12] not in json.dumps(rig.sink.of(runtime.id))


@pytest.mark.req("REQ-SEC-041", "REQ-BED-005")
async def test_what_a_cancelled_stream_held_is_sent_before_the_idle(rig: Rig) -> None:
    rig.store.guard.add_secret(SECRET)
    runtime = rig.new()
    gate = asyncio.Event()  # never set: the response never completes
    rig.llm.enqueue(Step(text("never"), deltas=("it starts sk-ant-",), gate=gate))
    runtime.apply(UserMessage("go"))
    assert (await rig.sink.wait_event(runtime.id, "textDelta"))["text"] == "it starts "
    runtime.apply(Cancel())
    assert rig.sink.kinds(runtime.id)[-2:] == ["textDelta", "status:idle"], "the held text comes before the idle"
    assert "".join(d["text"] for d in rig.sink.of(runtime.id, "textDelta")) == "it starts sk-ant-"  # nothing lost
    assert stored_events(rig.store, runtime.id) == rig.sink.of(runtime.id)
    assert rig.hub.outbox.streams == {}


@pytest.mark.req("REQ-SEC-041")
async def test_what_a_finished_stream_held_is_sent_before_its_message(rig: Rig) -> None:
    rig.store.guard.add_secret(SECRET)
    runtime = rig.new()
    rig.llm.enqueue(Step(text("ends with sk-ant-api"), deltas=("ends with ", "sk-ant-", "api")))
    runtime.apply(UserMessage("go"))
    await rig.sink.rest(runtime.id)
    kinds = rig.sink.kinds(runtime.id)
    assert "".join(d["text"] for d in rig.sink.of(runtime.id, "textDelta")) == "ends with sk-ant-api"
    assert kinds.index("message", kinds.index("textDelta")) > max(i for i, k in enumerate(kinds) if k == "textDelta")
    assert rig.hub.outbox.streams == {}
