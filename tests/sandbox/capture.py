"""Helpers of the capture tests: a workspace and a data directory side by side, and a command run through the
real launcher (compiled helper or Python launcher) with the workspace in an overlay (REQ-BASH-028)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from phoenix_lsp.sandbox import overlay, spawn
from phoenix_lsp.sandbox.outcome import RunResult

# The clock that file times are stamped from ticks every few ms: a file written in the tick the layer starts
# in counts as changed meanwhile (the safe side), so fixtures wait for the next tick before a capture.
_COARSE = 5


def next_tick() -> None:
    start = time.clock_gettime_ns(_COARSE)
    while time.clock_gettime_ns(_COARSE) == start:
        os.sched_yield()


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under root (never following symlinks): its kind, mode and bytes or target."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            st = path.lstat()
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = f"link {os.readlink(path)}"
            elif path.is_dir():
                found[rel] = f"dir {oct(st.st_mode)}"
            elif path.is_file():
                found[rel] = f"file {oct(st.st_mode)} {hashlib.sha256(path.read_bytes()).hexdigest()}"
            else:
                found[rel] = f"other {oct(st.st_mode)}"
    return found


async def run_captured(command: str, ws: Path, data: Path, cap: int = overlay.DEFAULT_LAYER_CAP,
                       timeout: float = 30.0) -> tuple[overlay.Layer, RunResult]:
    next_tick()
    layer = overlay.make_layer(ws, data, cap)
    result = await spawn.run(spawn.SpawnRequest(argv=("bash", "-c", command), cwd=ws, restricted=False,
                                                layer=layer), timeout=timeout)
    return layer, result


def run_plain(command: str, ws: Path) -> None:
    """The same command run as today (no overlay): what an accept must reproduce."""
    subprocess.run(["bash", "-c", command], cwd=ws, check=False, capture_output=True)


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst
