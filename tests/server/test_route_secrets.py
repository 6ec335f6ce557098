"""The agent route teaches the one guard the MCP servers' secrets (REQ-SEC-012): the values their ``secretsRef``
names, a token in a server's URL, a credential header, and the URL secrets of servers an ACP session brings, so
the store, the log and the sink check of every model request know them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from phoenix_lsp.agent.agent_config import McpRegistry
from phoenix_lsp.server.agent_route import AgentRoute, _referenced_secrets
from phoenix_lsp.store.secrets import SecretGuard


@pytest.mark.req("REQ-SEC-012", "REQ-SEC-045")
def test_secret_refs_url_tokens_and_credential_headers_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FILES_TOKEN", "files-token-value-77")
    registry = McpRegistry.model_validate({"servers": {
        "files": {"command": ["files-server"], "secretsRef": {"TOKEN": "env:FILES_TOKEN"}},
        "docs": {"url": "https://docs.example/mcp?token=url-token-value-88&page=2",
                 "headers": {"X-Api-Key": "header-key-value-99", "Accept": "application/json-long"}},
        "proxy": {"url": "http://me:proxy-password-66@proxy.example/mcp"},
    }})
    found = dict(_referenced_secrets(registry))
    assert found == {  # every header's value, not only a credential-named one (REQ-SEC-045)
        "files-token-value-77": "MCP server files's credential TOKEN (FILES_TOKEN)",
        "url-token-value-88": "a secret in MCP server docs's URL",
        "header-key-value-99": "MCP server docs's X-Api-Key header",
        "application/json-long": "MCP server docs's Accept header",
        "proxy-password-66": "a secret in MCP server proxy's URL",
    }


@pytest.mark.req("REQ-SEC-012")
def test_an_acp_sessions_server_url_token_is_learned() -> None:
    guard = SecretGuard(environ={})
    route: Any = AgentRoute(engine="monty", settings=None, problem="no settings", redact=guard.redact,
                            add_secret=guard.add_secret)
    servers = {"docs": SimpleNamespace(url="https://docs.example/mcp?access_token=session-url-token-5")}
    problems = route.add_servers(servers, ["env-value-of-a-session-1"])  # unavailable: refused, yet learned
    assert problems and sorted(guard.known()) == [
        ("a credential of the session's MCP servers", "env-value-of-a-session-1"),
        ("a secret in MCP server docs's URL", "session-url-token-5")]
