"""``phoenix-lsp doctor`` prints what a server started here would use, and its output is pasted into bug reports:
the credentials a URL carries (a password in ``ANTHROPIC_BASE_URL``'s userinfo, a token in a providers file's
``baseUrl`` query) are secrets (REQ-SEC-012), and a repository's files name things doctor shows (an instruction
file, an MCP server), so what it prints passes the one redaction and the one sanitiser every log line passes
(REQ-SEC-042, REQ-SEC-004). The real command in a subprocess; its stdout and stderr are the witnesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PASSWORD = "doctor-url-pass-7d41c0"
TOKEN = "doctor-query-token-93be2f"


@pytest.mark.req("REQ-SEC-042", "REQ-SEC-004")
def test_doctor_prints_no_url_credential_and_no_control_sequence(tmp_path: Path) -> None:
    providers = tmp_path / "providers.json"
    providers.write_text(json.dumps({"providers": {"router": {
        "baseUrl": f"https://llm.example.invalid/v1?api-key={TOKEN}", "apiKey": "env:ROUTER_KEY"}}}))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("ours")
    hostile = repo / "sub\x1b]52;c;cm0gLXJmIH4=\x07dir"  # a folder name a repository chose, shown by doctor
    hostile.mkdir()
    (hostile / "AGENTS.md").write_text("theirs")
    env = {**os.environ, "PHOENIX_LSP_DATA_DIR": str(tmp_path / "data"), "PHOENIX_CONFIG_DIR": str(tmp_path / "c"),
           "ANTHROPIC_BASE_URL": f"https://phoenix:{PASSWORD}@api.example.invalid", "OLLAMA_HOST": "127.0.0.1:1",
           "PHOENIX_PROVIDERS": str(providers)}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=120, cwd=hostile)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "ANTHROPIC_BASE_URL: " in text and "api.example.invalid" in text and "llm.example.invalid" in text
    assert PASSWORD not in text, "the base URL's password was printed"
    assert TOKEN not in text, "the providers file's URL token was printed"
    assert "AGENTS.md" in text and "␛]52" in text, text
    assert "\x1b" not in text and "\x07" not in text, "a control sequence a repository chose reached the terminal"
