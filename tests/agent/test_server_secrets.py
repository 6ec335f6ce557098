"""An MCP server's secrets, found in one place (REQ-SEC-045): every part of a definition that carries or names one,
from every source's form of a server."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from phoenix_lsp.agent.agent_config import HttpServer, StdioServer
from phoenix_lsp.agent.server_secrets import server_secrets


@pytest.mark.req("REQ-SEC-045")
def test_every_part_of_a_definition_that_carries_a_secret_is_found() -> None:
    stdio = StdioServer(command=("srv",), env={"REGION_SEAL": "seal-value-0001", "LEVEL": "debug"},
                        secrets_ref={"TOKEN": "env:PHX_REF"},
                        inline_secrets={"GIVEN": SecretStr("given-value-0002")})
    found = server_secrets("db", stdio, {"PHX_REF": "ref-value-0003"})
    assert {value for value, _ in found} == {"seal-value-0001", "ref-value-0003", "given-value-0002"}
    http = HttpServer(url="https://h.example.invalid/mcp?sig=url-sig-value-0004",
                      headers={"X-Tenant": "tenant-value-0005", "Accept": "json"})
    assert {v for v, _ in server_secrets("web", http, {})} == {"url-sig-value-0004", "tenant-value-0005"}
    for value, label in found + server_secrets("web", http, {}):
        assert value not in label and ("db" in label or "web" in label), label


@pytest.mark.req("REQ-SEC-045")
def test_a_mapping_short_values_and_unset_references() -> None:
    """An ACP session's server before it is parsed is a mapping; a value under 8 characters, an unset variable
    and a repeated value are no secrets (or one)."""
    found = server_secrets("s", {"env": {"A": "same-value-0006", "B": "same-value-0006", "C": "short"},
                                 "secretsRef": {"T": "env:UNSET"}}, {})
    assert found == [("same-value-0006", "MCP server s's environment variable A")]
