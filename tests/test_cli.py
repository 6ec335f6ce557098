"""The phoenix-lsp command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.req("REQ-PROTO-036")
def test_doctor_reports_protections_data_directory_and_model_but_never_the_key(tmp_path: Path) -> None:
    key = "sk-ant-doctor-secret-0123456789"
    env = {**os.environ, "ANTHROPIC_API_KEY": key, "PHOENIX_LSP_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "Landlock: ABI" in text and "seccomp" in text and "Restricted mode: available" in text
    assert f"data directory: {tmp_path}" in text
    assert "model: " in text and "ANTHROPIC_API_KEY: set" in text
    assert key not in text


@pytest.mark.req("REQ-PROTO-036", "REQ-PROTO-034")
def test_doctor_shows_the_settings_a_server_started_here_would_use(tmp_path: Path) -> None:
    env = {**os.environ, "PHOENIX_LSP_DATA_DIR": str(tmp_path), "PHOENIX_MODEL": "claude-opus-4-1",
           "PHOENIX_BACKGROUND_TIMEOUT_S": "soon"}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "model: claude-opus-4-1" in out.stdout
    [problem] = [line for line in out.stdout.splitlines() if line.startswith("setting: ")]
    assert "PHOENIX_BACKGROUND_TIMEOUT_S='soon'" in problem and "one hour" in problem


def test_help_lists_the_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "--help"], capture_output=True, text=True, timeout=60)
    for command in ("serve", "chat", "doctor", "sandbox"):
        assert command in out.stdout


@pytest.mark.req("REQ-INSTR-003")
def test_doctor_lists_the_instructions_files_a_conversation_here_would_get(tmp_path: Path) -> None:
    repo, config = tmp_path / "repo", tmp_path / "config"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    config.mkdir()
    (config / "AGENTS.md").write_text("mine")
    (repo / "AGENTS.md").write_text("ours")
    (repo / "src" / "CLAUDE.md").write_bytes(b"\xff\xfe")
    env = {**os.environ, "PHOENIX_CONFIG_DIR": str(config)}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=60, cwd=repo / "src")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    start = lines.index("instructions (farthest first):")
    assert lines[start + 1:start + 4] == [
        f"  {config / 'AGENTS.md'} (4 bytes)",
        f"  {repo / 'AGENTS.md'} (4 bytes)",
        f"  {repo / 'src' / 'CLAUDE.md'}: skipped: it is not UTF-8 text; save it as UTF-8",
    ]


@pytest.mark.req("REQ-MODEL-010", "REQ-MODEL-011")
def test_doctor_shows_which_providers_are_configured_but_never_their_keys(tmp_path: Path) -> None:
    openai_key, azure_key, file_key = "sk-proj-doctor-0123456789", "azure-doctor-0123456789", "file-doctor-0123456789"
    providers = tmp_path / "providers.json"
    providers.write_text('{"providers": {"router": {"baseUrl": "https://llm.example.com/v1", '
                         '"apiKey": "env:ROUTER_KEY"}, "broken": {"baseUrl": "ftp://x"}}}')
    env = {**os.environ, "PHOENIX_LSP_DATA_DIR": str(tmp_path), "OPENAI_API_KEY": openai_key,
           "AZURE_OPENAI_ENDPOINT": "https://res.example.com", "AZURE_OPENAI_API_KEY": azure_key,
           "OLLAMA_HOST": "127.0.0.1:1", "ROUTER_KEY": file_key, "PHOENIX_PROVIDERS": str(providers)}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "provider openai: openai at https://api.openai.com/v1, OPENAI_API_KEY set" in text
    assert "provider azure: azure at https://res.example.com, AZURE_OPENAI_API_KEY set" in text
    assert "provider ollama: ollama at http://127.0.0.1:1/v1" in text
    assert str(providers) in text and "providers.broken.baseUrl" in text  # the invalid file names itself
    for key in (openai_key, azure_key, file_key):
        assert key not in text
