"""A process killed with SIGKILL right after a store method returns loses nothing it wrote (REQ-BED-007)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import phoenix_lsp
from phoenix_lsp.store import Store
from tests.store.durability_writer import message

pytestmark = pytest.mark.slow  # writers killed mid-transaction, many times

WRITER = Path(__file__).with_name("durability_writer.py")
REPO_ROOT = Path(phoenix_lsp.__file__).resolve().parent.parent
ROUNDS = 8


def _run_and_kill(db_path: Path, prefix: str, seed: int, kill_after: int) -> list[list[str]]:
    """Run the writer and SIGKILL it right after its ``kill_after``-th report, while it is in its next write."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("ANTHROPIC_API_KEY", None)
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(db_path), prefix, str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        ready = child.stdout.readline()
        assert ready == b"ready\n", child.stderr.read() if child.stderr else ready
        # The moment of the kill is the writer's own report (an event), not a guess at how fast it writes:
        # each round kills at a different point of the write cycle, on any machine.
        seen = [child.stdout.readline() for _ in range(kill_after)]
        child.send_signal(signal.SIGKILL)
        out = b"".join(seen) + child.stdout.read()  # the rest, to EOF: reports written before the kill
        err = child.stderr.read()
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, err.decode()
    # Each report is one os.write of a short line (atomic on a pipe); a line without its newline
    # would mean a torn report, which we then ignore rather than trust.
    return [line.split() for line in out.decode().split("\n")[:-1]]


@pytest.mark.req("REQ-BED-007")
@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_sigkill_at_random_moments_loses_no_reported_write(tmp_path: Path) -> None:
    db_path = tmp_path / "phoenix.db"
    rng = random.Random(20240611)
    total_reports = 0
    for round_no in range(ROUNDS):
        # The same database across rounds: each round also starts from a file left by a killed writer.
        reports = _run_and_kill(db_path, f"r{round_no}", rng.randrange(1 << 30), rng.randrange(1, 240))
        total_reports += len(reports)
        with Store(db_path) as store:
            assert store.check_integrity() == []
            for kind, *fields in reports:
                if kind == "conv":
                    assert store.exists(fields[0])
                elif kind == "msgs":
                    cid, count = fields[0], int(fields[1])
                    stored = store.load_messages(cid, limit=count)
                    assert stored == [(i, message(cid, i)) for i in range(count)]
                elif kind == "state":
                    state = store.load(fields[0]).state_json
                    assert state is not None
                    # A later, unreported save may have replaced it, never an older one.
                    assert json.loads(state)["count"] >= int(fields[1])
                elif kind == "event":
                    cid, seq = fields[0], int(fields[1])
                    assert store.events_after(cid, seq - 1, limit=1) == [(seq, json.dumps({"seq": seq}))]
                elif kind == "audit":
                    [entry] = store.query_audit(None, after_id=int(fields[0]) - 1, limit=1)
                    assert entry.id == int(fields[0])
                elif kind == "image":
                    data, media_type = store.get_image(fields[0])
                    assert (hashlib.sha256(data).hexdigest(), media_type) == (fields[0], "image/png")
                else:
                    raise AssertionError(f"unknown report {kind!r}")
    # The kills really happened while writes were flowing.
    assert total_reports > ROUNDS * 5
