"""The agent route's files (REQ-AGENT-022): PHOENIX_MCP_REGISTRY, PHOENIX_CAPABILITIES, PHOENIX_BUDGETS and
PHOENIX_ARTIFACT_DIR are settings; the three files are read and validated together, and a bad one is
reported with its setting, its path and what is wrong, making only the agent route unavailable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.agent_config import AgentConfig, AgentConfigError, HttpServer, StdioServer, load_agent_config
from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server.config import Config, load

REGISTRY = {"servers": {
    "records": {"command": ["python", "-m", "records"], "args": ["--data", "r.json"], "env": {"MODE": "test"},
                "secretsRef": {"RECORDS_TOKEN": "env:RECORDS_TOKEN_SOURCE"}},
    "remote": {"url": "http://127.0.0.1:8123/mcp", "headers": {"X-Team": "a"},
               "secretsRef": {"Authorization": "env:REMOTE_AUTH"}},
}}
MANIFEST = {"allow": ["mcp://records/*"], "deny": ["mcp://records/crash"],
            "tools": {"mcp://records/search_records": {"kind": "read"}},
            "rateLimits": {"mcp://records/update_record": {"calls": 5, "windowS": 60}}}
BUDGETS = {"node": {"cpuS": 1.5, "maxToolCalls": 20}, "run": {"maxNodes": 8}}


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_nothing_configured_is_a_valid_route_with_no_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PHOENIX_MCP_REGISTRY", "PHOENIX_CAPABILITIES", "PHOENIX_BUDGETS", "PHOENIX_ARTIFACT_DIR"):
        monkeypatch.delenv(name, raising=False)
    loaded = load_agent_config(Config(), tmp_path)
    assert isinstance(loaded, AgentConfig)
    assert loaded.registry.servers == {} and loaded.manifest.allow == ()
    assert loaded.budgets.node.cpu_s == 2.0 and loaded.budgets.run.max_nodes == 16
    assert loaded.artifact_dir == tmp_path / "artifacts"


def test_the_three_files_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"PHOENIX_MCP_REGISTRY": str(write(tmp_path, "registry.json", REGISTRY)),
               "PHOENIX_CAPABILITIES": str(write(tmp_path, "capabilities.json", MANIFEST)),
               "PHOENIX_BUDGETS": str(write(tmp_path, "budgets.json", BUDGETS)),
               "PHOENIX_ARTIFACT_DIR": str(tmp_path / "store")}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    config, problems = load(InitializationOptions(), environ)
    assert problems == []
    loaded = load_agent_config(config, tmp_path / "data")
    assert isinstance(loaded, AgentConfig), loaded
    records, remote = loaded.registry.servers["records"], loaded.registry.servers["remote"]
    assert isinstance(records, StdioServer) and records.argv() == ["python", "-m", "records", "--data", "r.json"]
    assert isinstance(remote, HttpServer) and remote.secrets_ref == {"Authorization": "env:REMOTE_AUTH"}
    assert loaded.manifest.deny == ("mcp://records/crash",)
    assert loaded.manifest.rate_limits["mcp://records/update_record"].calls == 5
    assert loaded.budgets.node.cpu_s == 1.5 and loaded.budgets.node.max_tool_calls == 20
    assert loaded.budgets.run.max_nodes == 8 and loaded.budgets.run.wall_clock_s == 300.0
    assert loaded.artifact_dir == tmp_path / "store"
    assert loaded.warnings == ()


def test_a_command_may_be_one_string(tmp_path: Path) -> None:
    path = write(tmp_path, "registry.json", {"servers": {"s": {"command": "records-server"}}})
    loaded = load_agent_config(Config(mcp_registry=path), tmp_path)
    assert isinstance(loaded, AgentConfig)
    assert loaded.registry.servers["s"].argv() == ["records-server"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("setting", "field", "content", "why"), [
    ("PHOENIX_MCP_REGISTRY", "mcp_registry", "{not json", "is not valid JSON"),
    ("PHOENIX_MCP_REGISTRY", "mcp_registry", {"servers": {"s": {"url": "ftp://x"}}}, "servers.s.http.url"),
    ("PHOENIX_MCP_REGISTRY", "mcp_registry", {"servers": {"s": {}}}, "needs either a command"),
    ("PHOENIX_MCP_REGISTRY", "mcp_registry", {"servers": {"s": {"command": "x", "evn": {}}}}, "evn"),
    ("PHOENIX_CAPABILITIES", "capabilities", {"allow": ["records.update"]}, "not a tool URI pattern"),
    ("PHOENIX_CAPABILITIES", "capabilities", [], "valid CapabilityManifest"),
    ("PHOENIX_BUDGETS", "budgets", {"node": {"cpuS": -1}}, "node.cpuS"),
    ("PHOENIX_BUDGETS", "budgets", "\xff", "valid JSON"),
])
def test_an_invalid_file_names_its_setting_path_and_error(tmp_path: Path, setting: str, field: str,
                                                          content: Any, why: str) -> None:
    path = write(tmp_path, "file.json", content)
    loaded = load_agent_config(Config.model_validate({field: path}), tmp_path)
    assert isinstance(loaded, AgentConfigError), loaded
    assert loaded.setting == setting and loaded.path == path and why in loaded.message
    described = loaded.describe()
    assert setting in described and str(path) in described and "ask route still works" in described


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    loaded = load_agent_config(Config(capabilities=tmp_path / "absent.json"), tmp_path)
    assert isinstance(loaded, AgentConfigError)
    assert loaded.setting == "PHOENIX_CAPABILITIES" and "cannot be read" in loaded.message


def test_a_secret_pasted_into_the_registry_is_refused_and_not_echoed(tmp_path: Path) -> None:
    secret = "sk-live-7a1b2c3d4e5f"
    path = write(tmp_path, "registry.json", {"servers": {"s": {"command": "x", "secretsRef": {"TOKEN": secret}}}})
    loaded = load_agent_config(Config(mcp_registry=path), tmp_path)
    assert isinstance(loaded, AgentConfigError) and "env:NAME" in loaded.message
    assert secret not in loaded.describe() and secret not in repr(loaded)


def test_a_manifest_naming_an_unknown_server_is_a_warning(tmp_path: Path) -> None:
    registry = write(tmp_path, "registry.json", REGISTRY)
    manifest = write(tmp_path, "capabilities.json", {"allow": ["mcp://records/*", "mcp://jira/*", "mcp://*/x"]})
    loaded = load_agent_config(Config(mcp_registry=registry, capabilities=manifest), tmp_path)
    assert isinstance(loaded, AgentConfig)
    assert len(loaded.warnings) == 1 and "'jira'" in loaded.warnings[0]


def test_the_settings_are_listed_with_their_variables() -> None:
    for field in ("mcp_registry", "capabilities", "budgets", "artifact_dir"):
        assert field in Config.model_fields and Config.model_fields[field].default is None
