"""read_file, list_directory and search_files: confinement (REQ-BED-010), unsaved editor text, caps, and
hostile input (REQ-SEC-002)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.tools import readonly
from phoenix_lsp.tools.readonly import (
    ToolOutput,
    run_list_directory,
    run_read_file,
    run_search_files,
)
from phoenix_lsp.tools.registry import REGISTRY

NO_DOCS: dict[Path, str] = {}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "wd"
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "src" / "main.py").write_text("import os\n\ndef main():\n    print('hello')\n")
    (work / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'hello'\n")
    (work / "README.md").write_text("# Demo\nSay hello.\n")
    (work / "blob.bin").write_bytes(b"hello\x00\x01\x02")
    (work / ".git").mkdir()
    (work / ".git" / "HEAD").write_text("ref: hello\n")
    (tmp_path / "secret.txt").write_text("hello from outside\n")
    return work


def read(root: Path, docs: dict[Path, str] | None = None, **tool_input: Any) -> ToolOutput:
    return run_read_file(tool_input, root, docs or NO_DOCS)


# --- read_file ------------------------------------------------------------------------------------------


@pytest.mark.req("REQ-BED-010")
def test_read_file_relative_to_working_directory_with_line_numbers(root: Path) -> None:
    out = read(root, path="src/main.py")
    assert not out.is_error
    assert out.text.splitlines()[0] == "src/main.py (source: disk), lines 1-4 of 4"
    assert "     4\t    print('hello')" in out.text


def test_read_file_offset_limit_and_continuation_hint(root: Path) -> None:
    (root / "long.txt").write_text("".join(f"l{i}\n" for i in range(1, 101)))
    out = read(root, path="long.txt", offset=10, limit=5)
    assert [ln.split("\t")[1] for ln in out.text.splitlines()[1:6]] == ["l10", "l11", "l12", "l13", "l14"]
    assert "offset=15" in out.text
    past = read(root, path="long.txt", offset=101)
    assert past.is_error and "past the end" in past.text


def test_read_file_caps_output_size_and_long_lines(root: Path) -> None:
    (root / "wide.txt").write_text(("y" * 5_000 + "\n") * 100)
    out = read(root, path="wide.txt")
    assert len(out.text) < readonly.READ_MAX_CHARS + 10_000
    assert "line cut" in out.text and "more lines" in out.text


def test_read_file_counts_lines_like_the_editor(root: Path) -> None:
    (root / "mixed.txt").write_bytes("a\r\nb\rc\u2028still c\n".encode())
    out = read(root, path="mixed.txt")
    assert "lines 1-3 of 3" in out.text and "     3\tc\u2028still c" in out.text


@pytest.mark.req("REQ-BED-010")
def test_read_file_prefers_the_editors_unsaved_text(root: Path) -> None:
    target = (root / "src" / "main.py").resolve()
    out = read(root, {target: "unsaved = True\n"}, path="src/main.py")
    assert "unsaved = True" in out.text and "source: editor" in out.text
    # An open buffer that does not exist on disk yet can be read too.
    new = read(root, {root / "draft.py": "draft\n"}, path="draft.py")
    assert not new.is_error and "draft" in new.text


def test_read_file_open_document_found_through_another_spelling(tmp_path: Path, root: Path) -> None:
    os.symlink(root, tmp_path / "alias")
    docs = {tmp_path / "alias" / "README.md": "edited readme\n"}
    assert "edited readme" in read(root, docs, path="README.md").text


@pytest.mark.req("REQ-BED-010")
def test_read_file_refuses_escapes(root: Path) -> None:
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    for path in ("../secret.txt", str(root.parent / "secret.txt"), "link.txt"):
        out = read(root, path=path)
        assert out.is_error and "working directory" in out.text
        assert "hello from outside" not in out.text


def test_read_file_errors_for_missing_directory_and_binary(root: Path) -> None:
    assert "does not exist" in read(root, path="nope.py").text
    assert "is a directory" in read(root, path="src").text
    assert "binary" in read(root, path="blob.bin").text
    (root / "empty.txt").write_text("")
    assert "is empty" in read(root, path="empty.txt").text


@pytest.mark.req("REQ-SEC-002")
@pytest.mark.parametrize(
    "tool_input",
    [
        None,
        [],
        {},
        {"path": 1},
        {"path": ""},
        {"path": "a\x00"},
        {"path": "x", "offset": 0},
        {"path": "x", "limit": -1},
        {"path": "x", "offset": True},
        {"path": "x", "offset": "3"},
        {"path": "x", "bogus": 1},
    ],
)
def test_read_file_hostile_input(root: Path, tool_input: Any) -> None:
    out = run_read_file(tool_input, root, NO_DOCS)
    assert out.is_error and out.text


# --- list_directory -------------------------------------------------------------------------------------


def test_list_directory_shows_kinds_sizes_and_links(root: Path) -> None:
    os.symlink("src/main.py", root / "ln")
    out = run_list_directory({}, root, NO_DOCS)
    lines = out.text.splitlines()
    assert lines[0] == ".: 5 entries"
    assert ".git/" in lines and "src/" in lines and "ln -> src/main.py" in lines
    assert "README.md  (18 bytes)" in lines
    sub = run_list_directory({"path": "src"}, root, NO_DOCS)
    assert sub.text.splitlines()[1:] == ["main.py  (42 bytes)", "pkg/"]


@pytest.mark.req("REQ-BED-010")
def test_list_directory_refuses_escapes(root: Path) -> None:
    os.symlink(root.parent, root / "up")
    for path in ("..", "up", "/"):
        out = run_list_directory({"path": path}, root, NO_DOCS)
        assert out.is_error and "secret.txt" not in out.text


@pytest.mark.req("REQ-SEC-002")
def test_list_directory_errors(root: Path) -> None:
    assert "is a file" in run_list_directory({"path": "README.md"}, root, NO_DOCS).text
    assert "does not exist" in run_list_directory({"path": "nope"}, root, NO_DOCS).text
    assert run_list_directory({"path": 5}, root, NO_DOCS).is_error
    assert run_list_directory("src", root, NO_DOCS).is_error


def test_list_directory_caps_entries(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readonly, "LIST_MAX_ENTRIES", 3)
    out = run_list_directory({}, root, NO_DOCS)
    assert out.text.splitlines()[1:4] == [".git/", "README.md  (18 bytes)", "blob.bin  (8 bytes)"]
    assert "1 more entries not shown" in out.text


# --- search_files ---------------------------------------------------------------------------------------


def test_search_finds_lines_and_skips_git_and_binary(root: Path) -> None:
    out = run_search_files({"pattern": "hello"}, root, NO_DOCS)
    assert not out.is_error
    lines = out.text.splitlines()
    assert "README.md:2: Say hello." in lines
    assert "src/main.py:4:     print('hello')" in lines
    assert "src/pkg/util.py:2:     return 'hello'" in lines
    assert not any(ln.startswith(".git") for ln in lines)
    assert "1 binary file(s) skipped" in out.text


def test_search_with_path_glob_and_regex(root: Path) -> None:
    out = run_search_files({"pattern": r"def \w+\(", "path": "src", "glob": "*.py"}, root, NO_DOCS)
    assert out.text.splitlines() == ["src/main.py:3: def main():", "src/pkg/util.py:1: def helper():"]
    only_pkg = run_search_files({"pattern": "def", "glob": "src/pkg/*.py"}, root, NO_DOCS)
    assert only_pkg.text.splitlines() == ["src/pkg/util.py:1: def helper():"]
    none = run_search_files({"pattern": "zzz"}, root, NO_DOCS)
    assert not none.is_error and "No match" in none.text


@pytest.mark.req("REQ-BED-010")
def test_search_uses_unsaved_text(root: Path) -> None:
    docs = {(root / "src" / "main.py").resolve(): "def main():\n    print('goodbye')\n"}
    out = run_search_files({"pattern": "goodbye|hello", "path": "src"}, root, docs)
    assert "src/main.py:2:     print('goodbye')" in out.text
    assert "src/main.py:4" not in out.text


@pytest.mark.req("REQ-BED-010")
def test_search_never_follows_links_out_of_the_working_directory(root: Path) -> None:
    os.symlink(root.parent / "secret.txt", root / "src" / "leak.txt")
    os.symlink(root.parent, root / "src" / "updir")
    out = run_search_files({"pattern": "outside"}, root, NO_DOCS)
    assert "hello from outside" not in out.text
    assert run_search_files({"pattern": "x", "path": "../"}, root, NO_DOCS).is_error


def test_search_caps_matches(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "many.txt").write_text("hit\n" * 50)
    monkeypatch.setattr(readonly, "SEARCH_MAX_MATCHES", 10)
    out = run_search_files({"pattern": "hit", "path": "many.txt"}, root, NO_DOCS)
    assert len([ln for ln in out.text.splitlines() if ln.startswith("many.txt:")]) == 10
    assert "cut at a limit" in out.text


def test_search_skips_files_over_the_size_cap(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readonly, "SEARCH_MAX_FILE_BYTES", 10)
    out = run_search_files({"pattern": "hello", "path": "src"}, root, NO_DOCS)
    assert "2 file(s) over" in out.text


@pytest.mark.req("REQ-SEC-002")
@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        ({"pattern": "("}, "not a valid regular expression"),
        ({"pattern": ""}, "'pattern' must not be empty"),
        ({"pattern": 3}, "'pattern' must be a string, not the number 3"),
        ({}, "'pattern' is required"),
        ({"pattern": "a", "glob": 1}, "'glob' must be a string"),
        ({"pattern": "a", "glob": ""}, "'glob' must not be empty"),
        ({"pattern": "a", "path": "missing"}, "does not exist"),
        ({"pattern": "a", "extra": 1}, "unknown field 'extra' (the fields are: pattern, path, glob)"),
        (None, "the input must be a JSON object"),
    ],
)
def test_search_hostile_input(root: Path, tool_input: Any, expected: str) -> None:
    out = run_search_files(tool_input, root, NO_DOCS)
    assert out.is_error and expected in out.text


def test_schemas_are_static_json() -> None:
    for name in ("read_file", "list_directory", "search_files"):
        definition = REGISTRY.tools[name].definition("/w")
        assert definition["name"] == name and definition["input_schema"]["additionalProperties"] is False
        json.dumps(definition)
    read = REGISTRY.tools["read_file"].definition("/w")["input_schema"]
    assert read["required"] == ["path"]
    assert read["properties"]["offset"] == {"description": "First line to return (1-based).", "minimum": 1,
                                            "type": "integer"}
