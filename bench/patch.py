"""Benchmark: a patch in a 5 MB file -> plan with minimal LSP edits.

Figures (each next to a baseline measured in the same run):
- replace in a 5 MB file -> PreparedPatch with edits, median ms (goal < 50 ms); baseline: plain
  ``str.count`` + ``str.replace`` over the same text, i.e. the least any exact-match patch must do.
- JSON payload of the edits, bytes, against the file size (goal: proportional to the change).
- three patches spread over the file (start, middle, end) -> plan, median ms, and its payload.

Run: ``python -m bench.patch`` (``--quick`` for fewer repetitions).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from phoenix_lsp.tools.patch import PreparedPatch, prepare_patch

FILE_BYTES = 5 * 1024 * 1024


def _make_file() -> str:
    """About 5 MB of Python-like text with unique lines (CRLF-free, ASCII plus a little non-BMP)."""
    parts: list[str] = []
    size, i = 0, 0
    while size < FILE_BYTES:
        chunk = (
            f"def function_{i}(value: int) -> int:\n"
            f'    """Compute item {i} 😀."""\n'
            f"    result = value * {i} + {i % 7}\n"
            "    return result\n\n\n"
        )
        parts.append(chunk)
        size += len(chunk.encode())
        i += 1
    return "".join(parts)


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _payload(plan: PreparedPatch) -> int:
    return len(json.dumps([e.to_json() for e in plan.edits]).encode())


def figures(quick: bool = False) -> list[dict[str, Any]]:
    """Measure the figures; ``quick`` uses fewer repetitions."""
    repeat = 5 if quick else 25
    text = _make_file()
    file_bytes = len(text.encode())
    n = text.count("def function_") // 2
    old = f"    result = value * {n} + {n % 7}\n"
    new = f"    result = value * {n} - {n % 7}  # patched\n"
    call = {"path": "big.py", "patches": [{"operation": "replace", "oldText": old, "newText": new}]}

    plan = prepare_patch(call, text)
    assert isinstance(plan, PreparedPatch), plan
    assert plan.new_text == text.replace(old, new)

    replace_ms = _median_ms(lambda: prepare_patch(call, text), repeat)
    baseline_ms = _median_ms(lambda: (text.count(old), text.replace(old, new)), repeat)

    spread = {
        "path": "big.py",
        "patches": [
            {"operation": "replace", "oldText": "    result = value * 10 + 3\n", "newText": "    return 10\n"},
            {"operation": "replace", "oldText": old, "newText": new},
            {"operation": "append_eof", "newText": "# end\n"},
        ],
    }
    spread_plan = prepare_patch(spread, text)
    assert isinstance(spread_plan, PreparedPatch), spread_plan
    spread_ms = _median_ms(lambda: prepare_patch(spread, text), repeat)

    return [
        {
            "name": "replace in a 5 MB file -> plan with minimal edits (median)",
            "value": round(replace_ms, 2),
            "unit": "ms",
            "baseline_name": "str.count + str.replace over the same text (median)",
            "baseline_value": round(baseline_ms, 2),
            "goal": "< 50 ms",
        },
        {
            "name": "edit payload (JSON of the edits) for that replace",
            "value": _payload(plan),
            "unit": "bytes",
            "baseline_name": "file size",
            "baseline_value": file_bytes,
            "goal": "proportional to the change (one line), not the file",
        },
        {
            "name": "three patches spread over the 5 MB file (start, middle, end) -> plan (median)",
            "value": round(spread_ms, 2),
            "unit": "ms",
            "baseline_name": "str.count + str.replace over the same text (median)",
            "baseline_value": round(baseline_ms, 2),
            "goal": "< 50 ms",
        },
        {
            "name": "edit payload for those three patches",
            "value": _payload(spread_plan),
            "unit": "bytes",
            "baseline_name": "file size",
            "baseline_value": file_bytes,
            "goal": "proportional to the changes, not the file",
        },
    ]


def main() -> None:
    """Print each figure next to its baseline."""
    for f in figures(quick="--quick" in sys.argv):
        print(
            f"{f['name']}: {f['value']} {f['unit']}  |  {f['baseline_name']}: {f['baseline_value']}"
            f"  |  goal: {f['goal']}"
        )


if __name__ == "__main__":
    main()
