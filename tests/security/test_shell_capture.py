"""Attacks on the capture of an Unrestricted command's changes (issue 36, REQ-BASH-028..031). The command is
real, run by the real launcher in a real overlay; the witnesses are outside the server: files on disk outside
the workspace, the workspace itself, the launcher's report."""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
import threading
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.tools import shell_changes as sc
from phoenix_lsp.tools.shell_changes import ChangeKind, Entry
from tests.sandbox.capture import run_captured, tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim").write_text("untouched\n")
    return folder


@pytest.mark.req("REQ-BASH-030")
async def test_a_symlink_swapped_in_before_the_accept_is_never_followed_out(ws: Path, outside: Path,
                                                                             tmp_path: Path) -> None:
    (ws / "d").mkdir()
    layer, _ = await run_captured("echo pwned > d/victim && echo pwned > d/new", ws, tmp_path / "data")
    changes = sc.scan(layer)
    # between the review and the accept, the folder's d becomes a symlink to a folder outside
    os.rename(ws / "d", tmp_path / "d-moved")
    os.symlink(outside, ws / "d")
    with pytest.raises(sc.AcceptFailed):
        sc.accept(layer, changes)
    assert (outside / "victim").read_text() == "untouched\n"
    assert not (outside / "new").exists()


@pytest.mark.req("REQ-BASH-030")
async def test_a_symlinked_folder_replaced_by_the_command_is_replaced_not_written_through(
        ws: Path, outside: Path, tmp_path: Path) -> None:
    os.symlink(outside, ws / "sub")  # the repository holds a link that leads out
    layer, result = await run_captured("rm sub && mkdir sub && echo pwned > sub/victim && ln -s /etc/passwd pw",
                                       ws, tmp_path / "data")
    assert result.exit_code == 0
    changes = sc.scan(layer)
    assert next(c for c in changes.changes if c.path == "pw").outside
    sc.accept(layer, changes)
    assert (outside / "victim").read_text() == "untouched\n"
    assert (ws / "sub" / "victim").read_text() == "pwned\n" and not (ws / "sub").is_symlink()
    assert os.readlink(ws / "pw") == "/etc/passwd"  # created as a link, never followed


@pytest.mark.req("REQ-BASH-030")
@pytest.mark.parametrize("name", ["../escaped", "a/../../escaped", "/abs-escaped", "./x/../../escaped"])
async def test_a_change_named_to_climb_out_is_refused(ws: Path, tmp_path: Path, name: str) -> None:
    layer, _ = await run_captured("echo x > escaped && mkdir a x", ws, tmp_path / "data")
    (layer.root / "escaped").write_text("x\n")  # what the climbing name reaches in the layer, too
    hostile = sc.ChangeSet(ws, (sc.Change(name, ChangeKind.CREATED, Entry.FILE, True, "", 2),))
    with pytest.raises(sc.AcceptFailed):
        sc.accept(layer, hostile)
    assert not (tmp_path / "escaped").exists() and not Path("/abs-escaped").exists()
    assert (layer.root / "escaped").exists()


@pytest.mark.req("REQ-BASH-029")
async def test_a_fifo_or_device_made_by_the_command_is_refused_never_recreated(ws: Path, tmp_path: Path) -> None:
    command = "mkfifo pipe && echo kept > kept.txt"
    if os.geteuid() == 0:
        command += " && mknod null2 c 1 3"
    layer, result = await run_captured(command, ws, tmp_path / "data")
    assert result.exit_code == 0
    changes = sc.scan(layer)
    refused = {r.path for r in changes.refused}
    assert "pipe" in refused and (os.geteuid() != 0 or "null2" in refused)
    assert not any(c.path in ("pipe", "null2") for c in changes.changes)
    sc.accept(layer, changes)
    assert (ws / "kept.txt").read_text() == "kept\n"
    assert not (ws / "pipe").exists() and not (ws / "null2").exists()


@pytest.mark.req("REQ-BASH-028")
@pytest.mark.slow
async def test_a_layer_that_fills_the_disk_is_stopped_at_its_cap(ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    cap = 4 * 1024 * 1024
    layer, result = await run_captured("yes phoenix > big", ws, tmp_path / "data", cap=cap, timeout=60)
    assert result.killed == "disk-quota"
    with pytest.raises(sc.LayerTooBig, match="more than the layer allows"):
        sc.scan(layer)
    overlay.discard(layer)
    assert tree_digest(ws) == before


@pytest.mark.req("REQ-BASH-028")
@pytest.mark.slow
async def test_children_lingering_after_the_command_are_killed_before_the_scan(ws: Path, tmp_path: Path) -> None:
    layer, result = await run_captured(
        "setsid bash -c 'sleep 0.5; echo late > late.txt' </dev/null >/dev/null 2>&1 & echo now > now.txt",
        ws, tmp_path / "data")
    assert result.exit_code == 0
    await asyncio.sleep(1.5)  # three times what the straggler waits before writing
    paths = {c.path for c in sc.scan(layer).changes}
    assert paths == {"now.txt"}
    assert not (layer.upper / "late.txt").exists() and not (ws / "late.txt").exists()


@pytest.mark.req("REQ-BASH-031")
@pytest.mark.slow
async def test_a_change_to_the_workspace_during_the_command_is_a_conflict(ws: Path, tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    (ws / "b.txt").write_text("b\n")
    command = (f"echo command >> a.txt && echo ready > {shlex.quote(str(ready))} && "
               f"read _ < {shlex.quote(str(go))} && echo command >> b.txt")

    def user() -> None:
        with open(ready) as f:  # the command has copied a.txt up
            f.read()
        (ws / "a.txt").write_text("the user's save\n")
        with open(go, "w") as f:
            f.write("go\n")

    thread = threading.Thread(target=user)
    thread.start()
    layer, result = await run_captured(command, ws, tmp_path / "data")
    thread.join()
    assert result.exit_code == 0
    changes = sc.scan(layer)
    assert [c.path for c in changes.conflicts] == ["a.txt"]
    assert [c.path for c in changes.changes] == ["b.txt"]
    sc.accept(layer, changes)
    assert (ws / "a.txt").read_text() == "the user's save\n"
    assert (ws / "b.txt").read_text() == "b\ncommand\n"
    assert stat.S_ISREG(os.stat(ws / "a.txt").st_mode)
