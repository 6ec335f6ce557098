"""``phoenix-lsp ARGS`` for an editor under test, forked by the test worker's zygote (tests/e2e/zygote.py).

An editor's tests (headless Neovim, CodeCompanion) start the server themselves, as a command line. This is that
command, run as ``python -S zygote_launch.py ARGS``: a few milliseconds of an interpreter without ``site``, where
``python -m phoenix_lsp ARGS`` costs seconds of imports (pygls, lsprotocol, the ACP SDK, anthropic) per start.
It hands its own stdin, stdout and stderr to a server the zygote forks (``PHOENIX_TEST_ZYGOTE_SOCKET``), with its
environment, working directory and arguments, then stands for it: a SIGTERM, SIGINT, SIGHUP or SIGQUIT it gets is
passed on, it exits with the server's status (or by the server's signal), and if it is killed outright the
server is killed with it (the zygote's child watches this process). Only the standard library: ``-S`` leaves
``site`` out, so no package can be imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys

SOCKET = "PHOENIX_TEST_ZYGOTE_SOCKET"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _receive(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def main(args: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if k != SOCKET}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ[SOCKET])
    request = json.dumps({"args": args, "env": env, "cwd": os.getcwd(), "owner": os.getpid()}).encode()
    socket.send_fds(conn, [request], [0, 1, 2])
    reply = _receive(conn, 4)
    if len(reply) < 4:
        print("zygote_launch: the test zygote forked no server", file=sys.stderr)
        return 1
    pid = struct.unpack("=i", reply)[0]

    def forward(received: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it has just ended: its status is on its way
            os.kill(pid, received)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    status = _receive(conn, 4)
    code = struct.unpack("=i", status)[0] if len(status) == 4 else -signal.SIGKILL
    if code < 0:  # ended by a signal: end by the same one, so the editor sees what it would have
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
