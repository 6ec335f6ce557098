"""The result cache lives for one plan run: a node that repeats an earlier one's read is answered from it, a
write empties it, and a second run (or another conversation) always reads the live data again; a new tool
version is a different key; writes are never cached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.cache import ResultCache, cache_key
from phoenix_lsp.agent.contracts import BudgetsFile, ErrorKind, ExecutionUnit, ResultEnvelope
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.planner import prepare
from phoenix_lsp.agent.report import RunReport

from .conftest import needs_sandbox
from .records_host import LIST, UPDATE, InMemoryRecordsHost

COUNT = "{'open': len([r for r in records_list_records() if r['status'] == 'open'])}"
TRIAGE_ONE = "records_update_record(id=1, fields={'status': 'open'})\n{}"


def node(node_id: str, code: str, tools: list[str], after: list[str] | None = None) -> dict[str, Any]:
    return {"id": node_id, "dependsOn": after or [], "outputs": ["open"] if code == COUNT else [],
            "unit": {"code": code, "allowedTools": tools}}


def go(host: InMemoryRecordsHost, store: ArtifactStore, *nodes: dict[str, Any]) -> RunReport:
    plan = prepare({"goal": "count open records", "nodes": list(nodes)}, host, BudgetsFile())
    return run(plan, host=host, engine_name="monty", budgets=BudgetsFile(), artifacts=store)


@needs_sandbox
@pytest.mark.req("REQ-AGENT-019", "REQ-AGENT-021")
def test_a_repeated_read_is_cached_within_its_run_only(tmp_path: Path) -> None:
    host, store = InMemoryRecordsHost(), ArtifactStore(tmp_path)
    first = go(host, store, node("a", COUNT, [LIST]), node("b", COUNT, [LIST], ["a"]))
    assert first.outcome == "ok" and [n.cached for n in first.nodes] == [False, True] and len(host.calls) == 1
    assert first.nodes[1].envelope == first.nodes[0].envelope and first.totals.nodes_cached == 1
    second = go(host, store, node("a", COUNT, [LIST]), node("b", COUNT, [LIST], ["a"]))
    # a new run reads the live data again, and the same data gives the same summary (determinism)
    assert [n.cached for n in second.nodes] == [False, True] and len(host.calls) == 2
    assert second.summary_hash == first.summary_hash


@needs_sandbox
@pytest.mark.req("REQ-AGENT-019")
def test_a_write_empties_the_runs_cache(tmp_path: Path) -> None:
    host, store = InMemoryRecordsHost(), ArtifactStore(tmp_path)
    before = sum(r["status"] == "open" for r in host.records)
    report = go(host, store, node("a", COUNT, [LIST]), node("w", TRIAGE_ONE, [UPDATE], ["a"]),
                node("b", COUNT, [LIST], ["w"]))
    assert report.outcome == "ok" and not any(n.cached for n in report.nodes)
    counts = [n.envelope.result for n in report.nodes if n.id in ("a", "b") and n.envelope is not None]
    assert counts == [{"open": before}, {"open": before + 1}]


@needs_sandbox
@pytest.mark.req("REQ-AGENT-019")
def test_a_write_node_is_never_cached(tmp_path: Path) -> None:
    host, store = InMemoryRecordsHost(), ArtifactStore(tmp_path)
    write = node("w", "records_update_record(id=1, fields={})", [UPDATE])
    report = go(host, store, write, {**write, "id": "w2", "dependsOn": ["w"]})
    assert report.outcome == "ok" and not any(n.cached for n in report.nodes)
    assert len(host.calls) == 2


def test_failures_are_not_kept_the_cache_is_bounded_and_keys_depend_on_versions_and_engine() -> None:
    cache = ResultCache(max_entries=2)
    cache.put("k", ResultEnvelope.failure(ErrorKind.TOOL, "TOOL_ERROR", "x"))
    assert cache.get("k") is None
    for i in range(3):
        cache.put(str(i), ResultEnvelope(ok=True, result=i))
    assert len(cache) == 2 and cache.get("0") is None and cache.get("2") is not None
    small = ResultCache(max_bytes=200)
    small.put("big", ResultEnvelope(ok=True, result="x" * 500))
    assert small.get("big") is None
    unit = ExecutionUnit(code="1", allowed_tools=(LIST,))
    assert cache_key(unit, "monty", {LIST: "records@1"}) != cache_key(unit, "monty", {LIST: "records@2"})
    assert cache_key(unit, "monty", {LIST: "records@1"}) != cache_key(unit, "null", {LIST: "records@1"})
    assert cache_key(unit, "monty", {LIST: "records@1"}) == cache_key(unit.model_copy(), "monty", {LIST: "records@1"})
