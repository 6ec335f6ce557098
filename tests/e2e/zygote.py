"""Test support: one process per test worker that has imported the server once and forks a server for each
end-to-end session.

Starting ``python -m phoenix_lsp serve`` costs about half a second of CPU to import pygls and lsprotocol,
and the first message about a second more to import the anthropic SDK (3,000 modules, 1,400 pydantic
models): most of the end-to-end tier's CPU, paid again by each of its ~400 sessions. A forked child runs
exactly what ``phoenix-lsp serve`` runs (``cli.main`` with the session's argv, environment, working
directory, stdin, stdout and stderr); only the imports are done already, before any thread, event loop or
setting exists. Its exit status comes back from the zygote, which is its parent.

The same forks serve ``phoenix-lsp acp`` sessions (tests/acp/harness.py, the ACP SDK's client over the fork's
pipes) and the servers an editor under test starts itself (headless Neovim's plugin, CodeCompanion's agent):
their command is ``zygote_launch.py``, which hands its stdio to a fork and stands for it (signals passed on, its
exit status, and the fork killed with it).

Sessions that wrap the server in a launcher (strace, a sandbox-less wrapper) and ``PHOENIX_TEST_ZYGOTE=0``
start a fresh interpreter as before; start-up itself is tested and measured with real processes
(tests/server/test_exit.py, ``python -m bench server``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

#: what a session imports, in the order the server does (anthropic is imported on the first message)
PRELOAD = (
    "phoenix_lsp.cli", "phoenix_lsp.server.app", "phoenix_lsp.server.served", "phoenix_lsp.server.boot",
    "phoenix_lsp.server.runtime", "phoenix_lsp.core",
    "phoenix_lsp.llm.client", "anthropic", "phoenix_lsp.tools.registry", "phoenix_lsp.sandbox.spawn",
    "phoenix_lsp.server.plain", "phoenix_lsp.server.attachments", "phoenix_lsp.server.instructions",
    "phoenix_lsp.tools.bash_scope",
    # ``phoenix-lsp acp`` (tests/acp/harness.py): the ACP SDK and its schema, another second of CPU a session
    "acp", "phoenix_lsp.server.acp_boot",
    # ``phoenix-lsp run`` (tests/run/harness.py) and ``phoenix-lsp chat`` (tests/client/conftest.py)
    "phoenix_lsp.server.run_boot", "phoenix_lsp.client.terminal",
)


# ------------------------------------------------------------------------------------------- the zygote


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the session's server process, then run ``phoenix-lsp serve``."""
    code: Any = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        if request.get("owner"):
            _die_with(request["owner"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["phoenix-lsp", *request["args"]]
        from phoenix_lsp.cli import main

        code = main(request["args"])
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code if isinstance(code, int) else 1)


def _die_with(owner: int) -> None:
    """In a child forked for zygote_launch.py: the launcher stands for this process, so when it is gone (killed
    outright, as a test kills a server) this process goes too, at once."""
    try:
        watched = os.pidfd_open(owner)
    except ProcessLookupError:
        os.kill(os.getpid(), signal.SIGKILL)
        return

    def watch() -> None:
        select.select([watched], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="zygote-owner", daemon=True).start()


def serve(path: str) -> None:
    """The zygote: import, then fork a server per request until the test worker is gone."""
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    assert threading.active_count() == 1, "no thread may exist when the zygote forks"
    worker = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection its exit status goes back on
    print("ready", flush=True)
    while os.getppid() == worker:
        readable, _, _ = select.select([listener, wake_r], [], [], 1.0)
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(struct.pack("=i", os.waitstatus_to_exitcode(status)))
                conn.close()
        if listener in readable:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for conn_ in waiting.values():
                    conn_.close()
                os.close(wake_r)
                os.close(wake_w)
                _child(json.loads(message), fds)
            for fd in fds:
                os.close(fd)
            conn.sendall(struct.pack("=i", pid))
            waiting[pid] = conn


# ------------------------------------------------------------------------------------- in the test worker


class ForkedServer:
    """What pygls's client needs of its server process (``asyncio.subprocess.Process``): pid, returncode,
    wait, kill, terminate, and the pipes."""

    def __init__(self, pid: int, conn: socket.socket, stdin: asyncio.StreamWriter,
                 stdout: asyncio.StreamReader) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = None  # the child writes to this worker's stderr directly
        self._conn = conn
        self._exited: asyncio.Task[None] = asyncio.ensure_future(self._status())

    async def _status(self) -> None:
        loop = asyncio.get_running_loop()
        data = b""
        with contextlib.suppress(OSError):
            while len(data) < 4:
                chunk = await loop.sock_recv(self._conn, 4 - len(data))
                if not chunk:
                    break
                data += chunk
        self._conn.close()
        self.returncode = struct.unpack("=i", data)[0] if len(data) == 4 else -signal.SIGKILL

    async def wait(self) -> int:
        await asyncio.shield(self._exited)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """This worker's zygote, started on first use."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="phoenix-zygote-")
        atexit.register(shutil.rmtree, self._dir, ignore_errors=True)  # its socket; the zygote ends with us
        self.path = str(Path(self._dir) / "socket")
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from tests.e2e.zygote import serve; serve({self.path!r})"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2],
            preexec_fn=_die_with_parent,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the test server zygote did not start")

    async def spawn(self, args: list[str], env: dict[str, str], cwd: str | None = None,
                    limit: int = 2**26) -> ForkedServer:
        """A server forked with ``args`` (``phoenix-lsp``'s), ``env`` as its whole environment, in ``cwd`` (this
        worker's by default); ``limit`` bounds a line read from its stdout, as asyncio's ``limit`` does."""
        loop = asyncio.get_running_loop()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            request = json.dumps({"args": args, "env": env, "cwd": cwd or os.getcwd()}).encode()
            socket.send_fds(conn, [request], [in_r, out_w, sys.stderr.fileno()])
            pid = struct.unpack("=i", conn.recv(4))[0]
        finally:
            os.close(in_r)
            os.close(out_w)
        conn.setblocking(False)
        reader = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(out_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                             os.fdopen(in_w, "wb", 0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return ForkedServer(pid, conn, writer, reader)


#: the launcher an editor under test runs as its server's command, with ``python -S`` (see zygote_launch.py)
LAUNCHER = Path(__file__).resolve().parent / "zygote_launch.py"


def launch_command(python: str = sys.executable) -> tuple[list[str], dict[str, str]] | None:
    """What an editor under test runs instead of ``python -m phoenix_lsp`` (the command's start, before
    phoenix-lsp's arguments) and the environment it needs, or None when sessions start fresh interpreters."""
    forks = zygote()
    if forks is None:
        return None
    return [python, "-S", str(LAUNCHER)], {"PHOENIX_TEST_ZYGOTE_SOCKET": forks.path}


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


_zygote: Zygote | None = None


def zygote() -> Zygote | None:
    """This worker's zygote, or None when sessions start fresh interpreters (``PHOENIX_TEST_ZYGOTE=0``)."""
    global _zygote
    if os.environ.get("PHOENIX_TEST_ZYGOTE", "1") == "0":
        return None
    if _zygote is None or _zygote.process.poll() is not None:
        _zygote = Zygote()
    return _zygote
