"""An MCP server's secrets, found in one place (REQ-SEC-045): what every caller that must keep them out of a
result, a log line, the store, a prompt or doctor's output learns them from.

A server's definition carries its credentials in four ways, whichever source it came from (the registry, an ACP
session, the user's ``mcp.json``, a workspace's ``.mcp.json`` or ``.vscode/mcp.json``): the values its
``secretsRef`` entries name (``env:NAME``, read from the environment as it is now); the values its source gave
inline (a file's or an ACP session's ``env`` and ``headers``, which the server takes as secrets); every value of
its ``env`` and ``headers`` however they are named (a header or a variable is how a server is told who calls it,
``X-Tenant-Signature`` as much as ``Authorization``); and the secrets in its URL (``url_secrets``: a password, a
credential-like query value). A value shorter than ``MIN_SECRET_LENGTH`` characters is no secret here (``1``,
``true``, ``debug`` would garble every word), as everywhere in the guard.

The callers: the server's guard (``server/agent_route.py`` for the registry's and an ACP session's servers,
``server/mcp_consents.py`` for the files'), the MCP client's own scrub of every result and message
(``agent/mcp_sessions.py``), and ``phoenix-lsp doctor``'s guard. None of them finds a secret any other way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..store.secrets import MIN_SECRET_LENGTH, url_secrets


def _part(server: Any, *names: str) -> Any:
    """A part of a definition: an attribute of a parsed server, or a member of a mapping (its first name found)."""
    for name in names:
        value = server.get(name) if isinstance(server, Mapping) else getattr(server, name, None)
        if value is not None:
            return value
    return None


def _text(value: Any) -> str:
    """A value as text: a pydantic ``SecretStr``'s secret, else the value itself when it is a string."""
    secret = getattr(value, "get_secret_value", None)
    if callable(secret):
        value = secret()
    return value if isinstance(value, str) else ""


def server_secrets(name: str, server: Any, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(value, label)`` of every secret the MCP server ``name``'s definition ``server`` carries or names (the
    module's docstring), each once; the label says where it is, never the value. ``server``: a parsed definition
    (``agent_config.StdioServer`` / ``HttpServer``) or a mapping with the same parts (``env``, ``headers``, ``url``,
    ``secrets_ref`` / ``secretsRef``, ``inline_secrets``); ``environ``: where ``env:NAME`` is read (this process's
    environment by default)."""
    environ = os.environ if environ is None else environ
    found: list[tuple[str, str]] = []
    for key, reference in (_part(server, "secrets_ref", "secretsRef") or {}).items():
        if isinstance(reference, str) and reference.startswith("env:"):
            found.append((environ.get(reference[4:], ""), f"MCP server {name}'s credential {key} ({reference[4:]})"))
    for key, value in (_part(server, "inline_secrets") or {}).items():
        found.append((_text(value), f"MCP server {name}'s credential {key}"))
    for key, value in (_part(server, "env") or {}).items():
        found.append((_text(value), f"MCP server {name}'s environment variable {key}"))
    for key, value in (_part(server, "headers") or {}).items():
        found.append((_text(value), f"MCP server {name}'s {key} header"))
    url = _part(server, "url")
    found.extend((value, f"a secret in MCP server {name}'s URL") for value in url_secrets(url if isinstance(url, str)
                                                                                          else ""))
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for value, label in found:
        if len(value) >= MIN_SECRET_LENGTH and value not in seen:
            seen.add(value)
            out.append((value, label))
    return out


__all__ = ["server_secrets"]
