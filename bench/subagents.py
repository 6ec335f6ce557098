"""Sub-agent figures of issue 6, each beside a baseline measured in the same run against the same fake process.

- 8 sub-agents each streaming 2,000 text deltas (then ``submit_result``): wall time from the parent's
  ``phoenix/sendMessage`` to the parent's ``idle`` event; baseline: one conversation streaming 16,000 deltas
  (the same total) from ``sendMessage`` to ``idle``. Goal: at most 1.3x the baseline when the fake LLM is the
  bottleneck. The concurrency bound is set to 8 (``PHOENIX_SUBAGENT_CONCURRENCY``). Measured twice: with the fake
  sending as fast as it can (then relaying 16,000 events is the server's work and the bottleneck; a context row
  shows the fake alone), and with the fake paced to a total rate below the server's, shared by the 8 streams.
- parent cancel while 8 sub-agents stream: ``phoenix/cancel`` sent -> the last of the 8 HTTP streams closed, as
  recorded by the fake; baseline: the same for one conversation's stream. Goal: within 100 ms.

The fake Anthropic server runs as a separate process (its own GIL), routing requests with :func:`fake_handler`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENTS = 8
PER_AGENT = 2_000
#: deltas per second the paced fake model produces in total (below what the server can relay, so the fake
#: is the bottleneck): one stream gets all of it, each of 8 concurrent streams an eighth
PACED_RATE = 2_500


def fake_handler(body: dict[str, Any]) -> Any:
    """Runs inside the fake's process: picks the reply from the request (loaded with ``--handler``)."""
    from phoenix_lsp.server.prompts import SUBAGENT
    from tests.fake_anthropic import Reply, TextBlock, ToolUseBlock, system_text

    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else "".join(b.get("text", "") for b in first if b["type"] == "text")
    if SUBAGENT in system_text(body):
        if text.startswith("hang"):
            return Reply.hanging(after_events=3, limit_s=60)
        submit = ToolUseBlock("submit_result", {"result": f"done: {text}"})
        delay = AGENTS / PACED_RATE if "paced" in text else 0.0  # 8 streams share the model's rate
        return Reply(blocks=[TextBlock("x" * PER_AGENT, PER_AGENT), submit], stop_reason="tool_use", delay_s=delay)
    if len(body["messages"]) > 1:  # the parent after the aggregated result
        return Reply.text_reply("all agents reported")
    if text.startswith("single"):
        delay = 1 / PACED_RATE if "paced" in text else 0.0
        return Reply.text_reply("y" * AGENTS * PER_AGENT, deltas=AGENTS * PER_AGENT, delay_s=delay)
    if text.startswith("spawn"):
        tasks = [f"part {i} of {text}" for i in range(AGENTS)]
        return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": tasks}))
    if text.startswith("cancel agents"):
        return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": [f"hang {i}" for i in range(AGENTS)]}))
    if text.startswith("cancel single"):
        return Reply.hanging(after_events=3, limit_s=60)
    return Reply.text_reply("warm", deltas=2)


class _Fake:
    """The fake Anthropic server in its own process, answering through :func:`fake_handler`."""

    def __init__(self, workdir: Path) -> None:
        script = workdir / "script.json"
        script.write_text("[]")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--script", str(script),
             "--handler", "bench.subagents:fake_handler"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().split()[-1]

    def env(self, api_key: str = "sk-ant-bench-key-0000000000") -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    def records(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.base_url}/_fake/requests", timeout=10) as response:
            return list(json.load(response))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


async def _closed_after(fake: _Fake, t0: float, marker: str, count: int) -> float:
    """Milliseconds from ``t0`` until the fake recorded ``count`` disconnected streams whose first message
    starts with ``marker``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ends: list[float] = []
        for r in fake.records():
            first = r["body"]["messages"][0]["content"]
            text = first if isinstance(first, str) else "".join(b.get("text", "") for b in first)
            if text.startswith(marker) and r["disconnected"] and r["ended_at"] is not None:
                ends.append(float(r["ended_at"]))
        if len(ends) >= count:
            return (max(ends) - t0) * 1000
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the fake never saw {count} '{marker}' streams close")


def _fake_alone(fake: _Fake, rounds: int) -> tuple[list[float], list[float]]:
    """The same streams served by the fake to bare socket readers (no SDK, no server): the fake's own cost."""
    import threading

    from phoenix_lsp.server.prompts import SUBAGENT
    from tests.fake_anthropic import _raw_stream

    single_body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "single raw"}]}
    agent_body = {"model": "m", "stream": True, "system": SUBAGENT, "messages": [{"role": "user", "content": "part"}]}
    single, parallel = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        _raw_stream(fake.base_url, single_body)
        single.append(time.perf_counter() - start)
        threads = [threading.Thread(target=_raw_stream, args=(fake.base_url, agent_body)) for _ in range(AGENTS)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        parallel.append(time.perf_counter() - start)
    return single, parallel


async def _run(quick: bool) -> list[dict[str, Any]]:
    from tests.e2e.harness import Session, session

    rounds = 1 if quick else 3

    async def turn(s: Session, text: str) -> float:
        cid = await s.new()
        start = time.perf_counter()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
        await s.wait_status(cid, "idle", timeout=300)
        return time.perf_counter() - start

    async def cancel(s: Session, text: str, streams: int) -> float:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
        deadline = time.monotonic() + 30
        while True:  # wait until every stream is open and hanging
            hanging = [r for r in fake.records() if r["events_sent"] >= 3 and not r["completed"]
                       and r["ended_at"] is None]
            if len(hanging) >= streams:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(hanging)} of {streams} streams opened")
            await asyncio.sleep(0.02)
        t0 = time.monotonic()
        await s.request("phoenix/cancel", {"conversationId": cid})
        marker = "hang" if streams > 1 else text
        return await _closed_after(fake, t0, marker, streams * (1 + cancels_done[streams]))

    cancels_done = {1: 0, AGENTS: 0}
    with tempfile.TemporaryDirectory() as tmp:
        fake = _Fake(Path(tmp))
        try:
            env = {"PHOENIX_SUBAGENT_CONCURRENCY": str(AGENTS)}
            async with session(fake, Path(tmp), env=env, check_schema=False) as s:  # type: ignore[arg-type]
                await turn(s, "warm up")
                await turn(s, "spawn warm-up")
                single, parallel = [], []
                for i in range(rounds):
                    single.append(await turn(s, f"single {i}"))
                    parallel.append(await turn(s, f"spawn {i}"))
                paced_single = [await turn(s, "single paced")]
                paced_parallel = [await turn(s, "spawn paced")]
                single_cancel, agents_cancel = [], []
                for _ in range(rounds):
                    single_cancel.append(await cancel(s, "cancel single", 1))
                    cancels_done[1] += 1
                    agents_cancel.append(await cancel(s, "cancel agents", AGENTS))
                    cancels_done[AGENTS] += 1
            raw_single, raw_parallel = _fake_alone(fake, rounds)
            total = AGENTS * PER_AGENT
        finally:
            fake.stop()
    return [
        {
            "name": f"{AGENTS} sub-agents x {PER_AGENT:,} deltas: sendMessage -> parent idle (median of {rounds})",
            "value": round(statistics.median(parallel) * 1000, 1),
            "unit": "ms",
            "baseline_name": f"one conversation streaming {AGENTS * PER_AGENT:,} deltas, sendMessage -> idle",
            "baseline_value": round(statistics.median(single) * 1000, 1),
            "goal": "at most 1.3x the baseline (here the server, not the fake, is the bottleneck)",
        },
        {
            "name": f"same with the fake LLM as the bottleneck (paced at {PACED_RATE:,} deltas/s shared by all "
            f"streams; achieved {total / statistics.median(paced_parallel):,.0f}/s vs "
            f"{total / statistics.median(paced_single):,.0f}/s single: pacing costs the fake per delta)",
            "value": round(statistics.median(paced_parallel) * 1000, 1),
            "unit": "ms",
            "baseline_name": f"one conversation, {AGENTS * PER_AGENT:,} deltas at {PACED_RATE:,} deltas/s",
            "baseline_value": round(statistics.median(paced_single) * 1000, 1),
            "goal": "at most 1.3x the baseline",
        },
        {
            "name": f"context: the fake alone, {AGENTS} concurrent x {PER_AGENT:,} deltas read by bare sockets",
            "value": round(statistics.median(raw_parallel) * 1000, 1),
            "unit": "ms",
            "baseline_name": f"the fake alone, 1 x {AGENTS * PER_AGENT:,} deltas read by a bare socket",
            "baseline_value": round(statistics.median(raw_single) * 1000, 1),
            "goal": "shows whether the fake or the server is the bottleneck above",
        },
        {
            "name": f"parent cancel while {AGENTS} sub-agents stream -> last stream closed at the fake "
            f"(worst of {rounds})",
            "value": round(max(agents_cancel), 1),
            "unit": "ms",
            "baseline_name": "cancel of one streaming conversation -> its stream closed (worst)",
            "baseline_value": round(max(single_cancel), 1),
            "goal": "< 100 ms",
        },
    ]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    """The figures of this benchmark (see the module docstring)."""
    sys.path.insert(0, str(ROOT))
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
