"""The patch tool never writes through a hard link or a swapped directory (REQ-PATCH-013, issue 12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.tools.patch import PatchError, resolve_patch_path, target_identity, verify_before_sending

pytestmark = pytest.mark.req("REQ-PATCH-013")


def test_a_hard_linked_file_is_refused_and_the_error_says_why(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside.conf"
    root.mkdir()
    outside.write_text("precious\n")
    os.link(outside, root / "linked.conf")
    result = resolve_patch_path({"path": "linked.conf"}, root)
    assert isinstance(result, PatchError)
    assert "2 hard links" in result.message and "outside the working directory" in result.message
    (root / "plain.conf").write_text("x\n")
    assert resolve_patch_path({"path": "plain.conf"}, root) == root / "plain.conf"


def test_a_directory_swapped_for_a_symlink_after_planning_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (root / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "sub" / "f.txt").write_text("inside\n")
    (elsewhere / "f.txt").write_text("outside\n")
    call = {"path": "sub/f.txt"}
    planned = resolve_patch_path(call, root)
    assert isinstance(planned, Path)
    identity = target_identity(planned)
    assert verify_before_sending(call, root, planned, identity) is None
    os.rename(root / "sub", tmp_path / "moved")  # the swap between planning and sending
    os.symlink(elsewhere, root / "sub")
    refused = verify_before_sending(call, root, planned, identity)
    assert isinstance(refused, PatchError) and "outside the working directory" in refused.message
    assert (elsewhere / "f.txt").read_text() == "outside\n"


def test_a_file_replaced_after_planning_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_text("one\n")
    call = {"path": "f.txt"}
    planned = resolve_patch_path(call, root)
    assert isinstance(planned, Path)
    identity = target_identity(planned)
    (root / "g.txt").write_text("two\n")
    os.replace(root / "g.txt", root / "f.txt")  # another inode under the same name
    refused = verify_before_sending(call, root, planned, identity)
    assert isinstance(refused, PatchError) and "different file" in refused.message
