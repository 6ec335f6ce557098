"""A real VS Code (code-server) in headless Chromium, for the real-VS-Code test and the VS Code benchmark.

What it runs, all on 127.0.0.1 with free ports, every process in its own process group and tagged with an
environment marker so that teardown ends exactly what this rig started (even after a failure):

- code-server (VS Code 1.139) with a fresh user-data and extensions directory, the packaged extension
  installed from its ``.vsix`` plus the test probe (``vscode-extension/test-real/probe-extension``, which
  reports document text and runs commands over a loopback port), and a temporary workspace folder;
- the phoenix server, started by the extension itself from the ``settings.json`` written here, with
  ``ANTHROPIC_BASE_URL`` pointing at the fake Anthropic server of the caller;
- Chromium driven by ``vscode-extension/test-real/driver.cjs`` (playwright-core), one JSON command per line.

The tools come from the cache that ``scripts/install-vscode-test-deps.sh`` fills; :func:`load_deps` says
what is missing and how to install it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
EXTENSION_DIR = ROOT / "vscode-extension"
TEST_REAL_DIR = EXTENSION_DIR / "test-real"
PROBE_DIR = TEST_REAL_DIR / "probe-extension"
DRIVER = TEST_REAL_DIR / "driver.cjs"
INSTALL_SCRIPT = "scripts/install-vscode-test-deps.sh"
PROBE_ID = "phoenix-test.phoenix-test-probe"
MARKER_ENV = "PHOENIX_REAL_VSCODE_RUN"


class MissingDeps(RuntimeError):
    """The cached tools are not there: the message names the install script."""


def cache_dir() -> Path:
    """Where the install script puts the tools (same rule as the script)."""
    if os.environ.get("PHOENIX_VSCODE_TEST_CACHE"):
        return Path(os.environ["PHOENIX_VSCODE_TEST_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "phoenix-lsp-test"


@dataclass(frozen=True)
class Deps:
    node_home: Path  # Node 24 (bin/node)
    code_server: Path
    node_tools: Path  # node_modules with playwright-core and @vscode/vsce
    chromium: Path

    @property
    def node(self) -> Path:
        return self.node_home / "bin" / "node"

    @property
    def vsce(self) -> Path:
        return self.node_tools / ".bin" / "vsce"

    def env(self) -> dict[str, str]:
        """Environment with Node 24 first on PATH (code-server refuses older Node versions)."""
        return {
            **os.environ,
            "PATH": f"{self.node_home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "npm_config_nodedir": str(self.node_home),
        }


def load_deps() -> Deps:
    """The tools installed by the install script, or :class:`MissingDeps` saying what is missing."""
    paths_file = cache_dir() / "paths.env"
    hint = f"run `{INSTALL_SCRIPT}` (as root: it installs Debian packages) to install them"
    if not paths_file.is_file():
        raise MissingDeps(f"the real-VS-Code test tools are not installed ({paths_file} is missing): {hint}")
    values = dict(
        line.split("=", 1) for line in paths_file.read_text().splitlines() if "=" in line and not line.startswith("#")
    )
    deps = Deps(
        node_home=Path(values.get("NODE_HOME", "")),
        code_server=Path(values.get("CODE_SERVER", "")),
        node_tools=Path(values.get("NODE_TOOLS", "")),
        chromium=Path(values.get("CHROMIUM", "/usr/bin/chromium")),
    )
    missing = [
        str(p)
        for p in (deps.node, deps.code_server, deps.node_tools / "playwright-core", deps.vsce, deps.chromium)
        if not p.exists()
    ]
    if missing:
        raise MissingDeps(f"the real-VS-Code test tools are incomplete (missing: {', '.join(missing)}): {hint}")
    return deps


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def package_probe(deps: Deps, out_dir: Path) -> Path:
    """The probe extension as a .vsix (vsce, offline, a second or two)."""
    out = out_dir / "phoenix-test-probe.vsix"
    if not out.exists():
        work = out_dir / "probe-src"
        shutil.copytree(PROBE_DIR, work, dirs_exist_ok=True)
        _run([str(deps.vsce), "package", "--no-dependencies", "--out", str(out)], cwd=work, env=deps.env(), timeout=120)
    return out


def package_extension(deps: Deps, ext_dir: Path = EXTENSION_DIR) -> Path:
    """Build and package the extension: ``npm ci`` when its node_modules are missing, then its ``package``
    script (esbuild bundle + vsce). Returns the newest .vsix it made."""
    pkg = json.loads((ext_dir / "package.json").read_text())
    env = {**os.environ}
    if not (ext_dir / "node_modules").is_dir():
        _run(["npm", "ci", "--no-audit", "--no-fund"], cwd=ext_dir, env=env, timeout=900)
    started = time.time()
    scripts = pkg.get("scripts", {})
    if "build" in scripts and "vscode:prepublish" not in scripts:
        _run(["npm", "run", "build"], cwd=ext_dir, env=env, timeout=600)
    if "package" in scripts:
        _run(["npm", "run", "package"], cwd=ext_dir, env=env, timeout=600)
    else:
        _run([str(deps.vsce), "package", "--out", str(ext_dir / "phoenix-lsp.vsix")], cwd=ext_dir, env=env)
    vsixes = sorted(ext_dir.glob("*.vsix"), key=lambda p: p.stat().st_mtime)
    if not vsixes or vsixes[-1].stat().st_mtime < started - 1:
        raise RuntimeError(f"packaging {ext_dir} made no .vsix")
    return vsixes[-1]


def extension_id(ext_dir: Path = EXTENSION_DIR) -> str:
    pkg = json.loads((ext_dir / "package.json").read_text())
    return f"{pkg['publisher']}.{pkg['name']}"


# ------------------------------------------------------------------------------------------ processes


@dataclass
class Processes:
    """Every process the rig starts: own process group each, plus a marker variable in the environment."""

    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: list[subprocess.Popen[Any]] = field(default_factory=list)

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, MARKER_ENV: self.marker}

    def popen(self, cmd: list[str], **kw: Any) -> subprocess.Popen[Any]:
        proc: subprocess.Popen[Any] = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.started.append(proc)
        return proc

    def _marked(self) -> list[int]:
        """Pids of live processes carrying this run's marker (children that left the process group)."""
        me, found = os.getpid(), []
        needle = f"{MARKER_ENV}={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        return found

    def tree(self) -> list[int]:
        """Pids of every live process of this run: the processes it started and their descendants, by parent
        pid, with those carrying the marker (children that left the tree) and theirs. Chromium's zygote,
        renderers, GPU and utility processes do not carry the marker (the browser starts them with an
        environment of its own): only the tree finds them."""
        parents: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    parents.setdefault(ppid, []).append(int(entry.name))
        found: set[int] = set()
        todo = [p.pid for p in self.started if p.poll() is None] + self._marked()
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo += parents.get(pid, [])
        found.discard(os.getpid())
        return sorted(found)

    def pids_running(self, needle: str) -> list[int]:
        """Pids of this run's live processes whose command line contains ``needle``."""
        out = []
        for pid in self._marked():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(pid)
        return sorted(out)

    def stop_all(self, grace: float = 5.0) -> list[int]:
        """TERM every group started, then KILL what is left (marker sweep included); returns the pids killed
        by the sweep (processes that outlived their group)."""
        for proc in reversed(self.started):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        swept = self._marked()
        for pid in swept:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return swept


# ------------------------------------------------------------------------------------------ the driver


class DriverError(AssertionError):
    """A driver command failed (the message has the driver's error and the screenshot taken)."""


class Driver:
    """The playwright-core driver process: :meth:`call` sends one command and waits (bounded) for its answer."""

    def __init__(self, deps: Deps, procs: Processes, url: str, artifacts: Path, extension_id: str) -> None:
        self.artifacts = artifacts
        config = artifacts / "driver-config.json"
        config.write_text(
            json.dumps(
                {
                    "url": url,
                    "chromium": str(deps.chromium),
                    "artifacts": str(artifacts),
                    "webview": {"extensionId": extension_id},
                }
            )
        )
        self.log_path = artifacts / "driver.log"
        self._log = self.log_path.open("w")
        env = procs.env({**deps.env(), "NODE_PATH": str(deps.node_tools)})
        self.proc = procs.popen(
            [str(deps.node), str(DRIVER), str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0
        self._shots = 0
        hello = self._answer(timeout=60)
        if not hello.get("ready"):
            raise DriverError(f"the driver did not start: {hello}; log: {self.log_tail()}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _answer(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise DriverError(f"the driver did not answer within {timeout:.0f} s; log: {self.log_tail()}") from None
        if line is None:
            raise DriverError(f"the driver exited ({self.proc.poll()}); log: {self.log_tail()}")
        return dict(json.loads(line))

    def log_tail(self, n: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def call(self, op: str, *, timeout: float = 30.0, screenshot_on_error: bool = True, **args: Any) -> Any:
        """Run one driver op (see driver.cjs); ``timeout`` in seconds bounds the op's own waits."""
        self._next += 1
        cmd = {"id": self._next, "op": op, "timeout": int(timeout * 1000), **args}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        answer = self._answer(timeout + 30)
        if not answer.get("ok"):
            shot = ""
            if screenshot_on_error:
                with contextlib.suppress(DriverError):
                    shot = self.screenshot(f"FAILED-{op}")
            raise DriverError(f"{op} {args} failed: {answer.get('error')}\nscreenshot: {shot or '(none)'}")
        return answer.get("result")

    def screenshot(self, name: str, **args: Any) -> str:
        self._shots += 1
        path = f"{self._shots:02d}-{name}.png"
        return str(self.call("screenshot", path=path, screenshot_on_error=False, **args))

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self._log.close()


# ------------------------------------------------------------------------------------------ the rig


#: Workbench settings that keep the window quiet and deterministic (no welcome page, no update checks,
#: no built-in AI chat taking the secondary side bar).
BASE_SETTINGS: dict[str, Any] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": True,
    "security.workspace.trust.enabled": False,
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
    "telemetry.telemetryLevel": "off",
    "git.enabled": False,
    "files.autoSave": "off",
    "window.restoreWindows": "none",
}


@dataclass
class Rig:
    """A started code-server + driver. Use :func:`start_rig`."""

    deps: Deps
    procs: Processes
    tmp: Path
    artifacts: Path
    workspace: Path
    data_dir: Path
    user_data: Path
    port: int
    probe_port: int
    extension_id: str
    driver: Driver | None = None
    code_server: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={self.workspace}"

    # -- the probe (extension host side) ------------------------------------------------------------------
    def probe(self, path: str, body: dict[str, Any] | None = None, timeout: float = 10.0) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.probe_port}{path}",
            data=data,
            method="POST" if data is not None else "GET",
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def wait_probe(self, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until the probe answers (the extension host is up)."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                return dict(self.probe("/state", timeout=5))
            except OSError as exc:
                last = exc
                time.sleep(0.1)
        raise TimeoutError(f"the probe extension did not answer within {timeout} s: {last}")

    def document_text(self, path: Path) -> str | None:
        for doc in self.probe("/state")["documents"]:
            if doc["path"] == str(path):
                return str(doc["text"])
        return None

    def wait_document(self, path: Path, predicate: Any, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = None
        while time.monotonic() < deadline:
            text = self.document_text(path)
            if text is not None and predicate(text):
                return text
            time.sleep(0.05)
        raise TimeoutError(f"{path.name}: the open document never matched; last text: {text!r}")

    def server_pids(self) -> list[int]:
        """The phoenix servers this rig's VS Code is running (processes of this run serving LSP)."""
        return self.procs.pids_running(" serve --data-dir ")

    def wait_server_pids(self, predicate: Callable[[list[int]], bool], timeout: float = 120.0) -> list[int]:
        """Wait until the list of running servers satisfies ``predicate``; returns it."""
        deadline = time.monotonic() + timeout
        pids = self.server_pids()
        while not predicate(pids):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the running servers never matched; last: {pids}")
            time.sleep(0.1)
            pids = self.server_pids()
        return pids

    def wait_new_extension_host(self, old_pid: int, timeout: float = 120.0) -> dict[str, Any]:
        """After a reload: wait until the probe answers from an extension host other than ``old_pid``."""
        deadline = time.monotonic() + timeout
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                state = dict(self.probe("/state", timeout=5))
                if state.get("extensionHostPid") not in (None, old_pid):
                    return state
            time.sleep(0.1)
        raise TimeoutError(f"no new extension host within {timeout} s (last state: {state})")

    def extension_active(self, ext_id: str) -> bool:
        state = self.probe(f"/state?extensions={ext_id}")
        return bool(state["extensions"][ext_id]["active"])

    def logs(self) -> list[Path]:
        return sorted((self.user_data / "logs").rglob("*.log")) if (self.user_data / "logs").is_dir() else []


def _print_tails(rig: Rig, lines: int = 25) -> None:
    """The ends of the extension's log (its last window) and the server's log, on stderr."""
    windows = [log for log in rig.logs() if log.name == "Phoenix.log"]
    for log in [*windows[-1:], rig.data_dir / "phoenix-lsp.log"]:
        with contextlib.suppress(OSError):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            print(f"[real-vscode] last lines of {log.name}:", *(f"  {line[:300]}" for line in tail),
                  sep="\n", file=sys.stderr)


def _wait_http(url: str, proc: subprocess.Popen[Any], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"code-server exited ({proc.returncode}): {log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:]
    raise TimeoutError(f"code-server did not answer {url} within {timeout} s: {tail}")


@contextlib.contextmanager
def start_rig(
    *,
    vsix: Path,
    extension_id: str,
    settings: dict[str, Any] | Callable[[Path], dict[str, Any]],
    env: dict[str, str],
    files: dict[str, str] | None = None,
    artifacts: Path | None = None,
    deps: Deps | None = None,
    probe_vsix: Path | None = None,
) -> Iterator[Rig]:
    """code-server with ``vsix`` and the probe installed, a workspace with ``files``, the driver on the
    workbench page (not yet loaded: call ``rig.driver.call("goto")``). Everything is stopped on exit.

    ``settings`` (user settings.json) may be a function of the phoenix data directory made here."""
    deps = deps or load_deps()
    tmp = Path(tempfile.mkdtemp(prefix="phoenix-vscode-real-"))
    artifacts = artifacts or tmp / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    procs = Processes()
    workspace, data_dir = tmp / "workspace", tmp / "phoenix-data"
    user_data, ext_dir = tmp / "user-data", tmp / "extensions"
    for d in (workspace, data_dir, user_data / "User", ext_dir):
        d.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    user_settings = settings(data_dir) if callable(settings) else settings
    (user_data / "User" / "settings.json").write_text(json.dumps({**BASE_SETTINGS, **user_settings}, indent=2))
    rig = Rig(deps, procs, tmp, artifacts, workspace, data_dir, user_data, free_port(), free_port(), extension_id)
    print(f"\n[real-vscode] artifacts (screenshots, logs): {artifacts}", file=sys.stderr, flush=True)
    try:
        probe_vsix = probe_vsix or package_probe(deps, tmp)
        for x in (vsix, probe_vsix):
            _run(
                [str(deps.code_server), "--install-extension", str(x), "--force",
                 "--user-data-dir", str(user_data), "--extensions-dir", str(ext_dir)],
                env=deps.env(),
                timeout=180,
            )
        cs_log = artifacts / "code-server.log"
        cs_env = procs.env(
            {
                **deps.env(),
                **env,
                "PHOENIX_TEST_PROBE_PORT": str(rig.probe_port),
            }
        )
        with cs_log.open("w") as log_fh:
            rig.code_server = procs.popen(
                [
                    str(deps.code_server), "--config", "/dev/null", "--auth", "none",
                    "--bind-addr", f"127.0.0.1:{rig.port}", "--disable-telemetry", "--disable-update-check",
                    "--disable-workspace-trust", "--disable-getting-started-override",
                    "--user-data-dir", str(user_data), "--extensions-dir", str(ext_dir), str(workspace),
                ],
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                env=cs_env,
                cwd=tmp,
            )
        _wait_http(f"http://127.0.0.1:{rig.port}/healthz", rig.code_server, 60, cs_log)
        rig.driver = Driver(deps, procs, rig.url, artifacts, extension_id)
        yield rig
    except BaseException:
        _print_tails(rig)  # CI keeps the test's output, not the artifacts
        raise
    finally:
        if rig.driver is not None:
            with contextlib.suppress(Exception):
                rig.driver.close()
        swept = procs.stop_all()
        if swept:
            print(f"[real-vscode] killed {len(swept)} leftover process(es): {swept}", file=sys.stderr)
        # keep the logs with the artifacts
        for log in rig.logs():
            rel = log.relative_to(user_data / "logs")
            dest = artifacts / "vscode-logs" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy2(log, dest)
        for name in ("workspace", "user-data", "extensions"):
            shutil.rmtree(tmp / name, ignore_errors=True)
