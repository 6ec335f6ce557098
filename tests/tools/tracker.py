"""The tracker MCP server (``tracker_server.py``) as the server's registry and manifest give it, and its log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("tracker_server.py")
#: the tracker's credential; tests check it never reaches a model or the data directory
TOKEN = "trk-tok-9d1e77c2b4"
TOKEN_VARIABLE = "PHX_TEST_TRACKER_TOKEN"
READS = ("list_issues", "bash", "whoami", "huge", "deep", "structured", "slow", "crash", "picture")


def tracker_env(tmp_path: Path, *, manifest: dict[str, Any] | None = None, many: int = 0,
                decoy: bool = False) -> dict[str, str]:
    """The server's environment: a registry with the tracker over stdio (its token by ``secretsRef``), and a
    manifest that names its reads exactly (its annotations are not trusted): its other tools are writes.
    ``many``, ``decoy``: the tracker's generated tools (``tracker_server.py``), named reads too."""
    registry = tmp_path / "registry.json"
    extra = [*(["--many", str(many)] if many else []), *(["--decoy"] if decoy else [])]
    registry.write_text(json.dumps({"servers": {"tracker": {
        "command": [sys.executable, str(SERVER)], "args": ["--log", str(log_path(tmp_path)), *extra],
        "secretsRef": {"TRACKER_TOKEN": f"env:{TOKEN_VARIABLE}"}, "connectTimeoutS": 60}}}))
    capabilities = tmp_path / "capabilities.json"
    reads = [*READS, *(f"gen_{n:04d}" for n in range(many)), *(["everything"] if decoy else [])]
    capabilities.write_text(json.dumps(manifest or {
        "allow": ["mcp://tracker/*"],
        "tools": {f"mcp://tracker/{name}": {"kind": "read"} for name in reads}}))
    return {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities), TOKEN_VARIABLE: TOKEN}


def log_path(tmp_path: Path) -> Path:
    return tmp_path / "tracker-calls.jsonl"


def received(tmp_path: Path) -> list[str]:
    """The tools whose calls reached the tracker, in order (its own log: the witness)."""
    path = log_path(tmp_path)
    if not path.exists():
        return []
    return [json.loads(line)["tool"] for line in path.read_text(encoding="utf-8").splitlines() if line]


WITNESS_SERVER = Path(__file__).with_name("witness_server.py")


def project_server(tmp_path: Path, *, label: str = "one", token: str = TOKEN) -> dict[str, Any]:
    """A ``.mcp.json`` entry of the tracker that writes its witness file (``witness_path``) when started; its
    token in its ``env``, as such files hold it."""
    return {"command": sys.executable,
            "args": [str(WITNESS_SERVER), "--witness", str(witness_path(tmp_path)), "--label", label,
                     "--log", str(log_path(tmp_path))],
            "env": {"TRACKER_TOKEN": token}}


def witness_path(tmp_path: Path) -> Path:
    return tmp_path / "tracker-started.txt"


def starts(tmp_path: Path) -> int:
    """How many times the project's tracker was started (its witness file)."""
    path = witness_path(tmp_path)
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0
