"""Shared fixtures of the sandbox tests: a workspace with files outside the sandbox's write set, and a
runner that goes through the real bash tool, with either launcher (compiled helper / Python launcher)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import build, probe
from phoenix_lsp.sandbox.limits import Limits
from phoenix_lsp.tools.bash import BashContext, BashResult, run_bash
from tests.waiting import watching

SUPPORT = probe()
PY = sys.executable
IS_ROOT = os.geteuid() == 0

needs_sandbox = pytest.mark.skipif(not SUPPORT.available, reason=f"no kernel sandbox here: {SUPPORT.reason}")
needs_root = pytest.mark.skipif(not IS_ROOT, reason="this attack (or its witness) needs root")


def py(code: str) -> str:
    """A shell command running `code` with this test run's Python interpreter."""
    return f"{shlex.quote(PY)} -c {shlex.quote(code)}"


@pytest.fixture(params=["compiled", "python"])
def launcher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test once with the compiled helper and once with the pure-Python launcher."""
    monkeypatch.setenv("PHOENIX_LSP_SANDBOX_LAUNCHER", request.param)
    yield request.param
    build.reset_cache()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository with a few committed files: the conversation's working directory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.txt").write_text("original content\n")
    (ws / "notes.md").write_text("# Notes\nneedle in a haystack\nsecond line\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "add", "secret.txt", "notes.md"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=ws, check=True, env=env)
    return ws


Runner = Callable[..., Awaitable[BashResult]]


#: Witness self-check: PHOENIX_LSP_TEST_UNSANDBOXED=1 runs the "restricted" commands WITHOUT the sandbox;
#: the escape suite must then fail almost entirely, which proves its witnesses see real escapes.
UNSANDBOXED = os.environ.get("PHOENIX_LSP_TEST_UNSANDBOXED") == "1"


@pytest.fixture
def restricted(workspace: Path) -> Runner:
    """`await restricted("cmd", limits=..., timeout=...)`: run through run_bash in Restricted mode."""

    async def run(command: str, limits: Limits | None = None, timeout: float = 20.0,
                  cwd: Path | None = None, run: str = "default") -> BashResult:
        ctx = BashContext(working_directory=cwd or workspace, restricted=not UNSANDBOXED,
                          default_timeout_s=timeout)
        if limits is not None:
            ctx = replace(ctx, limits=limits)
        return await run_bash({"command": command, "run": run}, ctx)

    return run


async def run_while_watching(coro: Awaitable[BashResult], check: Callable[[], None],
                             interval: float = 0.005) -> BashResult:
    """Await `coro` while calling `check()` (the outside witness) every few ms, and once more after
    (:func:`tests.waiting.watching`: what the witness looks for leaves no trace to wait on)."""
    return await watching(coro, check, interval)


def pid_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != b"Z"
