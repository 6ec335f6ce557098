"""Benchmark: what bounding a model's stream as it arrives costs (``bounded_http``, REQ-PROTO-063).

Figures (each next to baselines measured in the same run, in alternating rounds):
- the check of a 100,000-event Anthropic stream (about 12 MB of ``content_block_delta`` events, in 64 KiB
  chunks as a socket gives them), median ms; baselines: the Anthropic SDK's own SSE decoder over the same
  chunks (the work the SDK does anyway, before it decodes any event's JSON) and ``json.loads`` of every event's
  data (what it does next);
- the check of a stream whose one line never ends, up to its refusal at the event bound (17 MiB), median ms;
  baseline: ``bytes.count`` of a newline over the same bytes (one pass at the speed of C).

Run: ``python -m bench bounded_http`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

from phoenix_lsp import bounded_http, limits

EVENTS = 100_000
CHUNK = 64 * 1024
EVENT = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
         b'"delta":{"type":"text_delta","text":"the next few words"}}\n\n')


def _check(chunks: list[bytes]) -> None:
    stream = bounded_http.BoundedStream(None, limits.PROVIDER_STREAM)
    try:
        for chunk in chunks:
            stream.feed(chunk)
    except bounded_http.TooBig:
        pass


def _sdk_decoder(chunks: list[bytes]) -> None:
    from anthropic._streaming import SSEDecoder

    for _ in SSEDecoder().iter_bytes(iter(chunks)):
        pass


def _loads(datas: list[bytes]) -> None:
    for data in datas:
        json.loads(data)


def _median_ms(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def figures(quick: bool = False) -> list[dict[str, object]]:
    rounds = 3 if quick else 9
    stream = EVENT * EVENTS
    chunks = [stream[i:i + CHUNK] for i in range(0, len(stream), CHUNK)]
    datas = [EVENT.split(b"data: ", 1)[1].strip()] * EVENTS
    endless = b"data: " + b"x" * (limits.PROVIDER_STREAM.unit.max_bytes + CHUNK)
    endless_chunks = [endless[i:i + CHUNK] for i in range(0, len(endless), CHUNK)]
    check, sdk, loads, refuse, count = [], [], [], [], []
    for _ in range(rounds):  # alternating, so that the machine's load falls on all alike
        check.append(_median_ms(lambda: _check(chunks), 1))
        sdk.append(_median_ms(lambda: _sdk_decoder(chunks), 1))
        loads.append(_median_ms(lambda: _loads(datas), 1))
        refuse.append(_median_ms(lambda: _check(endless_chunks), 1))
        count.append(_median_ms(lambda: endless.count(b"\n"), 1))
    return [
        {"name": f"bounded_http: check of a {EVENTS:,}-event stream ({len(stream) / 1e6:.1f} MB)",
         "value": statistics.median(check), "unit": "ms", "baseline_name": "the SDK's SSE decoder, same chunks",
         "baseline_value": statistics.median(sdk)},
        {"name": "bounded_http: the same stream, beside json.loads of every event's data",
         "value": statistics.median(check), "unit": "ms", "baseline_name": "json.loads of every event",
         "baseline_value": statistics.median(loads)},
        {"name": f"bounded_http: an endless line refused at {limits.PROVIDER_STREAM.unit.max_bytes:,} bytes",
         "value": statistics.median(refuse), "unit": "ms", "baseline_name": "bytes.count of the same bytes",
         "baseline_value": statistics.median(count)},
    ]
