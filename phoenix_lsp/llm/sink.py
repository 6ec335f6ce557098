"""The sink check (REQ-SEC-012): the last look at a model request before it leaves for any provider.

Every request passes :meth:`phoenix_lsp.llm.router.LlmRouter.stream`, whichever door its texts came in by (a
message, an attachment, a tool result, a tool definition, the system prompt, a summary's instruction); the
router gives the request to :func:`check` with what the server knows, and sends what comes back. This module is
pure: the secrets are given (``SecretGuard.known()`` is the one place that knows them), nothing is read from the
environment, nothing is logged.

What it finds:

- the server's known secrets, in the forms a text can carry them (as they are, escaped as in a repr or a JSON
  string): every provider key, every MCP credential and URL secret, credential-like values of the server's
  environment;
- with ``formats`` (Restricted conversations) also the well-known credential formats of :data:`FORMATS`: private
  key blocks, cloud access key ids, tokens with known prefixes, JWTs. The patterns follow detect-secrets' plugins
  (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, private keys, JWT), which is not on the package index this project
  installs from, and whose per-line plugin scan is far slower than the 5 ms budget of a 200,000-token request.

How it is fast: one Aho-Corasick pass (``ahocorasick_rs``) over the request's texts joined, looking for every
known secret's forms and every format's literal trigger at once. A clean request costs that pass alone and comes
back as the same object; only the texts holding a hit are searched again (a format's regex runs only on the texts
that hold its trigger) and rebuilt.

What it cannot see: a secret it does not know and that has no known format (a password typed in a message), one
split, encoded or transformed (base64, reversed, spelled out) on its way in, and the data of images.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs

#: What a finding is replaced with: the source's label, never the value.
MARK = "[REDACTED: {label}]"
#: A known secret shorter than this is not looked for (SecretGuard's minimum too).
MIN_KNOWN = 8
#: How texts are encoded for the automaton: a lone surrogate (an environment variable's undecodable byte, a
#: hostile text) is kept, not an error.
_CODEC = ("utf-8", "surrogatepass")
#: Between two texts in the joined haystack: keeps a needle from being found across two texts (were one found so,
#: the second look at its message would find nothing and change nothing).
_SEPARATOR = "\x00"
#: The longest private key block replaced whole (beyond it the rest is cut by the base64 branch's bound too).
_KEY_BODY = 16_384


@dataclass(frozen=True)
class Format:
    """A well-known credential format: a label for the user, literal triggers (one must occur in a text for the
    regex to run on it) and the regex whose matches are replaced."""

    label: str
    triggers: tuple[str, ...]
    pattern: re.Pattern[str]


_KEY_HEAD = r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_KEY_TAIL = r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"

#: The formats looked for in Restricted conversations (after detect-secrets' plugins; see the module docstring).
FORMATS: tuple[Format, ...] = (
    # a whole block; without its END line, the header and the lines after it up to a blank line (base64, or
    # "Proc-Type: ..." headers)
    Format("a private key block", ("PRIVATE KEY",), re.compile(
        rf"{_KEY_HEAD}(?:[\s\S]{{0,{_KEY_BODY}}}?{_KEY_TAIL}"
        rf"|(?:\r?\n(?:[A-Za-z0-9+/=]{{4,}}|[A-Za-z-]+: [^\n]*)){{0,{_KEY_BODY // 64}}})")),
    # each pattern starts with a literal (or a few), so the regex engine skips ahead to it; "not inside a longer
    # word" (detect-secrets' \b) is checked on the character before a match (:meth:`Matcher.replace`)
    Format("an AWS access key id", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
           re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")),
    Format("a GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
           re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}")),
    Format("a GitLab token", ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"),
           re.compile(r"gl(?:pat|dt|ft|soat|rt)-[A-Za-z0-9_-]{20,50}")),
    Format("a Slack token", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "hooks.slack.com/services/"),
           re.compile(r"xox[abposr]-(?:[0-9]+-)+[A-Za-z0-9-]+|https://hooks\.slack\.com/services/[A-Za-z0-9_/]+")),
    Format("a Stripe key", ("sk_live_", "rk_live_", "pk_live_"), re.compile(r"[srp]k_live_[0-9A-Za-z]{24,99}")),
    Format("an Anthropic API key", ("sk-ant-",), re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}")),
    Format("an OpenAI API key", ("T3BlbkFJ", "sk-proj-", "sk-svcacct-", "sk-admin-"), re.compile(
        r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9_-]{0,200}T3BlbkFJ[A-Za-z0-9_-]+)")),
    Format("a Google API key", ("AIza",), re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    Format("an npm token", ("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}")),
    Format("a PyPI token", ("pypi-AgEIcHlwaS5vcmc",), re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    Format("a JSON Web Token", ("eyJ",),
           re.compile(r"eyJ[A-Za-z0-9_-]{8,}={0,2}\.eyJ[A-Za-z0-9_-]{8,}={0,2}\.[A-Za-z0-9_-]*")),
)


@dataclass(frozen=True)
class Finding:
    """What was replaced: the source's label (never the value) and how many times."""

    label: str
    count: int


def forms(value: str) -> set[str]:
    """The forms ``value`` takes in a text: as it is, escaped as in a repr of a str or bytes, or a JSON string."""
    return {value, repr(value)[1:-1], repr(value.encode(*_CODEC))[2:-1],
            json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}


class Matcher:
    """The needles of one set of known secrets (with or without the formats), built once and kept while the
    secrets stay the same (:func:`matcher`)."""

    def __init__(self, known: Sequence[tuple[str, str]], formats: bool) -> None:
        # needle -> the label of the known secret it is a form of (the first source named wins)
        self.known: dict[str, str] = {}
        for label, value in known:
            if len(value) >= MIN_KNOWN:
                for form in forms(value):
                    self.known.setdefault(form, label)
        self.formats: tuple[Format, ...] = FORMATS if formats else ()
        needles = list(self.known)  # first: at one position a known secret wins over a trigger
        for fmt in self.formats:
            needles.extend(t for t in fmt.triggers if t not in needles)
        # leftmost-first lets the automaton skip ahead with its SIMD prefilter (tens of times faster than the
        # standard semantics); it reports the leftmost needle of every text that holds one, which is all
        # :func:`check` needs to know: such a text is then searched for every needle (:meth:`replace`)
        self._automaton = ahocorasick_rs.BytesAhoCorasick(
            [n.encode(*_CODEC) for n in needles], matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)

    def starts(self, data: bytes) -> list[int]:
        """Where needles start in ``data`` (UTF-8), leftmost first, not overlapping."""
        return [start for _index, start, _end in self._automaton.find_matches_as_indexes(data)]

    def replace(self, text: str, counts: dict[str, int]) -> str:
        """``text`` with every known secret and every format whose trigger it holds replaced; ``counts`` gains
        each replacement by label."""
        # longest first, so a secret that contains another one is replaced whole
        for needle in sorted((n for n in self.known if n in text), key=len, reverse=True):
            found = text.count(needle)
            if found:
                label = self.known[needle]
                text = text.replace(needle, MARK.format(label=label))
                counts[label] = counts.get(label, 0) + found
        for fmt in self.formats:
            if any(t in text for t in fmt.triggers):
                mark = MARK.format(label=fmt.label)
                found = 0

                def swap(m: re.Match[str], mark: str = mark) -> str:
                    nonlocal found
                    at, whole = m.start(), m.string
                    if at and (whole[at - 1].isalnum() or whole[at - 1] == "_"):  # inside a longer word
                        return m.group()
                    found += 1
                    return mark

                text = fmt.pattern.sub(swap, text)
                if found:
                    counts[fmt.label] = counts.get(fmt.label, 0) + found
        return text


@functools.lru_cache(maxsize=8)
def _matcher(known: tuple[tuple[str, str], ...], formats: bool) -> Matcher:
    return Matcher(known, formats)


def matcher(known: Sequence[tuple[str, str]], formats: bool) -> Matcher:
    """The matcher of ``known`` and ``formats``, built once per distinct set (the last few are kept)."""
    return _matcher(tuple(known), formats)


_IMAGES = ("image", "image_url", "input_image")


def strings(value: Any, out: list[str]) -> None:
    """Every string of a JSON-like value (object keys too), appended to ``out``. Written for speed (a request
    holds thousands): a string item is appended without a call, and images' data is not walked (:func:`rebuild`
    leaves it alone anyway)."""
    kind = type(value)
    if kind is str:
        out.append(value)
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) is str:
                out.append(item)
            else:
                strings(item, out)
    elif kind is dict or isinstance(value, Mapping):
        if value.get("type") in _IMAGES:
            return
        for key, item in value.items():
            out.append(str(key))
            if type(item) is str:
                out.append(item)
            else:
                strings(item, out)


def rebuild(value: Any, fix: Callable[[str], str]) -> Any:
    """``value`` with ``fix`` applied to every string in it (images' data left alone; a tuple comes back as a
    list, as JSON has it); a part in which nothing changed is the same object."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, list | tuple):
        items = [rebuild(item, fix) for item in value]
        return value if all(map(operator.is_, items, value)) else items
    if isinstance(value, Mapping):
        if value.get("type") in _IMAGES:
            return value
        keys = [fix(str(k)) for k in value]
        items = [rebuild(v, fix) for v in value.values()]
        if keys == list(value) and all(map(operator.is_, items, value.values())):
            return value
        return {key: items[i] for i, key in enumerate(keys)}
    return value


def _units(parts: Sequence[Any]) -> list[tuple[int, int | None, Any]]:
    """The request's units: (part, item or None, value): each item of a list part (a message, a tool), or the
    part itself (a system prompt given as a string)."""
    units: list[tuple[int, int | None, Any]] = []
    for p, part in enumerate(parts):
        if isinstance(part, list):
            units.extend((p, i, item) for i, item in enumerate(part))
        else:
            units.append((p, None, part))
    return units


def check(parts: Sequence[Any], known: Sequence[tuple[str, str]], formats: bool) -> tuple[list[Any], list[Finding]]:
    """``parts`` (a request's JSON-like pieces: system prompt, messages, tools) with every finding replaced, and
    the findings by label, the known secrets' first. Nothing found: the same parts (the same objects) and no
    findings."""
    match = matcher(known, formats)
    units = _units(parts)
    blobs: list[bytes] = []  # each unit's texts, joined and encoded: their lengths place a hit in its unit
    for _p, _i, value in units:
        texts: list[str] = []
        strings(value, texts)
        blobs.append(_SEPARATOR.join(texts).encode(*_CODEC))
    starts = match.starts(_SEPARATOR.encode().join(blobs))
    if not starts:
        return list(parts), []
    ends = list(itertools.accumulate(len(blob) + 1 for blob in blobs))  # where each unit's bytes end
    dirty = {bisect.bisect_right(ends, start) for start in starts}
    counts: dict[str, int] = {}
    fixed = list(parts)

    def fix(text: str) -> str:
        return match.replace(text, counts)

    for unit in sorted(dirty):
        p, i, value = units[unit]
        new = rebuild(value, fix)
        if new is value:
            continue
        if i is None:
            fixed[p] = new
        else:
            if fixed[p] is parts[p]:  # the list is copied once, the caller's left as it was
                fixed[p] = list(parts[p])
            fixed[p][i] = new
    if not counts:
        return list(parts), []
    return fixed, [Finding(label, count) for label, count in counts.items()]
