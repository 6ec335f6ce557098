"""Prompt caching figures of issue 16: one realistic agent session, caching on vs off, both arms in one run.

The session: 30 LLM requests of one conversation over three user turns (list, read and search files, run
commands, patch three times), about 60k tokens of context by the end, driven through the real server (a
subprocess, real LSP, real SDK) against the fake Messages API (tests/fake_anthropic.py), which keeps prefixes
marked by breakpoints and bills each request from what it really contains. The fake models latency as

    time to first token = TTFT_BASE_S + (input_tokens + cache_creation_input_tokens) x PREFILL_S_PER_TOKEN

(fixed, stated rates below; cache reads are not prefilled again). The off arm runs with
``PHOENIX_PROMPT_CACHE=off`` (the baseline), the on arm with the default settings, same script, same fake.

Figures:
- billed input in input-token equivalents, input + 1.25 x cache write + 0.1 x cache read, summed over the
  session; goal: caching on <= 20 % of caching off;
- time to first token p50 / p95, from the fake receiving the request to the first ``textDelta`` event at the
  client (both on the system's monotonic clock), on vs off;
- cache-hit share of input tokens (cache read / all input) over the requests after the first, aggregated and
  per request (median, minimum); goal >= 90 %.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The fake's latency model (stated rates, the same for both arms).
TTFT_BASE_S = 0.2
PREFILL_S_PER_TOKEN = 20e-6  # 50,000 input tokens per second of prefill
REQUESTS = 30

MODULES = ["billing", "ledger", "invoices", "taxes", "customers", "reports", "currency", "discounts"]


def _source(name: str) -> str:
    """About 11 KB of plausible Python: the files the agent reads, searches and patches."""
    parts = [f'"""The {name} module of the accounting service."""\n\nfrom decimal import Decimal\n\n']
    for i in range(40):
        parts.append(
            f"def {name}_step_{i}(amount: Decimal, rate: Decimal) -> Decimal:\n"
            f'    """Apply {name} rule {i}: scale by the rate and round to cents (see docs/{name}.md)."""\n'
            f"    value = amount * rate + Decimal('{i}.{i:02d}')\n"
            f"    return value.quantize(Decimal('0.01'))\n\n\n"
        )
    return "".join(parts)


def _script() -> list[tuple[str, list[Any]]]:
    """The three user turns and, for each, the model's replies (each reply is one LLM request)."""
    from tests.fake_anthropic import Reply, ToolUseBlock

    def tool(text: str, name: str, **args: Any) -> Any:
        return Reply.tool_reply(ToolUseBlock(name, args), text=text)

    def replace(module: str, step: int) -> Any:
        old = f"    value = amount * rate + Decimal('{step}.{step:02d}')\n"
        new = f"    value = (amount * rate).quantize(Decimal('0.0001')) + Decimal('{step}.{step:02d}')\n"
        patches = [{"operation": "replace", "oldText": old, "newText": new}]
        return tool(f"Patching {module}.py.", "patch", path=f"{module}.py", patches=patches)

    find = [
        tool("Let me look around.", "list_directory", path="."),
        *(tool(f"Reading {m}.py.", "read_file", path=f"{m}.py") for m in MODULES[:4]),
        tool("Searching for the rounding.", "search_files", pattern="quantize"),
        tool("Counting lines.", "bash", command="wc -l *.py"),
        tool("Reading customers.py.", "read_file", path="customers.py"),
        tool("Looking at reports.", "bash", command="cat reports.py"),
        tool("Searching callers.", "search_files", pattern="billing_step_1"),
        tool("Reading currency.py.", "read_file", path="currency.py"),
        Reply.text_reply("The totals round each step to cents before summing; that loses up to half a cent per line."),
    ]
    fix = [
        tool("Re-reading billing.py.", "read_file", path="billing.py"),
        replace("billing", 3),
        replace("invoices", 5),
        replace("taxes", 7),
        tool("Checking the diff.", "bash", command="cat billing.py"),
        tool("Checking discounts.", "read_file", path="discounts.py"),
        tool("Running a quick check.", "bash", command="grep -c quantize *.py"),
        tool("Reading ledger.py again.", "bash", command="cat ledger.py"),
        tool("One more look.", "read_file", path="invoices.py"),
        tool("And taxes.", "read_file", path="taxes.py"),
        tool("Listing again.", "list_directory", path="."),
        Reply.text_reply("Fixed: three modules now keep four decimals until the end."),
    ]
    tidy = [
        tool("Reading ledger.py.", "read_file", path="ledger.py"),
        replace("ledger", 11),
        tool("Checking it.", "bash", command="cat ledger.py"),
        tool("Reading reports.py.", "read_file", path="reports.py"),
        tool("Searching leftovers.", "search_files", pattern="Decimal\\('0.01'\\)"),
        Reply.text_reply("The ledger is tidy too."),
    ]
    turns = [
        ("The invoice totals are off by a few cents. Find out why.", find),
        ("Fix it in every module that rounds too early.", fix),
        ("Also tidy the ledger module the same way.", tidy),
    ]
    assert sum(len(r) for _, r in turns) == REQUESTS
    return turns


async def _arm(fake: Any, tmp: Path, arm: str) -> dict[str, Any]:
    """Run the session with caching ``arm`` (on/off); returns the fake's records and the TTFTs."""
    from tests.e2e.harness import last_seq, session, wait_idle

    first = len(fake.requests)
    fake.cache.clear()
    (tmp / arm).mkdir()
    async with session(fake, tmp / arm, env={"PHOENIX_PROMPT_CACHE": arm}, check_schema=False) as s:
        for name in MODULES:
            (s.workdir / f"{name}.py").write_text(_source(name))
        cid = await s.new(policy="auto")
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        for text, replies in _script():
            fake.enqueue(*replies)
            mark = last_seq(s, cid)
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
            await wait_idle(s, cid, mark, timeout=300)
        first_delta: dict[int, float] = {}
        for event, arrived in zip(s.events, s.arrivals, strict=True):
            if event["kind"] == "textDelta" and event["conversationId"] == cid:
                first_delta.setdefault(int(event["requestId"]), arrived / 1e9)
    records = fake.requests[first:]
    if len(records) != REQUESTS or any(r.status != 200 or r.usage is None for r in records):
        raise RuntimeError(f"{arm}: expected {REQUESTS} answered requests, got {[r.status for r in records]}")
    arrivals = [first_delta[rid] for rid in sorted(first_delta)]
    ttft = [arrived - r.started_at for arrived, r in zip(arrivals, records, strict=True)]
    return {"usage": [r.usage for r in records], "ttft": ttft}


def _billed(usages: list[dict[str, int]]) -> float:
    return sum(u["input_tokens"] + 1.25 * u["cache_creation_input_tokens"] + 0.1 * u["cache_read_input_tokens"]
               for u in usages)


def _all_input(u: dict[str, int]) -> int:
    return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


async def _run() -> list[dict[str, Any]]:
    from tests.fake_anthropic import FakeAnthropic

    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        fake.ttft_base_s = TTFT_BASE_S
        fake.prefill_s_per_token = PREFILL_S_PER_TOKEN
        off = await _arm(fake, Path(tmp), "off")
        on = await _arm(fake, Path(tmp), "on")
    later = on["usage"][1:]
    shares = [u["cache_read_input_tokens"] / _all_input(u) for u in later]
    aggregate = sum(u["cache_read_input_tokens"] for u in later) / sum(_all_input(u) for u in later)
    context = _all_input(on["usage"][-1])
    rates = f"TTFT = {TTFT_BASE_S * 1000:.0f} ms + uncached input x {PREFILL_S_PER_TOKEN * 1e6:g} us/token"
    return [
        {
            "name": f"billed input, {REQUESTS}-request agent session ({context:,} tokens of context at the end), "
            "caching on: input + 1.25 x cache write + 0.1 x cache read",
            "value": round(_billed(on["usage"])),
            "unit": "input-token equivalents",
            "baseline_name": "the same session with caching off (PHOENIX_PROMPT_CACHE=off)",
            "baseline_value": round(_billed(off["usage"])),
            "goal": "on <= 20 % of off",
        },
        {
            "name": f"time to first token p50, caching on ({rates})",
            "value": round(statistics.median(on["ttft"]) * 1000, 1),
            "unit": "ms",
            "baseline_name": "caching off, p50",
            "baseline_value": round(statistics.median(off["ttft"]) * 1000, 1),
            "goal": "lower with caching",
        },
        {
            "name": "time to first token p95, caching on",
            "value": round(_p95(on["ttft"]) * 1000, 1),
            "unit": "ms",
            "baseline_name": "caching off, p95",
            "baseline_value": round(_p95(off["ttft"]) * 1000, 1),
            "goal": "lower with caching",
        },
        {
            "name": f"cache-hit share of input tokens, requests 2-{REQUESTS} together, caching on "
            f"(per request: median {statistics.median(shares):.1%}, lowest {min(shares):.1%})",
            "value": round(aggregate * 100, 1),
            "unit": "%",
            "baseline_name": "caching off",
            "baseline_value": round(
                100 * sum(u["cache_read_input_tokens"] for u in off["usage"][1:])
                / sum(_all_input(u) for u in off["usage"][1:]), 1
            ),
            "goal": ">= 90 %",
        },
    ]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    """The figures of this benchmark (see the module docstring); ``quick`` changes nothing (one session)."""
    sys.path.insert(0, str(ROOT))
    return asyncio.run(_run())


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
