"""The editor's sight (issue 29): patch applied -> the editor's problems in the tool result, in Neovim and in
a real VS Code.

Neovim:

Headless Neovim with the real plugin, this checkout's server and the real ``ruff server`` attached to the
Python buffer; the model is the fake Anthropic API. Each round the model patches the file (alternately
breaking and fixing a name, so ruff's diagnostics change every time) and the time is taken from the moment
Neovim applied the edit to its buffer (``nvim_buf_attach``'s on_lines, libuv's monotonic clock) to the
moment the fake API received the request carrying the patch's result (``time.monotonic``, the same clock).

Baseline, in the same run: the same rounds with the plugin's ``sight = false`` (the server asks nothing and
the result says nothing about problems). Both are printed beside the settle time configured
(``PHOENIX_SIGHT_SETTLE_MS``): the wait for the diagnostics ends when they change, not when it runs out.

VS Code: a real VS Code (code-server 4.139.1 in headless Chromium, the rig of tests/clients/vscode_real),
the packaged extension and this checkout's server, one session for every patch (a VS Code per sample would
be too heavy). Each round the model patches config.json, alternately dropping and restoring a comma, so that
VS Code's own JSON language features report a new error, or none, every time; the time is taken from the
moment the extension host saw the document change (``onDidChangeTextDocument`` in the test probe, its
``Date.now()``, turned into this machine's monotonic clock) to the moment the fake API received the request
carrying the patch's result. VS Code has no switch to leave the sight out, so these figures stand beside
the settle time configured, the longest the wait may last.

Run: ``python -m bench sight [--quick]`` (needs nvim, scripts/install-nvim-test-deps.sh, and the tools of
scripts/install-vscode-test-deps.sh).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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


CONFIG = '{\n  "name": "demo",\n  "size": 1\n}\n'
ROUND = re.compile(r"bench round (\d+)\b")


def _user_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if message.get("role") != "user":
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def vscode_handler(body: dict[str, Any]) -> Any:
    """The fake model for VS Code: "bench round N" -> a patch of config.json (odd N drop the comma after the
    name, even N restore it), then "done N"; anything else gets "Ready."."""
    from tests.fake_anthropic import Reply, ToolUseBlock

    messages = body.get("messages", [])
    for i in range(len(messages) - 1, -1, -1):
        found = ROUND.search(_user_text(messages[i]))
        if found:
            n = int(found.group(1))
            if any(m.get("role") == "assistant" for m in messages[i + 1:]):
                return Reply.text_reply(f"done {n}")
            old, new = ('"demo",\n', '"demo"\n') if n % 2 else ('"demo"\n', '"demo",\n')
            return Reply.tool_reply(ToolUseBlock("patch", {"path": "config.json", "patches": [
                {"operation": "replace", "oldText": old, "newText": new}]}))
    return Reply.text_reply("Ready.")


def _tool_result(request: Any) -> str | None:
    content = request.messages[-1]["content"] if request.messages else []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            c = b["content"]
            return c if isinstance(c, str) else "".join(x.get("text", "") for x in c if isinstance(x, dict))
    return None


def _vscode_run(rounds: int) -> list[float]:
    from tests.clients.vscode_real.chat import UNRESTRICTED, Chat, phoenix_settings
    from tests.clients.vscode_real.rig import extension_id, load_deps, package_extension, start_rig
    from tests.fake_anthropic import FakeAnthropic

    deps = load_deps()
    vsix = package_extension(deps)
    with FakeAnthropic() as fake:
        fake.handler = vscode_handler
        env = {**fake.env(API_KEY), "PHOENIX_SIGHT_SETTLE_MS": str(SETTLE_MS)}
        with start_rig(vsix=vsix, extension_id=extension_id(), settings=phoenix_settings, env=env,
                       files={"config.json": CONFIG}, deps=deps) as rig:
            d = rig.driver
            assert d is not None
            config = rig.workspace / "config.json"
            d.call("goto", timeout=120)
            rig.wait_probe(timeout=120)
            rig.probe("/open", {"path": str(config)})
            d.call("waitFor", selector=".monaco-editor .view-lines", hasText="demo", timeout=30)
            chat = Chat(rig)
            chat.recorded = lambda: fake.requests
            chat.open()
            chat.widen()
            chat.wait_server_ready()
            chat.send("Hello.")
            chat.wait_answer("Ready.")
            chat.wait_idle()
            d.call("command", title="Phoenix: Unrestrict (/execute)")
            chat.statusbar(UNRESTRICTED)
            d.call("command", title="Phoenix: Toggle Approval Policy (auto / interactive)")
            chat.statusbar("Auto", item="phoenix.policy")
            for i in range(1, rounds + 1):
                chat.send(f"bench round {i}")
                chat.wait_answer(f"done {i}", timeout=120)
                chat.wait_idle()
            # the extension host's epoch milliseconds -> this machine's monotonic seconds
            offset = time.time() - time.monotonic()
            changed = sorted(c["time"] / 1000 - offset for c in rig.probe("/changes")["changes"]
                             if c["path"] == config.as_posix())
            carried = [r for r in fake.requests if _tool_result(r) is not None]
            if len(carried) != rounds:
                raise RuntimeError(f"{len(carried)} patch results reached the model, not {rounds}")
            out = []
            for i, request in enumerate(carried, start=1):
                text = _tool_result(request) or ""
                if "editor reports" not in text:
                    raise RuntimeError(f"round {i}: the patch's result says nothing about problems: {text[:300]}")
                if i % 2 and "json(514)" not in text:  # odd rounds drop the comma
                    raise RuntimeError(f"round {i}: the patch's result misses VS Code's JSON error: {text[:300]}")
                applied = [t for t in changed if t <= request.started_at]
                if not applied:
                    raise RuntimeError(f"round {i}: the probe saw no change of config.json before the result")
                out.append((request.started_at - applied[-1]) * 1000)
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
    vscode_rounds = 6 if quick else 30
    in_vscode = _vscode_run(vscode_rounds)
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        rows.append({
            "name": f"VS Code 1.139 (code-server) + its JSON language features: patch applied -> problems in the "
                    f"tool result, {label} ({vscode_rounds} patches, one session)",
            "value": _pct(in_vscode, q), "unit": "ms",
            "baseline_name": "the settle time configured (the longest the wait may last)", "baseline_value": SETTLE_MS,
            "goal": "well under the settle time: the wait ends when VS Code's diagnostics change, then a 250 ms "
                    "quiet spell",
        })
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures(quick="--quick" in sys.argv))
