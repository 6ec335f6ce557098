"""``scripts/crossings.py`` (how many modules a user message crosses, issue 35) keeps working: its tracer sorts
calls into the columns its docstring promises, and the script measures the real server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "crossings.py"
TRACER = ROOT / "scripts" / "crossings_tracer.py"

#: a stand-in package with one module per column: called on the main thread, on a pool's worker, on a thread of
#: its own, and from a module body imported inside the window (whose helper is imported then too)
PACKAGE = {
    "__init__.py": "",
    "on_loop.py": "def work() -> int:\n    return 1\n",
    "in_pool.py": "def work() -> int:\n    return 2\n",
    "on_thread.py": "def work() -> int:\n    return 3\n",
    "helper.py": "def work() -> int:\n    return 4\n",
    "lazy.py": "from phoenix_lsp import helper\n\nVALUE = helper.work()\n",
    "__main__.py": textwrap.dedent("""\
        import json
        import socket
        import sys
        import threading
        from concurrent.futures import ThreadPoolExecutor

        from phoenix_lsp import in_pool, on_loop, on_thread


        def send(command):
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(sys.argv[1])
                with s.makefile("rwb") as stream:
                    stream.write(command.encode() + b"\\n")
                    stream.flush()
                    return json.loads(stream.readline())


        assert send("open") == "ok"
        on_loop.work()
        with ThreadPoolExecutor(1) as pool:
            pool.submit(in_pool.work).result()
        thread = threading.Thread(target=on_thread.work, name="job")
        thread.start()
        thread.join()
        import phoenix_lsp.lazy
        print(json.dumps(send("close")))
        """),
}


def test_the_tracer_counts_the_loop_and_the_pools_but_not_imports_or_threads_of_their_own(tmp_path: Path) -> None:
    package = tmp_path / "tree" / "phoenix_lsp"
    package.mkdir(parents=True)
    for name, text in PACKAGE.items():
        (package / name).write_text(text)
    # a Unix socket's path is at most 107 bytes: a short folder of its own, not the test's (pytest's may be deep)
    socket_path = Path(tempfile.mkdtemp(prefix="cx-")) / "control.sock"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "tree")}
    done = subprocess.run([sys.executable, str(TRACER), str(socket_path), sys.executable, "-m", "phoenix_lsp",
                           str(socket_path)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    shutil.rmtree(socket_path.parent)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["package"] == str(package / "__init__.py")
    assert sorted(record["counted"]) == ["phoenix_lsp.in_pool", "phoenix_lsp.on_loop"]
    assert record["counted"]["phoenix_lsp.on_loop"] == {"calls": 1, "first": "work", "order": 0}
    assert record["imports"] == ["phoenix_lsp.helper", "phoenix_lsp.lazy"]
    assert record["background"] == {"job, running phoenix_lsp.on_thread.work": ["phoenix_lsp.on_thread"]}


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "adapter"), [([], "phoenix_lsp.server.features.messages"),
                                                (["--acp"], "phoenix_lsp.server.acp.agent")], ids=["lsp", "acp"])
def test_the_script_measures_a_message_through_the_server(flags: list[str], adapter: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--json", *flags], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    counted = record["counted"]
    assert record["package"] == str(ROOT / "phoenix_lsp" / "__init__.py")
    # from the adapter through the use case and the core to the model router and the client that sends the request
    for module in (adapter, "phoenix_lsp.server.usecases.send_message", "phoenix_lsp.core.machine",
                   "phoenix_lsp.llm.router", "phoenix_lsp.llm.client"):
        assert module in counted, f"{module} is not among the modules crossed: {sorted(counted)}"
    assert 10 < len(counted) < 150
    # nothing the server runs at start-up only: the command line and the wiring are behind the window
    assert "phoenix_lsp.cli" not in counted and "phoenix_lsp.server.boot" not in counted
