"""The terminal chat's markdown (issue 38, REQ-TERM-003), beside a baseline measured in the same run.

A long answer (paragraphs with emphasis, lists and highlighted code blocks, ~60 KB) streamed in 8-character
deltas through the chat's ``Screen`` drawing markdown, against the same deltas written as plain text (what the
chat did before, and does to a pipe). Two figures: the cost per delta, and the longest pause one delta causes
(the delta that finishes a block and has it drawn): streaming stays smooth when that pause stays well under a
frame. A third shows why a block is drawn once: rich rendering the whole answer so far once per delta, for an
answer of only 3 KB, against drawing it block by block.
"""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Console
from rich.markdown import Markdown

from phoenix_lsp.client.screen import Screen

BLOCK = (
    "The function **add(a, b)** returns the *sum* of its two arguments; see `add` in `maths.py`.\n\n"
    "- it takes two numbers\n- it returns one\n- it raises nothing\n\n"
    "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```\n\n"
)


class _Terminal(io.StringIO):
    """A terminal that counts the blocks drawn (each begins by erasing the block's raw text)."""

    drawn = 0

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.drawn += "\x1b[J" in text
        return super().write(text)


def _stream(deltas: list[str], markdown: bool) -> tuple[float, list[float], list[float]]:
    """(microseconds per delta, each delta's milliseconds, those of the deltas that had a block drawn, sorted)
    of the fastest of three runs."""
    best_total, best_each, best_drawn = float("inf"), [], []
    for _ in range(3):
        terminal = _Terminal()
        screen = Screen(terminal, color=True, markdown=markdown)
        each, drawn = [], []
        t0 = time.perf_counter()
        for delta in deltas:
            before = terminal.drawn
            t = time.perf_counter()
            screen.text(delta)
            each.append((time.perf_counter() - t) * 1e3)
            if terminal.drawn > before:
                drawn.append(each[-1])
        screen.end_line()
        total = time.perf_counter() - t0
        if total < best_total:
            best_total, best_each, best_drawn = total, each, sorted(drawn) or [0.0]
    return best_total / len(deltas) * 1e6, best_each, best_drawn


def _whole_each_delta(deltas: list[str]) -> float:
    """Milliseconds for rich to draw the whole answer so far once per delta (the way not taken)."""
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    t0 = time.perf_counter()
    text = ""
    for delta in deltas:
        text += delta
        console.print(Markdown(text))
    return (time.perf_counter() - t0) * 1e3


def figures(quick: bool = False) -> list[dict[str, Any]]:
    answer = BLOCK * (60 if quick else 300)
    deltas = [answer[i:i + 8] for i in range(0, len(answer), 8)]
    md_per, _, drawn = _stream(deltas, True)
    plain_per, plain_each, _ = _stream(deltas, False)
    median, p99 = drawn[len(drawn) // 2], drawn[min(len(drawn) - 1, int(len(drawn) * 0.99))]
    short = BLOCK * 12
    short_deltas = [short[i:i + 8] for i in range(0, len(short), 8)]
    started = time.perf_counter()
    _stream(short_deltas, True)
    blockwise_ms = (time.perf_counter() - started) * 1e3 / 3
    return [
        {
            "name": f"markdown drawn block by block, per delta: a {len(answer) // 1000} KB answer in "
                    f"{len(deltas):,} deltas of 8 characters",
            "value": round(md_per, 1), "unit": "us",
            "baseline_name": "the same deltas written as plain text", "baseline_value": round(plain_per, 1),
            "goal": "under 1 ms per delta (a model sends a few hundred deltas a second)",
            "met": md_per < 1000,
        },
        {
            "name": f"the pause of a delta that finishes a block, which is drawn: median of {len(drawn):,}",
            "value": round(median, 2), "unit": "ms",
            "baseline_name": "the slowest plain delta", "baseline_value": round(max(plain_each), 3),
            "goal": "under 16 ms (one frame of a 60 Hz screen)",
            "met": median < 16,
        },
        {
            "name": f"the same, 99th percentile (the longest: {drawn[-1]:.1f} ms, on a shared machine)",
            "value": round(p99, 2), "unit": "ms",
            "baseline_name": "the slowest plain delta", "baseline_value": round(max(plain_each), 3),
            "goal": "under 16 ms (one frame of a 60 Hz screen)",
            "met": p99 < 16,
        },
        {
            "name": f"rich drawing the whole answer so far once per delta, a {len(short) // 1000} KB answer in "
                    f"{len(short_deltas)} deltas (the way not taken)",
            "value": round(_whole_each_delta(short_deltas), 1), "unit": "ms",
            "baseline_name": "the same answer drawn block by block", "baseline_value": round(blockwise_ms, 1),
            "goal": "",
        },
    ]
