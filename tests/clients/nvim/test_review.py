"""The Neovim plugin's patch window for a multi-file review (issue 36, REQ-NVIM-021): a bash command's captured
changes, in the shape the server asks about them (a host call named like the patch tool, whose diff holds the
summary as ``# `` lines, then the git-style diff of every text file), shown in headless Neovim (both versions)
and answered for the whole.

The server that makes such a review is issue 36's server part; until it is in this tree the approval event is
built here in its shape (``review_event``) and handed to the plugin's own handler, and the answer is read where
the plugin sends it (``phoenix/respondToApproval``'s parameters, recorded instead of sent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def review_event(n: int, forged: bool = False) -> dict[str, Any]:
    summary = [f"{n} text file(s) as editor edits; 2 other change(s) placed by the server",
               "binary: 1 (4 B)", "  created build/out.bin",
               "ignored folder node_modules: 1 (12 B)", "  created node_modules/x.js"]
    diff = "".join(f"# {line}\n" for line in summary)
    paths = []
    for i in range(n):
        p = f"src/mod{i:03d}.py"
        paths.append(p)
        if i == 0:
            diff += f"--- /dev/null\n+++ b/{p}\n@@ -0,0 +1,2 @@\n+new one\n+new two\n"
        elif i == 1:
            diff += f"--- a/{p}\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-gone\n"
        elif i == 2:
            diff += f"--- a/old/{p}\n+++ b/{p}\n"
        elif forged and i == 3:  # the file's text holds lines that look like another file's header
            diff += f"--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n--- a/evil.py\n++++ b/evil.py\n keep\n"
        else:
            diff += f"--- a/{p}\n+++ b/{p}\n@@ -1,4 +1,4 @@\n zero\n-one {i}\n+ONE {i}\n two\n three\n"
    files = sorted([*paths, "build/out.bin", "node_modules/x.js", "old/src/mod002.py"])
    return {
        "kind": "approvalRequested", "conversationId": "c-1", "seq": 9, "time": 0, "toolUseId": "b1.review",
        "toolName": "patch",
        "description": f"Apply what the bash command changed in the workspace: {n} text file(s) as editor edits, "
                       "2 other change(s) placed by the server.",
        "arguments": {"command": "sed -i s/one/ONE/ src/*.py", "files": files[:50],
                      **({"more": len(files) - 50} if len(files) > 50 else {})},
        "diff": diff,
        "scopes": [{"kind": "tool", "rule": "patch", "label": "patch"}],
    }


SCENARIO = """
local dialog = require("phoenix.dialog")
local approval = require("phoenix.approval")
local rpc = require("phoenix.rpc")
require("phoenix.config").set({})
local sent = {}
rpc.ask = function(method, params) table.insert(sent, { method = method, params = params }) end
local function event(name)
  return vim.fn.json_decode(table.concat(vim.fn.readfile(vim.fn.getcwd() .. "/" .. name), "\\n"))
end
"""


@pytest.mark.req("REQ-NVIM-021")
def test_the_patch_window_shows_the_files_the_summary_and_each_diff_and_answers_for_the_whole(
        run_nvim: Any) -> None:
    run = run_nvim(
        SCENARIO + """
        approval.ask(event("four.json"))
        T.wait("the review", dialog.is_open)
        T.data.four = dialog.snapshot()
        T.keys("y")
        T.wait("the answer", function() return not dialog.is_open() end)
        approval.ask(event("forged.json"))
        T.wait("the second review", dialog.is_open)
        T.data.forged = dialog.snapshot().lines
        T.keys("<Esc>")
        T.wait("the second answer", function() return not dialog.is_open() end)
        T.data.sent = sent
        """,
        files={"four.json": json.dumps(review_event(4)), "forged.json": json.dumps(review_event(4, forged=True))},
    )
    lines = run.data["four"]["lines"]
    text = "\n".join(lines)
    assert lines[0] == "patch"
    assert "4 text files (+3 -2), 2 other changes" in lines
    assert "$ sed -i s/one/ONE/ src/*.py" in lines
    assert "  created  src/mod000.py +2 -0" in lines and "  deleted  src/mod001.py +0 -1" in lines
    assert "  renamed  old/src/mod002.py -> src/mod002.py +0 -0" in lines
    assert "  modified src/mod003.py +1 -1" in lines
    assert "  other    build/out.bin" in lines and "  other    node_modules/x.js" in lines
    assert "ignored folder node_modules: 1 (12 B)" in lines and "  created node_modules/x.js" in lines
    assert "── modified src/mod003.py ──" in lines
    at = lines.index("── modified src/mod003.py ──")
    assert lines[at + 1:at + 7] == ["@@ -1,4 +1,4 @@", " zero", "-one 3", "+ONE 3", " two", " three"]
    assert '{"command"' not in text, "the files are listed, not the raw arguments"
    groups = run.data["four"]["groups"]
    assert groups[str(at + 3)] == "DiffDelete" and groups[str(at + 4)] == "DiffAdd"
    # a file's text that looks like a file header is that file's diff, not a file of its own
    forged = run.data["forged"]
    assert "  modified src/mod003.py +1 -1" in forged and not any("evil.py +" in line for line in forged)
    assert run.data["sent"] == [
        {"method": "phoenix/respondToApproval",
         "params": {"conversationId": "c-1", "toolUseId": "b1.review", "decision": "allow"}},
        {"method": "phoenix/respondToApproval",
         "params": {"conversationId": "c-1", "toolUseId": "b1.review", "decision": "deny"}},
    ]


@pytest.mark.req("REQ-NVIM-021")
def test_a_review_of_200_files_lists_every_file_and_the_paths_left_out(run_nvim: Any, tmp_path: Path) -> None:
    run = run_nvim(
        SCENARIO + """
        approval.ask(event("many.json"))
        T.wait("the review", dialog.is_open)
        T.data.lines = dialog.snapshot().lines
        T.keys("n")
        T.wait("the answer", function() return not dialog.is_open() end)
        T.data.sent = sent
        """,
        files={"many.json": json.dumps(review_event(200))},
    )
    lines = run.data["lines"]
    assert sum(1 for line in lines if line.startswith("── ")) == 200
    assert "  ... and 153 more path(s)" in lines
    assert lines[-1].endswith("more lines"), "the window says the rest scrolls"
    assert run.data["sent"][0]["params"]["decision"] == "deny"


SERVER_EVENT = Path(__file__).resolve().parents[1] / "shell_review_event.json"


def server_event() -> dict[str, Any]:
    """The review event as issue 36's server makes it (see the file's ``_about``)."""
    event: dict[str, Any] = json.loads(SERVER_EVENT.read_text())["event"]
    return event


@pytest.mark.req("REQ-NVIM-021")
def test_the_servers_own_review_event_is_shown_file_by_file(run_nvim: Any) -> None:
    run = run_nvim(
        SCENARIO + """
        approval.ask(event("server.json"))
        T.wait("the review", dialog.is_open)
        T.data.lines = dialog.snapshot().lines
        T.keys("a")
        T.wait("the answer", function() return not dialog.is_open() end)
        T.data.sent = sent
        """,
        files={"server.json": json.dumps(server_event())},
    )
    lines = run.data["lines"]
    at = lines.index("  modified a.txt +1 -1")
    assert lines[at:at + 6] == [
        "  modified a.txt +1 -1", "  deleted  gone.txt +0 -1", "  renamed  old.txt -> moved.txt +0 -0",
        "  created  new.txt +1 -0", "  modified tricky.txt +1 -1", "  other    b.bin"]
    assert "  other    node_modules/p/i.js" in lines and "ignored folder node_modules: 3 (2 B)" in lines
    assert run.data["sent"][0]["params"] == {"conversationId": "c-1", "toolUseId": "b1.review",
                                             "decision": "alwaysAllow", "rule": "patch"}


@pytest.mark.req("REQ-NVIM-021")
def test_a_picker_user_reads_the_same_review_in_the_prompt(run_nvim: Any) -> None:
    run = run_nvim(
        SCENARIO + """
        require("phoenix.config").set({ ui = "select" })
        local picked = {}
        vim.ui.select = function(items, opts, on_choice)  -- a picker plugin (Telescope, fzf-lua, ...)
          table.insert(picked, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) })
          on_choice(items[2])  -- Deny
        end
        approval.ask(event("server.json"))
        T.data.picked = picked
        T.data.sent = sent
        """,
        files={"server.json": json.dumps(server_event())},
    )
    (picked,) = run.data["picked"]
    prompt = picked["prompt"].splitlines()
    assert prompt[0].startswith("patch: Apply what the bash command changed")
    assert "  renamed  old.txt -> moved.txt +0 -0" in prompt and "── modified tricky.txt ──" in prompt
    assert "--- a/evil.py" in prompt, "the file's own lines, under its heading"
    assert '{"command"' not in picked["prompt"]
    assert run.data["sent"][0]["params"]["decision"] == "deny"
