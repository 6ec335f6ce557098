"""The editor's sight in Neovim (issue 29): patch applied -> the editor's problems in the tool result.

Headless Neovim with the real plugin, this checkout's server and the real ``ruff server`` attached to the
Python buffer; the model is the fake Anthropic API. Each round the model patches the file (alternately
breaking and fixing a name, so ruff's diagnostics change every time) and the time is taken from the moment
Neovim applied the edit to its buffer (``nvim_buf_attach``'s on_lines, libuv's monotonic clock) to the
moment the fake API received the request carrying the patch's result (``time.monotonic``, the same clock).

Baseline, in the same run: the same rounds with the plugin's ``sight = false`` (the server asks nothing and
the result says nothing about problems). Both are printed beside the settle time configured
(``PHOENIX_SIGHT_SETTLE_MS``): the wait for the diagnostics ends when they change, not when it runs out.

Run: ``python -m bench sight [--quick]`` (needs nvim; scripts/install-nvim-test-deps.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETTLE_MS = 1500
API_KEY = "sk-ant-bench-sight-0000000000"

SCENARIO = """
package.path = "{helpers}/?.lua;" .. package.path
local T = require("helper")
T.run(function()
  local compat = require("phoenix.compat")
  local phoenix = T.setup({{ sight = {sight} }})
  vim.cmd("edit app.py")
  local buf = vim.api.nvim_get_current_buf()
  T.wait("attached", function() return vim.lsp.buf_is_attached(buf, phoenix.client_id) end)
  local ruff = compat.start_client({{ name = "ruff", cmd = {{ T.python, "-m", "ruff", "server" }},
    root_dir = vim.fn.getcwd() }})
  vim.lsp.buf_attach_client(buf, ruff)
  T.wait("ruff's diagnostics", function() return #vim.diagnostic.get(buf) > 0 end)
  vim.cmd("PhoenixMode unrestricted")
  T.wait("unrestricted", function() return phoenix.state.mode == "unrestricted" end)
  vim.cmd("PhoenixPolicy auto")
  T.wait("auto", function() return phoenix.state.policy == "auto" end)
  local applied = nil
  vim.api.nvim_buf_attach(buf, false, {{ on_lines = function()
    applied = applied or (compat.uv.hrtime() / 1e9)
  end }})
  T.data.applied = {{}}
  for i = 1, {rounds} do
    applied = nil
    phoenix.send("round " .. i)
    T.wait("round " .. i, function()
      return phoenix.state.status == "idle" and T.chat_text():find("done " .. i .. "$") ~= nil
    end)
    T.data.applied[i] = applied
  end
end)
"""


def _nvim() -> tuple[str, str] | None:
    """The Neovim to measure (the current release of the tests when installed) and its name."""
    sys.path.insert(0, str(ROOT))
    from tests.clients.nvim.conftest import NEW_NVIM_VERSION, new_nvim_path

    new = new_nvim_path()
    if os.access(new, os.X_OK):
        return str(new), f"Neovim {NEW_NVIM_VERSION}"
    system = shutil.which("nvim")
    return (system, "Neovim (system)") if system else None


def _run(nvim: str, rounds: int, sight: bool) -> list[float]:
    from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

    with tempfile.TemporaryDirectory(prefix="phoenix-bench-sight-") as tmp, FakeAnthropic() as fake:
        base = Path(tmp)
        work, data, home = base / "work", base / "data", base / "home"
        work.mkdir()
        (work / "app.py").write_text("import os\n\nvalue = 1\n")
        names = ["1", "undefined_name"]
        for i in range(1, rounds + 1):
            old, new = names[(i - 1) % 2], names[i % 2]
            fake.enqueue(Reply.tool_reply(ToolUseBlock("patch", {"path": "app.py", "patches": [
                {"operation": "replace", "oldText": f"value = {old}\n", "newText": f"value = {new}\n"}]})),
                Reply.text_reply(f"done {i}"))
        result = base / "result.json"
        script = base / "scenario.lua"
        script.write_text(SCENARIO.format(helpers=ROOT / "tests" / "clients" / "nvim", rounds=rounds,
                                          sight="true" if sight else "false"))
        env = {**os.environ, **fake.env(API_KEY), "PHOENIX_TEST_PYTHON": sys.executable,
               "PHOENIX_TEST_DATA": str(data), "PHOENIX_TEST_RESULT": str(result), "PHOENIX_LSP_DATA_DIR": str(data),
               "HOME": str(home), "XDG_CONFIG_HOME": str(home / "c"), "XDG_DATA_HOME": str(home / "d"),
               "XDG_STATE_HOME": str(home / "s"), "XDG_CACHE_HOME": str(home / "k"),
               "PHOENIX_CONFIG_DIR": str(base / "user-config"), "PHOENIX_SIGHT_SETTLE_MS": str(SETTLE_MS),
               "PYTHONPATH": str(ROOT)}
        subprocess.run([nvim, "--headless", "--clean", "--cmd", f"set runtimepath^={ROOT / 'nvim'}",
                        "-c", f"luafile {script}"], cwd=work, env=env, capture_output=True, timeout=600, check=False)
        report = json.loads(result.read_text())
        if not report["ok"]:
            raise RuntimeError(f"the Neovim scenario failed: {report['error']}")
        applied = report["data"]["applied"]
        requests = fake.requests
        out = []
        for i in range(rounds):
            carried = requests[2 * i + 1]  # the request after the patch: it carries the tool result
            text = json.dumps(carried.body["messages"][-1])
            if sight and "editor reports" not in text:
                raise RuntimeError(f"round {i + 1}: the patch's result says nothing about problems: {text[:300]}")
            if sight and i % 2 == 0 and "F821" not in text:  # odd rounds (from 1) break the name
                raise RuntimeError(f"round {i + 1}: the patch's result misses ruff's new error: {text[:300]}")
            out.append((carried.started_at - applied[i]) * 1000)
        return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def figures(quick: bool = False) -> list[dict[str, Any]]:
    found = _nvim()
    if found is None:
        raise RuntimeError("nvim is not installed (scripts/install-nvim-test-deps.sh)")
    nvim, name = found
    rounds = 6 if quick else 30
    with_sight = _run(nvim, rounds, True)
    without = _run(nvim, rounds, False)
    rows: list[dict[str, Any]] = []
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        rows.append({
            "name": f"{name} + ruff server: patch applied -> problems in the tool result, {label} ({rounds} patches)",
            "value": _pct(with_sight, q), "unit": "ms",
            "baseline_name": f"the same patches without the sight, {label}", "baseline_value": _pct(without, q),
            "goal": f"well under the settle time configured ({SETTLE_MS} ms): the wait ends when ruff reports",
        })
    rows.append({"name": "mean added by the sight", "value": round(statistics.mean(with_sight)
                                                                    - statistics.mean(without), 1), "unit": "ms"})
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures(quick="--quick" in sys.argv))
