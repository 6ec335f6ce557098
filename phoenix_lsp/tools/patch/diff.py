"""The unified diff the user sees for a patch, built region by region around the edits (never over the whole
file)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from phoenix_lsp.tools.patch.edits import split_keep

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _shift_header(header: str, old_shift: int, new_shift: int) -> str:
    m = _HUNK.match(header)
    if not m:
        return header
    a, b, c, d = m.group(1), m.group(2), m.group(3), m.group(4)
    # difflib writes start 0 for an empty side; shifting it keeps pointing at the line before the hunk.
    old = f"-{int(a) + old_shift}" + (f",{b}" if b is not None else "")
    new = f"+{int(c) + new_shift}" + (f",{d}" if d is not None else "")
    return f"@@ {old} {new} @@" + header[m.end() :]


def unified_diff(path: str, text: str, edits: Sequence[tuple[int, int, str]], created: bool) -> str:
    """A unified diff built region by region around the edits (3 lines of context)."""
    if not edits:
        return ""
    context = 3
    regions: list[list[Any]] = []  # [start, end, [edits]] in original offsets, whole lines
    for s, e, t in edits:
        a = text.rfind("\n", 0, s) + 1  # start of the first changed line ...
        for _ in range(context):  # ... and of the context lines above it
            if a == 0:
                break
            a = text.rfind("\n", 0, a - 1) + 1
        nxt = text.find("\n", max(e - 1, s))  # end of the last changed line ...
        b = len(text) if nxt < 0 else nxt + 1
        for _ in range(context):  # ... and of the context lines below it
            if b >= len(text):
                break
            nxt = text.find("\n", b)
            b = len(text) if nxt < 0 else nxt + 1
        if regions and a <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], b)
            regions[-1][2].append((s, e, t))
        else:
            regions.append([a, b, [(s, e, t)]])
    out = [f"--- {'/dev/null' if created else 'a/' + path}\n", f"+++ b/{path}\n"]
    line_delta = 0
    for a, b, region_edits in regions:
        old_chunk = text[a:b]
        pieces, cursor = [], a
        for s, e, t in region_edits:
            pieces.append(text[cursor:s])
            pieces.append(t)
            cursor = e
        pieces.append(text[cursor:b])
        new_chunk = "".join(pieces)
        first_line = text.count("\n", 0, a)
        old_lines, new_lines = split_keep(old_chunk), split_keep(new_chunk)
        for n, line in enumerate(difflib.unified_diff(old_lines, new_lines, n=context)):
            if n < 2:
                continue  # file headers, written once above
            if line.startswith("@@"):
                out.append(_shift_header(line, first_line, first_line + line_delta))
            elif line.endswith("\n"):
                out.append(line)
            else:
                out.append(line + "\n\\ No newline at end of file\n")
        line_delta += len(new_lines) - len(old_lines)
    return "".join(out)
