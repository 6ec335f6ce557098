"""Headless Neovim driven from pytest: the real plugin (``nvim/``), the real server, the fake Anthropic API.

Each test scripts the fake's replies in Python and runs a Lua scenario in ``nvim --headless --clean`` with
the plugin on the runtimepath; the scenario reports ``{ok, error, data}`` to a JSON file (helper.lua).
Missing ``nvim`` fails the tests (it does not skip them) unless ``PHOENIX_SKIP_CLIENT_TESTS=1``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.clients.nvim.headless import (
    API_KEY,
    HELPER_DIR,
    INSTALL,
    NEW_NVIM_VERSION,
    NvimRun,
    new_nvim,
    new_nvim_path,
    nvim_test_cache,
    run_scenario,
    skip_when_switched_off,
)
from tests.fake_anthropic import FakeAnthropic

__all__ = ["API_KEY", "NEW_NVIM_VERSION", "NvimRun", "new_nvim_path", "nvim_test_cache"]

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "nvim"


# Every scenario runs on the system's Neovim (Debian's 0.7.2 on bookworm and in CI: the oldest supported) and
# on a current release
# (REQ-NVIM-001: where the two differ the plugin chooses at run time, and it calls nothing the newer one
# deprecated: the helper fails a scenario in which vim.deprecate was called).
@pytest.fixture(params=["system", "new"], ids=["nvim-system", f"nvim-{NEW_NVIM_VERSION}"])
def nvim(request: pytest.FixtureRequest) -> str:
    """The nvim executable; the test fails (not skips) when it is missing."""
    skip_when_switched_off()
    if request.param == "new":
        return new_nvim()
    path = shutil.which("nvim")
    if path is None:
        pytest.fail(f"nvim is not installed, so the Neovim client tests cannot run. {INSTALL}")
    return path


@pytest.fixture
def run_nvim(nvim: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Any:
    """``run_nvim(lua, files=..., timeout=...)``: run a Lua scenario (helper ``T`` in scope) in headless Neovim."""

    def run(lua: str, *, files: dict[str, str] | None = None, timeout: float = 240.0,
            env: dict[str, str] | None = None, plugin: bool = True) -> NvimRun:
        return run_scenario(nvim, fake_anthropic, tmp_path, lua, modules={"T": "helper"}, lua_dirs=[HELPER_DIR],
                            runtimepath=[PLUGIN] if plugin else [], files=files, timeout=timeout, env=env)

    return run
