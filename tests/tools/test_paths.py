"""Confinement of tool paths to the working directory (REQ-BED-010) and hostile paths (REQ-SEC-002)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.tools.paths import PathError, resolve_in_workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "wd"
    (work / "src").mkdir(parents=True)
    (work / "src" / "a.py").write_text("x = 1\n")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return work


@pytest.mark.req("REQ-BED-010")
def test_relative_paths_start_at_the_working_directory(root: Path) -> None:
    assert resolve_in_workspace(root, "src/a.py", for_write=False) == root.resolve() / "src" / "a.py"
    assert resolve_in_workspace(root, "./src/../src/a.py", for_write=True) == root.resolve() / "src/a.py"
    assert resolve_in_workspace(root, ".", for_write=False) == root.resolve()


@pytest.mark.req("REQ-BED-010")
def test_absolute_path_inside_is_accepted_and_outside_refused(root: Path) -> None:
    inside = str(root / "src" / "a.py")
    assert resolve_in_workspace(root, inside, for_write=False) == root.resolve() / "src/a.py"
    with pytest.raises(PathError, match="outside the working directory"):
        resolve_in_workspace(root, str(root.parent / "outside.txt"), for_write=False)
    with pytest.raises(PathError, match="outside the working directory"):
        resolve_in_workspace(root, "/etc/passwd", for_write=False)


@pytest.mark.req("REQ-BED-010")
def test_dotdot_escape_is_refused(root: Path) -> None:
    for path in ("../outside.txt", "src/../../outside.txt", "src/../../wd2/x"):
        with pytest.raises(PathError, match=r"climbs out .*'\.\.'"):
            resolve_in_workspace(root, path, for_write=False)
    # A sibling whose name starts like the root is still outside.
    with pytest.raises(PathError):
        resolve_in_workspace(root, str(root) + "2/x", for_write=False)


@pytest.mark.req("REQ-BED-010")
def test_symlink_leading_outside_is_refused_anywhere_along_the_path(root: Path) -> None:
    os.symlink(root.parent / "outside.txt", root / "link.txt")
    os.symlink(root.parent, root / "up")
    with pytest.raises(PathError, match="symlink"):
        resolve_in_workspace(root, "link.txt", for_write=False)
    with pytest.raises(PathError, match="symlink"):
        resolve_in_workspace(root, "up/outside.txt", for_write=True)
    with pytest.raises(PathError, match="symlink"):
        resolve_in_workspace(root, "up/wd/../outside.txt", for_write=False)
    # A link to a file that does not exist yet but would be outside is refused too.
    os.symlink(root.parent / "new.txt", root / "dangling")
    with pytest.raises(PathError, match="symlink"):
        resolve_in_workspace(root, "dangling", for_write=True)


@pytest.mark.req("REQ-BED-010")
def test_symlink_staying_inside_is_resolved_to_its_target(root: Path) -> None:
    os.symlink(root / "src", root / "alias")
    assert resolve_in_workspace(root, "alias/a.py", for_write=True) == root.resolve() / "src/a.py"


@pytest.mark.req("REQ-BED-010")
def test_symlink_loop_is_refused(root: Path) -> None:
    os.symlink(root / "loop2", root / "loop1")
    os.symlink(root / "loop1", root / "loop2")
    with pytest.raises(PathError, match="loop"):
        resolve_in_workspace(root, "loop1", for_write=False)


@pytest.mark.req("REQ-BED-010")
def test_root_reached_through_a_symlink_works(tmp_path: Path, root: Path) -> None:
    os.symlink(root, tmp_path / "root-link")
    linked = tmp_path / "root-link"
    assert resolve_in_workspace(linked, "src/a.py", for_write=False) == root.resolve() / "src/a.py"
    assert resolve_in_workspace(linked, str(root / "src/a.py"), for_write=False) == root.resolve() / "src/a.py"


@pytest.mark.req("REQ-BED-010")
def test_writes_into_git_are_refused_reads_are_not(root: Path) -> None:
    assert resolve_in_workspace(root, ".git/config", for_write=False) == root.resolve() / ".git/config"
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT/config", "src/../.git/x"):
        with pytest.raises(PathError, match=r"\.git"):
            resolve_in_workspace(root, path, for_write=True)
    os.symlink(root / ".git", root / "innocent")
    with pytest.raises(PathError, match=r"\.git"):
        resolve_in_workspace(root, "innocent/config", for_write=True)
    # A file merely named like git's is fine.
    assert resolve_in_workspace(root, ".gitignore", for_write=True) == root.resolve() / ".gitignore"


@pytest.mark.req("REQ-SEC-002")
@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", None, 3, ["a"]])
def test_hostile_paths_raise_path_error_with_guidance(root: Path, bad: object) -> None:
    with pytest.raises(PathError) as info:
        resolve_in_workspace(root, bad, for_write=False)  # type: ignore[arg-type]
    assert "relative to the working directory" in str(info.value) or "NUL" in str(info.value)
