"""The ACP agent's figure of issue 28, beside a baseline measured in the same run.

- prompt -> first ``agent_message_chunk`` at an ACP client (``phoenix-lsp acp``, driven by the SDK's client
  side), baseline: ``phoenix/sendMessage`` -> first ``textDelta`` ``phoenix/event`` at an LSP client of
  ``phoenix-lsp``, both on the same fake model (its own process) answering the same short streamed reply.

Each side is timed the same way: from just before the request is sent to the moment the test code sees the
first text (p50 and p90 over the rounds). The first round of each side is not counted: the end-to-end harness
starts the LSP server from a warm fork (the model SDK already imported), the ACP agent starts cold.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.server import _Fake, _pct

REPLY = {"text": "Hello! Here is the answer you asked for.", "deltas": 4}


async def _acp_rounds(fake: _Fake, tmp: Path, rounds: int) -> list[float]:
    import acp

    from tests.acp.harness import agent

    times = []
    async with agent(fake, tmp) as a:  # type: ignore[arg-type]
        session = await a.new()
        for _ in range(rounds + 1):
            seen = len(a.editor.updates)
            t0 = time.perf_counter()
            running = asyncio.ensure_future(a.conn.prompt(session_id=session.session_id,
                                                          prompt=[acp.text_block("hello")]))
            await a.editor.wait_until(lambda s=seen: any(u.session_update == "agent_message_chunk"
                                                         for u in a.editor.updates[s:]))
            times.append((time.perf_counter() - t0) * 1000)
            await running
    return times[1:]


async def _lsp_rounds(fake: _Fake, tmp: Path, rounds: int) -> list[float]:
    from tests.e2e.harness import session

    times = []
    async with session(fake, tmp, check_schema=False) as s:  # type: ignore[arg-type]
        cid = await s.new()
        for _ in range(rounds + 1):
            mark = s.events[-1]["seq"] if s.events else 0
            t0 = time.perf_counter()
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
            await s.wait_event(lambda e, m=mark: e["kind"] == "textDelta" and e["seq"] > m, 60)
            times.append((time.perf_counter() - t0) * 1000)
            await s.wait_event(lambda e, m=mark: e["kind"] == "status" and e["status"] == "idle" and e["seq"] > m,
                               60)
    return times[1:]


async def _first_chunk(quick: bool) -> list[dict[str, Any]]:
    rounds = 5 if quick else 30
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fake = _Fake({"loop": True, "replies": [REPLY]}, root)  # type: ignore[arg-type]
        try:
            (root / "lsp").mkdir()
            (root / "acp").mkdir()
            lsp = await _lsp_rounds(fake, root / "lsp", rounds)
            over_acp = await _acp_rounds(fake, root / "acp", rounds)
        finally:
            fake.stop()
    rows = []
    for label, q in (("p50", 0.5), ("p90", 0.9)):
        rows.append({
            "name": f"prompt -> first agent_message_chunk over ACP, {label} ({rounds} rounds)",
            "value": round(_pct(over_acp, q), 2), "unit": "ms",
            "baseline_name": f"sendMessage -> first textDelta over LSP, {label}",
            "baseline_value": round(_pct(lsp, q), 2),
        })
    rows.append({"name": "ACP rounds, mean", "value": round(statistics.mean(over_acp), 2), "unit": "ms",
                 "baseline_name": "LSP rounds, mean", "baseline_value": round(statistics.mean(lsp), 2)})
    return rows


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_first_chunk(quick))
