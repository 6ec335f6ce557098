"""Output shown to a person is made inert (REQ-SEC-004, issue 12)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from phoenix_lsp.client.screen import Screen
from phoenix_lsp.safe_text import terminal_safe

pytestmark = pytest.mark.req("REQ-SEC-004")

ATTACKS = ["\x1b]52;c;cHduZWQ=\x07", "\x1b]0;pwned title\x1b\\", "\x1b[2J\x1b[H", "\x9b31m", "ok\rfake", "\x08\x08x",
           "\x1bP+q\x1b\\", "\x1b]8;;http://evil.invalid\x07link\x1b]8;;\x07"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_control_character_survives(attack: str) -> None:
    shown = terminal_safe(f"before {attack} after\r\n")
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert shown.endswith(" after\n") and terminal_safe(shown) == shown  # readable, idempotent


def test_the_terminal_client_shows_escapes_instead_of_obeying_them() -> None:
    out = io.StringIO()
    screen = Screen(out, color=True)
    screen.text("model says \x1b]52;c;cHduZWQ=\x07 hi\n")
    screen.line("[tool] bash done: \x1b]0;title\x07", "dim")
    text = out.getvalue()
    assert "\x1b]" not in text and "\x07" not in text and "␛]52;c;cHduZWQ=␇" in text
    assert "\x1b[2m" in text  # the client's own colours still work


def test_sandbox_run_prints_command_output_inert() -> None:
    cmd = "printf 'a\\033]52;c;cHduZWQ=\\007b\\033]2;title\\007c\\n'"
    proc = subprocess.run([sys.executable, "-m", "phoenix_lsp", "sandbox", "run", "--mode", "unrestricted", "--",
                           cmd], capture_output=True, text=True, timeout=60, env=os.environ)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "␛]52;c;cHduZWQ=␇" in proc.stdout
