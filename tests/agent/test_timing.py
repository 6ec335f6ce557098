"""The route's timing lines (``agent/timing.py``): what they hold, and that the bench reads them."""

from __future__ import annotations

import logging
import time

import pytest

from bench.agent_tasks import PART, TIMING
from phoenix_lsp.agent.timing import Stopwatch


def test_a_timing_line_gives_each_part_its_time_and_the_bench_reads_it(caplog: pytest.LogCaptureFixture) -> None:
    watch = Stopwatch("unit")
    time.sleep(0.01)
    watch.mark("take")
    watch.mark("calls")
    time.sleep(0.01)
    watch.mark("take")  # a part named twice adds up
    caplog.set_level(logging.INFO)
    watch.log(logging.getLogger("phoenix_lsp.agent.monty_engine"))
    found = TIMING.search(caplog.text)
    assert found is not None and found["what"] == "unit"
    parts = {p["name"]: float(p["ms"]) for p in PART.finditer(found["parts"])}
    assert set(parts) == {"take", "calls"}
    assert parts["take"] >= 20  # its two marks came after 10 ms of sleep each (a lower bound, never flaky)


def test_nothing_is_logged_before_a_mark(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    Stopwatch("plan").log(logging.getLogger("x"))
    assert "timing" not in caplog.text
