"""The result cache: the same plan twice gives the identical summary and artifacts without running again;
a new tool version is a miss; writes are never cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.agent.artifacts import ArtifactStore
from phoenix_lsp.agent.cache import ResultCache, cache_key
from phoenix_lsp.agent.contracts import BudgetsFile, ErrorKind, ExecutionUnit, ResultEnvelope
from phoenix_lsp.agent.executor import run
from phoenix_lsp.agent.planner import prepare
from phoenix_lsp.agent.report import RunReport

from .conftest import needs_sandbox
from .records_host import LIST, UPDATE, InMemoryRecordsHost

PLAN = {"goal": "count open records", "nodes": [
    {"id": "read", "outputs": ["records"], "unit": {"code": "{'records': records_list_records()}",
                                                    "allowedTools": [LIST]}},
    {"id": "count", "dependsOn": ["read"], "inputs": ["records"], "outputs": ["open"],
     "unit": {"code": "{'open': len([r for r in records if r['status'] == 'open'])}"}},
]}


def go(host: InMemoryRecordsHost, cache: ResultCache, store: ArtifactStore) -> RunReport:
    plan = prepare(PLAN, host, BudgetsFile())
    return run(plan, host=host, engine_name="monty", budgets=BudgetsFile(), artifacts=store, cache=cache)


@needs_sandbox
@pytest.mark.req("REQ-AGENT-019", "REQ-AGENT-021")
def test_a_second_run_hits_the_cache_with_identical_results_and_a_new_version_misses(tmp_path: Path) -> None:
    host, cache, store = InMemoryRecordsHost(), ResultCache(), ArtifactStore(tmp_path)
    first = go(host, cache, store)
    assert first.outcome == "ok" and not any(n.cached for n in first.nodes) and len(host.calls) == 1
    second = go(host, cache, store)
    assert [n.cached for n in second.nodes] == [True, True] and len(host.calls) == 1
    assert second.summary_hash == first.summary_hash and second.summary == first.summary
    assert [n.envelope for n in second.nodes] == [n.envelope for n in first.nodes]
    assert second.nodes[0].spilled == first.nodes[0].spilled and second.totals.nodes_cached == 2

    host.tool_versions[LIST] = "records@1.1"
    third = go(host, cache, store)
    # the read is a miss (new version); the count's inputs are the same records, so it is still a hit
    assert [n.cached for n in third.nodes] == [False, True] and len(host.calls) == 2
    assert third.summary_hash == first.summary_hash


@needs_sandbox
@pytest.mark.req("REQ-AGENT-019")
def test_a_write_node_is_never_cached(tmp_path: Path) -> None:
    host, cache, store = InMemoryRecordsHost(), ResultCache(), ArtifactStore(tmp_path)
    raw = {"goal": "g", "nodes": [{"id": "w", "unit": {"code": "records_update_record(id=1, fields={})",
                                                       "allowedTools": [UPDATE]}}]}
    for _ in range(2):
        report = run(prepare(raw, host, BudgetsFile()), host=host, engine_name="monty", budgets=BudgetsFile(),
                     artifacts=store, cache=cache)
        assert report.outcome == "ok" and not any(n.cached for n in report.nodes)
    assert len(host.calls) == 2 and len(cache) == 0


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
