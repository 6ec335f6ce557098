"""Making untrusted text safe to show to a person: the one sanitiser for every display (REQ-SEC-004).

Command output, file contents and model text may carry terminal control sequences. Written raw to a
terminal they act instead of being shown: OSC 52 writes the user's clipboard, OSC 0/2 retitle the window,
OSC 8 plants links, CSI sequences move the cursor, erase or rewrite what the user sees (a line that
"shows" one command while another ran), DCS/APC reach terminal-specific features, and a lone carriage
return or backspaces overwrite earlier text.

:func:`terminal_safe` makes such text inert and still readable:

- every escape sequence (ESC followed by CSI ``[``, OSC ``]``, DCS ``P``, SOS ``X``, PM ``^``, APC ``_``
  ..., or ESC plus one character) is shown instead of obeyed: ``ESC`` becomes ``␛`` (U+241B) and a BEL
  terminator ``␇``, so the user sees ``␛]52;c;cHduZWQ=␇`` and not a changed clipboard;
- the remaining C0 controls except newline and tab (NUL, BEL, backspace, a carriage return that does not
  end a line, vertical tab, form feed, ...) become their Unicode "control picture" (U+2400 + code);
- the C1 controls U+0080..U+009F (U+009B is a one-character CSI on some terminals) and DEL become
  ``\\x9b``-style text.

Newlines, tabs and ``\\r\\n`` line ends are kept (``\\r\\n`` becomes ``\\n``). The function is pure and
idempotent. Editor clients written in other languages should apply the same rules to anything they show
in a terminal or a terminal-like view; a webview or a text buffer that does not interpret escapes needs
only the same care for C1 controls and bidirectional overrides that its renderer requires.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    return f"\\x{code:02x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control sequence and control character made visible and inert.

    See the module docstring for the exact rules. Safe to call on already-sanitised text.
    """
    # Making ESC itself visible disarms every sequence it starts (CSI, OSC, DCS, ...): what follows it is
    # printable text. BEL and the other controls inside a sequence get their pictures the same way.
    return _CONTROL.sub(_picture, text.replace("\r\n", "\n"))
