"""Planning one patch call (REQ-PATCH-001..008): the model's tool input and the text the editor has become a
:class:`PreparedPatch` or a :class:`PatchError`, without touching the disk and without raising on bad input."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from phoenix_lsp.tools.inputs import PatchInput, validate
from phoenix_lsp.tools.patch.diff import unified_diff
from phoenix_lsp.tools.patch.edits import minimize, normalize, to_text_edits
from phoenix_lsp.tools.patch.generated import looks_generated
from phoenix_lsp.tools.patch.locate import adapt_insert, find, line_of, reindent
from phoenix_lsp.tools.patch.values import Patch, PatchError, PreparedPatch, Refused

CHARS_PER_TOKEN = 4
"""Characters per token used to estimate the size of a patch input (a documented approximation)."""
MAX_INPUT_TOKENS = 60_000
"""Largest accepted patch input, in estimated tokens (REQ-PATCH-008)."""

_NO_CHANGE = "Nothing was changed: the patches of one call are applied all together or not at all."

DESCRIPTION = (
    "Edit one text file precisely. The file is changed through the user's editor (unsaved editor "
    "text counts as the file's content), so the user can review and undo the change.\n\n"
    "Operations:\n"
    "- replace: replace oldText, which must occur exactly once in the file, with newText "
    '(use "" to delete).\n'
    "- append_eof: add newText at the end of the file.\n"
    "- prepend_bof: add newText at the start of the file.\n"
    "- overwrite: replace the whole file with newText; creates the file (and its folders) if missing.\n"
    "A file that does not exist allows only append_eof, prepend_bof and overwrite.\n\n"
    "All patches of one call are located in the ORIGINAL file and applied together: if one fails, "
    "nothing changes; patches whose regions overlap are refused.\n\n"
    "Clipboards (kept for the rest of the conversation):\n"
    "- toClipboard: store the text matched by oldText (replace only) under this name.\n"
    "- fromClipboard: use the named clipboard as the new text instead of newText.\n"
    '- Cut: replace with newText "" and toClipboard. Copy: replace with toClipboard and fromClipboard '
    "of the same name. Paste: replace (or append_eof / prepend_bof) with fromClipboard.\n\n"
    "reindent {strip, add}: for each non-blank line of the inserted text, remove the prefix strip "
    "(every such line must start with it) and then add the prefix add - for moving code between "
    "indentation levels.\n\n"
    "Inputs are literal: include the newlines you want. When oldText is not found exactly, the tool "
    "tolerates different indentation, trailing spaces and line endings, and a wrong first or last "
    "line that newText leaves unchanged; it tells you when it did. Keep each call under about 60,000 "
    "tokens: split large changes into several calls."
)


def estimate_tokens(tool_input: object) -> int:
    """Estimated token count of a tool input: characters of its JSON form / :data:`CHARS_PER_TOKEN`."""
    try:
        size = len(json.dumps(tool_input, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError):
        size = len(repr(tool_input))
    return -(-size // CHARS_PER_TOKEN)


def _validate(tool_input: object) -> tuple[str, list[Patch]]:
    checked = validate(PatchInput, "patch", tool_input)
    if isinstance(checked, str):
        raise Refused(checked)
    patches = [
        Patch(
            index,
            item.operation,
            item.old_text,
            item.new_text,
            item.to_clipboard,
            item.from_clipboard,
            item.reindent.strip if item.reindent else None,
            item.reindent.add if item.reindent else None,
            item.reindent is not None,
        )
        for index, item in enumerate(checked.patches)
    ]
    return checked.path, patches


def prepare_patch(
    tool_input: Mapping[str, Any],
    original: str | None,
    *,
    clipboards: Mapping[str, str] | None = None,
) -> PreparedPatch | PatchError:
    """Plan a patch call against ``original`` (``None``: the file does not exist).

    ``clipboards`` is the conversation's clipboard state before the call. Never raises on bad input:
    wrong types, unknown operations or fields, missing text, ambiguous or missing matches, overlapping
    patches and oversized input all give a :class:`PatchError`.
    """
    try:
        return _prepare(tool_input, original, dict(clipboards or {}))
    except Refused as exc:
        return PatchError(f"{exc} {_NO_CHANGE}")


def _prepare(tool_input: Mapping[str, Any], original: str | None, clips: dict[str, str]) -> PreparedPatch:
    tokens = estimate_tokens(tool_input)
    if tokens > MAX_INPUT_TOKENS:
        raise Refused(
            f"The patch input is about {tokens:,} tokens, over the {MAX_INPUT_TOKENS:,}-token limit. Split "
            "it into several smaller patch calls (for example one per function or section, or write a new "
            "file with overwrite and then extend it with append_eof)."
        )
    path, patches = _validate(tool_input)
    text = original if original is not None else ""
    raw: list[tuple[int, int, int, str]] = []  # start, end, request order, text
    notes: list[str] = []
    for patch in patches:
        if original is None and patch.operation == "replace":
            raise Refused(
                f"{patch.label}: the file {path!r} does not exist, so there is no text to replace. A missing "
                "file allows only overwrite, append_eof and prepend_bof (which create it); check the path "
                "with list_directory."
            )
        copy = patch.from_clipboard is not None and patch.from_clipboard == patch.to_clipboard
        insert: str | None
        if patch.from_clipboard is not None and not copy:
            if patch.from_clipboard not in clips:
                have = ", ".join(sorted(repr(k) for k in clips)) or "none"
                raise Refused(
                    f"{patch.label}: clipboard {patch.from_clipboard!r} does not exist (clipboards: {have}). "
                    "Store text first with toClipboard on a replace."
                )
            insert = clips[patch.from_clipboard]
        elif copy:
            insert = None  # the matched text itself, known once located
        else:
            insert = patch.new_text
        if insert is not None and patch.has_reindent:
            insert = reindent(insert, patch.strip, patch.add, patch.label)

        if patch.operation == "replace":
            m = find(text, patch, insert)
            matched = text[m.start : m.end]
            if m.note:
                notes.append(f"{patch.label}: {m.note}.")
            if patch.to_clipboard is not None:
                clips[patch.to_clipboard] = matched
                if matched != patch.old_text:
                    notes.append(
                        f"{patch.label}: clipboard {patch.to_clipboard!r} holds the text as found in the "
                        "file, which differs from your oldText (fuzzy match)."
                    )
            if insert is None:
                insert = matched if not patch.has_reindent else reindent(matched, patch.strip, patch.add, patch.label)
            elif m.note:
                insert = adapt_insert(
                    insert,
                    m,
                    reindent_indentation=patch.from_clipboard is None and not patch.has_reindent,
                )
            raw.append((m.start, m.end, patch.index, insert))
        else:
            assert insert is not None
            if patch.operation == "append_eof":
                raw.append((len(text), len(text), patch.index, insert))
            elif patch.operation == "prepend_bof":
                raw.append((0, 0, patch.index, insert))
            else:
                raw.append((0, len(text), patch.index, insert))

    # Zero-length inserts at an offset go before a range starting there, in request order.
    raw.sort(key=lambda r: (r[0], r[1] > r[0], r[2]))
    for prev, cur in itertools.pairwise(raw):
        if cur[0] < prev[1]:
            raise Refused(
                f"patches[{prev[2]}] and patches[{cur[2]}] change overlapping parts of the file (lines "
                f"{line_of(text, prev[0])}-{line_of(text, prev[1])} and {line_of(text, cur[0])}"
                f"-{line_of(text, cur[1])}). Patches are located in the original file; merge them into one "
                "patch."
            )

    pieces, cursor = [], 0
    for s, e, _, t in raw:
        pieces.append(text[cursor:s])
        pieces.append(t)
        cursor = e
    pieces.append(text[cursor:])
    new_text = "".join(pieces)

    small: list[tuple[int, int, str]] = []
    for s, e, _, t in raw:
        small.extend(minimize(text, s, e, t))
    final = normalize(text, small)
    edits = to_text_edits(text, final)
    creates = original is None
    diff = unified_diff(path, text, final, creates)

    warnings: list[str] = []
    why = looks_generated(path, text if original is not None else new_text)
    if why is not None:
        warnings.append(
            f"{path} looks generated ({why}): the change was applied, but it may be lost when the file is "
            "regenerated; change the generator or its input too."
        )
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    if new_text == text and not creates:
        head = f"{path}: the patches leave the file unchanged (the new text equals the old text)."
    else:
        verb = "Created" if creates else "Patched"
        head = f"{verb} {path}: {len(patches)} patch(es) applied, +{added} -{removed} lines."
    message = " ".join([head, *notes, *(f"Warning: {w}" for w in warnings)])
    return PreparedPatch(
        new_text=new_text,
        edits=edits,
        creates_file=creates,
        diff=diff,
        message=message,
        warnings=tuple(warnings),
        clipboards=dict(clips),
    )
