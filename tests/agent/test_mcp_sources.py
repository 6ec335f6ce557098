"""Reading MCP servers from the files users already have (REQ-MCP-008, ``agent/mcp_sources.py``): the formats,
the bounds, the errors that name the file and the field, the order of the sources, and the hash a consent is
keyed by (REQ-MCP-009)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from phoenix_lsp import limits
from phoenix_lsp.agent.agent_config import HttpServer, McpRegistry, StdioServer
from phoenix_lsp.agent.mcp_sources import digest, merge, read_project, read_user
from phoenix_lsp.agent.server_secrets import server_secrets


def write(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


@pytest.mark.req("REQ-MCP-008", "REQ-MCP-010")
def test_mcp_json_stdio_and_http_servers_with_their_values_as_secrets(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", {"mcpServers": {
        "db": {"command": "npx", "args": ["-y", "db-server", "--ro"], "env": {"DB_TOKEN": "s3cret-value"}},
        "web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abc123"}},
    }})
    loaded = read_project(tmp_path)
    assert loaded.problems == []
    db, web = loaded.servers
    assert isinstance(db.config, StdioServer) and db.config.argv() == ["npx", "-y", "db-server", "--ro"]
    assert db.config.env == {} and db.config.inline_secrets["DB_TOKEN"].get_secret_value() == "s3cret-value"
    assert db.config.cwd == tmp_path and db.project and db.origin == "project"
    assert db.shown == "npx -y db-server --ro (environment: DB_TOKEN)"
    assert [v for v, _ in server_secrets(db.name, db.config)] == ["s3cret-value"]  # found by the one function
    assert "s3cret-value" not in repr(db) and "s3cret-value" not in db.config.model_dump_json()
    assert isinstance(web.config, HttpServer) and web.shown == "https://mcp.example.com/mcp (headers: Authorization)"
    assert web.config.headers == {} and [v for v, _ in server_secrets(web.name, web.config)] == ["Bearer abc123"]


@pytest.mark.req("REQ-MCP-008")
def test_vscode_mcp_json_expands_the_workspace_folder_and_mcp_json_wins_a_name(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", {"mcpServers": {"both": {"command": "first"}}})
    write(tmp_path / ".vscode" / "mcp.json", {"servers": {
        "both": {"command": "second"},
        "local": {"type": "stdio", "command": "${workspaceFolder}/bin/srv", "args": ["${workspaceFolder}/data"]},
    }, "inputs": []})
    loaded = read_project(tmp_path)
    assert [s.name for s in loaded.servers] == ["both", "local"]
    assert loaded.servers[0].config.argv() == ["first"]  # type: ignore[union-attr]
    assert loaded.servers[1].config.argv() == [f"{tmp_path}/bin/srv", f"{tmp_path}/data"]  # type: ignore[union-attr]
    assert loaded.servers[1].origin == "vscode"
    assert len(loaded.problems) == 1 and "'both'" in loaded.problems[0] and ".mcp.json" in loaded.problems[0]


@pytest.mark.req("REQ-MCP-008")
def test_a_malformed_server_names_the_file_and_the_field_and_the_others_are_used(tmp_path: Path) -> None:
    path = write(tmp_path / ".mcp.json", {"mcpServers": {
        "good": {"command": "ok"},
        "bad": {"command": "x", "args": "not-a-list", "env": {"TOKEN": "hidden-value-123"}},
        "neither": {"args": []},
        "bad name!": {"command": "x"},
        "sse": {"type": "sse", "url": "https://x.example/sse"},
    }})
    loaded = read_project(tmp_path)
    assert [s.name for s in loaded.servers] == ["good"]
    text = "\n".join(loaded.problems)
    assert str(path) in text and "mcpServers.bad.args" in text and "'neither'" in text
    assert "'bad name!'" in text and "streamable HTTP" in text
    assert "hidden-value-123" not in text


@pytest.mark.req("REQ-MCP-008")
def test_a_file_that_is_not_json_or_too_big_or_a_symlink_out_is_one_problem(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", "{not json")
    assert "not valid JSON" in read_project(tmp_path).problems[0]
    write(tmp_path / ".mcp.json", " " * (limits.MCP_CONFIG.max_bytes + 1))
    assert "limit" in read_project(tmp_path).problems[0]
    write(tmp_path / ".mcp.json", "[" * 200 + "]" * 200)
    assert read_project(tmp_path).servers == [] and read_project(tmp_path).problems
    outside = write(tmp_path.parent / f"{tmp_path.name}-outside.json", {"mcpServers": {"x": {"command": "x"}}})
    (tmp_path / ".mcp.json").unlink()
    os.symlink(outside, tmp_path / ".mcp.json")
    loaded = read_project(tmp_path)
    assert loaded.servers == [] and "cannot be read" in loaded.problems[0]
    assert read_project(tmp_path / "nowhere").servers == []


@pytest.mark.req("REQ-MCP-008")
def test_the_user_level_file_and_the_order_of_the_sources(tmp_path: Path) -> None:
    write(tmp_path / "config" / "mcp.json", {"mcpServers": {"records": {"command": "mine"},
                                                            "tracker": {"command": "user"}}})
    user = read_user(tmp_path / "config")
    assert [s.origin for s in user.servers] == ["user", "user"] and not user.servers[0].project
    assert read_user(tmp_path / "none").servers == []
    write(tmp_path / "work" / ".mcp.json", {"mcpServers": {"tracker": {"command": "theirs"}}})
    project = read_project(tmp_path / "work")
    merged = merge([user.servers, project.servers], {"records": "the registry (PHOENIX_MCP_REGISTRY)"})
    assert [(s.name, s.origin) for s in merged.servers] == [("tracker", "user")]
    assert len(merged.problems) == 2 and "registry" in merged.problems[0] and "theirs" not in merged.problems[1]


@pytest.mark.req("REQ-MCP-009")
def test_the_consent_hash_covers_the_values_the_folder_and_the_name(tmp_path: Path) -> None:
    definition = {"command": "srv", "env": {"TOKEN": "a"}}
    base = digest(tmp_path, "db", definition)
    assert base == digest(tmp_path, "db", {"env": {"TOKEN": "a"}, "command": "srv"})  # canonical: key order
    assert base != digest(tmp_path, "db", {"command": "srv", "env": {"TOKEN": "b"}})
    assert base != digest(tmp_path / "other", "db", definition)
    assert base != digest(tmp_path, "db2", definition)


@pytest.mark.req("REQ-MCP-010")
def test_the_registry_file_cannot_carry_inline_secrets() -> None:
    with pytest.raises(ValueError, match="secretsRef"):
        McpRegistry.model_validate({"servers": {"x": {"command": ["x"], "inlineSecrets": {"T": "v"}}}})
