"""The patch tool's pure engine (REQ-PATCH-001..008).

:func:`prepare_patch` turns the model's tool input and the text the editor has (``None`` when the file does
not exist) into a :class:`PreparedPatch` or a :class:`PatchError`. It never touches the disk and never raises
on bad input: the server turns it into one ``workspace/applyEdit`` and tells the model its
``message`` once the editor has applied it.

How it works: every patch of a call is located in the *original* text, giving one (start, end, text) edit
in original offsets; overlapping edits are refused, so the call is all-or-nothing (REQ-PATCH-002). The
editor edits are then made minimal by trimming what each replacement has in common with the text it
replaces, and by a line diff limited to the changed region - never a diff over the whole file, so a patch
in a 5 MB file costs a few scans of the text. Positions are LSP positions: zero-based lines (``\\n``,
``\\r\\n`` and ``\\r`` end a line) and characters counted in UTF-16 code units; no edit boundary ever falls
between the ``\\r`` and ``\\n`` of a line ending, which LSP cannot express.

Size limit (REQ-PATCH-008): the input is estimated at one token per :data:`CHARS_PER_TOKEN` characters of
its JSON form (the usual rule of thumb for English text and code with Claude's tokenizer); more than
:data:`MAX_INPUT_TOKENS` is refused.

The engine's parts: ``prepare.py`` (the call from input to prepared patch), ``locate.py`` (finding oldText, exactly or
tolerantly), ``edits.py`` (minimal editor edits in LSP positions), ``diff.py`` (the diff the user sees),
``generated.py`` (files that look generated), ``target.py`` (the confined target path, checked again before
the edit is sent) and ``values.py`` (what they pass around).
"""

from __future__ import annotations

from phoenix_lsp.tools.inputs import OPERATIONS
from phoenix_lsp.tools.patch.generated import looks_generated
from phoenix_lsp.tools.patch.prepare import (
    CHARS_PER_TOKEN,
    DESCRIPTION,
    MAX_INPUT_TOKENS,
    estimate_tokens,
    prepare_patch,
)
from phoenix_lsp.tools.patch.target import resolve_patch_path, target_identity, verify_before_sending
from phoenix_lsp.tools.patch.values import PatchError, Position, PreparedPatch, Range, TextEdit

__all__ = [
    "CHARS_PER_TOKEN",
    "DESCRIPTION",
    "MAX_INPUT_TOKENS",
    "OPERATIONS",
    "PatchError",
    "Position",
    "PreparedPatch",
    "Range",
    "TextEdit",
    "estimate_tokens",
    "looks_generated",
    "prepare_patch",
    "resolve_patch_path",
    "target_identity",
    "verify_before_sending",
]
