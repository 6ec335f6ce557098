"""The server under a tracer, for ``scripts/crossings.py`` (standard library only, so it runs any tree's server).

    python scripts/crossings_tracer.py SOCKET PYTHON -m phoenix_lsp ARGS...

runs ``phoenix_lsp`` (``python -m phoenix_lsp ARGS...``, the command a client would spawn, of which PYTHON is
ignored: the module runs in this interpreter, from ``PYTHONPATH``) with a profile function on every thread,
installed before the server's first line. The profile function does nothing until a window is opened through
the Unix socket SOCKET: a line ``open`` starts a window (answered ``ok``), a line ``close`` ends it (answered
with the window's record as one line of JSON). While a window is open, each call of a Python function defined
in a ``phoenix_lsp`` module is recorded under that module, in one of three columns:

- ``counted``: a call on the event loop's thread (the main one) or on a thread of a
  ``concurrent.futures`` pool (where the loop's ``to_thread``/``run_in_executor`` work runs, the transport's
  reads among them), made while no module is being imported: the message's own path;
- ``imports``: a call made while a module is being imported (a module's body and whatever it calls): start-up
  work that a lazy import happens to do inside the window, not a crossing;
- ``background``: a call on any other thread (one started with ``threading.Thread``, e.g. the warm-up of the
  SDK and the cgroup probes, a process watcher): jobs of their own, by thread.
"""

from __future__ import annotations

import json
import runpy
import socket
import sys
import threading
from concurrent.futures import thread as pool_thread
from types import FrameType
from typing import Any

PACKAGE = "phoenix_lsp"


class Window:
    """What the profile function records between ``open`` and ``close``."""

    def __init__(self) -> None:
        self.open = False
        self.counted: dict[str, dict[str, Any]] = {}  # module -> {"calls": n, "first": qualname, "order": i}
        self.imports: set[str] = set()
        self.background: dict[str, set[str]] = {}  # thread -> modules

    def reset(self) -> None:
        self.counted, self.imports, self.background = {}, set(), {}
        self.open = True

    def record(self) -> dict[str, Any]:
        package = sys.modules.get(PACKAGE)
        return {"package": getattr(package, "__file__", None), "counted": self.counted, "imports": sorted(self.imports),
                "background": {thread: sorted(names) for thread, names in self.background.items()}}


WINDOW = Window()


def _importing(frame: FrameType | None) -> bool:
    """Whether a module is being imported at ``frame``: a module body (other than ``__main__``'s) on the stack."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False


def _background_thread() -> str | None:
    """None on the event loop's thread or a pool's worker; else the thread, named with what it runs."""
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return None
    target = getattr(thread, "_target", None)
    if target is pool_thread._worker:
        return None
    what = getattr(target, "__qualname__", type(thread).__qualname__)
    return f"{thread.name}, running {getattr(target, '__module__', '?')}.{what}"


def _function(frame: FrameType) -> str:
    """The function's name, a dataclass's generated method named after its class."""
    name = frame.f_code.co_qualname
    if name.startswith("__create_fn__.<locals>.") and "self" in frame.f_code.co_varnames:
        name = f"{type(frame.f_locals['self']).__qualname__}.{frame.f_code.co_name}"
    return name


def _profile(frame: FrameType, event: str, arg: object) -> None:
    if not WINDOW.open or event != "call":
        return
    name = frame.f_globals.get("__name__", "")
    if not isinstance(name, str) or not (name == PACKAGE or name.startswith(PACKAGE + ".")):
        return
    thread = _background_thread()
    if thread is not None:
        WINDOW.background.setdefault(thread, set()).add(name)
        return
    if _importing(frame):
        WINDOW.imports.add(name)
        return
    seen = WINDOW.counted.get(name)
    if seen is None:
        WINDOW.counted[name] = {"calls": 1, "first": _function(frame), "order": len(WINDOW.counted)}
    else:
        seen["calls"] += 1


def _control(listener: socket.socket) -> None:
    while True:
        connection, _ = listener.accept()
        with connection, connection.makefile("rwb") as stream:
            for line in stream:
                command = line.strip().decode()
                if command == "open":
                    WINDOW.reset()
                    answer: Any = "ok"
                elif command == "close":
                    WINDOW.open = False
                    answer = WINDOW.record()
                else:
                    answer = {"error": f"unknown command {command!r}: send 'open' or 'close'"}
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2:4] != ["-m", PACKAGE]:
        sys.exit("usage: crossings_tracer.py SOCKET PYTHON -m phoenix_lsp ARGS...")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(argv[0])
    listener.listen()
    threading.Thread(target=_control, args=(listener,), name="crossings-control", daemon=True).start()
    sys.argv = [PACKAGE, *argv[4:]]
    del sys.path[0]  # this script's folder; phoenix_lsp comes from PYTHONPATH, not from the working directory
    threading.setprofile(_profile)
    sys.setprofile(_profile)
    runpy.run_module(PACKAGE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
