"""Big answers and many streams (issue 13), each figure beside a baseline measured in the same run.

- a 20 MB answer in 1 KB text deltas: sendMessage -> the conversation's `idle` event at the client, against
  the same bytes read directly with the ``anthropic`` SDK (no server in between); and, while it streams, the
  round trip of `phoenix/getConversation` on another conversation (p50/p99), against the same request on an
  idle server;
- 20 conversations streaming at once at ~120 tokens/s each: text delta leaves the fake LLM -> phoenix/event at
  the client (p50/p99; loss and order checked per conversation), against one conversation streaming alone at
  the same rate through the same server; and the same 20 streams read directly by the SDK in one process, which
  shows what the machine allows (on a shared, loaded machine even that p99 is far above 10 ms).

The fake Anthropic server runs as a separate process so that it does not share a GIL with the client.
``--quick`` streams 5 MB and 5 s instead of 20 MB and 15 s.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.server import _Fake, _pct

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1024  # bytes per text delta of the big answer
TOKENS_PER_S = 120
STREAMS = 20


async def _sdk_read(base_url: str, api_key: str) -> tuple[float, int]:
    """Seconds to read one streamed answer with the bare SDK (every event parsed, nothing kept), and its size."""
    from anthropic import AsyncAnthropic

    sdk = AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=600)
    size = 0
    try:
        t0 = time.perf_counter()
        stream = await sdk.messages.create(model="bench", max_tokens=8192, stream=True,
                                           messages=[{"role": "user", "content": "x"}])
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                size += len(event.delta.text)
        return time.perf_counter() - t0, size
    finally:
        await sdk.close()


async def _big_answer(quick: bool) -> list[dict[str, Any]]:
    from tests.e2e.harness import session

    megabytes = 5 if quick else 20
    size = megabytes * 1024 * 1024
    big = {"text": "x" * size, "deltas": size // DELTA}
    replies: list[dict[str, Any]] = [{"text": "a short answer for the other conversation"}, big, big]
    with tempfile.TemporaryDirectory() as tmp:
        fake = _Fake(replies, Path(tmp))
        try:
            async with session(fake, Path(tmp), check_schema=False) as s:  # type: ignore[arg-type]
                other = await s.new()
                await s.request("phoenix/sendMessage", {"conversationId": other, "text": "hello"})
                await s.wait_status(other, "idle", timeout=60)

                async def get_other() -> float:
                    t0 = time.perf_counter()
                    await s.request("phoenix/getConversation", {"conversationId": other})
                    return (time.perf_counter() - t0) * 1000

                idle_rtts = [await get_other() for _ in range(200)]

                cid = await s.new()
                done = asyncio.Event()
                busy_rtts: list[float] = []

                async def probe() -> None:
                    while not done.is_set():
                        busy_rtts.append(await get_other())
                        await asyncio.sleep(0.005)  # a user clicking around, not a flood

                prober = asyncio.create_task(probe())
                t0 = time.perf_counter()
                await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "a big answer, please"})
                await s.wait_status(cid, "idle", timeout=900)
                elapsed = time.perf_counter() - t0
                done.set()
                await prober
                streamed = sum(len(e["text"]) for e in s.of("textDelta", cid))
                deltas = len(s.of("textDelta", cid))
            env = fake.env()
            sdk_s, sdk_size = await _sdk_read(env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"])
        finally:
            fake.stop()
    assert streamed == size == sdk_size, f"text lost: {streamed} of {size} bytes reached the client"
    return [
        {
            "name": f"{megabytes} MB answer in {DELTA} B deltas: sendMessage -> idle at the client "
            f"({deltas:,} textDelta events)",
            "value": round(elapsed, 2),
            "unit": "s",
            "baseline_name": "the same bytes read directly with the anthropic SDK",
            "baseline_value": round(sdk_s, 2),
            "goal": "within 2x the SDK baseline",
        },
        {
            "name": f"getConversation on another conversation meanwhile, p50 ({len(busy_rtts)} requests)",
            "value": round(statistics.median(busy_rtts), 2),
            "unit": "ms",
            "baseline_name": "same request on the idle server, p50",
            "baseline_value": round(statistics.median(idle_rtts), 2),
            "goal": "",
        },
        {
            "name": "getConversation on another conversation meanwhile, p99",
            "value": round(_pct(busy_rtts, 0.99), 2),
            "unit": "ms",
            "baseline_name": "same request on the idle server, p99",
            "baseline_value": round(_pct(idle_rtts, 0.99), 2),
            "goal": "< 50 ms",
        },
    ]


def _latencies(s: Any, cid: str, first: int, expected: int) -> tuple[list[float], int, bool]:
    """Delta latencies (ms) of one conversation's stamped stream, how many stamps were lost, and whether
    stamps and seqs arrived in order."""
    stamps, seqs, latencies = [], [], []
    for event, arrived in zip(s.events[first:], s.arrivals[first:], strict=True):
        if event["conversationId"] == cid and event["kind"] == "textDelta":
            for stamp in filter(None, event["text"].split(";")):
                stamps.append(int(stamp))
                latencies.append((arrived - int(stamp)) / 1e6)
            seqs.append(event["seq"])
    return latencies, expected - len(stamps), stamps == sorted(stamps) and seqs == sorted(seqs)


async def _many_streams(quick: bool) -> list[dict[str, Any]]:
    from tests.e2e.harness import session

    seconds = 5 if quick else 15
    deltas = TOKENS_PER_S * seconds
    paced = {"text": "x" * deltas, "deltas": deltas, "stamp": True, "delay_s": 1 / TOKENS_PER_S}
    replies = [paced] * (1 + 2 * STREAMS)  # one alone, 20 through the server, 20 read directly
    with tempfile.TemporaryDirectory() as tmp:
        fake = _Fake(replies, Path(tmp))
        try:
            async with session(fake, Path(tmp), check_schema=False) as s:  # type: ignore[arg-type]
                alone = await s.new()
                first = len(s.events)
                await s.request("phoenix/sendMessage", {"conversationId": alone, "text": "stream"})
                await s.wait_status(alone, "idle", timeout=seconds * 10)
                base, base_lost, base_order = _latencies(s, alone, first, deltas)

                cids = [await s.new() for _ in range(STREAMS)]
                first = len(s.events)
                await asyncio.gather(*(s.request("phoenix/sendMessage", {"conversationId": c, "text": "stream"})
                                       for c in cids))
                for c in cids:
                    await s.wait_status(c, "idle", timeout=seconds * 20)
                latencies: list[float] = []
                lost, in_order = 0, True
                for c in cids:
                    some, missing, ordered = _latencies(s, c, first, deltas)
                    latencies += some
                    lost += missing
                    in_order = in_order and ordered
            env = fake.env()
            direct = await _sdk_streams(env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"], STREAMS)
        finally:
            fake.stop()
    return [
        {
            "name": f"event latency with {STREAMS} streams at ~{TOKENS_PER_S} tokens/s each, p50 "
            f"({STREAMS * deltas:,} deltas, lost {lost}, in order: {in_order})",
            "value": round(statistics.median(latencies), 3),
            "unit": "ms",
            "baseline_name": f"one stream alone at the same rate, p50 (lost {base_lost}, in order: {base_order})",
            "baseline_value": round(statistics.median(base), 3),
            "goal": "no loss, no reordering",
        },
        {
            "name": f"event latency with {STREAMS} streams, p99",
            "value": round(_pct(latencies, 0.99), 3),
            "unit": "ms",
            "baseline_name": "one stream alone, p99",
            "baseline_value": round(_pct(base, 0.99), 3),
            "goal": "< 10 ms",
        },
        {
            "name": f"the same {STREAMS} streams read directly with the anthropic SDK in one process, p99 "
            "(what the machine allows)",
            "value": round(_pct(direct, 0.99), 3),
            "unit": "ms",
            "baseline_name": "p50",
            "baseline_value": round(statistics.median(direct), 3),
            "goal": "",
        },
    ]


async def _sdk_streams(base_url: str, api_key: str, count: int) -> list[float]:
    """Delta latencies (ms) of ``count`` stamped streams read at once by the bare SDK (no server in between)."""
    from anthropic import AsyncAnthropic

    sdk = AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=600)
    out: list[float] = []

    async def read() -> None:
        stream = await sdk.messages.create(model="bench", max_tokens=8192, stream=True,
                                           messages=[{"role": "user", "content": "x"}])
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                now = time.monotonic_ns()
                out.extend((now - int(stamp)) / 1e6 for stamp in filter(None, event.delta.text.split(";")))

    try:
        await asyncio.gather(*(read() for _ in range(count)))
    finally:
        await sdk.close()
    return out


def figures(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    rows = asyncio.run(_many_streams(quick))
    rows += asyncio.run(_big_answer(quick))
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
