"""A transcript is rewritten through a fresh temporary file: a symlink planted under a fixed temporary name
(another local process, or a careless tool) never redirects the write (REQ-PROTO-039, REQ-READ-001)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.server import transcript


@pytest.mark.req("REQ-PROTO-039")
def test_a_planted_partial_symlink_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    path = transcript.transcript_path(tmp_path / "data", "c1")
    path.parent.mkdir(parents=True)
    (path.parent / f".{path.name}.partial").symlink_to(victim)  # the name the old code wrote to
    transcript.write(path, "# the transcript\n")
    assert victim.read_text() == "keep me\n"  # the witness: the file the link led to is untouched
    assert path.read_text() == "# the transcript\n" and not path.is_symlink()


@pytest.mark.req("REQ-PROTO-039")
def test_a_transcript_that_is_a_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    path = transcript.transcript_path(tmp_path / "data", "c2")
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    transcript.write(path, "# the transcript\n")
    assert victim.read_text() == "keep me\n"
    assert path.read_text() == "# the transcript\n" and not path.is_symlink()
