"""The phoenix-lsp language server: the server object, and ``serve``.

At start-up the server holds its lifecycle and, for everything else it serves, a light dispatcher; the
features load at ``initialized`` (``features/lifecycle.py``, the boot line; specs/protocol.md says what each
feature does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

from .features import lifecycle
from .lsp import PhoenixServer


def create() -> PhoenixServer:
    """A server ready to answer ``initialize``: the lifecycle and the dispatchers (``lifecycle.setup``)."""
    server = PhoenixServer()
    lifecycle.setup(server)
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
