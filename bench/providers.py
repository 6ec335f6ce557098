"""Any model (issue 27): text delta -> client event latency on the OpenAI provider against Anthropic's.

Both fakes run in their own processes (no GIL shared with the client or each other) and send the same stamped,
paced stream (the same number of deltas, the same pause between them): the Anthropic one through the
``anthropic`` SDK, the OpenAI-compatible one through the ``openai`` SDK and the translation of
``llm/openai_client.py``, in the same server, in the same run. The figure is the OpenAI provider's p50 and p99
beside Anthropic's; the goal is within 10 %.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.server import _Fake, _pct

ROOT = Path(__file__).resolve().parents[1]


class _FakeOpenAI:
    """The fake Chat Completions server in its own process, scripted from a file."""

    def __init__(self, replies: list[dict[str, Any]], workdir: Path) -> None:
        script = workdir / "openai-script.json"
        script.write_text(json.dumps(replies))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", "--port", "0", "--script",
                                      str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().split()[-1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


def _latencies(s: Any, cid: str, first: int) -> tuple[list[float], int]:
    stamps, latencies = [], []
    for event, arrived in zip(s.events[first:], s.arrivals[first:], strict=True):
        if event["kind"] == "textDelta" and event["conversationId"] == cid:
            for stamp in filter(None, event["text"].split(";")):
                stamps.append(int(stamp))
                latencies.append((arrived - int(stamp)) / 1e6)
    return latencies, len(stamps)


async def _run(quick: bool) -> list[dict[str, Any]]:
    from tests.e2e.harness import last_seq, session

    deltas = 1_000 if quick else 4_000
    rounds = 2 if quick else 3
    paced = {"text": "x" * deltas, "deltas": deltas, "stamp": True, "delay_s": 0.001}
    lat: dict[str, list[float]] = {"anthropic": [], "openai": []}
    lost: dict[str, int] = {"anthropic": 0, "openai": 0}
    with tempfile.TemporaryDirectory() as tmp:
        anthropic = _Fake([paced] * rounds, Path(tmp))
        openai = _FakeOpenAI([paced] * rounds, Path(tmp))
        try:
            env = {"OPENAI_BASE_URL": openai.base_url, "OPENAI_API_KEY": "sk-proj-bench-key-000000"}
            async with session(anthropic, Path(tmp), check_schema=False, env=env) as s:  # type: ignore[arg-type]
                cids = {"anthropic": await s.new(model="claude-sonnet-4-6"),
                        "openai": await s.new(model="openai/gpt-4.1")}
                for _ in range(rounds):  # alternated, so a slow moment of the machine hits both
                    for provider, cid in cids.items():
                        first = len(s.events)
                        mark = last_seq(s, cid)
                        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "stream"})
                        await s.wait_event(lambda e, c=cid, m=mark: e["conversationId"] == c and e["kind"] == "status"
                                           and e["status"] == "idle" and e["seq"] > m, 120)
                        got, count = _latencies(s, cid, first)
                        lat[provider] += got
                        lost[provider] += deltas - count
        finally:
            anthropic.stop()
            openai.stop()
    a, o = lat["anthropic"], lat["openai"]
    return [
        {
            "name": f"text delta -> phoenix/event on the OpenAI provider, p50 ({rounds} x {deltas:,} deltas, "
            f"lost {lost['openai']})",
            "value": round(statistics.median(o), 3),
            "unit": "ms",
            "baseline_name": f"the same stream on Anthropic, same server, same run, p50 (lost {lost['anthropic']})",
            "baseline_value": round(statistics.median(a), 3),
            "goal": "within 10 % of Anthropic's",
        },
        {
            "name": "text delta -> phoenix/event on the OpenAI provider, p99",
            "value": round(_pct(o, 0.99), 3),
            "unit": "ms",
            "baseline_name": "Anthropic, p99",
            "baseline_value": round(_pct(a, 0.99), 3),
            "goal": "",
        },
    ]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick))
