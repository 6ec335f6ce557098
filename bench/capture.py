"""Capture benchmarks (issue 36, REQ-BASH-028/029): an Unrestricted command run with the workspace in an
overlay (layer made, command run, changes read, layer discarded) beside the same command run as today, sampled
in turns in the same run: `true`, a one-file write, `git init && git add -A && git commit` of a 2,000-file tree,
creating many small files; reading the changes of 2,000 files and making their review; keeping the before
copies of an accepted 2,000-file change for an undo (REQ-BASH-040) beside the accept alone. Each figure prints
its difference or ratio against its baseline, its goal and a verdict.

Run: python -m bench capture [--quick]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from phoenix_lsp.sandbox import overlay, spawn
from phoenix_lsp.tools import shell_changes
from phoenix_lsp.tools.shell_changes import kept as kept_sets
from phoenix_lsp.tools.shell_changes.edit import prepare
from phoenix_lsp.tools.shell_changes.record import keep_review


async def _plain(ws: Path, command: str) -> None:
    await spawn.run(spawn.SpawnRequest(("bash", "-c", command), ws, restricted=False), timeout=600)


async def _captured(ws: Path, data: Path, command: str, keep: list[overlay.Layer] | None = None) -> None:
    layer = overlay.make_layer(ws, data)
    await spawn.run(spawn.SpawnRequest(("bash", "-c", command), ws, restricted=False, layer=layer), timeout=600)
    shell_changes.scan(layer)
    if keep is not None:
        keep.append(layer)
    else:
        overlay.discard(layer)


async def _in_turns(makers: dict[str, Callable[[], Awaitable[None]]], n: int,
                    between: Callable[[], None] | None = None) -> dict[str, float]:
    """Median ms of each maker, one of each per round (in turns, the order reversed every other round), after one
    warm-up of each; with makers "plain" and "captured", also "ratio": the median of the rounds' captured/plain
    (a pair taken moments apart: it holds when the disk's speed drifts over the run, which a ratio of the two
    medians does not)."""
    for make in makers.values():
        await make()
        if between:
            between()
    samples: dict[str, list[float]] = {name: [] for name in makers}
    for turn in range(n):
        names = list(makers) if turn % 2 == 0 else list(reversed(makers))
        for name in names:
            t = time.perf_counter()
            await makers[name]()
            samples[name].append((time.perf_counter() - t) * 1000)
            if between:
                between()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    if {"plain", "captured"} <= set(samples):
        medians["ratio"] = statistics.median(c / p for c, p in zip(samples["captured"], samples["plain"], strict=True))
    return medians


def _row(name: str, value: float, base_name: str, base: float, goal: str, met: bool | None,
         unit: str = "ms") -> dict[str, Any]:
    return {"name": name, "value": round(value, 2), "unit": unit, "baseline_name": base_name,
            "baseline_value": round(base, 2), "goal": goal, "met": met}


def _within_ms(value: float, base: float, limit: float) -> tuple[str, bool]:
    return f"within +{limit:g} ms of the command run as today (here {value - base:+.2f} ms)", value - base <= limit


def _within_ratio(ratio: float, limit: float) -> tuple[str, bool]:
    return (f"within {limit:g}x of the command run as today (here x{ratio:.3g}, the median of the rounds' ratios)",
            ratio <= limit)


def _remove(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)


async def _figures(quick: bool) -> list[dict[str, Any]]:
    why = overlay.overlay_support()
    if why is not None:
        return [{"name": "shell change capture", "value": "unavailable", "goal": why}]
    n = 20 if quick else 100
    out: list[dict[str, Any]] = []
    home = Path.home() / ".cache" / "phoenix-lsp-bench"  # the data directory's file system, not a tmpfs
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        ws, data = Path(tmp, "ws"), Path(tmp, "data")
        ws.mkdir()
        (ws / "f.txt").write_text("before\n")
        for label, command in (("true", "true"), ("a one-file write", "echo after > f.txt")):
            medians = await _in_turns({"plain": lambda c=command: _plain(ws, c),  # type: ignore[misc]
                                       "captured": lambda c=command: _captured(ws, data, c)}, n)  # type: ignore[misc]
            out.append(_row(f"captured {label} (layer, run, read the changes, discard), median", medians["captured"],
                            "the same command run as today, median (sampled in turns)", medians["plain"],
                            *_within_ms(medians["captured"], medians["plain"], 5)))

        # reading the changes of 2,000 modified files
        many = Path(tmp, "many")
        many.mkdir()
        for i in range(2000):
            (many / f"m{i:04d}.txt").write_text(f"line {i}\n" * 20)
        time.sleep(0.01)  # past the clock tick of the last write: a file written in the layer's tick is a conflict
        layer = overlay.make_layer(many, data)
        await spawn.run(spawn.SpawnRequest(("bash", "-c", "for f in m*.txt; do echo more >> $f; done"), many,
                                           restricted=False, layer=layer), timeout=600)
        reads = []
        for _ in range(5 if quick else 15):
            t = time.perf_counter()
            changes = shell_changes.scan(layer)
            reads.append((time.perf_counter() - t) * 1000)
        if len(changes.editable) != 2000:
            raise RuntimeError(f"expected 2,000 editable changes, read {len(changes.editable)}: {changes.summary()}")
        walk = []
        for _ in range(5 if quick else 15):
            t = time.perf_counter()
            for _root, _dirs, files in os.walk(layer.upper):
                for name in files:
                    os.stat(os.path.join(_root, name), follow_symlinks=False)
            walk.append((time.perf_counter() - t) * 1000)
        reviews = []  # the review the user is asked (REQ-BASH-032): texts, minimal edits, diffs of the 2,000
        for _ in range(5 if quick else 15):
            t = time.perf_counter()
            review = prepare(layer, changes, {})
            review.diff()
            reviews.append((time.perf_counter() - t) * 1000)
        if len(review.texts) != 2000:
            raise RuntimeError(f"expected 2,000 text changes in the review, made {len(review.texts)}")
        overlay.discard(layer)
        read_ms = statistics.median(reads)
        out.append(_row("reading the changes of 2,000 modified files (compared with the real files), median",
                        read_ms, "a bare walk and stat of the same layer, median", statistics.median(walk),
                        f"under 100 ms (here {read_ms:.1f} ms)", read_ms < 100))
        out.append(_row("making the review of those 2,000 files (texts, minimal edits, the approval's diff), "
                        "median", statistics.median(reviews), "reading their changes (above), median", read_ms,
                        "informational: what a review adds to reading the changes", None))

        out.append(await _keeping(many, data, 3 if quick else 7))

        # git commit of a 2,000-file tree: objects, refs, logs and the index, none of it an editor edit
        tree = Path(tmp, "tree")
        for i in range(2000):
            sub = tree / f"d{i // 100:02d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i:04d}.txt").write_text(f"file {i}\n" * 10)
        commit = ("git init -q && git add -A && "
                  "git -c user.name=bench -c user.email=bench@localhost commit -qm bench && git log --oneline | wc -l")
        committed: list[overlay.Layer] = []

        def reset_tree() -> None:  # untimed: the plain run's .git goes, the captured run's layer too
            _remove(tree / ".git")
            while committed:
                overlay.discard(committed.pop(), wait=True)

        medians = await _in_turns({"plain": lambda: _plain(tree, commit),
                                   "captured": lambda: _captured(tree, data, commit, committed)},
                                  2 if quick else 7, reset_tree)
        out.append(_row("captured git init, add and commit of a 2,000-file tree (layer, run, read, discard), median",
                        medians["captured"], "the same command run as today, median (sampled in turns)",
                        medians["plain"], *_within_ratio(medians["ratio"], 1.2)))

        # creating many small files, plain vs under the overlay (the run alone; reading them is a figure of
        # its own, taken between the rounds, and the layer is removed there too)
        count = 2000 if quick else 20000
        creator = f"mkdir -p gen && for i in $(seq {count}); do echo $i > gen/f$i; done"
        target = Path(tmp, "gen-ws")
        target.mkdir()
        kept: list[overlay.Layer] = []
        reading: list[float] = []

        async def captured_run() -> None:
            layer = overlay.make_layer(target, data)
            kept.append(layer)
            await spawn.run(spawn.SpawnRequest(("bash", "-c", creator), target, restricted=False, layer=layer),
                            timeout=600)

        def between() -> None:
            gen = target / "gen"
            if gen.exists():
                for name in os.listdir(gen):
                    os.unlink(gen / name)
                gen.rmdir()
            while kept:
                layer = kept.pop()
                t = time.perf_counter()
                changes = shell_changes.scan(layer)
                reading.append((time.perf_counter() - t) * 1000)
                if len(changes.changes) != count + 1:
                    raise RuntimeError(f"expected {count + 1} changes, read {len(changes.changes)}")
                overlay.discard(layer, wait=True)

        rounds = 2 if quick else 4
        medians = await _in_turns({"plain": lambda: _plain(target, creator), "captured": captured_run}, rounds,
                                  between)
        out.append(_row(f"creating {count:,} small files under the overlay, median", medians["captured"],
                        "the same command run as today, median (sampled in turns)", medians["plain"],
                        *_within_ratio(medians["ratio"], 1.2)))
        out.append({"name": f"reading the changes of those {count:,} created files, median",
                    "value": round(statistics.median(reading), 2), "unit": "ms", "baseline_name": None,
                    "baseline_value": None, "goal": "informational (2,000 files: under 100 ms, above)"})
    return out


async def _keeping(many: Path, data: Path, rounds: int) -> dict[str, Any]:
    """Accepting a 2,000-file change with its before copies kept for an undo (the old files moved into the kept
    set, the manifest written, the bound enforced) beside the accept alone, sampled in turns: each timed accept
    gets a fresh layer of the same command over the same tree (untimed)."""
    original = {p.name: p.read_bytes() for p in many.iterdir()}
    samples: dict[str, list[float]] = {"plain": [], "keeping": []}
    for turn in range(rounds + 1):  # the first round warms up
        for variant in (("plain", "keeping") if turn % 2 == 0 else ("keeping", "plain")):
            for name, content in original.items():
                (many / name).write_bytes(content)
            time.sleep(0.01)  # past the clock tick of the last write (see above)
            layer = overlay.make_layer(many, data)
            await spawn.run(spawn.SpawnRequest(("bash", "-c", "for f in m*.txt; do echo more >> $f; done"), many,
                                               restricted=False, layer=layer), timeout=600)
            review = prepare(layer, shell_changes.scan(layer), {}, frozenset())  # all of it the server's part
            t = time.perf_counter()
            accepted = shell_changes.accept(layer, review.server)
            if variant == "keeping":
                set_id = keep_review(data, "bench", "bench", review, accepted)
                if set_id is None:
                    raise RuntimeError("the 2,000-file change set was not kept")
            elapsed = (time.perf_counter() - t) * 1000
            if turn:
                samples[variant].append(elapsed)
            overlay.discard(layer, wait=True)
            kept_sets.remove(kept_sets.conversation_dir(data, "bench"))
    plain, keeping = statistics.median(samples["plain"]), statistics.median(samples["keeping"])
    ratio = statistics.median(k / p for k, p in zip(samples["keeping"], samples["plain"], strict=True))
    return _row("accepting a 2,000-file change and keeping its before copies for an undo, median", keeping,
                "the same accept without keeping them, median (sampled in turns)", plain,
                f"informational: x{ratio:.3g}, the median of the rounds' ratios (+{keeping - plain:.1f} ms)", None)


def figures(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the capture figures (each: name, value, unit, baseline_name, baseline_value, goal)."""
    return asyncio.run(_figures(quick))


if __name__ == "__main__":
    for fig in figures(quick=True):
        print(fig)
