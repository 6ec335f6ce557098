"""Attack on what the Neovim plugin's user approves: a patch whose changed lines look like a diff's file
headers. The removed line ``-- the guard below must stay`` (a Lua or SQL comment) is the diff line
``--- the guard below must stay``; the added ``++ b/evil`` is ``+++ b/evil``. The dialog dropped every line that
began so, taking them for headers: the user approved a removal they never saw, and the line counts above the
diff left it out. Issue 36's multi-file review reads the hunks by their own line counts; the patch window now
does too.

Real headless Neovim (both supported versions), the real plugin and server, the fake Anthropic API. The
witnesses: what the dialog holds (what the user could read) and the file the denied patch leaves as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.nvim import conftest as nvim_fixtures
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.security.test_approval_nvim import START

pytestmark = pytest.mark.slow  # headless Neovim, the plugin and the server

nvim = nvim_fixtures.nvim
run_nvim = nvim_fixtures.run_nvim

SOURCE = "local x = 1\n-- the guard below must stay\nguard()\n"


@pytest.mark.req("REQ-NVIM-021", "REQ-PERM-023")
def test_a_removed_comment_line_that_looks_like_a_header_is_shown_and_counted(
    fake_anthropic: FakeAnthropic, run_nvim: Any, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("patch", {"path": "guard.lua", "patches": [
            {"operation": "replace", "oldText": "-- the guard below must stay\n", "newText": "++ b/evil\n"}]})),
        Reply.text_reply("left it"),
    )
    run = run_nvim(START % "" + """
        phoenix.send("tidy guard.lua")
        T.wait("the approval dialog", dialog.is_open)
        T.data.lines = dialog.snapshot().lines
        T.keys("n")
        T.wait("the turn", function() return not dialog.is_open() and T.chat_text():find("left it", 1, true) end)
        """, files={"guard.lua": SOURCE})
    lines = run.data["lines"]
    assert "--- the guard below must stay" in lines, "the removal the user approves is on the screen"
    assert "+++ b/evil" in lines
    assert "guard.lua: 1 change, 1 line added, 1 removed" in lines
    assert (run.workdir / "guard.lua").read_text() == SOURCE
