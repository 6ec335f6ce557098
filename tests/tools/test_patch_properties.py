"""Property tests: the editor edits of any plan turn the original into the planned text (UTF-16, CRLF,
lone CR, non-BMP characters), plans match a simple reference model, and no input makes the engine raise."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phoenix_lsp.tools.patch import PatchError, PreparedPatch, prepare_patch
from tests.tools.test_patch_lsp_applier import apply_lsp_edits

# Few distinct characters so that matches, repeats, shared prefixes and \r\n boundaries are common.
ALPHABET = st.sampled_from(["a", "b", " ", "\t", "\n", "\r", "\r\n", "😀", "é", "x"])
texts = st.lists(ALPHABET, max_size=40).map("".join)


def _check_edits(original: str, plan: PreparedPatch) -> None:
    edits = [e.to_json() for e in plan.edits]
    assert apply_lsp_edits(original, edits) == plan.new_text
    keys = [(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character) for e in plan.edits]
    assert keys == sorted(keys)
    for prev, cur in itertools.pairwise(keys):
        assert prev[2:] < cur[:2], "edits must neither overlap nor touch"
    assert all(e.new_text or e.range.start != e.range.end for e in plan.edits), "no empty edits"


@pytest.mark.req("REQ-PATCH-001", "REQ-PATCH-002")
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(original=texts, new=texts)
def test_overwrite_edits_reproduce_any_new_text(original: str, new: str) -> None:
    plan = prepare_patch({"path": "f", "patches": [{"operation": "overwrite", "newText": new}]}, original)
    assert isinstance(plan, PreparedPatch)
    assert plan.new_text == new
    _check_edits(original, plan)


@st.composite
def exact_calls(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], str]:
    """An original text, patches (unique exact replaces + inserts), and the expected result."""
    original = draw(texts)
    patches: list[dict[str, Any]] = []
    spans: list[tuple[int, int, int, str]] = []
    for index in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["replace", "append_eof", "prepend_bof"]))
        new = draw(texts)
        if kind == "replace" and original:
            s = draw(st.integers(0, len(original) - 1))
            e = draw(st.integers(s + 1, len(original)))
            old = original[s:e]
            if original.count(old) != 1 or original.find(old, original.find(old) + 1) != -1:
                continue
            if any(not (e <= a or b <= s) for a, b, _, _ in spans if a != b):
                continue
            patches.append({"operation": "replace", "oldText": old, "newText": new})
            spans.append((s, e, index, new))
        elif kind != "replace":
            at = len(original) if kind == "append_eof" else 0
            patches.append({"operation": kind, "newText": new})
            spans.append((at, at, index, new))
    spans.sort(key=lambda r: (r[0], r[1] > r[0], r[2]))
    out, cur = [], 0
    for s, e, _, t in spans:
        out.append(original[cur:s] + t)
        cur = e
    out.append(original[cur:])
    return original, patches, "".join(out)


@pytest.mark.req("REQ-PATCH-001", "REQ-PATCH-002")
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=exact_calls())
def test_exact_patches_match_the_reference_model(case: tuple[str, list[dict[str, Any]], str]) -> None:
    original, patches, expected = case
    if not patches:
        return
    plan = prepare_patch({"path": "f", "patches": patches}, original)
    assert isinstance(plan, PreparedPatch), plan
    assert plan.new_text == expected
    _check_edits(original, plan)


@pytest.mark.req("REQ-PATCH-005")
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(original=texts, old=texts, new=texts)
def test_any_replace_either_fails_cleanly_or_yields_consistent_edits(original: str, old: str, new: str) -> None:
    result = prepare_patch(
        {"path": "f", "patches": [{"operation": "replace", "oldText": old, "newText": new}]}, original
    )
    if isinstance(result, PatchError):
        assert "Nothing was changed" in result.message
    else:
        _check_edits(original, result)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "path",
                    "patches",
                    "operation",
                    "oldText",
                    "newText",
                    "toClipboard",
                    "fromClipboard",
                    "reindent",
                    "strip",
                    "add",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@pytest.mark.req("REQ-SEC-002")
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(tool_input=json_values, original=st.none() | texts)
def test_no_input_makes_the_engine_raise(tool_input: Any, original: str | None) -> None:
    result = prepare_patch(tool_input, original)
    assert isinstance(result, (PreparedPatch, PatchError))
    if isinstance(result, PreparedPatch):
        _check_edits(original or "", result)
