"""The agent route against direct tool calls (issue 14; REQ-AGENT-024 fewer tokens, REQ-AGENT-025 lower latency).

The flow and its three arms are ``tests/agent/triage_flow.py``: among the 50 records of a real MCP server (the
same SDK, started over stdio), the 12 open ones get "triaged" by the agent route (the real server: describe the
two tools, one plan, an answer), by direct tool calls one per turn (naive), and by direct tool calls at their
best (fair: one search returning only the ids, then the 12 updates in parallel in one turn).

One fake model server (in this process) answers every arm, replaying what a model writes for it, with a latency
per request of: time to first token + uncached input tokens x prefill rate + output tokens x decode rate, with
fixed rates. Tokens are counted the same way for every request of every arm: bytes / 4 of every block (tools,
system, messages; cached ones included) plus the output.

Figures: tokens (the agent as a ratio of each direct arm); wall time (the agent warm, the median of its later runs
in one server, against each direct arm's median; and the agent cold: the first run of a fresh server, which
starts its MCP server); every run of every arm must leave the same final state.
Run: python -m bench agent_route [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# fixed latency model: a fast hosted model (0.4 s to first token, 20k tokens/s prefill, 80 tokens/s decode)
TTFT_S = 0.4
PREFILL_S_PER_TOKEN = 1 / 20_000
DECODE_S_PER_TOKEN = 1 / 80
QUICK_SCALE = 0.25  # --quick: every rate x this (same ratios, shorter run)

async def _run(quick: bool) -> list[dict[str, Any]]:
    from tests.agent.triage_flow import Model, arms, expected
    from tests.fake_anthropic import FakeAnthropic

    scale = QUICK_SCALE if quick else 1.0
    model = Model()
    fake = FakeAnthropic().start()
    fake.handler = model
    fake.ttft_base_s, fake.prefill_s_per_token = TTFT_S * scale, PREFILL_S_PER_TOKEN * scale
    fake.decode_s_per_token, fake.count_output_tokens = DECODE_S_PER_TOKEN * scale, True
    try:
        with tempfile.TemporaryDirectory() as name:
            agent, direct = await arms(fake, model, Path(name), agent_runs=2 if quick else 4,
                                       direct_runs=1 if quick else 3)
    finally:
        fake.stop()
    cold_wall, agent_tokens = agent[0]
    warm_wall = statistics.median(wall for wall, _ in agent[1:])
    rows: list[dict[str, Any]] = []
    for arm, runs in direct.items():
        tokens = runs[0][1]
        saved = 1 - agent_tokens / tokens
        rows.append({"name": f"tokens, agent vs direct {arm} ({saved:.1%} fewer; goal >= 85%)",
                     "value": agent_tokens, "unit": "tokens", "baseline_name": f"direct {arm}",
                     "baseline_value": tokens})
    for arm, runs in direct.items():
        wall = statistics.median(w for w, _ in runs)
        faster = 1 - warm_wall / wall
        rows.append({"name": f"wall time, agent warm vs direct {arm} ({faster:.1%} lower; goal >= 30%)",
                     "value": round(warm_wall, 2), "unit": "s", "baseline_name": f"direct {arm}",
                     "baseline_value": round(wall, 2)})
    rows.append({"name": "wall time, agent cold (a fresh server: its MCP server starts, the catalogue is read)",
                 "value": round(cold_wall, 2), "unit": "s", "baseline_name": "agent warm",
                 "baseline_value": round(warm_wall, 2)})
    rows.append({"name": f"final state: every run of every arm triaged the same {len(expected())} records",
                 "value": "yes"})
    return rows


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
