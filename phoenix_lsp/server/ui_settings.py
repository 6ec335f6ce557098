"""The choices the user makes in an editor's UI that hold for the whole machine: ``ui_settings.json`` in the
server's data directory (REQ-AGENT-001). Today one key, ``"route"`` (``"ask"`` | ``"agent"``): every client of
every server process that uses this data directory sees the same route.

Reads never fail: a missing file is the default (``ask``); an unreadable or corrupt file, or a value that is
no route, is the default too, with a warning in the server's log that names the file and what to do. Writes
are atomic (a temporary file in the same directory, then ``os.replace``) and keep every other key of the file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal, cast, get_args

from .. import confined, safe_json
from ..atomic import write_bytes

log = logging.getLogger(__name__)

#: the file's name inside the data directory
FILE_NAME = "ui_settings.json"
#: the key the route is kept under (seed 004 calls it "mode"; in our words it is the route, specs/modes.md)
ROUTE_KEY = "route"

Route = Literal["ask", "agent"]  # the same value set as phoenix_lsp.protocol.params.Route
ROUTES: tuple[str, ...] = get_args(Route)
DEFAULT_ROUTE: Route = "ask"
#: the largest settings file read (it holds a few keys)
MAX_BYTES = 64 * 1024


def settings_path(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


def _read(path: Path) -> dict[str, Any] | None:
    """The file's object; ``{}`` when there is no file; None (after a warning) when it cannot be used. Read
    through the confined reader: a FIFO or a symlink out of the data directory in its place is refused, never
    waited on or followed (REQ-READ-003)."""
    try:
        text = confined.read(path, [path.parent], max_bytes=MAX_BYTES).data.decode("utf-8")
    except confined.ReadRefused as exc:
        if exc.reason == "missing":
            return {}
        log.warning("%s could not be read (%s); using the route %r. Delete it (it must be a regular file of at "
                    "most %d bytes in the data directory) and choose the route again.", path, exc, DEFAULT_ROUTE,
                    MAX_BYTES)
        return None
    except UnicodeDecodeError as exc:
        log.warning("%s could not be read (%s); using the route %r. Check the file's permissions, or delete it "
                    "and choose the route again.", path, exc, DEFAULT_ROUTE)
        return None
    try:
        data = safe_json.loads(text)
    except ValueError as exc:
        log.warning("%s is not valid JSON (%s); using the route %r. Choosing a route rewrites the file; "
                    "delete it to start afresh.", path, exc, DEFAULT_ROUTE)
        return None
    if not isinstance(data, dict):
        log.warning("%s holds a JSON %s, not an object; using the route %r. Choosing a route rewrites the file.",
                    path, type(data).__name__, DEFAULT_ROUTE)
        return None
    return data


def _route_in(path: Path, data: dict[str, Any] | None) -> Route:
    if data is None or ROUTE_KEY not in data:
        return DEFAULT_ROUTE
    value = data[ROUTE_KEY]
    if value not in ROUTES:
        log.warning("%s has %s = %r, which is no route (expected one of %s); using the route %r. Choosing a "
                    "route rewrites it.", path, ROUTE_KEY, value, ", ".join(ROUTES), DEFAULT_ROUTE)
        return DEFAULT_ROUTE
    return cast(Route, value)


def read_route(data_dir: Path) -> Route:
    """The persisted route, or ``ask`` when there is none or it cannot be used (then with a logged warning)."""
    path = settings_path(data_dir)
    return _route_in(path, _read(path))


def write_route(data_dir: Path, route: Route) -> Route:
    """Persist ``route`` atomically, keeping the file's other keys; returns the route persisted before.

    A file that cannot be used (corrupt, not an object) is replaced by one holding only the route. Raises
    ``OSError`` when the data directory cannot be written."""
    if route not in ROUTES:
        raise ValueError(f"{route!r} is no route: expected one of {', '.join(ROUTES)}")
    path = settings_path(data_dir)
    data = _read(path)
    previous = _route_in(path, data)
    data = dict(data or {})
    data[ROUTE_KEY] = route
    data_dir.mkdir(parents=True, exist_ok=True)
    write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return previous
