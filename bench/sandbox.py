"""Sandbox benchmarks: spawn cost of a sandboxed `bash -c true` next to a plain spawn and bubblewrap,
and the time from cancelling a running tool to every process of its tree being gone.

Run: python bench/sandbox.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from phoenix_lsp.sandbox import build, probe, spawn
from phoenix_lsp.tools.bash import BashContext, run_bash

BWRAP = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
         "--die-with-parent"]
TREE = ("(while :; do :; done) & sleep 300 & setsid sleep 300 & "
        "( (setsid sleep 300 >/dev/null 2>&1 &) ); wait")


async def _plain(argv: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    await proc.communicate()


async def _median_ms(make: Any, n: int) -> float:
    await make()  # warm-up (compiles the helper on first use, fills caches)
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await make()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def _descendants(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    parent[int(entry.name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, par in parent.items() if par == p]
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


async def _cancel_once(ctx: BashContext) -> float:
    task = asyncio.ensure_future(run_bash({"command": TREE}, ctx))
    tree: list[int] = []
    for _ in range(1000):
        tree = _descendants(os.getpid())
        if len(tree) >= 6:
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)
    tree = _descendants(os.getpid())
    t = time.perf_counter()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    while any(_alive(p) for p in tree):  # "idle with every process gone"
        await asyncio.sleep(0.0005)
    return (time.perf_counter() - t) * 1000


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _figures(quick: bool) -> list[dict[str, Any]]:
    n = 30 if quick else 200
    support = probe()
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        plain = await _median_ms(lambda: _plain(["bash", "-c", "true"]), n)
        bwrap_ms: float | None = None
        bwrap_note = ""
        if shutil.which("bwrap"):
            try:
                bwrap_ms = await _median_ms(lambda: _plain([*BWRAP, "bash", "-c", "true"]), n)
            except OSError as exc:
                bwrap_note = f"bubblewrap could not run: {exc}"
        else:
            bwrap_note = "bubblewrap not installed"
        if support.available:
            req = spawn.SpawnRequest(("bash", "-c", "true"), cwd, restricted=True)
            for kind in ("compiled", "python"):
                os.environ["PHOENIX_LSP_SANDBOX_LAUNCHER"] = kind
                build.reset_cache()
                sandboxed = await _median_ms(lambda: spawn.run(req, timeout=30), n if kind == "compiled"
                                             else max(10, n // 10))
                out.append({"name": f"sandboxed spawn of bash -c true ({kind} launcher), median",
                            "value": round(sandboxed, 2), "unit": "ms",
                            "baseline_name": "plain spawn of bash -c true, median",
                            "baseline_value": round(plain, 2),
                            "goal": "within 3 ms of plain" if kind == "compiled" else
                            "fallback only (no C compiler): informational"})
            os.environ.pop("PHOENIX_LSP_SANDBOX_LAUNCHER", None)
            build.reset_cache()
            compiled = out[0]["value"]
            out.append({"name": "sandboxed spawn of bash -c true (compiled launcher), median",
                        "value": compiled, "unit": "ms",
                        "baseline_name": "bubblewrap (ro /, own net ns) spawn, median" + (
                            f" [{bwrap_note}]" if bwrap_note else ""),
                        "baseline_value": round(bwrap_ms, 2) if bwrap_ms is not None else None,
                        "goal": "faster than bubblewrap"})
        m = 10 if quick else 60
        for restricted in ([True, False] if support.available else [False]):
            ctx = BashContext(working_directory=cwd, restricted=restricted)
            samples = [await _cancel_once(ctx) for _ in range(m)]
            mode = "restricted" if restricted else "unrestricted"
            out.append({"name": f"cancel of a running tool ({mode}) -> every process gone, p50",
                        "value": round(_pct(samples, 0.5), 2), "unit": "ms",
                        "baseline_name": "p99", "baseline_value": round(_pct(samples, 0.99), 2),
                        "goal": "p99 < 50 ms (requirement: 100 ms)"})
    return out


def figures(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the sandbox figures (each: name, value, unit, baseline_name, baseline_value,
    goal)."""
    return asyncio.run(_figures(quick))


if __name__ == "__main__":
    for fig in figures(quick="--quick" in sys.argv):
        print(f"{fig['name']}: {fig['value']} {fig['unit']}  |  {fig['baseline_name']}: "
              f"{fig['baseline_value']} {fig['unit']}  |  goal: {fig['goal']}")
