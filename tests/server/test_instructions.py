"""Reading project instructions: which files, in which order, the cap, and broken files (REQ-INSTR-001)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp import confined
from phoenix_lsp.server import instructions
from phoenix_lsp.server.instructions import read


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.req("REQ-INSTR-001")
def test_files_from_the_user_level_and_the_workspace_root_down_to_the_working_directory(tmp_path: Path) -> None:
    root, user = tmp_path / "repo", tmp_path / "config"
    wd = root / "pkg" / "sub"
    wd.mkdir(parents=True)
    write(user / "AGENTS.md", "user: be brief")
    write(root / "AGENTS.md", "root: run make test")
    write(root / "CLAUDE.md", "root claude: tabs")
    write(root / "pkg" / "sub" / "AGENTS.md", "sub: never touch generated/")
    write(tmp_path / "AGENTS.md", "outside the workspace: never read")
    write(root / "other" / "AGENTS.md", "a sibling: never read")
    found = read(wd, [root], user_dir=user)
    assert [Path(f.path) for f in found.files] == [
        user / "AGENTS.md", root / "AGENTS.md", root / "CLAUDE.md", wd / "AGENTS.md"]
    text = found.text
    order = [text.index(s) for s in ("user: be brief", "root: run make test", "root claude: tabs", "sub: never")]
    assert order == sorted(order)
    assert "outside the workspace" not in text and "a sibling" not in text
    assert all(f.kept == f.size and f.problem is None for f in found.files)
    assert text.startswith("# Project instructions") and f"## {wd / 'AGENTS.md'}" in text


@pytest.mark.req("REQ-INSTR-001")
def test_outside_every_workspace_folder_only_the_working_directory_counts(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "parent")
    wd = tmp_path / "loose"
    write(wd / "CLAUDE.md", "here")
    found = read(wd, [tmp_path / "elsewhere"], user_dir=None)
    assert [Path(f.path) for f in found.files] == [wd / "CLAUDE.md"] and "parent" not in found.text


@pytest.mark.req("REQ-INSTR-001")
def test_none_found_gives_no_text(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "   \n")  # blank: nothing to say
    assert read(tmp_path, [tmp_path], user_dir=tmp_path / "nothing") == instructions.Instructions("", ())


@pytest.mark.req("REQ-INSTR-001")
def test_the_cap_keeps_the_nearest_files_whole_and_says_what_was_cut(tmp_path: Path) -> None:
    wd = tmp_path / "a"
    write(tmp_path / "AGENTS.md", "F" * 900)  # farthest
    write(wd / "AGENTS.md", "N" * 700)  # nearest
    found = read(wd, [tmp_path], user_dir=None, cap=1000)
    far, near = found.files
    assert (near.size, near.kept) == (700, 700)
    assert (far.size, far.kept) == (900, 300)
    assert "N" * 700 in found.text and "F" * 300 in found.text and "F" * 301 not in found.text
    assert "[600 bytes cut: project instructions are capped at 1,000 bytes]" in found.text
    assert len(found.text.encode()) < 1000 + 400  # the cap holds, besides headings and the cut notice


@pytest.mark.req("REQ-INSTR-001")
def test_a_cut_never_splits_a_character(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "é" * 100)  # 2 bytes each
    found = read(tmp_path, [tmp_path], user_dir=None, cap=51)
    [f] = found.files
    assert f.kept == 50 and "é" * 25 in found.text and "\ufffd" not in found.text


@pytest.mark.req("REQ-INSTR-001")
def test_broken_files_are_reported_and_skipped_and_the_rest_is_used(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    wd = tmp_path / "w"
    write(tmp_path / "AGENTS.md", b"\xff\xfe not utf-8 \x80")
    write(tmp_path / "CLAUDE.md", "x" * (instructions.READ_LIMIT_BYTES + 1))
    locked = write(wd / "CLAUDE.md", "secret plans")
    write(wd / "AGENTS.md", "the good one")
    real = confined.Root._read

    def read_file(self: confined.Root, path: str, max_bytes: int) -> confined.FileRead:
        if Path(path) == locked:  # root reads any file: a permission error is simulated
            raise confined.ReadRefused("unreadable", str(path), "could not be read", cause="Permission denied")
        return real(self, path, max_bytes)

    monkeypatch.setattr(confined.Root, "_read", read_file)
    found = read(wd, [tmp_path], user_dir=None)
    problems = {Path(f.path).relative_to(tmp_path).as_posix(): f.problem for f in found.files}
    assert "not UTF-8" in (problems["AGENTS.md"] or "")
    assert "more than" in (problems["CLAUDE.md"] or "")
    assert "could not be read (Permission denied)" in (problems["w/CLAUDE.md"] or "")
    assert problems["w/AGENTS.md"] is None
    assert "the good one" in found.text and "secret plans" not in found.text and "not utf-8" not in found.text


@pytest.mark.req("REQ-INSTR-001", "REQ-SEC-001")
def test_a_secret_in_an_instructions_file_is_redacted(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "deploy with sk-ant-real-key please")
    found = read(tmp_path, [tmp_path], user_dir=None, redact=lambda t: t.replace("sk-ant-real-key", "[redacted]"))
    assert "sk-ant-real-key" not in found.text and "[redacted]" in found.text
