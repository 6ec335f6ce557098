"""Shell changes reviewed and undone in a REAL VS Code (issue 36): code-server in Chromium, the packaged
extension, the real server with a real kernel overlay, the fake Anthropic server scripting the bash calls, an
Unrestricted + interactive conversation. One code-server start for every case, in order:

A. a command that edits, creates, deletes and renames files and builds into node_modules/: the dialog shows
   the multi-file review (each file with its diff, the summary of the rest); Allow -> the disk equals what the
   same command produces run as today on a copy of the folder, and the open editor shows the changed text;
B. undo of that accepted change set from the palette ("Phoenix: Undo Last Change Set"): the bytes of before;
C. a rejected review: the folder is byte-identical (every entry's kind, mode and bytes);
D. editor changes made while the review is open (one left unsaved, one saved): those files are refused with a
   note the chat view shows, the user's text is kept, the rest lands;
E. `git commit`: reviewed (`.git` in the summary), allowed, and `git log` shows the commit;
F. the same command as A once more, allowed: the workbench's own Undo (Ctrl+Z in the changed document) gives
   its old text back (last: VS Code's undo of the edit also takes back its file operations on disk, so the
   cases above must not follow it).

The witnesses are outside the server: the disk, the editor's documents (the probe extension), the page.
VS Code's git extension is switched off in the settings: its background `git status` rewrites .git/index
while the workbench runs, which the review would rightly report as a change made meanwhile (case E).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.clients.vscode_real.chat import TOOL_CARD, UNRESTRICTED, Chat, phoenix_settings
from tests.clients.vscode_real.rig import Rig, extension_id, package_extension, start_rig
from tests.clients.vscode_real.scenario import _text_of
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import run_plain, tree_digest

SUPPORT = overlay.overlay_support()
API_KEY = "sk-ant-real-vscode-review-0123456789"
REVIEW = "[data-testid=approval-dialog][data-open=true] [data-testid=review]"

A_TXT = "zero\none\ntwo\n"
FILES = {"a.txt": A_TXT, "gone.txt": "bye\n", "old.txt": "kept text\n", "c.txt": "first\nsecond\n",
         "s.txt": "alpha\nbeta\n", "e.txt": "untouched\n"}

EDIT = ("sed -i s/one/ONE/ a.txt && echo new > new.txt && rm gone.txt && mv old.txt moved.txt"
        " && mkdir -p node_modules/pkg && printf 'module.exports = 1;\\n' > node_modules/pkg/index.js")
REJECT = "sed -i s/untouched/CHANGED/ e.txt && echo never > never.txt"
CONFLICT = "sed -i s/second/SECOND/ c.txt && sed -i s/beta/BETA/ s.txt && echo lands > lands.txt"
COMMIT = ("git add c.txt s.txt lands.txt"
          " && git -c user.name=Phoenix -c user.email=phoenix@example.invalid commit -q -m 'reviewed commit'")

ASK_HELLO = "Hello, are you there?"
ASK_EDIT = "Run the edit script."
ASK_REJECT = "Run the rejected script."
ASK_CONFLICT = "Run the conflicting script."
ASK_COMMIT = "Commit the work with git."
DONE = {ASK_EDIT: "The edit script ran.", ASK_REJECT: "The rejected script ran.",
        ASK_CONFLICT: "The conflicting script ran.", ASK_COMMIT: "The commit is made."}
COMMANDS = {ASK_EDIT: EDIT, ASK_REJECT: REJECT, ASK_CONFLICT: CONFLICT, ASK_COMMIT: COMMIT}


def _script(prompt: str) -> list[Callable[[], Reply]]:
    return [lambda: Reply.tool_reply(ToolUseBlock("bash", {"command": COMMANDS[prompt]}), text="Running it."),
            lambda: Reply.text_reply(DONE[prompt])]


SCRIPTS: dict[str, list[Callable[[], Reply]]] = {
    ASK_HELLO: [lambda: Reply.text_reply("I am here.")],
    **{prompt: _script(prompt) for prompt in COMMANDS},
}


def handler(body: dict[str, Any]) -> Reply | None:
    """The script of the last user message naming a prompt; the round is the assistant messages since."""
    messages = body.get("messages", [])
    for i in range(len(messages) - 1, -1, -1):
        text = _text_of(messages[i].get("content")) if messages[i].get("role") == "user" else ""
        for prompt, script in SCRIPTS.items():
            if prompt in text:
                rounds = sum(1 for m in messages[i + 1:] if m.get("role") == "assistant")
                return script[rounds]() if rounds < len(script) else Reply.text_reply("(no more script)")
    return None


def settings(data_dir: Path) -> dict[str, Any]:
    return {**phoenix_settings(data_dir), "git.enabled": False, "git.autoRepositoryDetection": False}


def _digest(root: Path) -> dict[str, str]:
    return tree_digest(root)


def _expected(workspace: Path, command: str) -> dict[str, str]:
    """What ``command`` produces run as today (no overlay) on a copy of the folder."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(workspace, copy, symlinks=True)
        run_plain(command, copy)
        return _digest(copy)


def _run_to_review(chat: Chat, prompt: str) -> dict[str, Any]:
    """Send ``prompt``; allow the bash question; return the review dialog's snapshot once it is open."""
    chat.send(prompt)
    first = chat.dialog("approval")
    assert "bash" in first["text"] and COMMANDS[prompt].split(" ")[0] in first["text"], first["text"]
    chat.key("y")
    chat.d.call("waitFor", **chat.wv, selector=REVIEW, timeout=90)
    return chat.dialog("approval")


def _review_lines(chat: Chat, what: str) -> list[str]:
    items = chat.d.call("inspect", **chat.wv, selector=f"{REVIEW} [data-testid={what}]")["items"]
    return [" ".join(str(i["text"]).split()) for i in items]


def _open(rig: Rig, name: str, text: str) -> None:
    rig.probe("/open", {"path": str(rig.workspace / name)}, timeout=60)
    rig.wait_document(rig.workspace / name, lambda t: t == text)


def _type_into(rig: Rig, name: str, text: str, *, save: bool) -> None:
    """Click into the editor showing ``name`` (opened by the probe) and type ``text`` at its start."""
    d = rig.driver
    assert d is not None
    rig.probe("/open", {"path": str(rig.workspace / name)}, timeout=60)
    d.call("waitFor", selector=f".tabs-container .tab.active:has-text('{name}')", timeout=30)
    d.call("click", selector=".editor-group-container.active .monaco-editor .view-lines")
    d.call("press", key="Control+Home")
    for key in text:  # real key presses, to what has the keyboard: the editor just clicked
        d.call("press", key=key)
    rig.wait_document(rig.workspace / name, lambda t: t.startswith(text))
    if save:
        d.call("press", key="Control+s")
        path, deadline = rig.workspace / name, time.monotonic() + 30
        while not path.read_text().startswith(text) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.read_text().startswith(text), "the editor saved the typed text"


@pytest.mark.slow
@pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")
@pytest.mark.req("REQ-VSC-017", "REQ-BASH-030", "REQ-BASH-031", "REQ-BASH-032", "REQ-BASH-041")
def test_shell_changes_reviewed_and_undone_in_a_real_vscode(vscode_deps: Any, fake_anthropic: FakeAnthropic) -> None:
    vsix = package_extension(vscode_deps)
    fake_anthropic.handler = handler
    with start_rig(vsix=vsix, extension_id=extension_id(), settings=settings,
                   env={**fake_anthropic.env(API_KEY), "PHOENIX_SIGHT_TIMEOUT_MS": "30000"},
                   files=FILES, deps=vscode_deps) as rig:
        d = rig.driver
        assert d is not None
        w = rig.workspace
        git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
        subprocess.run(["git", "init", "-q", str(w)], check=True)
        subprocess.run([*git, "-C", str(w), "add", "-A"], check=True)
        subprocess.run([*git, "-C", str(w), "commit", "-q", "-m", "start"], check=True)
        chat = Chat(rig)
        chat.recorded = lambda: fake_anthropic.requests
        d.call("goto", timeout=120)
        rig.wait_probe(timeout=120)
        chat.open()
        chat.widen()
        chat.wait_server_ready()
        chat.send(ASK_HELLO)
        chat.wait_answer("I am here.")
        chat.wait_idle()
        d.call("command", title="Phoenix: Unrestrict (/execute)")
        chat.statusbar(UNRESTRICTED)
        chat.statusbar("Interactive", item="phoenix.policy")

        # A. edit, create, delete, rename, a build into node_modules: reviewed, allowed, equal to the command's
        _open(rig, "a.txt", A_TXT)
        before_a = _digest(w)
        want = _expected(w, EDIT)
        review = _run_to_review(chat, ASK_EDIT)
        assert EDIT in review["text"], review["text"]
        files = _review_lines(chat, "review-file")
        listed = " | ".join(files)
        for name in ("a.txt", "new.txt", "gone.txt", "moved.txt"):
            assert name in listed, files
        assert "old.txt" in listed, f"the rename names its old path: {files}"
        summary = " ".join(_review_lines(chat, "review-summary"))
        assert "node_modules" in summary, summary
        d.screenshot("review-edit")
        chat.refocus_dialog()
        chat.key("y")
        chat.dialog_closed()
        chat.wait_answer(DONE[ASK_EDIT], timeout=90)
        chat.wait_idle()
        assert _digest(w) == want, "the accepted review equals the command run as today"
        assert rig.wait_document(w / "a.txt", lambda t: t == "zero\nONE\ntwo\n")
        d.screenshot("review-applied")
        # B. undo of the accepted set from the palette: the bytes of before
        d.call("command", title="Phoenix: Undo Last Change Set")
        deadline = time.monotonic() + 90
        while _digest(w) != before_a and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _digest(w) == before_a, "the undo restores the folder as it was before the command"
        rig.wait_document(w / "a.txt", lambda t: t == A_TXT)
        d.screenshot("undone")

        # C. a rejected review leaves the folder byte-identical
        chat.wait_idle()
        before_c = _digest(w)
        _run_to_review(chat, ASK_REJECT)
        chat.refocus_dialog()
        chat.key("n")
        chat.dialog_closed()
        chat.wait_answer(DONE[ASK_REJECT], timeout=90)
        chat.wait_idle()
        assert _digest(w) == before_c, "a rejected review leaves the disk as it was"

        # D. editor changes made meanwhile (unsaved and saved) are refused, with a note the page shows
        _open(rig, "c.txt", FILES["c.txt"])
        _open(rig, "s.txt", FILES["s.txt"])
        _run_to_review(chat, ASK_CONFLICT)
        _type_into(rig, "c.txt", "typed", save=False)
        _type_into(rig, "s.txt", "saved", save=True)
        chat.refocus_dialog()
        chat.key("y")
        chat.dialog_closed()
        chat.wait_answer(DONE[ASK_CONFLICT], timeout=90)
        chat.wait_idle()
        assert rig.document_text(w / "c.txt") == "typed" + FILES["c.txt"], "the unsaved text is kept"
        assert (w / "c.txt").read_text() == FILES["c.txt"]
        assert (w / "s.txt").read_text() == "saved" + FILES["s.txt"], "the saved text is kept"
        assert (w / "lands.txt").read_text() == "lands\n", "the rest lands"
        for name in ("c.txt", "s.txt"):
            d.call("waitFor", **chat.wv, selector=TOOL_CARD, hasText=f"not applied: {name}",
                   timeout=30)
        d.screenshot("review-conflicts")
        # the user keeps the typed text (the commit below takes it): Save in its editor
        rig.probe("/open", {"path": str(w / "c.txt")}, timeout=60)
        d.call("waitFor", selector=".tabs-container .tab.active:has-text('c.txt')", timeout=30)
        d.call("click", selector=".editor-group-container.active .monaco-editor .view-lines")
        d.call("press", key="Control+s")
        d.call("waitFor", selector=".tabs-container .tab.dirty", state="detached", timeout=30)
        assert (w / "c.txt").read_text() == "typed" + FILES["c.txt"]

        # E. git commit: .git in the review's summary, allowed, `git log` shows it
        review = _run_to_review(chat, ASK_COMMIT)
        summary = " ".join(_review_lines(chat, "review-summary"))
        assert ".git" in summary, summary
        d.screenshot("review-git-commit")
        chat.refocus_dialog()
        chat.key("y")
        chat.dialog_closed()
        chat.wait_answer(DONE[ASK_COMMIT], timeout=90)
        chat.wait_idle()
        log = subprocess.run(["git", "-C", str(w), "log", "--format=%s"], capture_output=True, text=True, check=True)
        assert log.stdout.splitlines()[:2] == ["reviewed commit", "start"], log.stdout
        shown = subprocess.run(["git", "-C", str(w), "show", "--name-only", "--format=", "HEAD"], capture_output=True,
                               text=True, check=True)
        assert shown.stdout.split() == ["c.txt", "lands.txt", "s.txt"], shown.stdout

        # F. the workbench's own Undo (Ctrl+Z in the changed document) takes the accepted edit back in the editor
        _open(rig, "a.txt", A_TXT)
        _run_to_review(chat, ASK_EDIT)
        chat.refocus_dialog()
        chat.key("y")
        chat.dialog_closed()
        chat.wait_answer(DONE[ASK_EDIT], timeout=90)
        chat.wait_idle()
        assert (w / "a.txt").read_text() == "zero\nONE\ntwo\n"
        rig.wait_document(w / "a.txt", lambda t: t == "zero\nONE\ntwo\n")
        rig.probe("/open", {"path": str(w / "a.txt")}, timeout=60)
        d.call("click", selector=".editor-group-container.active .monaco-editor .view-lines")
        d.call("press", key="Control+z")
        assert rig.wait_document(w / "a.txt", lambda t: t == A_TXT) == A_TXT
        d.screenshot("vscode-undo")
        assert fake_anthropic.unexpected == 0 and not fake_anthropic.handler_errors
