"""tests/e2e/zygote_launch.py, the command an editor under test runs for its server: it must stand for the fork
the zygote makes as a fresh interpreter would stand for itself, or an editor's test would see another program
than a user's. Witnesses: the exit status and output the caller gets, and the processes left in /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.zygote import launch_command, zygote
from tests.waiting import wait_exited

pytestmark = pytest.mark.slow  # a zygote and the server processes it forks


def _launch() -> tuple[list[str], dict[str, str]]:
    """The launcher's command and the whole environment it runs in."""
    launch = launch_command()
    if launch is None:
        pytest.skip("PHOENIX_TEST_ZYGOTE=0: sessions start fresh interpreters, there is no launcher to test")
    return launch[0], {**os.environ, **launch[1]}


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


def test_the_caller_gets_the_forks_output_and_exit_status_as_from_a_fresh_interpreter(tmp_path: Path) -> None:
    start, env = _launch()
    args = ["run", "--cwd", str(tmp_path), "--data-dir", str(tmp_path / "data"), "--max-turns", "0", "hi"]
    fresh = subprocess.run([sys.executable, "-m", "phoenix_lsp", *args], capture_output=True, text=True, timeout=120)
    forked = subprocess.run([*start, *args], capture_output=True, text=True, env=env, timeout=120)
    assert fresh.returncode == 2 and fresh.stderr.startswith("phoenix-lsp run: "), fresh.stderr
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


@pytest.mark.parametrize("how", ["killed", "terminated"])
def test_the_fork_ends_with_its_launcher(tmp_path: Path, how: str) -> None:
    """A test that kills the server it started (SIGKILL: the launcher cannot pass it on) or stops it (SIGTERM,
    passed on) must not leave the fork serving."""
    start, env = _launch()
    forks = zygote()
    assert forks is not None
    before = _children(forks.process.pid)
    launcher = subprocess.Popen([*start, "serve", "--data-dir", str(tmp_path / "data")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (forked := _children(forks.process.pid) - before):  # a new process has no event to wait on
            assert launcher.poll() is None and time.monotonic() < deadline, "the zygote forked no server"
            time.sleep(0.02)
        launcher.send_signal(signal.SIGKILL if how == "killed" else signal.SIGTERM)
        assert wait_exited(sorted(forked), 60) == [], f"the fork outlived its launcher ({how})"
        code = launcher.wait(60)
        if how == "killed":
            assert code == -signal.SIGKILL, code
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(10)
