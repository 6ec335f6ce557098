"""Minimal editor edits: a replacement trimmed to what changes, a line diff limited to the changed region,
boundaries kept off the middle of a \\r\\n, and offsets turned into LSP positions (UTF-16 code units)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from phoenix_lsp.tools.patch.values import Position, Range, TextEdit

# Above this many lines a changed region becomes one edit (still limited to the region) rather than a line
# diff. difflib runs with autojunk: it then ignores very frequent lines (blank lines, lone braces) as match
# anchors, which keeps it near linear on code; its opcodes stay a correct transformation either way.
_LINE_DIFF_MAX_LINES = 200_000


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, step = 0, 64
    while lo + step <= n and a[lo : lo + step] == b[lo : lo + step]:
        lo += step
        step *= 2
    hi = min(lo + step, n)
    while lo < hi:  # invariant: a[:lo] == b[:lo] and a mismatch lies in [lo, hi]
        mid = (lo + hi) // 2
        if a[lo : mid + 1] == b[lo : mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _common_suffix_len(a: str, b: str) -> int:
    n, la, lb = min(len(a), len(b)), len(a), len(b)
    if a[la - n :] == b[lb - n :]:
        return n
    k, step = 0, 64
    while k + step <= n and a[la - k - step : la - k] == b[lb - k - step : lb - k]:
        k += step
        step *= 2
    hi = min(k + step, n)
    while k < hi:
        mid = (k + hi) // 2
        if a[la - mid - 1 : la - k] == b[lb - mid - 1 : lb - k]:
            k = mid + 1
        else:
            hi = mid
    return k


def _trim(old: str, new: str) -> tuple[int, int]:
    p = _common_prefix_len(old, new)
    q = _common_suffix_len(old[p:], new[p:])
    return p, q


def split_keep(text: str) -> list[str]:
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def minimize(text: str, start: int, end: int, insert: str) -> list[tuple[int, int, str]]:
    """Small edits, in original offsets, that turn text[start:end] into insert."""
    old = text[start:end]
    p, q = _trim(old, insert)
    old_mid, new_mid = old[p : len(old) - q], insert[p : len(insert) - q]
    base = start + p
    if not old_mid and not new_mid:
        return []
    if not old_mid or not new_mid or "\n" not in old_mid or "\n" not in new_mid:
        return [(base, base + len(old_mid), new_mid)]
    a, b = split_keep(old_mid), split_keep(new_mid)
    if max(len(a), len(b)) > _LINE_DIFF_MAX_LINES:
        return [(base, base + len(old_mid), new_mid)]
    a_off = [0]
    for ln in a:
        a_off.append(a_off[-1] + len(ln))
    b_off = [0]
    for ln in b:
        b_off.append(b_off[-1] + len(ln))
    edits: list[tuple[int, int, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=True)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        chunk_old = old_mid[a_off[i1] : a_off[i2]]
        chunk_new = new_mid[b_off[j1] : b_off[j2]]
        cp, cq = _trim(chunk_old, chunk_new)
        s = base + a_off[i1] + cp
        edits.append((s, base + a_off[i2] - cq, chunk_new[cp : len(chunk_new) - cq]))
    return edits


def _crlf_adjust(text: str, start: int, end: int, insert: str) -> tuple[int, int, str]:
    """Widen an edit so that neither boundary falls between the \\r and \\n of a line ending."""
    n = len(text)
    new_start, new_end = start, end
    if 0 < start < n and text[start - 1] == "\r" and text[start] == "\n":
        new_start, insert = start - 1, "\r" + insert
    if 0 < end < n and text[end - 1] == "\r" and text[end] == "\n":
        new_end, insert = end + 1, insert + "\n"
    return new_start, new_end, insert


def normalize(text: str, edits: Sequence[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Drop no-op edits, merge edits that touch (after CRLF widening), widen around \\r\\n."""
    merged: list[tuple[int, int, str]] = []
    for s, e, t in edits:
        if s == e and not t:
            continue
        if merged:
            ps, pe, pt = merged[-1]
            _, adj_prev_end, _ = _crlf_adjust(text, ps, pe, pt)
            adj_start, _, _ = _crlf_adjust(text, s, e, t)
            if adj_start <= adj_prev_end:
                merged[-1] = (ps, e, pt + text[pe:s] + t)
                continue
        merged.append((s, e, t))
    return [_crlf_adjust(text, s, e, t) for s, e, t in merged]


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _positions(text: str, offsets: Sequence[int]) -> list[Position]:
    """LSP positions of ascending code-point offsets (none between \\r and \\n), in one pass."""
    out: list[Position] = []
    line, prev = 0, 0
    for off in offsets:
        line += text.count("\n", prev, off) + text.count("\r", prev, off) - text.count("\r\n", prev, off)
        line_start = max(text.rfind("\n", 0, off), text.rfind("\r", 0, off)) + 1
        out.append(Position(line, _utf16_len(text[line_start:off])))
        prev = off
    return out


def to_text_edits(text: str, edits: Sequence[tuple[int, int, str]]) -> tuple[TextEdit, ...]:
    offsets = sorted({o for s, e, _ in edits for o in (s, e)})
    pos = dict(zip(offsets, _positions(text, offsets), strict=True))
    return tuple(TextEdit(Range(pos[s], pos[e]), t) for s, e, t in edits)
