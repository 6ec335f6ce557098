"""The Phoenix chat view and status bar as the real-VS-Code test and the benchmark drive them.

Selectors are the webview's stable test ids (`data-testid`, with `data-role`, `data-open`, `data-key`...; see
vscode-extension/src/webview/), never its class names; the status bar item is found by its id and text.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.clients.vscode_real.rig import ROOT, Driver, DriverError, Rig

# The chat webview's test ids (vscode-extension/src/webview/).
INPUT = "[data-testid=chat-input]"
SEND = "[data-testid=send-button]"
TIMELINE = "[data-testid=timeline]"
ASSISTANT = f"{TIMELINE} [data-testid=message][data-role=assistant]"
STREAMING = f"{ASSISTANT}[data-streaming=true]"
TOOL_CARD = f"{TIMELINE} [data-testid=message][data-role=tool]"
DIALOG = "[data-testid=approval-dialog]"
DIALOG_OPEN = f"{DIALOG}[data-open=true]"
DIALOG_HIDDEN = f"{DIALOG}[data-open=false]"
DIALOG_TITLE = f"{DIALOG_OPEN} [data-testid=dialog-title]"
CHOICE = f"{DIALOG_OPEN} [data-testid=dialog-choice]"
SELECTED_CHOICE = f"{CHOICE}[aria-selected=true]"
OPEN_DIFF = f"{DIALOG_OPEN} [data-testid=open-diff]"
STATUS_IDLE = "[data-testid=status-line][data-status=idle]"
MODEL_BUTTON = "[data-testid=model-button]"
MODEL_LIST = "[data-testid=model-list]"
MODEL_OPTION = f"{MODEL_LIST} [data-testid=model-option]"
ROUTE_SELECTOR = "[data-testid=route-selector]"
ROUTE_OPTION = f"{ROUTE_SELECTOR} [data-testid=route-option]"
CHIP = "[data-testid=attachment-chip]"
FILE_OPTION = "[data-testid=file-picker] [data-testid=file-option]"
INSTRUCTION_FILE = "[data-testid=instructions] [data-testid=instruction-file]"
# The extension's mode item in the status bar: the workbench gives it the id "<extension id>.phoenix.mode".
# Its text is matched case-sensitively ("Restricted" is not in "Unrestricted").
MODE_ITEM_ID = "phoenix.mode"
MODEL_ITEM_ID = "phoenix.model"
RESTRICTED = r"(^|[^n])Restricted"
UNRESTRICTED = "Unrestricted"


def server_command() -> str:
    """This checkout's phoenix-lsp (the venv running the tests)."""
    candidate = Path(sys.executable).parent / "phoenix-lsp"
    return str(candidate if candidate.exists() else ROOT / ".venv" / "bin" / "phoenix-lsp")


def phoenix_settings(data_dir: Path) -> dict[str, Any]:
    """User settings that run this checkout's server with its data in ``data_dir``."""
    return {
        "phoenix.server.command": server_command(),
        "phoenix.server.args": ["serve", "--data-dir", str(data_dir)],
        # the LSP traffic with its params, in the "Phoenix Trace" channel: vscode-languageclient traces only
        # while that channel's log level is Trace (Chat.trace_traffic), so until then this costs nothing
        "phoenix.trace.server": "verbose",
    }


class Chat:
    """The Phoenix chat view, driven through the real workbench."""

    def __init__(self, rig: Rig) -> None:
        assert rig.driver is not None
        self.rig = rig
        self.d: Driver = rig.driver
        self.wv: dict[str, Any] = {"frame": "webview", "extensionId": rig.extension_id}
        self.answers_before: list[str] = []  # the assistant messages' texts when the last message was sent
        self.recorded: Callable[[], list[Any]] = list  # the fake model's requests, when the test has one (diagnose)

    def open(self) -> None:
        self.d.call("command", title="Phoenix: Open Chat", timeout=60)
        self.d.call("waitFor", **self.wv, selector=INPUT, timeout=60)

    def widen(self, width: int = 560) -> None:
        """Drag the side bar's edge so the chat view is ``width`` pixels wide (readable screenshots)."""
        box = self.d.call("boundingBox", selector=".part.sidebar")
        if box and box["width"] < width:
            self.d.call("dragEdge", selector=".part.sidebar", dx=width - box["width"])

    def send(self, text: str, button: bool = False) -> None:
        """Type ``text`` and send it with Enter (or a click on the send button). The assistant messages shown
        before are noted, so that ``wait_answer`` waits for a new one."""
        self.d.call("waitFor", **self.wv, selector=f"{INPUT}:not([disabled])", timeout=60)
        shown = self.d.call("inspect", **self.wv, selector=ASSISTANT)["items"]
        self.answers_before = [str(item["text"]) for item in shown]
        self.d.call("fill", **self.wv, selector=INPUT, value=text)
        if button:
            self.d.call("click", **self.wv, selector=SEND)
        else:
            self.d.call("press", **self.wv, selector=INPUT, key="Enter")

    def wait_answer(self, text: str, timeout: float = 60, *, new: bool = True) -> None:
        """Wait for an assistant message saying ``text`` that came after the last ``send`` (``new``), or for any
        (``new=False``: e.g. a transcript restored after a reload). Without ``new`` a repeated prompt's
        earlier answer would pass at once, while the server is still busy with the new one."""
        wanted = " ".join(text.split()).casefold()  # as Playwright's hasText compares
        seen = sum(wanted in " ".join(before.split()).casefold() for before in self.answers_before) if new else 0
        try:
            self.d.call("waitFor", **self.wv, selector=ASSISTANT, hasText=text, nth=seen, timeout=timeout)
        except DriverError as exc:
            raise AssertionError(f"no assistant message says {text!r} after {timeout:g} s\n{self.diagnose()}") from exc

    def diagnose(self) -> str:
        """What the chat view, the server's log and the fake model (``recorded``) show now, for a failure's
        message: CI keeps the output, not the artifacts."""
        lines = ["timeline (last 8 messages):"]
        with contextlib.suppress(Exception):
            snap = self.d.call("inspect", **self.wv, selector=f"{TIMELINE} [data-testid=message]", timeout=5)
            for item in snap["items"][-8:]:
                lines.append(f"  [{item['attrs'].get('data-role')}] {' '.join(str(item['text']).split())[:200]}")
        with contextlib.suppress(Exception):
            state = self.input_state()
            lines.append(f"input: {state['value']!r}, disabled={state['disabled']}")
        with contextlib.suppress(Exception):
            status = self.d.call("inspect", **self.wv, selector="[data-testid=status-line]", timeout=5)["items"]
            lines.append(f"status line: {[(s['attrs'].get('data-status'), s['text']) for s in status]}")
        with contextlib.suppress(Exception):
            for record in self.recorded()[-4:]:
                last = (record.body.get("messages") or [{}])[-1] if isinstance(record.body, dict) else {}
                content = last.get("content")
                kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else "text"
                lines.append(f"model request: status={record.status} completed={record.completed} "
                             f"last message: {last.get('role')} {kinds}")
        log = self.rig.data_dir / "phoenix-lsp.log"
        with contextlib.suppress(OSError):
            lines.append("server log (last 15 lines):")
            lines += [f"  {line[:300]}" for line in log.read_text(errors="replace").splitlines()[-15:]]
        return "\n".join(lines)

    def wait_idle(self, timeout: float = 60) -> None:
        self.d.call("waitFor", **self.wv, selector=STATUS_IDLE, timeout=timeout)

    def dialog(self, kind: str, timeout: float = 60) -> dict[str, Any]:
        """Wait for the open dialog of ``kind`` (approval / upgrade); returns its snapshot."""
        self.d.call("waitFor", **self.wv, selector=f"{DIALOG_OPEN}[data-kind={kind}]", timeout=timeout)
        snap = self.d.call("inspect", **self.wv, selector=DIALOG_OPEN)
        assert snap["count"] == 1, snap
        return dict(snap["items"][0])

    def input_state(self) -> dict[str, Any]:
        return dict(self.d.call("inspect", **self.wv, selector=INPUT)["items"][0])

    def selected_choice(self) -> dict[str, Any]:
        snap = self.d.call("inspect", **self.wv, selector=SELECTED_CHOICE)
        assert snap["count"] == 1, snap
        return dict(snap["items"][0])

    def choices(self) -> list[dict[str, Any]]:
        return list(self.d.call("inspect", **self.wv, selector=CHOICE)["items"])

    def refocus_dialog(self) -> None:
        """Give the focus back to the dialog (after the diff editor or a reload took it)."""
        self.d.call("click", **self.wv, selector=DIALOG_TITLE)

    def workbench_focus(self) -> dict[str, Any]:
        """Where the keyboard is in the workbench: the focused element's tag and classes, and whether it is in a
        text editor or in a webview (the chat's iframe)."""
        return dict(self.d.call("evaluate", fn="""() => {
            const a = document.activeElement;
            return {
                tag: a ? a.tagName : null,
                classes: a ? String(a.className) : "",
                editor: !!(a && a.closest(".monaco-editor")),
                webview: !!(a && (a.tagName === "IFRAME" || a.closest(".webview"))),
            };
        }"""))

    def toggle_policy(self, to: str) -> None:
        """The palette's "Toggle Approval Policy" (Escape, F1, the command), and wait until the chat view has
        drawn the new policy: every message the host sent before it has been rendered too."""
        self.d.call("command", title="Phoenix: Toggle Approval Policy")
        self.d.call("waitFor", **self.wv, selector=f"[data-policy={to}]", timeout=30)

    def key(self, key: str) -> None:
        """A key press to whatever has the focus (the dialog focuses itself when it opens)."""
        self.d.call("press", key=key)

    def dialog_closed(self, timeout: float = 30) -> None:
        self.d.call("waitFor", **self.wv, selector=DIALOG_HIDDEN, state="attached", timeout=timeout)

    def wait_server_ready(self, timeout: float = 120) -> None:
        """Wait until the status bar's mode item stops showing its sync icon ("starting the server"); fail at once, with
        the extension's log, when it shows the error icon (the server could not start)."""
        item = f'.part.statusbar [id="{self.rig.extension_id}.{MODE_ITEM_ID}"]'
        self.d.call("waitFor", selector=f"{item}:not(:has(.codicon-sync))", timeout=timeout)
        failed = self.d.call("inspect", selector=f"{item} .codicon-error")["count"]
        if failed:
            logs = [p for p in self.rig.logs() if p.name == "Phoenix.log"]
            text = logs[-1].read_text(errors="replace")[-3000:] if logs else "(no Phoenix.log)"
            raise AssertionError(f"the Phoenix server did not start; the extension's log:\n{text}")

    def trace_traffic(self) -> None:
        """Set the "Phoenix Trace" channel's log level to Trace ("Developer: Set Log Level..."), so the language
        client writes each request with its params to that channel's log file (see ``sent``)."""
        quick = ".quick-input-widget"
        self.d.call("command", title="Developer: Set Log Level...", opensQuickInput=True)
        self.d.call("fill", selector=f"{quick} .quick-input-box input", value="Phoenix Trace")
        self.d.call("click", selector=f"{quick} .monaco-list-row", hasText="Phoenix Trace", first=True)
        self.d.call("waitFor", selector=f"{quick} .monaco-list-row", hasText="Warning", first=True, timeout=30)
        self.d.call("click", selector=f"{quick} .monaco-list-row", hasTextRegex=r"^\s*Trace", first=True)
        self.d.call("waitFor", selector=quick, state="hidden", timeout=30)

    def wait_sent(self, method: str, count: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
        """The params of the ``method`` requests the extension sent while tracing (``trace_traffic``), read from
        the "Phoenix Trace" log files once there are ``count``. A file another process writes, which nothing
        announces: re-read as ``Rig.wait_document`` re-reads the editor's documents."""
        pattern = re.compile(rf"Sending request '{re.escape(method)} - \(\d+\)'\.\s*Params: (\{{.*?\n\}})", re.S)
        deadline = time.monotonic() + timeout
        found: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            found = [
                json.loads(m.group(1))
                for log in self.rig.logs() if log.name == "Phoenix Trace.log"
                for m in pattern.finditer(log.read_text(errors="replace"))
            ]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise TimeoutError(f"{method}: {len(found)} of {count} requests in the Phoenix Trace log: {found}")

    def statusbar(self, regex: str, timeout: float = 30, item: str = MODE_ITEM_ID) -> None:
        """Wait until the extension's status bar ``item`` (default: the mode) shows ``regex``."""
        selector = f'.part.statusbar [id="{self.rig.extension_id}.{item}"]'
        self.d.call("waitFor", selector=selector, hasTextRegex=regex, timeout=timeout)
