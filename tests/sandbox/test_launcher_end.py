"""When the server has a command's result (REQ-BASH-025, REQ-BASH-028): once its launcher has told the end (a status
line saying how the command ended) and closed its pipes, even before the launcher has exited, as the compiled helper
does for a captured command, whose exit then waits for the overlay's teardown. A launcher that closes its pipes
without that line (killed halfway) is waited for until it exits. The launcher here is a stand-in script that holds
on after closing its pipes until the test lets it go; the witnesses are the process table and the returned result."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import build, spawn
from tests.waiting import eventually

STAND_IN = """
import os, sys, time
release = sys.argv[1]
os.write(1, b"out\\n")
os.write(2, f"started {os.getpid()}\\n".encode())
if sys.argv[2] == "told":
    os.write(2, b"maxrss 1\\nexit 3\\n")
for fd in (0, 1, 2):
    os.close(fd)
open(release + ".closed", "w").close()  # for the test: from here on a server that took EOF for the end would return
while not os.path.exists(release):
    time.sleep(0.01)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    script = tmp_path / "launcher.py"
    script.write_text(STAND_IN)
    yield script, tmp_path / "release"
    (tmp_path / "release").touch()  # a failed test leaves no stand-in behind
    build.reset_cache()


def _use(script: Path, release: Path, how: str) -> None:
    # the launcher's options come after these two arguments; the stand-in ignores them
    build._cached = build.Launcher("compiled", (sys.executable, str(script), str(release), how))


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")  # a zombie still has its entry: gone means reaped too


@pytest.mark.req("REQ-BASH-028")
async def test_the_result_comes_once_the_launcher_told_the_end_and_it_is_reaped_when_it_exits(
        stand_in: tuple[Path, Path], tmp_path: Path) -> None:
    script, release = stand_in
    _use(script, release, "told")
    result = await asyncio.wait_for(spawn.run(spawn.SpawnRequest(("true",), tmp_path, restricted=False), timeout=60),
                                    30)
    assert result.exit_code == 3 and result.capture.parts()[0] == b"out\n"
    assert result.pid is not None and not _gone(result.pid)  # the launcher still runs: the result did not wait
    release.touch()
    await eventually(lambda: _gone(result.pid or 0), "the launcher is reaped once it exits")


@pytest.mark.req("REQ-BASH-025")
async def test_a_launcher_that_closes_its_pipes_without_telling_the_end_is_waited_for(
        stand_in: tuple[Path, Path], tmp_path: Path) -> None:
    script, release = stand_in
    _use(script, release, "silent")
    task = asyncio.ensure_future(spawn.run(spawn.SpawnRequest(("true",), tmp_path, restricted=False), timeout=60))
    # the 0.5 s to return wrongly count from the pipes' close, not from the spawn: at load 19 the stand-in's own
    # start could take all of them, and the check then proved nothing
    closed = release.with_name(release.name + ".closed")
    await eventually(closed.exists, "the stand-in launcher closed its pipes", 30)
    done, _ = await asyncio.wait({task}, timeout=0.5)
    assert not done  # it cannot have ended: the launcher runs until released
    release.touch()
    result = await asyncio.wait_for(task, 30)
    assert result.exit_code is None and result.pid is not None
    assert _gone(result.pid)  # reaped before the result came
