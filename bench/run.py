"""``phoenix-lsp run``'s figure (issue 38), beside a baseline measured in the same run.

- start to answer: from the spawn of ``phoenix-lsp run "hello"`` to its answer on stdout, and to its exit, against
  the fake model (its own process) answering a short streamed reply; baseline: from the spawn of
  ``phoenix-lsp serve`` to its answer to ``initialize`` (what an editor waits for before it can send anything).
  The run builds the whole hub (store, model router, sandbox probe, agent route), imports the model SDK and makes
  one model request: the ratio says what a headless turn costs over a bare server start.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.server import ROOT, _Fake, _frame, _pct, _read_until_id

REPLY = {"text": "Hello! Here is the answer you asked for.", "deltas": 4}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}}}


def _run_once(env: dict[str, str], work: Path, data: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "phoenix_lsp", "run", "--cwd", str(work), "--data-dir", str(data),
                             "hello"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=ROOT)
    assert proc.stdout is not None
    answer = proc.stdout.readline()
    answered = (time.perf_counter() - t0) * 1000
    proc.stdout.read()
    if proc.wait() != 0 or not answer.strip():
        raise RuntimeError(f"phoenix-lsp run failed (exit {proc.returncode})")
    return answered, (time.perf_counter() - t0) * 1000


def _serve_once(env: dict[str, str], data: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "phoenix_lsp", "serve", "--data-dir", str(data)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write(_frame(INIT))
    proc.stdin.flush()
    _read_until_id(proc.stdout, 1)
    took = (time.perf_counter() - t0) * 1000
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    proc.stdin.flush()
    _read_until_id(proc.stdout, 2)
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    proc.stdin.flush()
    proc.wait()
    return took


def figures(quick: bool = False) -> list[dict[str, Any]]:
    rounds = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fake = _Fake([REPLY] * rounds, root)
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
            env.update(fake.env())
            env["PYTHONPATH"] = str(ROOT)
            work = root / "work"
            work.mkdir()
            answers, exits, serves = [], [], []
            for _ in range(rounds):  # interleaved, so both sides see the same machine
                answered, ended = _run_once(env, work, root / "data")
                answers.append(answered)
                exits.append(ended)
                serves.append(_serve_once(env, root / "serve-data"))
        finally:
            fake.stop()
    base = statistics.median(serves)
    rows: list[dict[str, Any]] = []
    for name, values in (("phoenix-lsp run: spawn -> answer on stdout", answers),
                         ("phoenix-lsp run: spawn -> exit", exits)):
        rows.append({"name": f"{name} (p50 of {rounds}; p90 {_pct(values, 0.9):.0f})", "unit": "ms",
                     "value": round(statistics.median(values)),
                     "baseline_name": f"phoenix-lsp serve: spawn -> initialize answered (p50 of {rounds})",
                     "baseline_value": round(base)})
    return rows
