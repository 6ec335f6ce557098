"""The ACP agent's figure of issue 28, beside a baseline measured in the same run.

- prompt -> first ``agent_message_chunk`` at an ACP client (``phoenix-lsp acp``, driven by the SDK's client
  side), baseline: ``phoenix/sendMessage`` -> first ``textDelta`` ``phoenix/event`` at an LSP client of
  ``phoenix-lsp``, both on the same fake model (its own process) answering the same short streamed reply.

Each side is timed the same way: from just before the request is sent to the moment the test code sees the
first text (p50 and p90 over the rounds). The first round of each side is not counted: the end-to-end harness
starts the LSP server from a warm fork (the model SDK already imported), the ACP agent starts cold.
- ``session/cancel`` -> the prompt's answer (``cancelled``, REQ-ACP-011; the issue asks for it within a second),
  while a permission request is open (the client answers it ``cancelled`` right after the cancel, as ACP says)
  and while the model streams (the fake holds its stream open), baseline: the round trip of a trivial request
  on the same connection in the same run (``session/set_mode`` to the mode the session is already in).
- ``session/new`` -> its answer (issue 38: it carries the config options, so it waits for the models use case's
  list, 0.3 s at most), the first of the connection and the later ones apart, baseline: the same
  ``session/set_mode`` round trip.
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


#: the cancel rounds' replies, in turn: a command that asks for approval, then a stream that never ends
CANCEL_REPLIES = [{"tool_uses": [{"name": "bash", "input": {"command": "touch never-made.txt"}}]},
                  {"text": "a long answer that never ends", "deltas": 6, "hang_after_events": 4,
                   "hang_limit_s": 60}]


async def _cancel_rounds(fake: _Fake, tmp: Path, rounds: int) -> dict[str, list[float]]:
    import acp

    from tests.acp.harness import TIMEOUT, agent

    times: dict[str, list[float]] = {"asking": [], "streaming": [], "baseline": []}
    async with agent(fake, tmp) as a:  # type: ignore[arg-type]
        editor = a.editor
        sid = (await a.new()).session_id
        await a.conn.set_session_mode(session_id=sid, mode_id="unrestricted")
        for i in range(rounds + 1):
            t0 = time.perf_counter()
            await a.conn.set_session_mode(session_id=sid, mode_id="unrestricted")
            baseline = (time.perf_counter() - t0) * 1000
            # a permission request open
            asked_before = len(editor.asked)
            running = asyncio.ensure_future(a.conn.prompt(session_id=sid, prompt=[acp.text_block("make it")]))
            asked = await editor.wait_until(lambda n=asked_before: len(editor.asked) > n and editor.asked[n])
            t0 = time.perf_counter()
            await a.conn.cancel(session_id=sid)
            asked.answer.set_result(None)
            assert (await asyncio.wait_for(running, TIMEOUT)).stop_reason == "cancelled"
            asking = (time.perf_counter() - t0) * 1000
            # the model streams
            seen = len(editor.updates)
            running = asyncio.ensure_future(a.conn.prompt(session_id=sid, prompt=[acp.text_block("go on")]))
            await editor.wait_until(lambda s=seen: any(u.session_update == "agent_message_chunk"
                                                       for u in editor.updates[s:]))
            t0 = time.perf_counter()
            await a.conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(running, TIMEOUT)).stop_reason == "cancelled"
            streaming = (time.perf_counter() - t0) * 1000
            if i:  # the first round warms up
                times["baseline"].append(baseline)
                times["asking"].append(asking)
                times["streaming"].append(streaming)
    assert not (tmp / "work" / "never-made.txt").exists()
    return times


async def _cancel(quick: bool) -> list[dict[str, Any]]:
    rounds = 5 if quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fake = _Fake({"loop": True, "replies": CANCEL_REPLIES}, root)  # type: ignore[arg-type]
        try:
            times = await _cancel_rounds(fake, root, rounds)
        finally:
            fake.stop()
    rows = []
    for key, what in (("asking", "while a permission request is open"), ("streaming", "while the model streams")):
        for label, q in (("p50", 0.5), ("p90", 0.9)):
            rows.append({
                "name": f"session/cancel -> prompt answered cancelled {what}, {label} ({rounds} rounds)",
                "value": round(_pct(times[key], q), 2), "unit": "ms",
                "baseline_name": f"session/set_mode round trip on the same connection, {label}",
                "baseline_value": round(_pct(times["baseline"], q), 2),
            })
    return rows


async def _new_rounds(fake: _Fake, tmp: Path, rounds: int) -> dict[str, list[float]]:
    from tests.acp.harness import agent

    times: dict[str, list[float]] = {"first": [], "new": [], "baseline": []}
    async with agent(fake, tmp) as a:  # type: ignore[arg-type]
        for i in range(rounds + 1):
            t0 = time.perf_counter()
            sid = (await a.new()).session_id
            made = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            await a.conn.set_session_mode(session_id=sid, mode_id="restricted")
            times["baseline"].append((time.perf_counter() - t0) * 1000)
            times["first" if i == 0 else "new"].append(made)
    return times


async def _new(quick: bool) -> list[dict[str, Any]]:
    rounds = 5 if quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fake = _Fake({"loop": True, "replies": [REPLY]}, root)  # type: ignore[arg-type]
        try:
            times = await _new_rounds(fake, root, rounds)
        finally:
            fake.stop()
    rows = [{"name": "the connection's first session/new -> answer (the model list waited for 0.3 s at most)",
             "value": round(times["first"][0], 2), "unit": "ms",
             "baseline_name": "session/set_mode round trip on the same connection, p50",
             "baseline_value": round(_pct(times["baseline"], 0.5), 2)}]
    for label, q in (("p50", 0.5), ("p90", 0.9)):
        rows.append({"name": f"a later session/new -> answer, {label} ({rounds} rounds)",
                     "value": round(_pct(times["new"], q), 2), "unit": "ms",
                     "baseline_name": f"session/set_mode round trip on the same connection, {label}",
                     "baseline_value": round(_pct(times["baseline"], q), 2)})
    return rows


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_first_chunk(quick)) + asyncio.run(_cancel(quick)) + asyncio.run(_new(quick))
