"""CodeCompanion.nvim, a real ACP client, in headless Neovim 0.11 against ``phoenix-lsp acp`` (issue 38).

CodeCompanion and its dependency plenary.nvim are vendored (``tests/clients/vendor/``, see its README): nothing
is fetched when the tests run. CodeCompanion needs Neovim 0.11 or later, so the scenarios run on the release the
Neovim tests run beside Debian's (``tests/clients/nvim/conftest.py``, installed by
``scripts/install-nvim-test-deps.sh``). Each test scripts the fake Anthropic API's replies in Python and runs a
Lua scenario with the Neovim tests' helper ``T`` and this folder's ``CC`` (cc.lua) in scope; the scenario
reports ``{ok, error, data}`` to a JSON file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients.nvim.conftest import API_KEY, NEW_NVIM_VERSION, NvimRun, new_nvim_path
from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
NVIM_HELPER = ROOT / "tests" / "clients" / "nvim"
VENDOR = ROOT / "tests" / "clients" / "vendor"
PLUGINS = (VENDOR / "plenary.nvim", VENDOR / "codecompanion.nvim")


@pytest.fixture
def cc_nvim() -> str:
    """Neovim 0.11.4 from the test cache; the test fails (not skips) when it is missing."""
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the editor client tests are switched off")
    new = new_nvim_path()
    if not os.access(new, os.X_OK):
        pytest.fail(f"Neovim {NEW_NVIM_VERSION} is not in the test cache ({new}), so CodeCompanion cannot run. "
                    "Install it with scripts/install-nvim-test-deps.sh, or set PHOENIX_SKIP_CLIENT_TESTS=1 to skip "
                    "the editor client tests.")
    for plugin in PLUGINS:
        if not (plugin / "lua").is_dir():
            pytest.fail(f"the vendored plugin {plugin.name} is missing ({plugin}); it is part of the repository")
    return str(new)


@pytest.fixture
def run_cc(cc_nvim: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Any:
    """``run_cc(lua, files=..., timeout=...)``: run a Lua scenario (``T`` and ``CC`` in scope) in headless Neovim
    with CodeCompanion on the runtimepath and ``phoenix-lsp acp`` as its agent. Calls share the data directory,
    so a second run is a restarted editor over the same store."""

    def run(lua: str, *, files: dict[str, str] | None = None, timeout: float = 300.0,
            env: dict[str, str] | None = None) -> NvimRun:
        workdir = tmp_path / "work"
        workdir.mkdir(exist_ok=True)
        data_dir = tmp_path / "data"
        home = tmp_path / "home"
        for name, text in (files or {}).items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / name).write_text(text)
        result = tmp_path / "result.json"
        result.unlink(missing_ok=True)
        script = tmp_path / "scenario.lua"
        script.write_text(f'package.path = "{NVIM_HELPER}/?.lua;{HERE}/?.lua;" .. package.path\n'
                          'local T = require("helper")\nlocal CC = require("cc")\n'
                          f"T.run(function()\n{lua}\nend)\n")
        run_env = {
            **os.environ,
            **fake_anthropic.env(API_KEY),
            "PYTHONPATH": str(ROOT),
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
            "PHOENIX_CONFIG_DIR": str(tmp_path / "user-config"),
            **(env or {}),
        }
        command = [cc_nvim, "--headless", "--clean"]
        for plugin in PLUGINS:
            command += ["--cmd", f"set runtimepath^={plugin}"]
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
        data = report["data"] if isinstance(report["data"], dict) else {}
        return NvimRun(data, done.stdout, done.stderr, workdir, data_dir)

    return run
