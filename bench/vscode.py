"""VS Code figures (issue 10), measured in a REAL VS Code (code-server 4.139.1 in headless Chromium, the
packaged extension, this checkout's server), each beside a baseline measured in the same run:

- text delta -> rendered in the chat webview, p50/p99: the fake model stamps each delta with its send time
  (``Reply.stamp``); a MutationObserver in the webview records when each stamp appears in the DOM.
  Baseline: the same stamped deltas arriving as ``phoenix/event`` over a bare LSP connection to the server.
  Split at the host's post (its ``at``): the host's part, and VS Code's hop to the webview, beside VS Code's own
  hop in the same window: the test probe (a trivial extension) posting its webview tiny messages at the same pace.
- activation -> server ready: VS Code's "activating phoenix-lsp" log line to the extension's "the server is
  ready" log line (both ms timestamps on this machine's clock), over several window reloads.
  Baseline: the server's own start-up, process start -> ``initialize`` answered, with the same command, the
  same package byte-compiled as an install is, asked VS Code's ``initialize`` (its capabilities and the
  workspace folder; the empty one of bench/server.py is printed beside it). Where spawn -> ready went (the
  server's and the extension host's CPU time and wait for a CPU) comes from the extension's ready line, and
  the same without the server's wait, beside the server alone's CPU time, is the ratio on an idle machine.
  Window reload -> the chat usable: its page's script has run (the extension's line, with the clock in its
  text) and the server is ready, whichever comes last.
  The floor, in the same run: a trivial extension (vscode-extension/test-real/floor-extension) alone in code-server,
  activated at the same point (its side-bar webview view restored by the reload: ``onView``), spawns this
  checkout's server, then a pygls server with no features, and writes VS Code's ``initialize``: its activation ->
  answered beside each server alone. What VS Code's window load costs any extension's server on this machine,
  and what the extension itself adds (its activation -> ready against the floor's with the same server).

- CPU by part of the rig (PARTS: Chromium's browser, renderer, GPU process and helpers, code-server and its helpers,
  the extension host, the server, the bench's driver and the bench), each part's processes found by process tree
  (Chromium's helpers do not carry the rig's marker), and the rest of the machine (other programs): per streamed
  delta; per second while a turn waits on the model, beside the window idle as long; over each window reload ->
  ready, with the chat view shown and, beside it, with the Explorer shown instead (the chat's webview not made).

- the chat view's own cost per delta of a streamed 16 KB markdown answer (vscode-extension/test/render.bench.ts:
  the webview's code under jsdom, so no VS Code needed), beside what a frame cost before issue 35 (the whole
  answer's markdown rendered, sanitised and put in again per frame), in the same run.

- the review of 200 changed files opens (issue 36): a bash command's captured changes as the approval the server
  sends, from its event to the chat view's dialog drawn with the file list and the summary
  (vscode-extension/test/review.bench.ts, jsdom), beside a one-file patch approval opened the same way in the
  same run. Goal: under 1 s.

- the host's outbox (issue 35): how long the extension host holds each delta before posting it to the chat view,
  over the bare LSP run's own arrival times replayed with Node's timers (vscode-extension/test/outbox.bench.ts),
  beside the outbox that kept to one post a frame, over the same arrivals in the same run.

Needs the tools of scripts/install-vscode-test-deps.sh (not the render figure: ``--render-only``).
Run: ``python -m bench.vscode [--quick] [--render-only]``.
The fake Anthropic server runs as its own process (its own GIL), as in bench/server.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"\[\[bench-stream (\d+) ([0-9.]+)\]\]")
API_KEY = "sk-ant-bench-vscode-0000000000"


def bench_handler(body: dict[str, Any]) -> Any:
    """The fake's handler (runs in the fake's process): ``[[bench-stream N DELAY]]`` streams N stamped deltas
    DELAY seconds apart; anything else gets a short answer."""
    from tests.fake_anthropic import Reply, TextBlock

    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        text = content if isinstance(content, str) else " ".join(
            str(b.get("text", "")) for b in content or [] if isinstance(b, dict)
        )
        if message.get("role") == "user" and (m := TAG.search(text)):
            n, delay = int(m.group(1)), float(m.group(2))
            return Reply(blocks=[TextBlock("x" * n, n)], stop_reason="end_turn", stamp=True, delay_s=delay)
    return Reply.text_reply("Ready.")


class _Fake:
    """The fake Anthropic server as a separate process, answering through :func:`bench_handler`."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--handler", "bench.vscode:bench_handler"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().split()[-1]

    def env(self, api_key: str = API_KEY) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # a loaded machine: it was told; the figures are measured already
            self.proc.kill()
            self.proc.wait(10)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _clock_offset_ns() -> int:
    """time.time_ns() - time.monotonic_ns(): turns the fake's monotonic stamps into the browser's epoch clock."""
    samples = []
    for _ in range(21):
        a = time.monotonic_ns()
        w = time.time_ns()
        b = time.monotonic_ns()
        samples.append((b - a, w - (a + b) // 2))
    return min(samples)[1]


# ------------------------------------------------------------------------------------------ baselines


async def _lsp_latencies(fake: _Fake, tag: str) -> tuple[list[float], list[float]]:
    """The stamped stream as phoenix/event over a bare LSP connection: ms from send to arrival per delta, and ms
    between the arrivals of its textDelta events (replayed into the host's outbox by :func:`_outbox_costs`)."""
    from tests.e2e.harness import session

    with tempfile.TemporaryDirectory() as tmp:
        async with session(fake, Path(tmp), check_schema=False) as s:  # type: ignore[arg-type]
            cid = await s.new()
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "[[warmup]]"})
            await s.wait_status(cid, "idle", timeout=120)
            first = len(s.events)
            mark = s.last_seq(cid)
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": tag})
            await s.wait_status(cid, "idle", timeout=300, since=mark)
            out: list[float] = []
            times: list[int] = []
            for event, arrived in zip(s.events[first:], s.arrivals[first:], strict=True):
                if event["kind"] == "textDelta":
                    out += [(arrived - int(st)) / 1e6 for st in filter(None, event["text"].split(";"))]
                    times.append(arrived)
            return out, [(b - a) / 1e6 for a, b in itertools.pairwise(times)]


def _sched_run_ms(pid: int) -> float | None:
    """ms the process's main thread has run on a CPU (/proc/PID/schedstat; None off Linux)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return None


_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


#: The parts of the rig the CPU figures name, in the order printed: Chromium's browser process, its renderer (the
#: workbench and, in the same process, the chat webview), its GPU process (software drawing: --disable-gpu) and
#: its other helpers (zygotes, network, storage, crash handler); code-server's main process and its helpers
#: (ptyHost, file watcher); the extension host; the server; the bench's own driver (playwright) and the bench
#: itself with its fake model server. Found by process tree (rig.Processes.tree), not by the rig's marker,
#: which Chromium's helpers do not carry.
PARTS = ("browser", "renderer", "gpu", "browser helpers", "code-server", "code-server helpers", "extension host",
         "server", "driver", "bench")


def _group(cmdline: str) -> str | None:
    """Which part of the rig (:data:`PARTS`) a process is, by its command line (None: not one this names)."""
    kind = m.group(1) if (m := re.search(r"--type=([\w-]+)", cmdline)) else None
    if " serve --data-dir " in cmdline:
        return "server"
    if kind == "extensionHost" or "extensionHostProcess" in cmdline:
        return "extension host"
    if "driver.cjs" in cmdline:
        return "driver"
    if "chromium" in cmdline or "chrome" in cmdline:
        return {None: "browser", "renderer": "renderer", "gpu-process": "gpu"}.get(kind, "browser helpers")
    if "code-server" in cmdline:
        return "code-server" if kind is None else "code-server helpers"
    return None


def _cpu_by_group(pids: list[int], bench: list[int] | None = None) -> dict[int, tuple[str, float]]:
    """Per process of the rig: (its group, ms it has run on a CPU, all threads; /proc/PID/stat utime + stime);
    ``bench``: the bench's own processes (this one, the fake model server), counted as "bench"."""
    out: dict[int, tuple[str, float]] = {}
    mine = set(bench or [])
    for pid in {*pids, *mine}:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if (group := "bench" if pid in mine else _group(cmdline)) is not None:
            out[pid] = (group, (int(fields[11]) + int(fields[12])) * _TICK_MS)
    return out


def _machine_busy_ms() -> float:
    """ms of CPU the whole machine's cores have been busy (/proc/stat's cpu line, idle and iowait left out)."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) * _TICK_MS


def _cpu_spent(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """ms of CPU each group ran between two readings: a process started since counts whole, one gone since
    (the reloaded window's old extension host and server) is not counted after the first reading."""
    out: dict[str, float] = {}
    for pid, (group, ms) in after.items():
        out[group] = out.get(group, 0.0) + ms - (before[pid][1] if pid in before else 0.0)
    return out


def _vscode_capabilities() -> dict[str, Any]:
    """VS Code's own ``initialize`` params as pytest-lsp recorded them (its newest visual_studio_code_*.json:
    clientInfo and the full ClientCapabilities), with the extension's phoenix capability added
    (vscode-extension/src/host/server.ts PhoenixFeature)."""
    from importlib import resources

    files = sorted(
        (f for f in resources.files("pytest_lsp.clients").iterdir() if f.name.startswith("visual_studio_code_")),
        key=lambda f: [int(x) for x in re.findall(r"\d+", f.name)],
    )
    params: dict[str, Any] = json.loads(files[-1].read_text())
    params["capabilities"].setdefault("experimental", {})["phoenix"] = {"version": 1, "editorSight": True}
    return params


def _initialize_frames(workspace: Path) -> dict[str, bytes]:
    """The ``initialize`` the server alone is asked: as VS Code asks it (its capabilities, the workspace folder,
    a process id), which the goal's ratio compares with (the server structures the whole request before it
    answers: ~7% more CPU than an empty one), and the empty one bench/server.py sends."""
    params = {
        "vscode": {
            "processId": os.getpid(), "locale": "en", "rootPath": str(workspace), "rootUri": workspace.as_uri(),
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}], "trace": "off",
            **_vscode_capabilities(),
        },
        "empty": {"processId": None, "rootUri": None, "capabilities": {}},
    }
    out = {}
    for kind, p in params.items():
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": p})
        out[kind] = f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    return out


def _compile_server_package() -> None:
    """Byte-compile the phoenix_lsp package the server imports, as an installed package is: with
    PYTHONDONTWRITEBYTECODE set (as on the test machines) a checkout has no .pyc, and every start, alone and in
    VS Code alike, compiled the package's modules from source first (~40 ms of CPU)."""
    code = "import compileall, os, phoenix_lsp; compileall.compile_dir(os.path.dirname(phoenix_lsp.__file__), quiet=1)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def _server_startups(command: str, runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per kind of ``initialize`` (:func:`_initialize_frames`, asked in turn): process start -> initialize
    answered, ms (the server alone, as bench/server.py measures it, started in a workspace folder as the
    extension starts it), and the ms its main thread ran on a CPU by then (beside the same figure in VS Code)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "README.md").write_text("bench\n")
        frames = _initialize_frames(workspace)
        for _ in range(runs):
            for kind, frame in frames.items():
                wall, cpu = out.setdefault(kind, ([], []))
                t0 = time.perf_counter()
                proc = subprocess.Popen(
                    [command, "serve", "--data-dir", tmp], cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
                assert proc.stdin and proc.stdout
                proc.stdin.write(frame)
                proc.stdin.flush()
                header = proc.stdout.readline()
                wall.append((time.perf_counter() - t0) * 1000)
                if (ran := _sched_run_ms(proc.pid)) is not None:
                    cpu.append(ran)
                assert header.startswith(b"Content-Length"), header
                proc.kill()
                proc.wait()
    return out


# ------------------------------------------------------------------------------------------ VS Code side

RECORDER = """(timeline) => {
    // Epoch ms (sub-ms) at which each stamp first arrives in the webview (a message from the extension
    // host) and first appears in the DOM of an assistant message that did not exist before this call.
    const now = () => performance.timeOrigin + performance.now();
    const old = new WeakSet(timeline.querySelectorAll('[data-role=assistant]'));
    // The host stamps each post with its Date.now() (`at`): when it posted each stamp, too.
    const rec = (window.__phoenixBench = { rendered: {}, arrived: {}, posted: {}, count: 0, offset: 0, el: null });
    const stamps = /([0-9]{9,});/g;
    // a capturing listener: at the window it runs before the chat's own (which draws the message at once),
    // so `arrived` is the arrival, not the end of the drawing
    window.addEventListener('message', (e) => {
        const t = now();
        const at = e.data && typeof e.data.at === 'number' ? e.data.at : undefined;
        for (const m of JSON.stringify(e.data).matchAll(stamps)) {
            if (m[1] in rec.arrived) continue;
            rec.arrived[m[1]] = t;
            if (at !== undefined) rec.posted[m[1]] = at;
        }
    }, true);
    const parse = () => {
        const all = timeline.querySelectorAll('[data-role=assistant]');
        const el = all[all.length - 1];
        if (!el || old.has(el)) return;
        const t = now();
        if (el !== rec.el) { rec.el = el; rec.offset = 0; }
        const text = el.textContent;
        const end = text.lastIndexOf(';');
        if (end < rec.offset) return;
        for (const s of text.slice(rec.offset, end).split(';')) {
            if (/^[0-9]+$/.test(s) && !(s in rec.rendered)) { rec.rendered[s] = t; rec.count++; }
        }
        rec.offset = end + 1;
    };
    new MutationObserver(parse).observe(timeline, { childList: true, subtree: true, characterData: true });
    return true;
}"""

_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ")


def _log_time(line: str) -> float:
    m = _LOG_TIME.match(line)
    assert m, line
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1000


_SPAWN_TO_READY = re.compile(r"the server is ready \(initialize answered (\d+) ms after the spawn")
# where the start-up time went, as the extension reads it (vscode-extension/src/core/startClock.ts)
_START_PARTS = {
    # in the ready line, or in a line of its own when the client started at load was ready before activate
    "activated": re.compile(r"activate called (-?\d+) ms after (?:it|the spawn)"),
    "loaded": re.compile(r"; host.js loaded (\d+) ms after it"),
    "sent": re.compile(r"; sent (\d+) ms after it"),
    "server_run": re.compile(r"; the server ran (\d+) ms"),
    "server_wait": re.compile(r"; the server ran \d+ ms and waited (\d+) ms for a CPU"),
    "host_run": re.compile(r"; the extension host ran (\d+) ms"),
    "host_wait": re.compile(r"; the extension host ran \d+ ms and waited (\d+) ms"),
    "busy": re.compile(r"; cores (\d+)% busy"),
}


def _start_parts(user_data: Path, extension_id: str) -> dict[str, list[float]]:
    """Per window load, the parts of spawn -> ready that the extension's ready line gives (those it gives)."""
    out: dict[str, list[float]] = {k: [] for k in _START_PARTS}
    for own in sorted((user_data / "logs").rglob(f"{extension_id}/Phoenix.log")):
        lines = own.read_text().splitlines()
        ready = [line for line in lines if "the server is ready" in line]
        if not ready:
            continue
        for key, pattern in _START_PARTS.items():
            if m := pattern.search(ready[0]):
                out[key].append(float(m.group(1)))
            elif key == "activated" and (later := [m for line in lines if (m := pattern.search(line))]):
                out[key].append(float(later[0].group(1)))
    return out


def _activations(user_data: Path, extension_id: str) -> list[tuple[float, float]]:
    """Per extension host (window load) found in the logs: (activation -> the extension spawns the server,
    spawn -> "the server is ready"), in ms.

    Activation is VS Code's own log line, written before it loads the extension's code. The spawn time is the
    ready line's stamp less the ms the extension measured itself from the spawn (on the same clock): the
    "starting the server" line cannot say it, as the log stamps a channel's first lines when its file is open,
    not when they were written (a few hundred ms late on a loaded machine). An extension whose ready line does
    not carry the figure (before issue 35) is measured by that line's stamp."""
    out = []
    for host_log in sorted((user_data / "logs").rglob("remoteexthost.log")):
        activated = [
            _log_time(line)
            for line in host_log.read_text().splitlines()
            if f"_doActivateExtension {extension_id}," in line
        ]
        own = host_log.parent / extension_id / "Phoenix.log"
        lines = own.read_text().splitlines() if own.exists() else []
        ready_lines = [line for line in lines if "the server is ready" in line]
        if not activated or not ready_lines:
            continue
        ready = _log_time(ready_lines[0])
        if m := _SPAWN_TO_READY.search(ready_lines[0]):
            spawned = ready - int(m.group(1))
        else:
            starting = [_log_time(line) for line in lines if "starting the server" in line]
            if not starting:
                continue
            spawned = starting[0]
        out.append((spawned - activated[0], ready - spawned))
    return out


def _wait_logs(
    user_data: Path, extension_id: str, count: int, timeout: float, poll: float = 0.2
) -> list[tuple[float, float]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _activations(user_data, extension_id)
        if len(found) >= count:
            return found
        time.sleep(poll)
    raise TimeoutError(f"fewer than {count} 'the server is ready' lines after {timeout} s")


_PAGE_READY = re.compile(r"the chat view's page is ready \(its script ran\) at (\d+) ms since the epoch")


def _page_ready(log: Path, timeout: float) -> float | None:
    """When the chat view's page of this window load had run its script (epoch ms, the extension's line), waited
    for up to ``timeout`` s; None from an extension that does not say it. The chat is usable once its page runs
    and the server is ready, whichever comes last."""
    deadline = time.monotonic() + timeout
    while True:
        if m := _PAGE_READY.search(log.read_text()):
            return float(m.group(1))
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _vscode(fake: _Fake, tag: str, reloads: int) -> tuple[
    list[float], list[float], list[float], list[float], list[tuple[float, float]], dict[str, list[float]],
    list[dict[str, float]], list[float],
]:
    """In the real VS Code: (delta -> rendered ms, delta -> arrived in the webview ms, delta -> the host posts
    it ms, the host's post -> arrived in the webview ms, activation -> server ready ms per window load, the
    parts of spawn -> ready per window load, window reload -> ready and the CPU run meanwhile per reload, and
    VS Code's own hop: a trivial extension's post -> arrived in its webview ms, :func:`_floor_hops`)."""
    from tests.clients.vscode_real.chat import Chat, phoenix_settings
    from tests.clients.vscode_real.rig import extension_id, load_deps, package_extension, start_rig

    deps = load_deps()
    vsix = package_extension(deps)
    ext_id = extension_id()
    with start_rig(
        vsix=vsix, extension_id=ext_id, settings=phoenix_settings, env=fake.env(), deps=deps,
        files={"README.md": "bench\n"},
    ) as rig:
        d = rig.driver
        assert d is not None
        chat = Chat(rig)
        d.call("goto", timeout=180)
        chat.open()
        chat.widen()
        _wait_logs(rig.user_data, ext_id, 1, 180)
        chat.send("[[warmup]]")
        chat.wait_answer("Ready.", timeout=180)
        chat.wait_idle()
        d.call("evaluate", **chat.wv, selector="[data-testid=timeline]", fn=RECORDER)
        bench = [os.getpid(), fake.proc.pid]

        def cpu() -> dict[int, tuple[str, float]]:
            return _cpu_by_group(rig.procs.tree(), bench)

        offset = _clock_offset_ns()
        stream_cpu = cpu()
        chat.send(tag)
        n = int(TAG.search(tag).group(1))  # type: ignore[union-attr]
        d.call("waitForFunction", **chat.wv, fn=f"() => window.__phoenixBench.count >= {n}", timeout=600)
        chat.wait_idle()
        streamed = _cpu_spent(stream_cpu, cpu())
        streamed["deltas"] = n
        rec: dict[str, dict[str, float]] = d.call("evaluate", **chat.wv, fn="() => window.__phoenixBench")
        stamps = sorted(rec["rendered"], key=int)
        rendered = [rec["rendered"][s] - (int(s) + offset) / 1e6 for s in stamps]
        arrived = [rec["arrived"][s] - (int(s) + offset) / 1e6 for s in stamps if s in rec["arrived"]]
        posted = [rec["posted"][s] - (int(s) + offset) / 1e6 for s in stamps if s in rec["posted"]]
        hop = [rec["arrived"][s] - rec["posted"][s] for s in stamps if s in rec["posted"]]
        raw = rig.artifacts / "bench-render-latencies.json"
        raw.write_text(json.dumps({"rendered_ms": rendered, "arrived_ms": arrived, "posted_ms": posted, "hop_ms": hop}))
        print(f"[bench.vscode] latencies in send order: {raw}", file=sys.stderr)
        floor = _floor_hops(rig, n, float(TAG.search(tag).group(2)))  # type: ignore[union-attr]
        # a turn that waits on the model (two deltas 3 s apart: the chat shows its busy line), then the window
        # idle as long: what the window runs on its own while a turn is on, beside what it runs at rest. Both
        # measured over a sleep of the bench's: playwright's waits poll in the page, every animation frame
        chat.send("[[bench-stream 2 3.0]]")
        time.sleep(0.5)
        t0, before = time.monotonic(), cpu()
        time.sleep(4.0)
        waiting = {**_cpu_spent(before, cpu()), "seconds": time.monotonic() - t0}
        d.call("waitForFunction", **chat.wv, fn=f"() => window.__phoenixBench.count >= {n + 2}", timeout=120)
        chat.wait_idle()
        time.sleep(0.5)
        t0, before = time.monotonic(), cpu()
        time.sleep(4.0)
        idle = {**_cpu_spent(before, cpu()), "seconds": time.monotonic() - t0}
        loads: list[dict[str, float]] = [streamed, waiting, idle]

        def reload(count: int, **extra: float) -> None:
            # window reload -> the server ready, with the CPU each part of the rig and the machine ran meanwhile
            # (the driver does not wait for the workbench in the page meanwhile: playwright's wait polls there
            # every animation frame, on the cores the window loads on; it waits once the server is ready)
            before, busy, t0 = cpu(), _machine_busy_ms(), time.time() * 1000
            d.call("reload", workbench=False, timeout=180)
            _wait_logs(rig.user_data, ext_id, count, 180, poll=0.05)
            spent = _cpu_spent(before, cpu())
            machine = _machine_busy_ms() - busy
            newest = sorted((rig.user_data / "logs").rglob(f"{ext_id}/Phoenix.log"))[-1]
            ready_at = _log_time(next(ln for ln in newest.read_text().splitlines() if "the server is ready" in ln))
            loads.append({"window": ready_at - t0, "machine": machine, **spent, **extra})
            if not extra.get("hidden") and (page_at := _page_ready(newest, 60)) is not None:
                loads[-1]["usable"] = max(ready_at, page_at) - t0
            d.call("waitWorkbench", timeout=180)

        for i in range(reloads):
            reload(i + 2)
        activations = _activations(rig.user_data, ext_id)
        parts = _start_parts(rig.user_data, ext_id)
        # the same reloads with the chat view not shown (the Explorer restored in the side bar, so its webview is
        # not made): what the chat view costs a window's load, beside it
        d.call("command", title="View: Show Explorer", timeout=60)
        d.call("waitFor", selector=".part.sidebar .explorer-viewlet", first=True, timeout=60)
        for i in range(reloads // 2):
            reload(len(activations) + i + 1, hidden=1.0)
            webviews = d.call("inspect", selector=f'iframe.webview[src*="extensionId={ext_id}"]')["count"]
            loads[-1]["webviews"] = float(webviews)
        for load, (spawn, ready) in zip(
            (x for x in loads if x.get("hidden")), _activations(rig.user_data, ext_id)[len(activations):], strict=False
        ):
            load["activation"] = spawn + ready
    return rendered, arrived, posted, hop, activations, parts, loads, floor


def _floor_hops(rig: Any, count: int, delay_s: float) -> list[float]:
    """VS Code's own host -> webview hop in the same window: the test probe (a trivial extension) posts its own
    webview panel `count` tiny messages ``{at: Date.now()}`` at the stream's pace, each as soon as it is due;
    ms from each post to its arrival in that page. Run once the stream is drawn, so without the server's,
    the fake model's and the chat's work beside it: a floor of the hop, not the same load."""
    from tests.clients.vscode_real.rig import PROBE_ID

    d = rig.driver
    probe = {"frame": "webview", "extensionId": PROBE_ID}
    rig.probe("/hop", {"count": count, "intervalMs": delay_s * 1000})
    d.call("waitForFunction", **probe, fn="() => window.__hop && window.__hop.done", timeout=600)
    got: dict[str, list[float]] = d.call("evaluate", **probe, fn="() => window.__hop")
    d.call("command", title="View: Close Editor", timeout=60)  # the chat's turn that follows is not beside it
    return [a - b for a, b in zip(got["arrived"], got["at"], strict=True)]


FLOOR_DIR = ROOT / "vscode-extension" / "test-real" / "floor-extension"
FLOOR_ID = "phoenix-test.phoenix-floor"


def _alone_ms(command: list[str], frame: bytes, cwd: Path, runs: int) -> list[float]:
    """Process start -> the answer's first line, ms, ``runs`` times: a server alone, as :func:`_server_startups`
    measures it, for any command."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin and proc.stdout
        proc.stdin.write(frame)
        proc.stdin.flush()
        header = proc.stdout.readline()
        out.append((time.perf_counter() - t0) * 1000)
        assert header.startswith(b"Content-Length"), header
        proc.kill()
        proc.wait()
    return out


def _floor_extension(reloads: int, alone_runs: int) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """The floor of activation -> server ready in this VS Code (issue 35): the test-only floor extension
    (vscode-extension/test-real/floor-extension) alone in code-server, a side-bar webview view restored at each
    window reload as the chat is, so VS Code activates it at the same point (``onView``); it spawns a server,
    writes VS Code's ``initialize`` and notes the answer's first bytes. No language client, no host.js, no chat
    page. Per kind of server (this checkout's phoenix-lsp; a pygls server with no features, bench/server.py):
    (activation -> ready per window reload, from VS Code's activation log line as for the extension; the same
    server alone, process start -> answered, in the same run; VS Code's activation line -> the extension's module
    runs, per window reload: VS Code's own part of activation -> spawn, which any extension pays)."""
    from bench.server import MINIMAL_SERVER
    from tests.clients.vscode_real.chat import server_command
    from tests.clients.vscode_real.rig import _run, load_deps, start_rig

    deps = load_deps()
    out: dict[str, tuple[list[float], list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "floor-src"
        vsix = Path(tmp) / "phoenix-floor.vsix"
        shutil.copytree(FLOOR_DIR, work)
        _run([str(deps.vsce), "package", "--no-dependencies", "--out", str(vsix)], cwd=work, env=deps.env(),
             timeout=120)
        config, log = Path(tmp) / "floor.json", Path(tmp) / "floor.log"
        data = Path(tmp) / "data"
        data.mkdir()
        kinds = {
            "phoenix-lsp": [server_command(), "serve", "--data-dir", str(data)],
            "pygls, no features": [sys.executable, "-c", MINIMAL_SERVER],
        }
        with start_rig(
            vsix=vsix, extension_id=FLOOR_ID, settings={}, env={"PHOENIX_FLOOR_CONFIG": str(config)}, deps=deps,
            files={"README.md": "bench\n"},
        ) as rig:
            frame = _initialize_frames(rig.workspace)["vscode"]

            def use(kind: str) -> None:
                command = kinds[kind]
                config.write_text(json.dumps({
                    "kind": kind, "command": command[0], "args": command[1:],
                    "frame": base64.b64encode(frame).decode(), "log": str(log),
                }))

            def records(count: int) -> list[dict[str, Any]]:
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline:
                    lines = log.read_text().splitlines() if log.exists() else []
                    if len(lines) >= count:
                        return [json.loads(line) for line in lines]
                    time.sleep(0.05)
                raise TimeoutError(f"the floor extension wrote fewer than {count} lines to {log}")

            d = rig.driver
            assert d is not None
            use("phoenix-lsp")
            d.call("goto", timeout=180)
            d.call("command", title="Phoenix Floor: Open", timeout=60)
            d.call("waitFor", selector=f'iframe.webview[src*="extensionId={FLOOR_ID}"]', first=True, timeout=60)
            count = len(records(1))  # the first activation is the command's, not a window load's
            time.sleep(2)  # the workbench stores the side bar's view before a reload restores it (a loaded machine)
            for kind in kinds:
                use(kind)
                for _ in range(reloads):
                    count += 1
                    d.call("reload", workbench=False, timeout=180)
                    records(count)
                    d.call("waitWorkbench", timeout=180)
            activated = sorted(
                _log_time(line)
                for host_log in (rig.user_data / "logs").rglob("remoteexthost.log")
                for line in host_log.read_text().splitlines()
                if f"_doActivateExtension {FLOOR_ID}," in line
            )
            for record in records(count)[1:]:
                at = max(t for t in activated if t <= record["loadedAt"])
                ready, _, loaded = out.setdefault(record["kind"], ([], [], []))
                ready.append(record["readyAt"] - at)
                loaded.append(record["loadedAt"] - at)
            for kind, command in kinds.items():
                out[kind][1].extend(_alone_ms(command, frame, rig.workspace, alone_runs))
    return out


def _floor_extension_figures(
    floor: dict[str, tuple[list[float], list[float], list[float]]], ours: float, alone: float
) -> list[dict[str, Any]]:
    """The floor's activation -> ready beside each server alone (:func:`_floor_extension`), and what is the extension's
    own: its activation -> ready (``ours``, median) against the floor extension's with the same server."""
    out: list[dict[str, Any]] = []
    for kind, (ready, started, _) in floor.items():
        med, base = statistics.median(ready), statistics.median(started)
        out.append({
            "name": f"floor: a trivial extension at the chat's activation point (onView) spawning {kind}, activation "
            f"-> initialize answered (median of {len(ready)} window loads; all: {', '.join(f'{r:.0f}' for r in ready)};"
            f" x{med / base:.2f})",
            "value": round(med, 1),
            "unit": "ms",
            "baseline_name": f"{kind} alone: process start -> initialize answered (median)",
            "baseline_value": round(base, 1),
        })
    if "phoenix-lsp" in floor:
        med = statistics.median(floor["phoenix-lsp"][0])
        out.append({
            "name": f"the extension's own part: its activation -> ready against the floor's with the same server "
            f"(x{ours / med:.2f}; the floor against the server alone in VS Code's window: x{med / alone:.2f})",
            "value": round(ours, 1),
            "unit": "ms",
            "baseline_name": "the floor extension with phoenix-lsp (median)",
            "baseline_value": round(med, 1),
        })
    loaded = [x for _, _, module in floor.values() for x in module]
    if loaded:
        out.append({
            "name": "of activation -> spawn, VS Code's own: its activation log line -> an extension's module runs (the "
            f"floor's, median of {len(loaded)}; all: {', '.join(f'{x:.0f}' for x in loaded)})",
            "value": round(statistics.median(loaded), 1),
            "unit": "ms",
        })
    return out


def _render_costs(deltas: int) -> dict[str, float]:
    """The webview's render cost per delta (vscode-extension/test/render.bench.ts), compiled and run by node."""
    ext = ROOT / "vscode-extension"
    subprocess.run(["npx", "tsc", "-p", "tsconfig.test.json"], cwd=ext, check=True, capture_output=True, timeout=600)
    out = subprocess.run(
        ["node", "out-test/test/render.bench.js", str(deltas)],
        cwd=ext, check=True, capture_output=True, text=True, timeout=900,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _review_costs(files: int, runs: int) -> dict[str, float]:
    """The chat view's cost of opening a review of `files` changed files (vscode-extension/test/review.bench.ts)."""
    out = subprocess.run(
        ["node", "out-test/test/review.bench.js", str(files), str(runs)],
        cwd=ROOT / "vscode-extension", check=True, capture_output=True, text=True, timeout=900,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _outbox_costs(gaps: list[float]) -> dict[str, float]:
    """The host's hold of each delta in its outbox over these arrivals (vscode-extension/test/outbox.bench.ts,
    after _render_costs compiled it), beside the outbox that kept to one post a frame."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(gaps, f)
        f.flush()
        out = subprocess.run(
            ["node", "out-test/test/outbox.bench.js", f.name],
            cwd=ROOT / "vscode-extension", check=True, capture_output=True, text=True, timeout=300,
        )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def outbox_figures(gaps: list[float]) -> list[dict[str, Any]]:
    """Issue 35: the host holds no delta back (a burst is one post), beside the hold to one post a frame."""
    r = _outbox_costs(gaps)
    return [{
        "name": f"the host's outbox: a delta's hold before its post, p50 / p99 ({r['deltas']:.0f} deltas arriving as "
        f"the bare LSP run's did, {r['within_frame']:.0f} of them within 16 ms of the one before; Node's timers; "
        f"{r['posts']:.0f} posts against {r['baseline_posts']:.0f}; no workbench here: no post stays on its way, "
        "so the hold while two are, in VS Code, is in 'the extension host posts it' above)",
        "value": f"{r['hold_p50_ms']:.2f} / {r['hold_p99_ms']:.2f}",
        "unit": "ms",
        "baseline_name": "one post a frame, what comes within it held to its end (before), p50 / p99",
        "baseline_value": f"{r['baseline_hold_p50_ms']:.2f} / {r['baseline_hold_p99_ms']:.2f}",
    }]


def review_figures(quick: bool = False) -> list[dict[str, Any]]:
    """Issue 36's figure: the review of 200 changed files opens under a second (after _render_costs compiled)."""
    r = _review_costs(200, 5 if quick else 15)
    return [
        {
            "name": f"chat view: a review of {r['files']:.0f} changed files opens (event -> dialog drawn, median of "
                    f"{r['runs']:.0f}, jsdom; slowest {r['review_open_max_ms']:.0f} ms)",
            "value": round(r["review_open_ms"], 1),
            "unit": "ms",
            "baseline_name": "a one-file patch approval opens (same run)",
            "baseline_value": round(r["patch_open_ms"], 1),
            "goal": "< 1000 ms",
        },
    ]


def render_figures(quick: bool = False) -> list[dict[str, Any]]:
    return [*_stream_figures(quick), *review_figures(quick)]


def _stream_figures(quick: bool = False) -> list[dict[str, Any]]:
    r = _render_costs(100 if quick else 200)
    what = f"a {r['bytes'] / 1000:.0f} KB markdown answer in {r['deltas']:.0f} deltas, one frame each, jsdom"
    return [
        {
            "name": f"chat view: drawing a streamed answer, total ({what})",
            "value": round(r["total_ms"], 1),
            "unit": "ms",
            "baseline_name": "the whole answer rendered, sanitised and put in again per frame (before issue 35)",
            "baseline_value": round(r["baseline_total_ms"], 1),
            "goal": "",
        },
        {
            "name": "chat view: one frame's drawing in the answer's last tenth (mean)",
            "value": round(r["last_tenth_mean_ms"], 2),
            "unit": "ms",
            "baseline_name": "the whole answer per frame, last tenth (mean)",
            "baseline_value": round(r["baseline_last_tenth_mean_ms"], 2),
            "goal": "",
        },
        {
            "name": f"chat view: one frame's drawing of a paragraph streamed whole, in its last tenth (mean; "
            f"{r['paragraph_deltas']:.0f} stamps as bench vscode streams them, "
            f"{r['paragraph_bytes'] / 1000:.1f} KB, jsdom)",
            "value": round(r["paragraph_last_tenth_mean_ms"], 3),
            "unit": "ms",
            "baseline_name": "the paragraph's markdown rendered, sanitised and put in per frame (before its text was "
            "appended to), last tenth (mean)",
            "baseline_value": round(r["paragraph_baseline_last_tenth_mean_ms"], 3),
            "goal": "",
        },
    ]


def figures(quick: bool = False, delay_ms: float = 25.0, deltas: int | None = None) -> list[dict[str, Any]]:
    """The figures; ``delay_ms`` paces the deltas (25 ms, 40 deltas/s, is about a fast model's stream)."""
    from tests.clients.vscode_real.chat import server_command

    deltas = deltas or (200 if quick else 600)
    delay, reloads = delay_ms / 1000, (2 if quick else 4)
    tag = f"[[bench-stream {deltas} {delay}]]"
    _compile_server_package()
    fake = _Fake()
    try:
        base, gaps = asyncio.run(_lsp_latencies(fake, tag))
        rendered, arrived, posted, hop, activations, parts, loads, hop_floor = _vscode(fake, tag, reloads)
    finally:
        fake.stop()
    alone = _server_startups(server_command(), 7 if not quick else 3)
    floor = _floor_extension(reloads, 7 if not quick else 3)
    startups, alone_cpu = alone["vscode"]
    empty = statistics.median(alone["empty"][0])
    ready = statistics.median(a + b for a, b in activations)
    return [
        {
            "name": f"text delta -> rendered in the VS Code chat webview, p50 ({deltas:,} deltas {delay * 1000:g} ms "
            f"apart, {len(rendered):,} seen)",
            "value": round(statistics.median(rendered), 2),
            "unit": "ms",
            "baseline_name": "same deltas -> phoenix/event over a bare LSP connection, p50",
            "baseline_value": round(statistics.median(base), 2),
            "goal": "",
        },
        {
            "name": "text delta -> rendered, p99",
            "value": round(_pct(rendered, 0.99), 2),
            "unit": "ms",
            "baseline_name": "bare LSP connection, p99",
            "baseline_value": round(_pct(base, 0.99), 2),
            "goal": "< 50 ms (issue 35)",
        },
        {
            "name": "of which: text delta -> its message arrives in the webview (before rendering), p50 / p99",
            "value": f"{statistics.median(arrived):.2f} / {_pct(arrived, 0.99):.2f}",
            "unit": "ms",
        },
        *_hop_figures(posted, hop, hop_floor),
        {
            "name": f"extension activation -> server ready (median of {len(activations)} window loads; "
            f"all: {', '.join(f'{a + b:.0f}' for a, b in activations)})",
            "value": round(ready, 1),
            "unit": "ms",
            "baseline_name": "the server alone: process start -> VS Code's initialize answered (median; an empty "
            f"initialize: {empty:.0f} ms, x{ready / empty:.3g})",
            "baseline_value": round(statistics.median(startups), 1),
            "goal": "<= 1.2x the server alone (issue 35)",
        },
        {
            "name": "of which: activation -> the extension spawns the server / spawn -> ready, medians",
            "value": f"{statistics.median(a for a, _ in activations):.0f} / "
            f"{statistics.median(b for _, b in activations):.0f}",
            "unit": "ms",
        },
        *_floor_extension_figures(floor, ready, statistics.median(startups)),
        *_part_figures(parts, alone_cpu),
        *_stream_cpu_figures(loads[0]),
        *_rate_figures(loads[1], loads[2]),
        *_load_figures([x for x in loads[3:] if not x.get("hidden")], "the chat view shown"),
        *_load_figures([x for x in loads[3:] if x.get("hidden")], "the chat view not shown (the Explorer is)"),
        *_floor_figures(activations, parts, alone_cpu),
        *render_figures(quick),
        *outbox_figures(gaps),
    ]


def _hop_figures(posted: list[float], hop: list[float], floor: list[float]) -> list[dict[str, Any]]:
    """The message's way split at the host's post (the post's `at`; none from an extension that sends none),
    and the hop beside VS Code's own: a trivial extension's tiny posts at the same pace in the same window."""
    if not posted:
        return []
    return [
        {
            "name": "of which: text delta -> the extension host posts it to the webview, p50 / p99",
            "value": f"{statistics.median(posted):.2f} / {_pct(posted, 0.99):.2f}",
            "unit": "ms",
        },
        {
            "name": "of which: the host's post -> it arrives in the webview (VS Code's IPC), p50 / p99",
            "value": f"{statistics.median(hop):.2f} / {_pct(hop, 0.99):.2f}",
            "unit": "ms",
            "baseline_name": f"VS Code's own hop: a trivial extension's tiny post -> its webview ({len(floor)} posts "
            "at the same pace, same window, after the stream), p50 / p99",
            "baseline_value": f"{statistics.median(floor):.2f} / {_pct(floor, 0.99):.2f}" if floor else "-",
        },
    ]


def _floor_figures(
    activations: list[tuple[float, float]], parts: dict[str, list[float]], alone_cpu: list[float]
) -> list[dict[str, Any]]:
    """Activation -> ready had the server found a CPU free whenever it needed one (activation -> the spawn, then
    the server's own CPU time to its answer, medians) beside the server alone's CPU time to its answer: the
    ratio on an idle machine, both without waiting for a CPU (activation -> spawn still holds its waits on a
    loaded one, so this errs high). The rest of the measured ratio is the window load's wait for a CPU."""
    if not parts.get("server_run") or not alone_cpu:
        return []
    floor = statistics.median(a for a, _ in activations) + statistics.median(parts["server_run"])
    return [{
        "name": "activation -> ready had the server waited for no CPU (activation -> spawn + the server's CPU time "
        "to its answer, medians): the ratio on an idle machine",
        "value": round(floor, 1),
        "unit": "ms",
        "baseline_name": "the server alone: its CPU time to VS Code's initialize answered (median)",
        "baseline_value": round(statistics.median(alone_cpu), 1),
    }]


def _stream_cpu_figures(spent: dict[str, float]) -> list[dict[str, Any]]:
    """CPU time per streamed delta by part of the rig (:data:`PARTS`; from the message sent to the answer drawn):
    what each delta costs Chromium (the renderer runs the workbench's relay of the host's post and the chat
    webview's drawing; the GPU process draws the frames), code-server, the extension host and the server; CPU
    time, so less bent by a loaded machine than the waits."""
    n = spent.get("deltas", 0)
    if not n:
        return []
    return [{
        "name": f"while {n:.0f} deltas stream: CPU per delta run by {' / '.join(PARTS)}",
        "value": " / ".join(f"{spent.get(k, 0.0) / n:.2f}" for k in PARTS),
        "unit": "ms",
    }]


def _rate_figures(waiting: dict[str, float], idle: dict[str, float]) -> list[dict[str, Any]]:
    """CPU per second by part of the rig while a turn waits on the model (the chat's busy line shown, two deltas
    in the turn) beside the same window idle as long, in the same run."""
    def rate(spent: dict[str, float]) -> str:
        return " / ".join(f"{spent.get(k, 0.0) / spent['seconds']:.0f}" for k in PARTS)

    return [{
        "name": f"while a turn waits on the model (over {waiting['seconds']:.1f} s of it): CPU per second run by "
        f"{' / '.join(PARTS)}",
        "value": rate(waiting),
        "unit": "ms/s",
        "baseline_name": f"the window idle as long ({idle['seconds']:.1f} s), same parts",
        "baseline_value": rate(idle),
    }]


def _load_figures(loads: list[dict[str, float]], shown: str) -> list[dict[str, Any]]:
    """Window reload -> the server ready (the user's wait from opening the window), and who ran on the machine's
    cores meanwhile: the rig's parts by process tree (:data:`PARTS`) and the rest of the machine (other programs:
    other work on a shared machine). Read when the bench sees the ready line, so up to ~50 ms after it.
    VS Code's own load is everything but the extension host's and the server's share (the extension host also
    runs VS Code's built-in extensions) and the bench's."""
    if not loads:
        return []
    cores = os.cpu_count() or 1
    med = {k: statistics.median(load.get(k, 0.0) for load in loads) for k in ("window", "machine", *PARTS)}
    ours = sum(med[k] for k in PARTS)
    extra = ""
    if all("activation" in load for load in loads):
        extra += f"; activation -> ready: {', '.join(str(round(load['activation'])) for load in loads)} ms"
    if all("webviews" in load for load in loads):
        extra += f"; the chat's webview made: {', '.join('yes' if load['webviews'] else 'no' for load in loads)}"
    return [
        {
            "name": f"window reload -> server ready, {shown} (median of {len(loads)}; all: "
            f"{', '.join(str(round(load['window'])) for load in loads)}{extra})",
            "value": round(med["window"], 1),
            "unit": "ms",
        },
        {
            "name": f"of which: CPU run by {' / '.join(PARTS)} / the rest of the machine, "
            f"medians ({cores} cores: {cores * med['window']:.0f} ms of CPU in the interval; the machine ran "
            f"{med['machine']:.0f})",
            "value": " / ".join(f"{med[k]:.0f}" for k in PARTS) + f" / {max(0.0, med['machine'] - ours):.0f}",
            "unit": "ms",
        },
        *([{
            "name": f"window reload -> the chat usable, {shown} (its page's script ran and the server is ready, "
            f"whichever is last; median of {len(loads)}; all: {', '.join(str(round(x['usable'])) for x in loads)})",
            "value": round(statistics.median(x["usable"] for x in loads), 1),
            "unit": "ms",
        }] if all("usable" in x for x in loads) else []),
    ]


def _part_figures(parts: dict[str, list[float]], alone_cpu: list[float]) -> list[dict[str, Any]]:
    """Where spawn -> ready went, medians over the window loads (an extension before issue 35's start-up
    figures gives none)."""
    med = {k: statistics.median(v) for k, v in parts.items() if v}
    out: list[dict[str, Any]] = []
    if "sent" in med and "activated" in med and "loaded" in med:
        name = "of which: spawn -> VS Code calls activate / host.js loaded / the extension sends initialize, medians"
        value = f"{med['activated']:.0f} / {med['loaded']:.0f} / {med['sent']:.0f}"
        out.append({"name": name, "value": value, "unit": "ms"})
    elif "sent" in med:
        name = "of which: spawn -> the extension sends initialize, median"
        out.append({"name": name, "value": med["sent"], "unit": "ms"})
    if "server_run" in med and "server_wait" in med:
        alone = f"{statistics.median(alone_cpu):.0f} ms" if alone_cpu else "unknown"
        out.append({
            "name": "spawn -> ready: the server's main thread on a CPU / waiting for one, medians "
            f"(alone, on a CPU until its answer: {alone})",
            "value": f"{med['server_run']:.0f} / {med['server_wait']:.0f}",
            "unit": "ms",
        })
    if "host_run" in med and "host_wait" in med:
        out.append({
            "name": "spawn -> ready: the extension host's main thread on a CPU / waiting for one, medians",
            "value": f"{med['host_run']:.0f} / {med['host_wait']:.0f}",
            "unit": "ms",
        })
    if "busy" in med:
        every = ", ".join(f"{b:.0f}" for b in parts["busy"])
        out.append({
            "name": f"spawn -> ready: the machine's cores busy (median; all: {every})",
            "value": med["busy"],
            "unit": "%",
        })
    return out


def main(argv: list[str] | None = None) -> int:
    from bench.__main__ import print_table

    parser = argparse.ArgumentParser(prog="python -m bench.vscode")
    parser.add_argument("--quick", action="store_true", help="fewer deltas and reloads (a smoke run)")
    parser.add_argument("--delay-ms", type=float, default=25.0, help="pause between deltas (default 25)")
    parser.add_argument("--deltas", type=int, help="number of deltas (default 600, quick 200)")
    parser.add_argument("--render-only", action="store_true", help="only the chat view's render figures (no VS Code)")
    args = parser.parse_args(argv)
    print("## vscode")
    if args.render_only:
        print_table(render_figures(quick=args.quick))
    else:
        print_table(figures(quick=args.quick, delay_ms=args.delay_ms, deltas=args.deltas))
    return 0


if __name__ == "__main__":
    sys.exit(main())
