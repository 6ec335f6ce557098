"""A command never reaches the terminal of the server that runs it (REQ-BASH-004), though it no longer gets a
session of its own (a new session starts a scheduler autogroup, which cost +4 to +6 ms of every command on a loaded
machine): the launcher lets the controlling terminal go (TIOCNOTTY) before the command runs.

The server here is a process whose controlling terminal is a pseudo-terminal this test holds the other side of
(as when it is started from a shell). The witness is outside: what arrives on that side. The command writes to
/dev/tty and tries to take the terminal back with TIOCSCTTY, in both modes (Restricted adds Landlock, which does
not allow /dev/tty at all; Unrestricted has no such rule), with both launchers.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import secrets
import select
import sys
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import needs_sandbox

pytestmark = [needs_sandbox]

MARK = "tty-mark-" + secrets.token_hex(6)

#: run by the "server" (the pty's session leader): each command through spawn.run, the outputs to a file
SERVER = """
import asyncio, json, os, sys
from pathlib import Path
from phoenix_lsp.sandbox import build, spawn
out, mark = sys.argv[1], sys.argv[2]
command = (f"echo {mark} > /dev/tty; echo open-tty=$?; "
           "python3 -c 'import fcntl, os, sys, termios; fd = os.open(sys.argv[1], os.O_RDWR); "
           "fcntl.ioctl(fd, termios.TIOCSCTTY, 0); print(\\"took-the-terminal\\")' "
           + os.ttyname(0) + " 2>&1 | tail -1; "
           "awk '{print \\"tty_nr=\\" $7}' /proc/self/stat")
results = {}
for kind in ("compiled", "python"):
    os.environ["PHOENIX_LSP_SANDBOX_LAUNCHER"] = kind
    build.reset_cache()
    for restricted in (False, True):
        req = spawn.SpawnRequest(("bash", "-c", command), Path(out).parent, restricted=restricted)
        result = asyncio.run(spawn.run(req, timeout=60))
        results[f"{kind}-{restricted}"] = result.capture.parts()[0].decode()
Path(out).write_text(json.dumps(results))
"""


@pytest.mark.req("REQ-BASH-004")
def test_a_command_cannot_reach_the_servers_terminal(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the "server", with the pty as its controlling terminal
        os.execv(sys.executable, [sys.executable, "-c", SERVER, str(out), MARK])
    received = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other side has gone
                break
            if not chunk:
                break
            received += chunk
        elif os.waitpid(pid, os.WNOHANG) != (0, 0):
            break
    os.close(master)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    assert out.exists(), received
    results = json.loads(out.read_text())
    assert len(results) == 4, (results, received)
    for case, output in results.items():
        assert "tty_nr=0" in output, (case, output)  # no controlling terminal
        assert "open-tty=0" not in output and "took-the-terminal" not in output, (case, output)
    assert MARK.encode() not in received, received  # nothing reached the terminal
