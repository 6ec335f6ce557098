"""The route of every message (specs/agent-mode.md, REQ-AGENT-001): phoenix/getRoute and phoenix/setRoute, kept
in ``ui_settings.json`` in the data directory so every client of every server on this machine sees one choice.
Each answers at once: one small file read (and, for setRoute, one atomic write). And the agent route's
artifacts, by handle: phoenix/getArtifact (REQ-PROTO-028), which also serves a history's images by their
``image://`` handles, through the image gate (REQ-PROTO-072)."""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

from ...protocol import params as p
from ...protocol import results as res
from .. import ui_settings
from ..errors import PhoenixError, invalid
from ..lsp import PhoenixServer
from ..requests import Handler, conversation, hub
from ..usecases import images
from ..usecases import route as route_usecase
from ..usecases.conversations import Unknown
from ..usecases.errors import Invalid

log = logging.getLogger(__name__)


def data_dir(ls: PhoenixServer) -> Path:
    """The data directory this server uses (where its database is)."""
    return hub(ls).store.path.parent


# The file is read (and written) in a thread, never on the event loop (REQ-READ-005).
async def get_route(ls: PhoenixServer, p: p.GetRouteParams) -> res.GetRouteResult:
    route = await asyncio.to_thread(ui_settings.read_route, data_dir(ls))
    return res.GetRouteResult(route=route)


async def set_route(ls: PhoenixServer, p: p.SetRouteParams) -> res.SetRouteResult:
    try:
        previous = await asyncio.to_thread(route_usecase.choose_route, data_dir(ls), p.route)
    except route_usecase.NotSaved as exc:
        raise PhoenixError("settingsNotSaved", str(exc), path=str(exc.path)) from None
    return res.SetRouteResult(route=p.route, previous=previous)


async def get_artifact(ls: PhoenixServer, p: p.GetArtifactParams) -> res.GetArtifactResult:
    if images.is_image_handle(p.handle):  # an image of the conversation's history (REQ-PROTO-072)
        return await _get_image(ls, p)
    try:
        artifact = await asyncio.to_thread(route_usecase.read_artifact, hub(ls), p.conversation_id, p.handle)
    except Unknown as exc:
        raise PhoenixError("conversationNotFound", str(exc), conversationId=p.conversation_id) from None
    except Invalid as exc:
        raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    return res.GetArtifactResult(
        handle=artifact.handle, type=artifact.type, size=artifact.size, media_type=artifact.media_type,
        data=base64.b64encode(artifact.data).decode("ascii"))


async def _get_image(ls: PhoenixServer, p: p.GetArtifactParams) -> res.GetArtifactResult:
    state = conversation(ls, p.conversation_id).state
    try:
        kept = await images.gated(hub(ls).store, images.image_id_of(state, p.handle))
    except Invalid as exc:
        raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    return res.GetArtifactResult(handle=p.handle, type="image", size=len(kept.data), media_type=kept.media_type,
                                 data=base64.b64encode(kept.data).decode("ascii"))


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/getRoute": get_route,
    "phoenix/setRoute": set_route,
    "phoenix/getArtifact": get_artifact,
}

