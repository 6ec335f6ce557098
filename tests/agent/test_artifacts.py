"""Artifacts (content-addressed, strict handles, a size cap) and the reducer's compaction and summary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.agent.artifacts import ArtifactNotFound, ArtifactStore, ArtifactTooLarge, InvalidHandle
from phoenix_lsp.agent.contracts import AgentError, ErrorKind, ResultEnvelope
from phoenix_lsp.agent.reducer import compact, shape, summarize
from phoenix_lsp.agent.report import NodeReport, RunReport

from .records_host import dataset


@pytest.mark.req("REQ-AGENT-023", "REQ-AGENT-021")
def test_the_same_value_gives_the_same_handle_and_its_bytes_back(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    table = store.put(dataset(5))
    assert table == store.put(dataset(5)) and table.type == "table"
    assert table.handle.startswith("artifact://sha256-") and len(table.handle) == len("artifact://sha256-") + 64
    assert store.put("some text").type == "text" and store.put({"a": 1}).type == "json"
    assert store.put("1") != store.put(1)  # the type is part of the address
    handle, data = store.get(table.handle)
    assert handle == table and data.startswith(b'[{"id":1,')
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind


@pytest.mark.req("REQ-AGENT-023")
@pytest.mark.parametrize("handle", [
    "artifact://../../outside/secret",
    "artifact://sha256-" + "0" * 63,
    "artifact://sha256-" + "A" * 64,
    "artifact://sha256-" + "0" * 64 + "/../x",
    "artifact://sha256-" + "0" * 64 + "\n",
    "artifact:///absolute/secret",
    "../sha256-" + "0" * 64,
    "artifact://sha256-%2e%2e%2fsecret",
    "",
])
def test_a_malformed_handle_is_refused_before_any_file_is_touched(tmp_path: Path, handle: str) -> None:
    with pytest.raises(InvalidHandle, match="artifact://sha256-<64 hex digits>"):
        ArtifactStore(tmp_path).get(handle)


@pytest.mark.req("REQ-AGENT-023")
def test_missing_damaged_symlinked_and_oversized_artifacts(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "a", max_bytes=1024)
    with pytest.raises(ArtifactNotFound, match="run the plan again"):
        store.get("artifact://sha256-" + "0" * 64)
    handle = store.put("hello")
    path = next((tmp_path / "a").glob("sha256-*"))
    path.write_text("tampered")
    with pytest.raises(ArtifactNotFound, match="damaged"):
        store.get(handle)
    path.unlink()
    (tmp_path / "outside").write_text("hello")
    os.symlink(tmp_path / "outside", path)
    with pytest.raises(ArtifactNotFound):
        store.get(handle)
    with pytest.raises(ArtifactTooLarge, match="1024"):
        store.put("x" * 2000)


@pytest.mark.req("REQ-AGENT-006")
def test_compaction_keeps_small_outputs_inline_and_spills_the_largest(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    result = {"records": dataset(), "count": 50, "note": "n" * 300}
    inline, printed, spilled = compact(result, ("records", "count", "note"), "hi\n", 512, store)
    assert inline == {"count": 50, "note": "n" * 300} and printed == "hi\n"
    assert [(s.key, s.shape) for s in spilled] == [
        ("records", "list of 50 objects with keys id, owner, priority, status, title")]
    inline, printed, spilled = compact(result, ("records", "count", "note"), "p" * 5000, 512, store)
    assert inline == {"count": 50, "note": "n" * 300} and printed == ""
    assert [s.key for s in spilled] == ["#output", "records"]
    inline, _, spilled = compact(result, ("records", "count", "note"), "", 256, store)
    assert inline == {"count": 50} and [s.key for s in spilled] == ["records", "note"]
    inline, _, spilled = compact(list(range(2000)), (), "", 256, store)
    assert inline is None and spilled[0].shape == "list of 2000 items (int)"
    assert shape({"b": 1, "a": 2}) == "object with 2 keys: a, b" and shape("abc") == "text of 3 characters"


@pytest.mark.req("REQ-AGENT-006", "REQ-AGENT-021")
def test_the_summary_is_deterministic_and_says_what_failed_and_what_next() -> None:
    big = "x" * 5000
    report = RunReport(plan_hash="ab" * 32, goal="g " * 500, engine="monty", outcome="partial", nodes=(
        NodeReport(id="a", kind="script", status="ok", envelope=ResultEnvelope(ok=True, result={"b": 1, "a": 2})),
        NodeReport(id="b", kind="script", status="failed",
                   error=AgentError(kind=ErrorKind.BUDGET, code="CPU_LIMIT", message=big)),
        NodeReport(id="c", kind="script", status="skipped", reason="it depends on b, which failed"),
    ))
    text = summarize(report)
    assert text == summarize(report.model_copy())
    assert '- a [script] ok: {"a":2,"b":1}' in text
    assert "BUDGET/CPU_LIMIT" in text and "re-plan with a smaller scope" in text
    assert "- c [script] skipped: it depends on b, which failed" in text
    assert big not in text and len(text) < 1000
