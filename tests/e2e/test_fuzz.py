"""Thousands of hostile messages against one server process (bench/fuzz.py, smaller): nothing ends it, every
request with a readable id is answered, and nothing pops up (REQ-PROTO-044..048)."""

from __future__ import annotations

import pytest

from bench.fuzz import run

pytestmark = pytest.mark.slow  # starts the real server and writes ~2,000 messages at it (about 15 s)


@pytest.mark.req("REQ-PROTO-044", "REQ-PROTO-045", "REQ-PROTO-046", "REQ-PROTO-047", "REQ-PROTO-048")
async def test_hostile_messages_neither_crash_nor_go_unanswered_nor_pop_up() -> None:
    result = await run(2_000, seed=1313, baseline=False)
    assert not result.crashed, result.crash_detail
    assert result.unanswered == [], result.unanswered_cases[:5]
    assert result.popups == [], result.popups[:3]
    assert result.messages == 2_000 and result.requests > 800
    assert result.rss_after_kb - result.rss_before_kb < 200 * 1024, "memory does not grow with hostile sizes"
