"""Attack on the review of a running background command (REQ-BASH-045): a command that ignores SIGTERM and keeps
writing after the user asked for its review is never half-applied. The user first looks at its changes so far
(read-only: nothing lands), then asks to stop it: its tree is killed before its layer is read, and what the review
then accepts is the whole set it left. Real server, real LSP client, real launcher and overlay; the witnesses are
the disk and a log the command writes outside the workspace (not captured: it lands at once), naming each file
after the file is whole."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Buffers, session
from tests.e2e.test_approval import answer, approval_after
from tests.e2e.test_background_at_rest import background
from tests.e2e.test_background_review import launchers
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic
from tests.sandbox.capture import tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

BODY = "x" * 4096


def writer(outside: Path) -> str:
    """Ignores SIGTERM; writes f1.txt, f2.txt, ... whole (a temporary file renamed), each named in `outside` once
    it is whole."""
    return (f"trap '' TERM; i=0; while :; do i=$((i+1)); printf '{BODY}' > .t$i && mv .t$i f$i.txt && "
            f"echo f$i.txt >> {outside}; sleep 0.02; done")


@pytest.mark.req("REQ-BASH-045")
async def test_a_command_that_keeps_writing_after_the_review_was_asked_is_never_half_applied(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = tmp_path / "written.log"
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "kept.txt").write_text("the user's\n")
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        told, _ = await background(s, cid, writer(outside))
        pid = int(re.search(r"PID (\d+)", told).group(1))  # type: ignore[union-attr]
        await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "interactive"})
        # looking while it writes lands nothing, however often
        shown: dict[str, Any] = {}
        for _ in range(50):
            shown = await s.request("phoenix/reviewBackground", {"conversationId": cid, "pid": pid})
            assert tree_digest(w) == before, "a review shown while it runs applied something"
            if len(shown["commands"][0]["files"]) >= 5:
                break
        assert shown["commands"][0]["running"]
        mark = s.last_seq(cid)
        stopped = await s.request("phoenix/reviewBackground", {"conversationId": cid, "pid": pid, "stop": True})
        assert stopped["stopped"] == [pid]
        asked = await approval_after(s, cid, mark)
        assert asked["toolName"] == "patch"
        # the question is asked only once no process of it is left: it writes no more
        assert not launchers(s.pid) and not Path(f"/proc/{pid}").exists()
        written = outside.read_text().split()
        assert tree_digest(w) == before, "nothing lands before the answer"
        await answer(s, cid, asked["toolUseId"], "allow")
        await s.wait_event(lambda e: e["conversationId"] == cid and e["seq"] > asked["seq"] and e["kind"] == "message")
        on_disk = sorted((p.name for p in w.glob("f*.txt")), key=lambda n: int(n[1:-4]))
        # the whole set it left: every file it finished, in order from f1, each whole, nothing half-written
        assert on_disk == [f"f{i}.txt" for i in range(1, len(on_disk) + 1)]
        assert len(on_disk) in (len(written), len(written) + 1), (len(on_disk), len(written))
        assert all((w / name).read_text() == BODY for name in on_disk)
        assert not list(w.glob(".t*")) or len(list(w.glob(".t*"))) == 1
        assert (w / "kept.txt").read_text() == "the user's\n"
        assert outside.read_text().split() == written, "it wrote nothing after its review was asked"
