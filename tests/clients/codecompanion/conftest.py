"""CodeCompanion.nvim, a real ACP client, in headless Neovim 0.11 against ``phoenix-lsp acp`` (issue 38).

CodeCompanion and its dependency plenary.nvim are vendored (``tests/clients/vendor/``, see its README): nothing
is fetched when the tests run. CodeCompanion needs Neovim 0.11 or later, so the scenarios run on the release the
Neovim tests run beside Debian's (``tests/clients/nvim/headless.py``, installed by
``scripts/install-nvim-test-deps.sh``). Each test scripts the fake Anthropic API's replies in Python and runs a
Lua scenario with the Neovim tests' helper ``T`` and this folder's ``CC`` (cc.lua) in scope, run as the Neovim
tests run theirs (``tests/clients/nvim/headless.py``); the scenario reports ``{ok, error, data}`` to a JSON file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.nvim.headless import (
    HELPER_DIR,
    NvimRun,
    new_nvim,
    run_scenario,
    skip_when_switched_off,
)
from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
VENDOR = ROOT / "tests" / "clients" / "vendor"
PLUGINS = (VENDOR / "plenary.nvim", VENDOR / "codecompanion.nvim")


@pytest.fixture
def cc_nvim() -> str:
    """Neovim 0.11.4 from the test cache; the test fails (not skips) when it is missing."""
    skip_when_switched_off()
    new = new_nvim(", so CodeCompanion cannot run")
    for plugin in PLUGINS:
        if not (plugin / "lua").is_dir():
            pytest.fail(f"the vendored plugin {plugin.name} is missing ({plugin}); it is part of the repository")
    return new


@pytest.fixture
def run_cc(cc_nvim: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Any:
    """``run_cc(lua, files=..., timeout=...)``: run a Lua scenario (``T`` and ``CC`` in scope) in headless Neovim
    with CodeCompanion on the runtimepath and ``phoenix-lsp acp`` as its agent. Calls share the data directory,
    so a second run is a restarted editor over the same store."""

    def run(lua: str, *, files: dict[str, str] | None = None, timeout: float = 300.0,
            env: dict[str, str] | None = None) -> NvimRun:
        # CodeCompanion's own code is not the plugin's: a deprecated call of its is not ours to fail on
        return run_scenario(cc_nvim, fake_anthropic, tmp_path, lua, modules={"T": "helper", "CC": "cc"},
                            lua_dirs=[HELPER_DIR, HERE], runtimepath=PLUGINS, files=files, timeout=timeout,
                            env={"PYTHONPATH": str(ROOT), **(env or {})}, fail_on_deprecated=False)

    return run
