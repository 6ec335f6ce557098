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


def test_help_lists_the_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "--help"], capture_output=True, text=True, timeout=60)
    for command in ("serve", "chat", "doctor", "sandbox"):
        assert command in out.stdout
