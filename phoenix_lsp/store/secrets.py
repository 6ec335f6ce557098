"""The guard that keeps secrets out of the database (REQ-SEC-001), and the one place that knows which secrets
the server has: the store, the log, the LLM clients' errors and the sink check of every model request
(``llm/sink.py``, REQ-SEC-012) all ask it.

``Store`` passes every text (and every image) it writes through ``SecretGuard.check``. The guard knows
the *current* value of the environment variables it watches (read at every check, so a key set after
start-up is covered too), the current value of every variable whose NAME looks like a credential
(:data:`CREDENTIAL_NAME`: ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``...), plus any value registered
with ``add_secret`` - for instance an API key that arrived in LSP initialization options instead of the
environment, an MCP server's credential - or found in a URL by ``add_url`` (a password in its user part, a
token in its query string).

Refusing is the last line of defence; callers that may legitimately see a secret (a tool that printed
the environment) should ``redact`` the text before handing it to the store.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

from phoenix_lsp.store.errors import SecretLeakError

#: Secrets shorter than this are ignored: a short value would match ordinary text by accident.
MIN_SECRET_LENGTH = 8
DEFAULT_SECRET_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
REDACTED = "[REDACTED]"
#: A variable whose name matches this holds a credential (its value is a secret when at least
#: MIN_SECRET_LENGTH long): a name ending in KEY, TOKEN, SECRET, PASSPHRASE, CREDENTIAL(S), AUTH or PAT, or
#: holding PASSWORD / PASSWD.
CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:[A-Z0-9]*KEY|TOKEN|SECRET|PASSPHRASE|CREDENTIALS?|AUTH|PAT)$|PASSWORD|PASSWD", re.IGNORECASE)
#: ... unless the name says the value is where the credential is, not the credential.
NOT_A_CREDENTIAL = re.compile(r"_(?:FILE|PATH|DIR|URL|HOST|ID|NAME|SOCK|TYPE|ENV)$", re.IGNORECASE)
#: A query-string parameter whose name matches this carries a credential (``?token=...``, ``&api_key=...``).
CREDENTIAL_PARAMETER = re.compile(
    r"token|key|secret|pass|pwd|auth|sig|signature|credential|session|code", re.IGNORECASE)


def credential_variables(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(name, value) of the variables of ``environ`` whose name looks like a credential's and whose value is
    long enough to be one (not a path: a ``*_KEY`` that names a file is not the key)."""
    return [(name, value) for name, value in environ.items()
            if len(value) >= MIN_SECRET_LENGTH and CREDENTIAL_NAME.search(name) and not NOT_A_CREDENTIAL.search(name)
            and not value.startswith(("/", "~/", "./"))]


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: the password of its user part (the user part itself when it has no password:
    ``https://TOKEN@host``), the values of query-string parameters named like credentials."""
    try:
        parts = urlsplit(url.strip())
        password = parts.password
        username = parts.username
    except ValueError:
        return []
    found = []
    if password:
        found.append(password)
    elif username:
        found.append(username)
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if CREDENTIAL_PARAMETER.search(name):
            found.append(value)
    return [value for value in found if len(value) >= MIN_SECRET_LENGTH]


class SecretGuard:
    """Refuses texts that contain a known secret.

    ``env_vars`` names the variables whose current values are secrets; ``environ`` defaults to
    ``os.environ`` and exists so tests can pass their own mapping.
    """

    def __init__(
        self,
        env_vars: Iterable[str] = DEFAULT_SECRET_ENV_VARS,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._env_vars = tuple(env_vars)
        self._environ = environ
        self._extra: dict[str, str] = {}  # value -> where it comes from (never the value)

    def add_secret(self, value: str, label: str = "a registered secret") -> None:
        """Also refuse texts containing ``value`` (ignored when shorter than 8 characters); ``label`` says where
        it comes from, for the user (never the value: "the key of provider openai")."""
        if len(value) >= MIN_SECRET_LENGTH:
            self._extra.setdefault(value, label)

    def add_url(self, url: str, label: str) -> None:
        """Also refuse the secrets ``url`` carries (:func:`url_secrets`), each labelled ``label``."""
        for value in url_secrets(url):
            self.add_secret(value, label)

    def known(self) -> list[tuple[str, str]]:
        """(label, value) pairs for every secret currently known; the label never contains the value."""
        return self._secrets()

    def _secrets(self) -> list[tuple[str, str]]:
        environ = os.environ if self._environ is None else self._environ
        found: list[tuple[str, str]] = []
        for name in self._env_vars:
            value = environ.get(name, "")
            if len(value) >= MIN_SECRET_LENGTH:
                found.append((f"the value of {name}", value))
        known = {value for _label, value in found}  # the server registers the key it read from the variable too
        for value, label in sorted(self._extra.items()):
            if value not in known:
                known.add(value)
                found.append((label, value))
        for name, value in credential_variables(environ):
            if value not in known:
                known.add(value)
                found.append((f"the value of {name}", value))
        return found

    def check(self, text: str, what: str) -> None:
        """Raise ``SecretLeakError`` if ``text`` contains a secret; ``what`` names the text in the error."""
        for label, value in self._secrets():
            if value in text:
                raise SecretLeakError(_refusal(what, label))

    def check_bytes(self, data: bytes, what: str) -> None:
        """Like ``check`` for binary data (the secret is looked for in its UTF-8 form)."""
        for label, value in self._secrets():
            if value.encode() in data:
                raise SecretLeakError(_refusal(what, label))

    def redact(self, text: str) -> str:
        """Return ``text`` with every known secret replaced by ``[REDACTED]``, also in the escaped forms a
        secret takes inside a repr of a str or bytes (as error messages of other libraries show it).

        This is the one redactor of the process: the store, the log and the LLM client's errors use it."""
        return self.redactor()(text)

    def redactor(self) -> Callable[[str], str]:
        """``redact`` with the secrets known now, for many texts at once (every string of an MCP tool's result):
        the environment is read once, here, instead of at each text."""
        # Longest first, so a secret that contains another one is replaced whole; the same forms, in the same
        # order, as ``decided`` holds back for a stream.
        forms = self._forms()

        def redact(text: str) -> str:
            for value in forms:
                text = text.replace(value, REDACTED)
            return text

        return redact

    def decided(self, text: str) -> int:
        """How much of ``text`` can be redacted now, when more text may follow it (a model's stream): the
        length of the longest start of ``text`` that no known secret (nor one of its escaped forms) starts
        before and ends after, whatever follows. ``redact`` of that start, then of the rest joined to what
        follows, gives what ``redact`` of the whole gives; the rest must wait (``store/stream_redact.py``)."""
        forms = self._forms()
        end = len(text)
        cut = end
        # what redact replaces in ``text``, longest forms first: sorted, never overlapping (so a bisection finds
        # what a place falls in, and a text that repeats secrets costs no more than linear time)
        starts: list[int] = []
        ends: list[int] = []
        for form in forms:
            # a form the following text could complete starts where the rest of ``text`` is its beginning
            start = text.find(form[0], max(0, end - len(form) + 1))
            while start != -1 and start < cut:
                if form.startswith(text[start:]):
                    cut = start
                    break
                start = text.find(form[0], start + 1)
            # the forms redact replaces: left to right, not overlapping, not where a longer one was replaced
            at = text.find(form)
            while at != -1:
                stop = at + len(form)
                i = bisect_left(starts, stop)
                if i and ends[i - 1] > at:  # inside a longer one's place: so is any start before its end
                    at = text.find(form, ends[i - 1])
                    continue
                starts.insert(i, at)
                ends.insert(i, stop)
                at = text.find(form, stop)
        i = bisect_left(starts, cut)
        if i and ends[i - 1] > cut:  # a replaced form is never cut in two
            cut = starts[i - 1]
        return cut

    #: the secrets ``_forms`` last saw, and their forms (a stream asks at every delta; the secrets rarely change)
    _forms_of: tuple[tuple[str, ...], list[str]] = ((), [])

    def _forms(self) -> list[str]:
        """Every known secret in each form ``redact`` replaces, longest first (the order it replaces them in)."""
        secrets = tuple(value for _label, value in self._secrets())
        if secrets != self._forms_of[0]:
            forms = {f for v in secrets for f in (v, repr(v)[1:-1], repr(v.encode())[2:-1])}
            self._forms_of = (secrets, sorted(forms, key=len, reverse=True))
        return self._forms_of[1]


def _refusal(what: str, label: str) -> str:
    # The message names where the secret was found but never repeats it.
    return (
        f"refusing to write {what}: it contains {label}, and a secret must never reach the database "
        "(REQ-SEC-001); nothing was written. Redact the text first (SecretGuard.redact) - it usually "
        "comes from a tool output or a pasted message"
    )
