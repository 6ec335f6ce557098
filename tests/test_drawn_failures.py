"""A failure pytest cannot draw is still reported as the test's failure (tests/drawn_failures.py, issue 35)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: A test that fails while every ``ast.parse`` raises what CPython 3.11.7 raises when two threads parse at once
#: (the race itself cannot be summoned on demand; its effect on pytest's drawing can).
FAILS_DURING_THE_RACE = '''
import ast

def _racing(*args, **kwargs):
    raise SystemError("AST constructor recursion depth mismatch (before=48, after=45)")

def test_fails_during_the_race():
    ast.parse = _racing
    assert 1 == 2, "the test's own failure"
'''

REPO = Path(__file__).resolve().parent.parent


def test_a_failure_whose_traceback_cannot_be_drawn_is_reported_in_an_xdist_worker(tmp_path: Path) -> None:
    (tmp_path / "test_racing.py").write_text(FAILS_DURING_THE_RACE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.drawn_failures", "-n", "1",
         "--tb=short", "-rf", "test_racing.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,  # a hang guard: it takes seconds
    )
    out = run.stdout + run.stderr
    assert "INTERNALERROR" not in out, out
    assert "1 failed" in out, out
    assert "FAILED test_racing.py::test_fails_during_the_race" in out, out
    assert "AssertionError: the test's own failure" in out, out
    assert "test_racing.py:9 in test_fails_during_the_race" in out, out  # the frames, drawn without source
