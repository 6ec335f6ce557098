"""Attacks on undo afterwards (issue 36, REQ-BASH-040/041): the before copies the server keeps, and the change set
id a client names.

Through the real server, a real LSP client and the real kernel overlay, a command's changes are accepted; then the
kept copies are tampered with, or a hostile id is asked for. The witnesses are outside the server: the workspace on
disk (hashed), a file outside it, and the kept folder's contents and disk use.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from phoenix_lsp import limits
from phoenix_lsp.sandbox import overlay
from phoenix_lsp.tools.shell_changes.kept import conversation_dir
from tests.e2e.harness import Buffers, session
from tests.e2e.test_shell_review import run_reviewed
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic
from tests.sandbox.capture import tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

OUTSIDE = "the user's private key, outside the workspace\n"


def disk_use(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*"))


@pytest.mark.req("REQ-BASH-041")
async def test_a_before_copy_replaced_by_a_symlink_outside_the_workspace_is_never_followed(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = tmp_path / "outside.key"
    outside.write_text(OUTSIDE)
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "data.bin").write_bytes(b"\0old\0")
        (w / "notes.txt").write_text("old notes\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        await run_reviewed(s, cid, "printf '\\0new\\0' > data.bin && echo new > notes.txt", None)
        after = tree_digest(w)
        copies = [p for p in conversation_dir(s.data_dir, cid).rglob("files/*") if p.is_file()]
        assert len(copies) == 2
        for copy in copies:  # every kept copy now points outside the workspace
            copy.unlink()
            copy.symlink_to(outside)
        result = await s.request("phoenix/undoChanges", {"conversationId": cid})
        assert result["undone"] is False and "altered or replaced" in result["message"]
        assert tree_digest(w) == after, "the undo wrote something from the planted link"
        assert not any(OUTSIDE in p.read_text(errors="replace") for p in w.rglob("*") if p.is_file())
        assert not any(p.is_symlink() for p in w.rglob("*"))
        assert outside.read_text() == OUTSIDE


@pytest.mark.req("REQ-BASH-041", "REQ-PROTO-070")
async def test_a_change_set_id_that_climbs_out_names_nothing(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "a.txt").write_text("a\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        await run_reviewed(s, cid, "echo b >> a.txt", None)
        after = tree_digest(w)
        # a kept set planted where the climbing id leads: it would put back a file of the attacker's
        planted = conversation_dir(s.data_dir, cid) / ".." / ".." / "x"
        planted.mkdir(parents=True)
        (planted / "files").mkdir()
        (planted / "files" / "1").write_text("planted\n")
        sha = hashlib.sha256(b"planted\n").hexdigest()
        entry = ["planted.txt", ["file", 0o644, sha, 8, "", "1", ""], ["absent", 0, "", 0, "", "", ""], False]
        (planted / "head.json").write_text(json.dumps({  # a set the server would take, but for its place
            "id": "x", "label": "planted", "folder": str(w.resolve()), "seq": 1, "size": 8, "count": 1}))
        (planted / "manifest.json").write_text(json.dumps([entry]))
        for hostile in ("../../x", "../x", "/x", "latest/../../x", "0123456789ab/../../x"):
            refused = await s.error("phoenix/undoChanges", {"conversationId": cid, "changeSetId": hostile})
            assert refused.data.get("kind") == "invalidParams" and refused.data.get("field") == "changeSetId", hostile
        assert tree_digest(w) == after and not (w / "planted.txt").exists()


@pytest.mark.req("REQ-BASH-040")
async def test_a_before_copy_folder_filled_beyond_the_bound_is_brought_back_within_it(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "a.txt").write_text("a\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        home = conversation_dir(s.data_dir, cid)
        home.mkdir(parents=True)
        filler = home / "filler"  # beyond the bound by itself (allocated, not sparse)
        with filler.open("wb") as f:
            os.posix_fallocate(f.fileno(), 0, limits.UNDO_BYTES + 1024 * 1024)
        for i in range(limits.UNDO_SETS + 5):  # forged sets that look kept and newest
            forged = home / f"{i:012x}"
            forged.mkdir()
            (forged / "head.json").write_text(json.dumps({
                "id": forged.name, "label": "forged", "folder": str(w), "seq": 2**62 + i, "size": 0, "count": 0}))
            (forged / "manifest.json").write_text("[]")
        assert disk_use(home) > limits.UNDO_BYTES
        _, told = await run_reviewed(s, cid, "echo b >> a.txt", None)
        assert "the user can undo it" in told
        assert disk_use(home) <= limits.UNDO_BYTES and not filler.exists()
        assert len([p for p in home.iterdir()]) <= limits.UNDO_SETS
        result = await s.request("phoenix/undoChanges", {"conversationId": cid})  # the real set was kept
        assert result["undone"] and (w / "a.txt").read_text() == "a\n"
