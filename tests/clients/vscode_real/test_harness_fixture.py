"""The real-VS-Code harness itself, proven with a tiny fixture extension (vscode-extension/test-real/
fixture-extension): a webview view reached through its nested iframes, typing and streamed updates, a status
bar item following a palette command, a workspace edit landing in the open editor and undone with Ctrl+Z,
and a window reload that restores the view from the extension's state.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.clients.vscode_real.rig import TEST_REAL_DIR, Deps, _run, start_rig

FIXTURE_ID = "phoenix-test.phoenix-fixture"
WEBVIEW = {"frame": "webview", "extensionId": FIXTURE_ID}


@pytest.mark.slow
def test_harness_drives_a_real_vscode(vscode_deps: Deps, tmp_path: Path) -> None:
    src = tmp_path / "fixture-src"
    shutil.copytree(TEST_REAL_DIR / "fixture-extension", src)
    vsix = tmp_path / "fixture.vsix"
    _run([str(vscode_deps.vsce), "package", "--no-dependencies", "--out", str(vsix)], cwd=src, env=vscode_deps.env())
    original = "print('hello')\n"
    with start_rig(
        vsix=vsix, extension_id=FIXTURE_ID, settings={}, env={}, files={"hello.py": original}, deps=vscode_deps
    ) as rig:
        d = rig.driver
        assert d is not None
        d.call("goto", timeout=90)
        rig.wait_probe()
        hello = rig.workspace / "hello.py"
        rig.probe("/open", {"path": str(hello)})
        d.call("waitFor", selector=".monaco-editor .view-lines", hasText="print", timeout=30)

        d.call("command", title="Phoenix Fixture: Open Chat")
        d.call("fill", **WEBVIEW, selector="[data-testid=chat-input]", value="hi there")
        d.call("click", **WEBVIEW, selector="[data-testid=send]")
        d.call("waitForText", **WEBVIEW, selector="[data-testid=message-assistant]", text="echo: hi there")

        d.call("waitFor", selector=".statusbar-item", hasTextRegex="(^|\\s)Restricted")
        d.call("command", title="Phoenix Fixture: Toggle Mode")
        d.call("waitFor", selector=".statusbar-item", hasText="Unrestricted")

        d.call("command", title="Phoenix Fixture: Append Line")
        text = rig.wait_document(hello, lambda t: t.endswith("appended by the fixture\n"))
        assert text == original + "appended by the fixture\n"
        d.call("click", selector=".monaco-editor .view-lines")
        d.call("press", key="Control+z")
        rig.wait_document(hello, lambda t: t == original)
        d.screenshot("fixture-before-reload")

        d.call("reload", timeout=90)
        d.call("command", title="Phoenix Fixture: Open Chat")
        d.call("waitForText", **WEBVIEW, selector="[data-testid=message-assistant]", text="echo: hi there")
        d.call("waitFor", selector=".statusbar-item", hasText="Unrestricted")
        d.screenshot("fixture-after-reload")
