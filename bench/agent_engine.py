"""Agent script engine benchmarks (issue 14): what one unit costs on the pydantic-monty engine.

One execute = one sandboxed worker (launcher, Python, pydantic_monty, a monty pool and its process), used once:
cold, its start is paid by the unit; warm (REQ-AGENT-037), it was started ahead of need. Figures, each
beside a baseline of the same run:

- a trivial unit, sandboxed, next to an empty Python subprocess start (the floor of any worker);
- the same unit unsandboxed (what the Restricted sandbox adds);
- a unit with 3 host calls, next to the trivial unit (the cost of three JSON round trips through the host);
- the engine's own time for that unit (the feed, host waits excluded, as the worker reports it), next to the
  same script on a warm in-process pydantic-monty session (no worker, no protocol): the issue's "warm run".

Run: python -m bench agent_engine [--quick]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from phoenix_lsp.agent.contracts import ExecutionUnit
from phoenix_lsp.agent.monty_engine import MontyEngine, WarmPool
from phoenix_lsp.sandbox import probe

THREE_CALLS = "rows = [get_record(i) for i in range(3)]\n[r['id'] for r in rows]"


def _get_record(index: int) -> dict[str, Any]:
    return {"id": index, "status": "open"}


def _median_ms(action: Callable[[], object], rounds: int) -> float:
    action()  # warm the page cache and the imports
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def _python_start() -> None:
    subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)


def _warm_in_process(rounds: int) -> float:
    import pydantic_monty as pm

    with pm.Monty() as pool, pool.checkout() as session:
        session.feed_run(THREE_CALLS, external_lookup={"get_record": _get_record})
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            session.feed_run(THREE_CALLS, external_lookup={"get_record": _get_record})
            times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def _warm_pool_ms(functions: dict[str, Callable[..., Any]], unit: ExecutionUnit, rounds: int) -> float:
    """A unit on a warm worker, as the server runs it: each round waits (untimed) for the replacement the
    previous unit's start set off, as a model's turn between two plans would let it."""
    pool = WarmPool()
    engine = MontyEngine(functions, pool=pool)
    times = []
    try:
        pool.warm_for(unit.budgets)
        for _ in range(rounds + 1):
            if not pool.wait_warm(unit.budgets, 60.0):
                raise RuntimeError("no warm worker became ready")
            started = time.perf_counter()
            engine.execute(unit)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        pool.close()
    return round(statistics.median(times[1:]), 2)


def figures(quick: bool = False) -> list[dict[str, Any]]:
    rounds = 3 if quick else 15
    functions = {"get_record": _get_record}
    trivial = ExecutionUnit(code="1")
    calls = ExecutionUnit(code=THREE_CALLS, allowed_tools=("get_record",))
    python_ms = _median_ms(_python_start, rounds)
    plain = MontyEngine(functions, restricted=False)
    plain_ms = _median_ms(lambda: plain.execute(trivial), rounds)
    rows: list[dict[str, Any]] = []
    if probe().available:
        sandboxed = MontyEngine(functions)
        cold_ms = _median_ms(lambda: sandboxed.execute(trivial), rounds)
        calls_ms = _median_ms(lambda: sandboxed.execute(calls), rounds)
        engine_ms = statistics.median(sandboxed.execute(calls).metrics.cpu_ms for _ in range(rounds))
        warm_ms = _warm_pool_ms(functions, trivial, rounds)
        rows += [
            {"name": "execute, trivial unit, warm sandboxed worker (REQ-AGENT-037: started ahead of need)",
             "value": warm_ms, "unit": "ms", "baseline_name": "execute, trivial unit, sandboxed worker (cold)",
             "baseline_value": cold_ms},
            {"name": "execute, trivial unit, sandboxed worker (cold: every unit)", "value": cold_ms, "unit": "ms",
             "baseline_name": "empty Python subprocess (python -I -c pass)", "baseline_value": python_ms},
            {"name": "execute, trivial unit, unsandboxed worker", "value": plain_ms, "unit": "ms",
             "baseline_name": "execute, trivial unit, sandboxed worker", "baseline_value": cold_ms},
            {"name": "execute, unit with 3 host calls, sandboxed worker", "value": calls_ms, "unit": "ms",
             "baseline_name": "execute, trivial unit, sandboxed worker", "baseline_value": cold_ms},
        ]
    else:
        rows.append({"name": "execute, trivial unit, unsandboxed worker (no kernel sandbox here)",
                     "value": plain_ms, "unit": "ms", "baseline_name": "empty Python subprocess",
                     "baseline_value": python_ms})
        engine_ms = statistics.median(plain.execute(calls).metrics.cpu_ms for _ in range(rounds))
    rows.append({"name": "engine time of the 3-host-call unit in the worker (feed only, host waits excluded)",
                 "value": round(engine_ms, 3), "unit": "ms",
                 "baseline_name": "same script, warm in-process pydantic-monty session (host calls included)",
                 "baseline_value": _warm_in_process(rounds)})
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures(quick="--quick" in sys.argv))
