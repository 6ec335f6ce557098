"""The MCP servers an ACP client passes in ``session/new`` and ``session/load``, as registry entries of the agent
route (REQ-ACP-015): stdio and HTTP servers join it under the same capability manifest as the configured ones.
Their environment's and headers' values are taken as secrets (a client passes tokens that way): handed to the MCP
client as the server's inline secrets, like a resolved ``secretsRef`` (REQ-MCP-010)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio
from pydantic import SecretStr

from ...agent.agent_config import SERVER_NAME, HttpServer, StdioServer
from ...agent.server_secrets import server_secrets
from ..adapter import Conversations

log = logging.getLogger(__name__)

#: how long a session's server may take to start and list its tools (a client's server may be a slow npx)
CONNECT_TIMEOUT_S = 60.0


def servers_of(given: Sequence[Any]) -> tuple[dict[str, StdioServer | HttpServer], list[str], list[str]]:
    """The registry entries of a session's MCP servers, the secrets among their settings, and what could not be
    used, in words."""
    servers: dict[str, StdioServer | HttpServer] = {}
    secrets: list[str] = []
    problems: list[str] = []
    for server in given:
        name = str(getattr(server, "name", ""))
        if re.match(SERVER_NAME, name) is None:
            problems.append(f"the MCP server {name[:40]!r} was not added: a name is a letter then up to 63 letters, "
                            "digits, '-' or '_'")
            continue
        try:
            if isinstance(server, McpServerStdio):
                env = {v.name: v.value for v in server.env}
                secrets.extend(v for v, _ in server_secrets(name, {"env": env}))  # kept even if it fails below
                servers[name] = StdioServer(command=(server.command,), args=tuple(server.args),
                                            inline_secrets={k: SecretStr(v) for k, v in env.items()},
                                            connect_timeout_s=CONNECT_TIMEOUT_S)
            elif isinstance(server, HttpMcpServer):
                headers = {h.name: h.value for h in server.headers}
                secrets.extend(v for v, _ in server_secrets(name, {"headers": headers, "url": server.url}))
                servers[name] = HttpServer(url=server.url, inline_secrets={k: SecretStr(v) for k, v in headers.items()},
                                           connect_timeout_s=CONNECT_TIMEOUT_S)
            else:
                problems.append(f"the MCP server {name!r} was not added: phoenix-lsp takes stdio and HTTP servers "
                                f"(not {getattr(server, 'type', type(server).__name__)})")
        except ValueError as exc:
            problems.append(f"the MCP server {name!r} was not added: {str(exc)[:300]}")
    return servers, secrets, problems


async def attach(hub: Conversations, given: list[Any] | None) -> None:
    """The session's MCP servers on the agent route (REQ-ACP-015); what cannot be used is logged."""
    if not given:
        return
    servers, secrets, problems = servers_of(given)
    route = hub.config.agent_route
    if route is not None and servers:
        problems += await asyncio.to_thread(route.add_servers, servers, secrets)
    for problem in problems:
        log.warning("%s", problem)
