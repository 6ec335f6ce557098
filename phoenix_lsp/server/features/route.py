"""The route of every message (specs/agent-mode.md, REQ-AGENT-001): phoenix/getRoute and phoenix/setRoute, kept
in ``ui_settings.json`` in the data directory so every client of every server on this machine sees one choice.
Each answers at once: one small file read (and, for setRoute, one atomic write). And the agent route's
artifacts, by handle: phoenix/getArtifact (REQ-PROTO-028)."""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

from ...agent.artifacts import ArtifactNotFound, InvalidHandle
from ...protocol import params as p
from ...protocol import results as res
from .. import ui_settings
from ..errors import PhoenixError, invalid
from ..lsp import PhoenixServer
from ..requests import Handler, hub

log = logging.getLogger(__name__)


def data_dir(ls: PhoenixServer) -> Path:
    """The data directory this server uses (where its database is)."""
    return hub(ls).store.path.parent


# The file is read (and written) in a thread, never on the event loop (REQ-READ-005).
async def get_route(ls: PhoenixServer, p: p.GetRouteParams) -> res.GetRouteResult:
    route = await asyncio.to_thread(ui_settings.read_route, data_dir(ls))
    return res.GetRouteResult(route=route)


async def set_route(ls: PhoenixServer, p: p.SetRouteParams) -> res.SetRouteResult:
    where = data_dir(ls)
    try:
        previous = await asyncio.to_thread(ui_settings.write_route, where, p.route)
    except OSError as exc:
        path = ui_settings.settings_path(where)
        log.warning("setRoute: could not write %s: %s", path, exc)
        raise PhoenixError(
            "settingsNotSaved",
            f"The route was not changed: {path} could not be written ({exc.strerror or exc}). Make the data "
            "directory writable (phoenix-lsp doctor shows it) and choose the route again.",
            path=str(path),
        ) from None
    log.info("route: %s (was %s), in %s", p.route, previous, ui_settings.settings_path(where))
    return res.SetRouteResult(route=p.route, previous=previous)


async def get_artifact(ls: PhoenixServer, p: p.GetArtifactParams) -> res.GetArtifactResult:
    route = hub(ls).config.agent_route
    if route is None or route.artifacts is None:
        why = route.unavailable if route is not None and route.unavailable else "the agent route is not set up"
        raise invalid("handle", f"Invalid params: 'handle': no artifacts can be read: {why}")
    hub(ls).get(p.conversation_id)  # NotFound names an unknown conversation
    try:
        artifact, data = await asyncio.to_thread(route.artifacts.scoped(p.conversation_id).get, p.handle)
    except (InvalidHandle, ArtifactNotFound) as exc:
        raise invalid("handle", f"Invalid params: 'handle': {exc}") from None
    media = "text/plain; charset=utf-8" if artifact.type == "text" else "application/json"
    return res.GetArtifactResult(
        handle=artifact.handle, type=artifact.type, size=artifact.size, media_type=media,
        data=base64.b64encode(data).decode("ascii"))


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/getRoute": get_route,
    "phoenix/setRoute": set_route,
    "phoenix/getArtifact": get_artifact,
}

