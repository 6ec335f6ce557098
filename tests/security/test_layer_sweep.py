"""Attacks on the sweep of leftover layers (REQ-BASH-042): symlinks planted where the sweep walks (an Unrestricted
command can write anywhere the user can, the data directory included) never lead it out of the layers directory.
The witnesses are files outside it, on disk, after a real server started on the planted data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from phoenix_lsp.sandbox.layer_sweep import sweep
from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic
from tests.waiting import eventually

HEX = "0123456789abcdef0123456789abcdef"


def outside_tree(tmp_path: Path) -> Path:
    """A folder outside the layers directory that a followed symlink would empty."""
    outside = tmp_path / "outside"
    (outside / "work" / "work").mkdir(parents=True)
    (outside / "keep.txt").write_text("the user's file\n")
    (outside / "work" / "work" / "deep.txt").write_text("deep\n")
    (outside / overlay.HOLD_NAME).write_text("")
    return outside


def outside_state(outside: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(outside)): (p.read_text() if p.is_file() else "", p.stat().st_mode)
            for p in sorted(outside.rglob("*"))}


def plant(layers: Path, outside: Path) -> list[Path]:
    """The planted entries, each named like a layer: a link for the whole layer, links inside a dead layer."""
    layers.mkdir(parents=True, exist_ok=True)
    whole = layers / HEX
    whole.symlink_to(outside, target_is_directory=True)
    inside = layers / ("f" * 32)
    inside.mkdir()
    (inside / "upper").symlink_to(outside, target_is_directory=True)
    (inside / "work").symlink_to(outside / "work", target_is_directory=True)
    (inside / overlay.HOLD_NAME).symlink_to(outside / overlay.HOLD_NAME)
    thrown = layers / (".discarded-" + "e" * 32)
    (thrown / "upper").mkdir(parents=True)
    (thrown / "upper" / "link").symlink_to(outside / "keep.txt")
    return [whole, inside, thrown]


@pytest.mark.req("REQ-BASH-042")
async def test_a_real_server_sweeps_planted_symlinks_without_following_them(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = outside_tree(tmp_path)
    before = outside_state(outside)
    data = tmp_path / "data"
    planted = plant(data / "layers", outside)
    async with session(fake_anthropic, tmp_path, data_dir=data):
        await eventually(lambda: not any(os.path.lexists(p) for p in planted),
                         "the server's start-up sweep removed the planted leftovers", timeout=30)
    assert outside_state(outside) == before
    assert (data / "layers").is_dir()


@pytest.mark.req("REQ-BASH-042")
def test_a_layers_directory_that_is_a_symlink_is_not_swept(tmp_path: Path) -> None:
    outside = outside_tree(tmp_path)
    (outside / HEX).mkdir()
    before = outside_state(outside)
    link = tmp_path / "data" / "layers"
    link.parent.mkdir()
    link.symlink_to(outside, target_is_directory=True)
    assert sweep(link) == []
    assert outside_state(outside) == before


@pytest.mark.req("REQ-BASH-042")
def test_a_fifo_planted_as_the_hold_file_does_not_stall_the_sweep(tmp_path: Path) -> None:
    layers = tmp_path / "layers"
    layer = layers / HEX
    layer.mkdir(parents=True)
    os.mkfifo(layer / overlay.HOLD_NAME)
    assert sweep(layers) == [HEX] and not layer.exists()
