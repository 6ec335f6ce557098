"""Attacks with witnesses outside phoenix-lsp on how artifact files are read (issue 24): a FIFO planted in the
artifact directory must be refused, not waited on (the server would stop answering everything)."""

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
