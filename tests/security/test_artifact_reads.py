"""Attacks with witnesses outside phoenix-lsp on how the agent route's files are read (issue 24): a FIFO planted
in the artifact directory, or named as an agent settings file, must be refused, not waited on (the server
would stop answering everything). The witness: the call returns."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.artifacts import ArtifactNotFound, ArtifactStore


def _returns_within(seconds: float, work: Any) -> tuple[bool, Any]:
    """Run `work` in a daemon thread; (it returned, its result or exception). A hang is for ever: the bound
    is generous, it only ends the test."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(_outcome(work)), daemon=True)
    thread.start()
    thread.join(seconds)
    return (not thread.is_alive(), box[0] if box else None)


def _outcome(work: Any) -> Any:
    try:
        return work()
    except Exception as exc:
        return exc


@pytest.mark.req("REQ-READ-003")
@pytest.mark.parametrize("kind", ["text", "json"])
def test_a_fifo_planted_as_an_artifact_file_is_refused_not_waited_on(tmp_path: Path, kind: str) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    handle = store.put("a large result" if kind == "text" else {"rows": 1})
    path = tmp_path / "artifacts" / f"{handle.handle.removeprefix('artifact://')}.{kind}"
    path.unlink()
    os.mkfifo(path)
    returned, result = _returns_within(30, lambda: store.get(handle))
    if not returned:  # unblock the thread, so the test run can end
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    assert returned, "reading the artifact waited on a FIFO (the server would hang)"
    assert isinstance(result, ArtifactNotFound)


@pytest.mark.req("REQ-READ-003")
@pytest.mark.parametrize("field", ["capabilities", "mcp_registry", "budgets"])
def test_a_fifo_named_as_an_agent_settings_file_is_refused_not_waited_on(tmp_path: Path, field: str) -> None:
    """The server loads these at start-up: a FIFO there (or a path to one) would keep it from ever answering."""
    from phoenix_lsp.agent.agent_config import AgentConfigError, load_agent_config
    from phoenix_lsp.server.config import Config

    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    returned, result = _returns_within(30, lambda: load_agent_config(Config.model_validate({field: fifo}), tmp_path))
    if not returned:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # unblock the thread, so the run can end
    assert returned, "loading the agent settings waited on a FIFO"
    assert isinstance(result, AgentConfigError) and "not a regular file" in result.message
