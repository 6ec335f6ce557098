"""The harness of ``phoenix-lsp run``'s tests: the real command in a subprocess, as a CI job runs it, against the fake
Anthropic API (a FAKE: the real one is out of reach here)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.zygote import launch_command
from tests.fake_anthropic import FakeAnthropic

API_KEY = "sk-ant-run-test-key-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "specs" / "protocol.schema.json").read_text(encoding="utf-8"))


def validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator of one top-level part of the protocol's schema (``runResult``, ``runStreamLine``)."""
    return jsonschema.Draft202012Validator({**SCHEMA["properties"][name], "$defs": SCHEMA["$defs"]})


class Runner:
    """``python -m phoenix_lsp run`` in ``work`` with its data in ``data``."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.work = tmp_path / "work"
        self.work.mkdir(exist_ok=True)
        self.data = tmp_path / "data"
        self.env = env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "phoenix_lsp", "run", "--cwd", str(self.work), "--data-dir", str(self.data),
                *args]

    def __call__(self, *args: str, stdin: bytes | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """Run to its end; stdin is /dev/null unless given (as a CI job without a terminal). The run is forked by
        this worker's zygote (tests/e2e/zygote_launch.py: the same command, its arguments, environment, folder,
        stdio and exit status, without seconds of imports); ``start`` keeps a fresh interpreter, whose process
        its tests signal and whose process tree they read."""
        argv, env = self.argv(*args), self.env
        launch = launch_command()
        if launch is not None:
            argv, env = [*launch[0], *argv[3:]], {**env, **launch[1]}
        done = subprocess.run(argv, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                              capture_output=True, env=env, cwd=self.work, timeout=timeout)
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8"),
                                           done.stderr.decode("utf-8"))

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, cwd=self.work)

    def stored_events(self, conversation_id: str) -> list[dict[str, Any]]:
        """The events the store holds for a conversation, read by SQLite itself."""
        with sqlite3.connect(self.data / "phoenix.db") as db:
            rows = db.execute("SELECT json FROM events WHERE conversation_id = ? ORDER BY seq",
                              (conversation_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]


@pytest.fixture
def run_env(fake_anthropic: FakeAnthropic, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    return {**env, **fake_anthropic.env(API_KEY), "PHOENIX_RETRY_BASE_MS": "20", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def run(tmp_path: Path, run_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    return Runner(tmp_path, run_env)


def lines(stdout: str) -> list[dict[str, Any]]:
    """stdout as JSON lines, each checked against the schema's ``runStreamLine``."""
    check = validator("runStreamLine")
    parsed = [json.loads(line) for line in stdout.splitlines()]
    for line in parsed:
        check.validate(line)
    return parsed


def result(stdout: str) -> dict[str, Any]:
    """The one result object of ``--output-format json``, checked against the schema's ``runResult``."""
    value = json.loads(stdout)
    validator("runResult").validate(value)
    assert isinstance(value, dict)
    return value
