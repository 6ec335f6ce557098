"""``phoenix-lsp acp``: the ACP adapter (``acp/``) given a hub of conversations, served on stdio (issue 28).

Like ``boot.py`` this module knows both sides: it builds the hub with ``boot.build_hub`` (the same store,
settings, model router, sandbox and agent route as the LSP server's) around the ACP client, restores the
conversations a restart interrupted, and runs the SDK's agent side until the client closes stdin."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys

import acp
from acp.stdio import stdio_streams

from .. import __name__ as _pkg
from ..sandbox import probe
from .acp.agent import PhoenixAgent
from .acp.client import AcpClient
from .acp.lines import READ_LIMIT, Asked, objects_only, watch
from .boot import build_hub

log = logging.getLogger(_pkg)


async def _serve(data_dir: str | None) -> None:
    client = AcpClient()
    hub, settings = build_hub(None, data_dir, lambda text: log.warning("%s", text), probe(), client)
    client.hub = hub
    client.read_timeout_s = settings.acp_read_timeout_s
    try:
        restored = hub.restore()  # open approvals are asked again when their session is loaded (REQ-ACP-013)
        if restored:
            log.info("restored %d conversations after a restart", restored)
        warning = hub.sandbox.warning()
        if warning:  # REQ-BASH-009: said in the log (ACP has no message for it outside a session)
            log.warning("%s", warning)
        reader, writer = await stdio_streams(limit=READ_LIMIT)  # a longer line is read on in pieces
        asked = Asked()  # the agent's requests whose answers have bounds of their own (fs/read_text_file)
        lines = objects_only(reader, writer, settings.max_message_bytes, settings.max_message_tokens, asked)
        # session/close is stable ACP (sessionCapabilities.close), but the SDK 0.12.1 still routes it only with
        # its unstable flag; the other methods that flag routes (fork, resume) are not served: "method not found"
        await acp.run_agent(PhoenixAgent(client), watch(writer, asked, hub.store.guard.redact),  # type: ignore[arg-type]
                            lines, observers=[client.observe], use_unstable_protocol=True)
        # the methods it does not serve are answered "method not found" by the SDK, shaped like every error
        # (REQ-ACP-030); a line that is no JSON object is skipped (REQ-ACP-016), a line over
        # PHOENIX_MAX_MESSAGE_BYTES is thrown away as it arrives (REQ-ACP-019)
    finally:
        hub.stop()
        await hub.background.settle()  # REQ-BASH-046: stored for the model (the client is gone)
        hub.close()  # what runs beside the conversations (the turns, background commands, workers), then the store


def serve(data_dir: str | None = None) -> int:
    """Serve ACP on stdin/stdout until the client closes the connection."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(data_dir))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)  # as the LSP server leaves (app.leave): nothing is lost, every change is committed when made
