"""The patch engine (REQ-PATCH-001..008): operations, atomicity, clipboards, reindent, recovery, output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.tools.patch import (
    CHARS_PER_TOKEN,
    MAX_INPUT_TOKENS,
    PatchError,
    PreparedPatch,
    prepare_patch,
    resolve_patch_path,
)
from phoenix_lsp.tools.registry import REGISTRY
from tests.tools.test_patch_lsp_applier import apply_lsp_edits

SRC = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
APPEND = {"operation": "append_eof", "newText": ""}


def ok(tool_input: dict[str, Any], original: str | None, **kw: Any) -> PreparedPatch:
    plan = prepare_patch(tool_input, original, **kw)
    assert isinstance(plan, PreparedPatch), plan
    # Whatever the operation, the editor edits must turn the original into the planned text.
    assert apply_lsp_edits(original or "", [e.to_json() for e in plan.edits]) == plan.new_text
    return plan


def err(tool_input: Any, original: str | None, **kw: Any) -> str:
    result = prepare_patch(tool_input, original, **kw)
    assert isinstance(result, PatchError), result
    assert "Nothing was changed" in result.message
    return result.message


def call(*patches: dict[str, Any], path: str = "m.py") -> dict[str, Any]:
    return {"path": path, "patches": list(patches)}


def rep(old: str, new: str | None = None, **extra: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"operation": "replace", "oldText": old, **extra}
    if new is not None:
        p["newText"] = new
    return p


# --- REQ-PATCH-001 operations ---------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-001")
def test_replace_unique_text() -> None:
    plan = ok(call(rep("return 1", "return 10")), SRC)
    assert plan.new_text == SRC.replace("return 1", "return 10")
    assert not plan.creates_file


@pytest.mark.req("REQ-PATCH-001")
def test_replace_refuses_ambiguous_old_text_and_names_lines() -> None:
    msg = err(call(rep("    return", "    yield")), SRC)
    assert "more than once" in msg and "lines 2 and 6" in msg
    # Overlapping occurrences count too ("aa" occurs twice in "aaa").
    assert "more than once" in err(call(rep("aa", "b")), "aaa")


@pytest.mark.req("REQ-PATCH-001")
def test_append_prepend_overwrite() -> None:
    assert ok(call({"operation": "append_eof", "newText": "# end\n"}), SRC).new_text == SRC + "# end\n"
    assert ok(call({"operation": "prepend_bof", "newText": "# top\n"}), SRC).new_text == "# top\n" + SRC
    plan = ok(call({"operation": "overwrite", "newText": "x = 1\n"}), SRC)
    assert plan.new_text == "x = 1\n" and not plan.creates_file


@pytest.mark.req("REQ-PATCH-001")
@pytest.mark.parametrize("op", ["append_eof", "prepend_bof", "overwrite"])
def test_missing_file_is_created_by_insert_operations(op: str) -> None:
    plan = ok(call({"operation": op, "newText": "hello\n"}, path="new/dir/f.txt"), None)
    assert plan.creates_file and plan.new_text == "hello\n"
    assert plan.diff.startswith("--- /dev/null\n+++ b/new/dir/f.txt\n")
    assert "Created new/dir/f.txt" in plan.message


@pytest.mark.req("REQ-PATCH-001")
def test_missing_file_refuses_replace() -> None:
    msg = err(call(rep("x", "y")), None)
    assert "does not exist" in msg and "overwrite" in msg


@pytest.mark.req("REQ-PATCH-001", "REQ-SEC-002")
def test_replace_needs_non_empty_old_text_and_other_ops_refuse_it() -> None:
    assert "oldText is required" in err(call(rep("", "x")), SRC)
    assert "only used by replace" in err(call({"operation": "append_eof", "oldText": "a", "newText": ""}), SRC)


# --- REQ-PATCH-002 atomicity ----------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-002")
def test_several_patches_are_located_in_the_original() -> None:
    # The second patch's oldText only exists in the original: it is not affected by the first patch.
    plan = ok(call(rep("return 1", "return 2"), rep("return 2", "return 3")), SRC)
    assert plan.new_text == "def f():\n    return 2\n\n\ndef g():\n    return 3\n"


@pytest.mark.req("REQ-PATCH-002")
def test_one_failure_means_no_plan_at_all() -> None:
    msg = err(call(rep("return 1", "return 10"), rep("not there", "x")), SRC)
    assert "patches[1]" in msg and "old text not found" in msg


@pytest.mark.req("REQ-PATCH-002")
def test_overlapping_patches_are_refused() -> None:
    msg = err(call(rep("def f():\n    return 1", "A"), rep("return 1\n\n", "B")), SRC)
    assert "overlapping" in msg and "patches[0]" in msg and "patches[1]" in msg
    assert "overlapping" in err(call({"operation": "overwrite", "newText": "x"}, rep("def g", "h")), SRC)


@pytest.mark.req("REQ-PATCH-002")
def test_inserts_at_one_place_keep_request_order() -> None:
    plan = ok(
        call(
            {"operation": "append_eof", "newText": "1\n"},
            {"operation": "append_eof", "newText": "2\n"},
            {"operation": "prepend_bof", "newText": "A"},
            rep("def f", "def F"),
        ),
        SRC,
    )
    assert plan.new_text == "A" + SRC.replace("def f", "def F") + "1\n2\n"
    # Edits at one position are merged: LSP edits never share a position.
    assert [e.new_text for e in plan.edits] == ["A", "F", "1\n2\n"]


# --- REQ-PATCH-003 clipboards ---------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-003")
def test_cut_and_paste_in_one_call_moves_code() -> None:
    plan = ok(
        call(
            rep("def g():\n    return 2\n", "", toClipboard="g"),
            {"operation": "prepend_bof", "fromClipboard": "g"},
        ),
        SRC,
    )
    assert plan.new_text == "def g():\n    return 2\ndef f():\n    return 1\n\n\n"
    assert plan.clipboards == {"g": "def g():\n    return 2\n"}


@pytest.mark.req("REQ-PATCH-003")
def test_clipboards_persist_across_calls_and_missing_one_is_an_error() -> None:
    first = ok(call(rep("return 1", "", toClipboard="r")), SRC)
    second = ok(
        call({"operation": "append_eof", "fromClipboard": "r"}, path="other.py"), "x\n", clipboards=first.clipboards
    )
    assert second.new_text == "x\nreturn 1"
    msg = err(call({"operation": "append_eof", "fromClipboard": "nope"}), SRC, clipboards={"r": "1"})
    assert "'nope' does not exist" in msg and "'r'" in msg


@pytest.mark.req("REQ-PATCH-003")
def test_same_clipboard_in_both_is_a_copy() -> None:
    plan = ok(call(rep("return 2", toClipboard="c", fromClipboard="c")), SRC)
    assert plan.new_text == SRC and plan.edits == () and plan.clipboards == {"c": "return 2"}
    assert "unchanged" in plan.message


@pytest.mark.req("REQ-PATCH-003")
def test_failed_call_leaves_the_callers_clipboards_untouched() -> None:
    clips = {"keep": "v"}
    err(call(rep("return 1", "", toClipboard="new"), rep("absent", "x")), SRC, clipboards=clips)
    assert clips == {"keep": "v"}


@pytest.mark.req("REQ-PATCH-003", "REQ-SEC-002")
def test_clipboard_misuse_is_explained() -> None:
    assert "only with replace" in err(call({"operation": "append_eof", "newText": "", "toClipboard": "a"}), SRC)
    assert "keep only one" in err(call(rep("return 1", "x", fromClipboard="a")), SRC, clipboards={"a": "1"})
    assert "'patches[0].toClipboard' must not be empty" in err(call(rep("return 1", "", toClipboard="")), SRC)


# --- REQ-PATCH-004 reindent -----------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-004")
def test_reindent_strips_and_adds_on_non_blank_lines() -> None:
    plan = ok(
        call({"operation": "append_eof", "newText": "  a\n\n    b\n", "reindent": {"strip": "  ", "add": "\t"}}),
        "",
    )
    assert plan.new_text == "\ta\n\n\t  b\n"


@pytest.mark.req("REQ-PATCH-004")
def test_reindent_applies_to_pasted_clipboard() -> None:
    plan = ok(
        call(
            rep("def g():\n    return 2\n", "", toClipboard="g"),
            {"operation": "append_eof", "fromClipboard": "g", "reindent": {"add": "    "}},
        ),
        SRC,
    )
    assert plan.new_text.endswith("\n    def g():\n        return 2\n")


@pytest.mark.req("REQ-PATCH-004")
def test_reindent_line_without_strip_prefix_is_an_error() -> None:
    msg = err(call({"operation": "append_eof", "newText": "    a\n  b\n", "reindent": {"strip": "    "}}), SRC)
    assert "line 2" in msg and "does not start with it" in msg


# --- REQ-PATCH-005 recovery -----------------------------------------------------------------------------

NESTED = "class A:\n    def f(self):\n        x = 1\n        return x\n"


@pytest.mark.req("REQ-PATCH-005")
def test_dedent_matching_reindents_the_new_text_the_same_way() -> None:
    plan = ok(call(rep("x = 1\nreturn x", "x = 2\nreturn x + 1")), NESTED)
    assert plan.new_text == "class A:\n    def f(self):\n        x = 2\n        return x + 1\n"
    assert "indentation" in plan.message


@pytest.mark.req("REQ-PATCH-005")
def test_crlf_file_matched_with_lf_old_text_keeps_crlf() -> None:
    crlf = NESTED.replace("\n", "\r\n")
    plan = ok(call(rep("        x = 1\n        return x\n", "        x = 5\n        return x\n")), crlf)
    assert plan.new_text == crlf.replace("x = 1", "x = 5")
    assert "line endings" in plan.message


@pytest.mark.req("REQ-PATCH-005")
def test_trailing_whitespace_is_tolerated() -> None:
    text = "a = 1   \nb = 2\n"
    plan = ok(call(rep("a = 1\nb = 2", "a = 1\nb = 3")), text)
    assert plan.new_text.endswith("b = 3\n")


@pytest.mark.req("REQ-PATCH-005")
def test_wrong_first_line_is_trimmed_when_new_text_keeps_it() -> None:
    text = "def h():\n    a = 1\n    b = 2\n    c = 3\n"
    plan = ok(call(rep("def WRONG():\n    a = 1\n    b = 2", "def WRONG():\n    a = 1\n    b = 20")), text)
    assert plan.new_text == "def h():\n    a = 1\n    b = 20\n    c = 3\n"
    assert "without the first line" in plan.message


@pytest.mark.req("REQ-PATCH-005")
def test_wrong_last_line_is_trimmed_when_new_text_keeps_it() -> None:
    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    plan = ok(call(rep("a = 1\nb = 2\nzzz", "a = 100\nb = 2\nzzz")), text)
    assert plan.new_text == "a = 100\nb = 2\nc = 3\nd = 4\n"


@pytest.mark.req("REQ-PATCH-005")
def test_trimming_is_refused_when_the_line_would_change() -> None:
    text = "def h():\n    a = 1\n    b = 2\n"
    # The first line differs in newText: dropping it would lose the model's intended change.
    msg = err(call(rep("def WRONG():\n    a = 1\n    b = 2", "def k():\n    a = 1\n    b = 2")), text)
    assert "old text not found" in msg


@pytest.mark.req("REQ-PATCH-005")
def test_ambiguous_fuzzy_match_is_refused() -> None:
    text = "if a:\n    x = 1\nif b:\n        x = 1\n"
    msg = err(call(rep("  x = 1\n", "  x = 2\n")), text.replace("x = 1\n", "x = 1 \n"))
    assert "several places" in msg


@pytest.mark.req("REQ-PATCH-005")
def test_not_found_when_every_strategy_fails() -> None:
    msg = err(call(rep("completely different", "x")), SRC)
    assert "old text not found" in msg and "read_file" in msg


@pytest.mark.req("REQ-PATCH-005", "REQ-PATCH-007")
def test_model_is_told_when_fuzzy_matching_changed_a_clipboard() -> None:
    plan = ok(call(rep("x = 1\nreturn x", "", toClipboard="body")), NESTED)
    assert plan.clipboards["body"] == "        x = 1\n        return x"
    assert "clipboard 'body' holds the text as found in the file" in plan.message
    exact = ok(call(rep("x = 1", "", toClipboard="e")), NESTED)
    assert "clipboard" not in exact.message


# --- REQ-PATCH-006 schema -------------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-006")
def test_schema_names_path_and_patch_fields() -> None:
    definition = REGISTRY.tools["patch"].definition("/w")
    schema = definition["input_schema"]
    assert definition["name"] == "patch" and schema["required"] == ["path", "patches"]
    item = schema["properties"]["patches"]["items"]["properties"]
    assert set(item) == {"operation", "oldText", "newText", "toClipboard", "fromClipboard", "reindent"}
    assert item["operation"]["enum"] == ["replace", "append_eof", "prepend_bof", "overwrite"]
    assert "relative to the working directory" in schema["properties"]["path"]["description"]
    assert schema["properties"]["patches"]["minItems"] == 1 and item["toClipboard"]["minLength"] == 1
    assert schema["additionalProperties"] is False and "$ref" not in json.dumps(definition)  # it goes on the wire as is


@pytest.mark.req("REQ-PATCH-006", "REQ-SEC-002")
@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        (None, "the input must be a JSON object (with path, patches), not null"),
        ([], "the input must be a JSON object"),
        ({"patches": [APPEND]}, "'path' is required"),
        ({"path": " ", "patches": [APPEND]}, "'path' must not be empty"),
        ({"path": 3, "patches": [APPEND]}, "'path' must be a string, not the number 3"),
        ({"path": "a", "patches": []}, "'patches' must hold at least 1 item"),
        ({"path": "a", "patches": "x"}, "'patches' must be an array"),
        ({"path": "a"}, "'patches' is required"),
        ({"path": "a", "patches": [1]}, "'patches[0]' must be a JSON object"),
        ({"path": "a", "patches": [{"operation": "delete"}]}, "'patches[0].operation' must be one of 'replace',"),
        ({"path": "a", "patches": [{}]}, "'patches[0].operation' is required"),
        ({"path": "a", "patches": [{"operation": "replace", "oldText": 5}]}, "'patches[0].oldText' must be a string"),
        ({"path": "a", "patches": [{"operation": "replace", "old_text": "x"}]}, "unknown field 'patches[0].old_text'"),
        ({"path": "a", "patches": [{"operation": "append_eof"}]}, "patches[0]: newText is required"),
        ({"path": "a", "patches": [{**APPEND, "reindent": 1}]}, "'patches[0].reindent' must be a JSON object"),
        ({"path": "a", "patches": [{**APPEND, "reindent": {"x": 1}}]}, "unknown field 'patches[0].reindent.x'"),
        ({"path": "a", "patches": [APPEND], "extra": 1}, "unknown field 'extra' (the fields are: path, patches)"),
    ],
)
def test_hostile_input_gives_clear_errors_never_exceptions(tool_input: Any, expected: str) -> None:
    assert expected in err(tool_input, SRC)


# --- REQ-PATCH-007 output -------------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-007")
def test_success_gives_confirmation_and_unified_diff() -> None:
    plan = ok(call(rep("return 2", "return 20\n    # done")), SRC)
    assert plan.message.startswith("Patched m.py: 1 patch(es) applied, +2 -1 lines.")
    assert plan.diff == (
        "--- a/m.py\n+++ b/m.py\n@@ -3,4 +3,5 @@\n \n \n def g():\n-    return 2\n+    return 20\n+    # done\n"
    )


@pytest.mark.req("REQ-PATCH-007")
def test_diff_line_numbers_are_absolute_in_a_long_file_with_two_regions() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 201))
    plan = ok(call(rep("line 50\n", "line 50\nnew\n"), rep("line 150\n", "")), text)
    headers = [ln for ln in plan.diff.splitlines() if ln.startswith("@@")]
    assert headers == ["@@ -48,6 +48,7 @@", "@@ -147,7 +148,6 @@"]


@pytest.mark.req("REQ-PATCH-007")
def test_diff_marks_missing_final_newline() -> None:
    plan = ok(call(rep("b", "c")), "a\nb")
    assert plan.diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


@pytest.mark.req("REQ-PATCH-007")
@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("api.py", "# Code generated by protoc. DO NOT EDIT.\nx = 1\n"),
        ("x_pb2.py", "x = 1\n"),
        ("web/package-lock.json", '{"x": 1}\n'),
        ("gen.ts", "// @generated\nexport const x = 1\n"),
    ],
)
def test_generated_files_are_patched_with_a_warning(path: str, text: str) -> None:
    plan = ok(call(rep("1", "2"), path=path), text)
    assert plan.new_text == text.replace("1", "2")
    assert plan.warnings and "looks generated" in plan.warnings[0]
    assert "Warning:" in plan.message


@pytest.mark.req("REQ-PATCH-007")
def test_ordinary_files_get_no_generated_warning() -> None:
    assert ok(call(rep("return 1", "return 3")), SRC).warnings == ()


# --- REQ-PATCH-008 size limit ---------------------------------------------------------------------------


@pytest.mark.req("REQ-PATCH-008")
def test_input_over_60k_tokens_is_refused_with_advice() -> None:
    big = "x" * (MAX_INPUT_TOKENS * CHARS_PER_TOKEN + 100)
    msg = err(call({"operation": "overwrite", "newText": big}), SRC)
    assert "60,000-token limit" in msg and "smaller patch calls" in msg


@pytest.mark.req("REQ-PATCH-008")
def test_input_just_under_the_limit_is_accepted() -> None:
    size = MAX_INPUT_TOKENS * CHARS_PER_TOKEN - 200
    plan = ok(call({"operation": "overwrite", "newText": "y" * size}), "")
    assert len(plan.new_text) == size


# --- minimal edits in editor coordinates ----------------------------------------------------------------


def test_edits_are_minimal_and_in_utf16_units() -> None:
    text = "emoji 😀😀 here\r\nsecond 😀 line\r\n"
    plan = ok(call(rep("second 😀 line", "second 😀 LINE")), text)
    (edit,) = plan.edits
    assert edit.to_json() == {
        "range": {"start": {"line": 1, "character": 10}, "end": {"line": 1, "character": 14}},
        "newText": "LINE",
    }


def test_a_large_replacement_with_one_changed_line_sends_one_line() -> None:
    body = "".join(f"    v{i} = {i}\n" for i in range(300))
    text = "def f():\n" + body
    plan = ok(call(rep(body, body.replace("v150 = 150", "v150 = -1"))), text)
    (edit,) = plan.edits
    assert edit.new_text == "-1" and edit.range.start.line == edit.range.end.line == 151


def test_overwrite_sends_only_the_changed_regions() -> None:
    text = "".join(f"row {i}\n" for i in range(10_000))
    new = text.replace("row 10\n", "row ten\n").replace("row 9000\n", "")
    plan = ok(call({"operation": "overwrite", "newText": new}), text)
    assert len(json.dumps([e.to_json() for e in plan.edits])) < 500


def test_no_edit_boundary_splits_crlf() -> None:
    text = "a\r\nb\r\n"
    plan = ok(call(rep("a\r", "a\r\nx\r")), text)  # the naive edit would insert between \r and \n
    assert plan.new_text == "a\r\nx\r\nb\r\n"


# --- path confinement for writes ------------------------------------------------------------------------


@pytest.mark.req("REQ-BED-010")
def test_resolve_patch_path_confines_writes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "d").mkdir()
    assert resolve_patch_path({"path": "a.py"}, tmp_path) == tmp_path.resolve() / "a.py"
    assert isinstance(resolve_patch_path({"path": "../x"}, tmp_path), PatchError)
    git = resolve_patch_path({"path": ".git/hooks/post-commit"}, tmp_path)
    assert isinstance(git, PatchError) and ".git" in git.message
    directory = resolve_patch_path({"path": "d"}, tmp_path)
    assert isinstance(directory, PatchError) and "directory" in directory.message
    assert isinstance(resolve_patch_path({"path": 1}, tmp_path), PatchError)
