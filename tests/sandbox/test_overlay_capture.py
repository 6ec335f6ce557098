"""The capture of an Unrestricted command's changes in an overlay (REQ-BASH-028), through the real launcher
(both the compiled helper and the Python launcher): the command sees its own changes in the workspace folder,
the real folder stays byte-identical, and the layer holds what it wrote."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import cli, overlay, scratch, spawn
from tests.sandbox import conftest as sandbox_fixtures
from tests.sandbox.capture import next_tick, run_captured, tree_digest
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
needs_overlay = pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")
pytestmark = [needs_overlay, pytest.mark.usefixtures("launcher")]
launcher = sandbox_fixtures.launcher


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws, with: odd\\chars"  # the mount data escapes `,` `:` and `\`
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "a.py").write_text("foo = 1\n")
    (folder / "old.txt").write_text("old\n")
    return folder


@pytest.mark.req("REQ-BASH-028")
async def test_a_captured_command_sees_its_changes_and_the_real_folder_does_not(ws: Path, tmp_path: Path) -> None:
    before = tree_digest(ws)
    command = ("sed -i s/foo/bar/ src/a.py && echo new > new.txt && rm old.txt && mkdir -p out && "
               "echo built > out/x && pwd && cat src/a.py new.txt && (test -e old.txt || echo gone) && "
               "bash -c 'cat out/x'")
    layer, result = await run_captured(command, ws, tmp_path / "data")
    output = result.capture.parts()[0].decode()
    assert result.exit_code == 0, output
    # the command, its children and its working directory saw the merged folder
    assert output.splitlines() == [str(ws), "bar = 1", "new", "gone", "built"], output
    # the real folder is byte-identical; the layer holds the changes (a whiteout for the deletion)
    assert tree_digest(ws) == before
    assert (layer.upper / "src" / "a.py").read_text() == "bar = 1\n"
    assert (layer.upper / "new.txt").read_text() == "new\n"
    assert os.stat(layer.upper / "old.txt", follow_symlinks=False).st_rdev == 0
    overlay.discard(layer, wait=True)
    assert not layer.root.exists() and not os.listdir(layer.root.parent)
    other, _ = await run_captured("echo x > y", ws, tmp_path / "data")
    overlay.discard(other)  # renamed away at once, removed in the background
    assert not other.root.exists()
    scratch.wait_for_removals()
    assert not os.listdir(layer.root.parent)


@pytest.mark.req("REQ-BASH-028")
async def test_the_layer_is_made_on_the_folders_file_system_when_it_can_be(ws: Path, tmp_path: Path) -> None:
    layer = overlay.make_layer(ws, tmp_path / "data")
    assert layer.same_fs and layer.root.parent == tmp_path / "data" / "layers"
    assert oct(layer.root.stat().st_mode & 0o777) == "0o700"
    overlay.discard(layer)


@pytest.mark.req("REQ-BASH-028")
def test_a_restricted_command_is_never_captured(ws: Path, tmp_path: Path) -> None:
    layer = overlay.make_layer(ws, tmp_path / "data")
    request = spawn.SpawnRequest(argv=("true",), cwd=ws, restricted=True, layer=layer)
    with pytest.raises(ValueError, match="Unrestricted"):
        spawn.launcher_args(request, tmp_path)
    overlay.discard(layer)


@pytest.mark.req("REQ-BASH-028")
def test_doctor_says_whether_shell_changes_are_captured() -> None:
    lines = "\n".join(cli.doctor_lines(self_test=False))
    assert "shell change capture" in lines
    # the doctor says what is true: reviewed where the overlay can be made (REQ-BASH-032), else not, and why
    if overlay.overlay_support() is None:
        assert "reviewed before it lands" in lines and "background commands" in lines
    else:
        assert "UNAVAILABLE" in lines and "without a review" in lines


@pytest.mark.req("REQ-BASH-028")
async def test_a_command_whose_overlay_cannot_be_mounted_does_not_run(ws: Path, tmp_path: Path) -> None:
    """Never a silent downgrade: a layer the kernel refuses (here its work directory is gone) fails the
    command before it runs; the witness is the real folder, which an uncaptured run would have written."""
    layer = overlay.make_layer(ws, tmp_path / "data")
    layer.work.rmdir()
    result = await spawn.run(spawn.SpawnRequest(argv=("bash", "-c", "echo ran > ran.txt"), cwd=ws,
                                                restricted=False, layer=layer), timeout=30)
    assert result.setup_failure is not None and result.setup_failure.stage == "overlay-mount"
    assert result.pid is None
    assert not (ws / "ran.txt").exists()


@pytest.mark.req("REQ-BASH-028")
@pytest.mark.slow
async def test_a_background_command_keeps_its_own_layer_and_can_be_read_while_it_runs(
        ws: Path, tmp_path: Path) -> None:
    from phoenix_lsp.sandbox import background
    from phoenix_lsp.tools import shell_changes

    go = tmp_path / "go"
    os.mkfifo(go)
    layer = overlay.make_layer(ws, tmp_path / "data")
    command = f"echo early > early.txt && read _ < {go} && echo late > late.txt"
    job = await background.start_background(
        spawn.SpawnRequest(argv=("bash", "-c", command), cwd=ws, restricted=False, layer=layer),
        tmp_path / "job.log", command)
    assert isinstance(job, background.BackgroundJob) and job.layer == layer
    # the command's first write, seen in its layer
    await eventually(lambda: (layer.upper / "early.txt").exists(), "the command's first write in its layer")
    snapshot = shell_changes.scan(layer)  # a review before it ends
    assert [c.path for c in snapshot.changes] == ["early.txt"]
    assert not (ws / "early.txt").exists()
    with open(go, "w") as f:
        f.write("go\n")
    await asyncio.get_running_loop().run_in_executor(None, job.finished.wait, 30)
    assert background.ended_captured("") == [job]  # it waits for its review (REQ-BASH-043): taken here
    final = shell_changes.scan(layer)
    assert [c.path for c in final.changes] == ["early.txt", "late.txt"]
    assert layer.started_ns > layer.called_ns + 1  # the launcher reported the tick it started the command in
    shell_changes.accept(layer, final)
    assert (ws / "late.txt").read_text() == "late\n"


@pytest.mark.req("REQ-BASH-031")
async def test_the_command_starts_in_a_later_clock_tick_than_the_layer_and_the_launcher_says_which(
        ws: Path, tmp_path: Path) -> None:
    """The wait for the file clock's next tick is the launcher's, last before its exec (it overlaps the launcher's
    start): the command's own reading of that clock, and the time of the file it writes, are at or after the start
    the launcher reported, which is later than the clock's reading when the layer was made."""
    layer = overlay.make_layer(ws, tmp_path / "data")
    reading = "import time; print(time.clock_gettime_ns(5))"
    result = await spawn.run(spawn.SpawnRequest(
        argv=("bash", "-c", f"{sys.executable} -c '{reading}' && echo new > new.txt"), cwd=ws, restricted=False,
        layer=layer), timeout=30)
    output = result.capture.parts()[0].decode()
    assert result.exit_code == 0, output
    assert result.clock_ns is not None and result.clock_ns > layer.called_ns
    assert layer.started_ns == result.clock_ns
    assert int(output.split()[0]) >= layer.started_ns  # the command's own reading, in its own process
    assert os.stat(layer.upper / "new.txt").st_ctime_ns >= layer.started_ns
    overlay.discard(layer, wait=True)


@pytest.mark.req("REQ-BASH-031")
async def test_a_file_saved_in_the_same_clock_tick_just_before_the_layer_is_not_a_conflict(
        ws: Path, tmp_path: Path) -> None:
    """A save just before the command (an editor's, a set-up's) is no change made meanwhile, even in the tick the
    layer is made in: the command starts in a later one. The witness is the real file after the accept."""
    from phoenix_lsp.tools import shell_changes

    target = ws / "saved.txt"
    same_tick = 0
    for attempt in range(20):
        next_tick()
        target.write_text(f"saved {attempt}\n")  # the save...
        layer = overlay.make_layer(ws, tmp_path / "data")  # ...and the layer, moments later
        same_tick += os.stat(target).st_ctime_ns >= layer.called_ns
        result = await spawn.run(spawn.SpawnRequest(argv=("bash", "-c", "echo command >> saved.txt"), cwd=ws,
                                                    restricted=False, layer=layer), timeout=30)
        assert result.exit_code == 0
        changes = shell_changes.scan(layer)
        assert not changes.conflicts, changes.conflicts
        shell_changes.accept(layer, changes)
        overlay.discard(layer)
        assert target.read_text() == f"saved {attempt}\ncommand\n"
        if same_tick >= 3:
            break
    assert same_tick >= 3, "the save and the layer never fell in the same clock tick"


@pytest.mark.req("REQ-BASH-031")
def test_a_layer_whose_command_never_reported_a_start_counts_every_change_since_it_was_made(
        ws: Path, tmp_path: Path) -> None:
    layer = overlay.make_layer(ws, tmp_path / "data")
    assert layer.started_ns == layer.called_ns + 1  # the safe side: nothing made since is taken for earlier
    layer.mark_started(layer.called_ns + 4_000_000)
    layer.mark_started(layer.called_ns + 8_000_000)  # a later command over the same layer does not move its start
    assert layer.started_ns == layer.called_ns + 4_000_000
    overlay.discard(layer, wait=True)
