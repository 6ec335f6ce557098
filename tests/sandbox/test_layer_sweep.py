"""Leftover layers swept (REQ-BASH-042): a layer a live process holds is kept, one whose holder died is removed
(its pid may be reused: the kernel drops the flock with the holder, whatever pid comes next), and nothing but
the server's own layer names is touched. The holders are real processes; the witness is the disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.sandbox.layer_sweep import sweep

#: a process that makes a layer for argv[1] in the data directory argv[2], says where, and waits to be killed
_HOLDER = """
import sys
from pathlib import Path
from phoenix_lsp.sandbox import overlay
layer = overlay.make_layer(Path(sys.argv[1]), Path(sys.argv[2]))
(layer.upper / "written.txt").write_text("by the command")
print(layer.root, flush=True)
sys.stdin.read()
"""


def holder(folder: Path, data: Path) -> tuple[subprocess.Popen[str], Path]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder), str(data)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.mark.req("REQ-BASH-042")
def test_a_dead_holders_layer_is_removed_and_a_live_ones_kept(ws: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    dead, dead_root = holder(ws, data)
    live, live_root = holder(ws, data)
    try:
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait()
        assert dead_root.is_dir(), "a killed holder leaves its layer behind"
        gone = sweep(dead_root.parent)
        assert gone == [dead_root.name]
        assert not dead_root.exists()
        assert (live_root / "upper" / "written.txt").read_text() == "by the command"
    finally:
        live.kill()
        live.wait()
    assert sweep(live_root.parent) == [live_root.name] and not live_root.exists()


@pytest.mark.req("REQ-BASH-042")
def test_a_layer_held_in_this_process_is_kept_until_it_is_discarded(ws: Path, tmp_path: Path) -> None:
    layer = overlay.make_layer(ws, tmp_path / "data")
    (layer.work / "work").mkdir()
    os.chmod(layer.work / "work", 0)  # as the overlay leaves it: the removal opens it first
    assert sweep(layer.root.parent) == [] and layer.upper.is_dir()
    overlay.discard(layer, wait=True)
    assert not layer.root.exists()
    assert sweep(layer.root.parent) == []


@pytest.mark.req("REQ-BASH-042")
def test_leftovers_of_every_kind_go_and_other_names_stay(tmp_path: Path) -> None:
    layers = tmp_path / "data" / "layers"
    layers.mkdir(parents=True)
    old = layers / ("a" * 32)  # made before layers were held: no hold file
    (old / "upper").mkdir(parents=True)
    (old / "upper" / "x").write_text("x")
    thrown = layers / (".discarded-" + "b" * 32)  # its janitor died with its server
    (thrown / "work" / "work").mkdir(parents=True)
    os.chmod(thrown / "work" / "work", 0)
    (thrown / overlay.HOLD_NAME).write_text("")
    other = layers / "notes"
    other.mkdir()
    probe = layers / "phoenix-overlay-probe-xyz"
    probe.mkdir()
    undo = tmp_path / "data" / "undo" / "c0ffee"
    undo.mkdir(parents=True)
    (undo / "head.json").write_text("{}")
    assert sorted(sweep(layers)) == sorted([old.name, thrown.name])
    assert not old.exists() and not thrown.exists()
    assert other.is_dir() and probe.is_dir() and (undo / "head.json").read_text() == "{}"


@pytest.mark.req("REQ-BASH-042")
def test_a_missing_layers_directory_is_nothing_to_sweep(tmp_path: Path) -> None:
    assert sweep(tmp_path / "nothing-here") == []
