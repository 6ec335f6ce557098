"""The simple commands of a bash command line, for scoped Always Allow rules (REQ-PERM-019..022).

``simple_commands`` parses the line with tree-sitter-bash (the parser of ``bash_safety``) and returns the
words of each simple command it runs, or ``None`` when it cannot prove what runs. The core matches rules
against these words (``core/rules.py``); it never parses shell itself.

Only a plain list of simple commands is analysed: commands joined by ``;``, ``&``, ``&&``, ``||``, ``|``,
``|&`` or newlines, whose words are all known before the command runs (plain words and quoted strings).
Anything else means ``None`` — the call is then covered only by a rule for the whole tool:

- expansions of any kind (``$VAR``, ``${...}``, ``$(...)``, backticks, ``<(...)``, ``$((...))``);
- subshells, ``{ }`` groups, ``!``, if/for/while/case, functions, ``[[ ]]``, test commands;
- variable assignments (``FOO=1 cmd`` can change what ``cmd`` does), here-documents and here-strings;
- redirections other than to ``/dev/null`` or between file descriptors (``2>&1``): ``> file`` writes
  somewhere no rule named, ``< file`` feeds input no rule named;
- a syntax error, or an empty line.

An unquoted word that bash would expand (glob, brace, tilde) stays in the result with ``DYNAMIC`` in
front: it never equals a word of a rule, so it can be an argument after a rule's prefix but never part of
the prefix itself.
"""

from __future__ import annotations

import codecs
import itertools

import tree_sitter

from ..core.options import DYNAMIC  # the marker the core's option reader knows
from .bash_safety import _parser, _text, _unescape_dquoted, _unescape_word  # one reading of bash's words

__all__ = ["DYNAMIC", "Commands", "simple_commands"]

Commands = tuple[tuple[str, ...], ...]

_SEPARATORS = {";", "&", "&&", "||", "|", "|&", "\n", ";;"}
_GLOB = set("*?[]{}~")


class _Unprovable(Exception):
    """The line holds something whose effect a prefix rule cannot vouch for."""


def _expands(raw: str) -> bool:
    """Whether an unquoted word holds a glob, brace or tilde character that is not escaped."""
    i = 0
    while i < len(raw):
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] in _GLOB:
            return True
        i += 1
    return False


def _word(node: tree_sitter.Node) -> tuple[str, bool]:
    """The static value of a word and whether bash would still expand it (unquoted glob/brace/tilde)."""
    kind = node.type
    if kind in ("word", "number"):
        raw = _text(node)
        return _unescape_word(raw), _expands(raw)
    if kind == "raw_string":
        return _text(node)[1:-1], False
    if kind == "ansi_c_string":
        try:
            return codecs.decode(_text(node)[2:-1], "unicode_escape"), False
        except UnicodeDecodeError as exc:
            raise _Unprovable from exc
    if kind == "string":
        parts = []
        for child in node.named_children:
            if child.type != "string_content":
                raise _Unprovable  # an expansion inside double quotes
            parts.append(_unescape_dquoted(_text(child)))
        return "".join(parts), False
    if kind == "concatenation":
        values = [_word(child) for child in node.children]
        return "".join(v for v, _ in values), any(d for _, d in values)
    raise _Unprovable  # expansions, substitutions, anything else


def _safe_redirect(node: tree_sitter.Node) -> None:
    """Only ``>/dev/null`` (any fd, ``>>``, ``&>``) and fd duplication (``2>&1``, ``>&-``) are covered."""
    if node.type != "file_redirect":
        raise _Unprovable
    operator = next((c.type for c in node.children if not c.is_named), "")
    targets = [c for c in node.named_children if c.type != "file_descriptor"]
    if len(targets) != 1:
        raise _Unprovable
    target = _text(targets[0])
    if operator in (">", ">>", "&>", "&>>", ">|") and target == "/dev/null":
        return
    if operator in (">&", "<&") and (target.isdigit() or target == "-"):  # `>& file` writes a file
        return
    raise _Unprovable


def _one_line(node: tree_sitter.Node) -> None:
    """A newline between a command's words ends the command for bash, but tree-sitter-bash can read
    ``a | b\nc 2>x`` as the one command ``b c`` (found by the property test): such a parse proves nothing."""
    text, start = node.text or b"", node.start_byte
    for before, after in itertools.pairwise(node.children):
        gap = text[before.end_byte - start : after.start_byte - start].replace(b"\\\n", b"")
        if b"\n" in gap:
            raise _Unprovable


def _command(node: tree_sitter.Node) -> tuple[str, ...]:
    _one_line(node)
    words: list[str] = []
    for child in node.named_children:
        if child.type == "command_name":
            inner = child.named_children
            if len(inner) != 1:
                raise _Unprovable
            value, dynamic = _word(inner[0])
            if dynamic or not value:
                raise _Unprovable  # the command that runs must be known
            words.append(value)
        elif child.type == "comment":
            continue
        elif child.type == "file_redirect":
            _safe_redirect(child)
        elif words:
            value, dynamic = _word(child)
            words.append(DYNAMIC + value if dynamic else value)
        else:
            raise _Unprovable  # a variable assignment or a redirect before the command name
    if not words:
        raise _Unprovable
    return tuple(words)


def _walk(node: tree_sitter.Node, out: list[tuple[str, ...]]) -> None:
    kind = node.type
    if kind in ("program", "list", "pipeline"):
        for child in node.children:
            if child.type in _SEPARATORS or child.type == "comment":
                continue
            _walk(child, out)
    elif kind == "redirected_statement":
        _one_line(node)
        body, *redirects = node.named_children
        for redirect in redirects:
            _safe_redirect(redirect)
        _walk(body, out)
    elif kind == "command":
        out.append(_command(node))
    else:
        raise _Unprovable


def simple_commands(command: str) -> Commands | None:
    """The words of every simple command ``command`` runs, in order; None when that cannot be proved."""
    tree = _parser().parse(command.encode("utf-8", "surrogateescape"))
    root = tree.root_node
    if root.has_error:
        return None
    out: list[tuple[str, ...]] = []
    try:
        _walk(root, out)
    except _Unprovable:
        return None
    return tuple(out) or None
