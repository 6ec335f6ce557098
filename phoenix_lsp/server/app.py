"""The phoenix-lsp language server: the server object with every feature registered, and ``serve``.

Each feature is a module of ``features/`` with a ``setup(server)`` (specs/protocol.md says what each does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

from . import commands, confirm
from .features import audit, conversations, lifecycle, messages, models, modes, route
from .lsp import PhoenixServer

#: the phoenix/* features, then what plain clients use: executeCommand and code actions (commands.py), and the
#: check that an open document shows an edit the editor says it applied (confirm.py)
FEATURES = (lifecycle, conversations, messages, modes, models, route, audit, confirm, commands)


def create() -> PhoenixServer:
    """A server with every feature registered."""
    server = PhoenixServer()
    for feature in FEATURES:
        feature.setup(server)
    return server


server = create()


def serve(tcp: str | None = None, data_dir: str | None = None) -> int:
    """Run the server until the client says exit (stdio) or forever (TCP). Logging starts in ``initialized``,
    in the data directory the settings choose (nothing logs before it)."""
    server.data_dir = data_dir
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            print(f"phoenix-lsp: --tcp wants HOST:PORT, got {tcp!r}", flush=True)
            return 2
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
        leave()
    return 0


def leave() -> NoReturn:
    """End the process once the client has said exit (or gone away): close the store, flush the logs and
    the output, then skip the interpreter's own teardown, which frees the objects of the ~3,000 modules a
    server has loaded one by one (0.3-0.8 s of CPU measured, for nothing) while the editor waits for the
    process to end. Nothing is lost: every change is committed when it is made."""
    hub = server.hub
    if hub is not None:
        with contextlib.suppress(Exception):
            hub.close()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


__all__ = ["PhoenixServer", "create", "leave", "serve", "server"]
