"""The one formatter of every log handler the process installs (REQ-SEC-042), in a module light enough for
the command line to load before anything else.

The whole line a record makes (its message with its args, and its exception's text) passes the process's one
redactor (``SecretGuard.redact``), which knows the secrets the server holds, and then :func:`scrub`, which
removes the credentials no one told the server about from the shapes libraries log them in: an HTTP library
logs every request's URL at INFO (a token in an MCP server's URL, a password in a provider's base URL), and a
debug line may show a request's headers. Last, the line's terminal control sequences are made visible and inert
(``safe_text.terminal_safe``, REQ-SEC-004): a log line quotes what came from outside (a service's error text, a
path, a tool's output), and it is read in a terminal (a run's stderr, ``tail -f`` of the log file).
:func:`guard_last_resort` puts it on the handler Python uses when no handler is installed yet (warnings before
start-up ends, the terminal client, doctor).
"""

from __future__ import annotations

import logging
import re
import sys
from typing import TYPE_CHECKING

from .safe_text import terminal_safe

if TYPE_CHECKING:  # the store (and the core under it) load after start-up
    from .store.secrets import SecretGuard

MASK = "[REDACTED]"  # the marker SecretGuard.redact writes (not imported: the store loads after start-up)

#: a URL: a scheme, ``://``, then up to a space, a quote or an angle bracket (how logs and reprs end one). The
#: scheme starts where no scheme character is before it and is at most 32 characters long, so a line of
#: ``a.a.a.a...`` is scanned once, not once per character (a hostile line must not stall the log)
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>`]+")
#: its userinfo (``user:password@``, or a token as the user name); ``@`` before the first ``/``, ``?`` or ``#``
_USERINFO = re.compile(r"^([^:]+://)[^/?#@]*@")
#: a parameter's value in its query string or fragment
_PARAM_VALUE = re.compile(r"=[^&;#]*")
#: headers that carry a credential; the value runs to the end of the line (``Bearer xyz``, cookies' ``a=b; c=d``)
_HEADERS = ("proxy-authorization", "authorization", "x-api-key", "api-key", "x-goog-api-key", "x-auth-token",
            "set-cookie", "cookie", "mcp-session-id")
#: names whose value is a credential wherever they are written ``name=value`` or ``name: value``
#: (an MCP session id lets whoever holds it speak in that session: the MCP client logs it at INFO)
_NAMES = ("api_key", "api-key", "apikey", "access_token", "refresh_token", "client_secret", "password", "passwd",
          "secret", "token", "session id", "session_id", "session-id")
_NAMED = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?-i:b)?['\"]|)(" + "|".join(re.escape(n) for n in (*_HEADERS, *_NAMES)) + r")"
    r"(?![A-Za-z0-9])(['\"]?)(\s*[:=]\s*|\s*,\s*)(?-i:b)?(['\"]?)")

#: a value written after a credential-like name, unquoted: up to a space or a delimiter
_BARE_VALUE = re.compile(r"[^\s,;&)}\]'\"]*")
#: a bearer token written without its header's name
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")


def _scrub_url(match: re.Match[str]) -> str:
    url = _USERINFO.sub(rf"\1{MASK}@", match.group())
    at = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=-1)
    return url if at < 0 else url[:at] + _PARAM_VALUE.sub(f"={MASK}", url[at:])


def scrub(text: str) -> str:
    """``text`` without the credentials a log line can carry unknown to the guard (REQ-SEC-042):

    - a URL's userinfo, whole (``https://user:pass@host``, and ``https://TOKEN@host``, where the token is the
      user name);
    - the value of every parameter of a URL's query string and fragment, whatever its name: the parameter that
      carries a credential is named differently by each service (``token``, ``key``, ``sig``, ``code``,
      ``X-Amz-Credential``, ``access_token`` in an OAuth fragment...), and a log line needs the URL's host and
      path, not its values; the names stay, so the line still says which parameters were sent;
    - the value of a credential-bearing header (``Authorization``, ``Proxy-Authorization``, ``x-api-key``,
      ``api-key``, ``x-goog-api-key``, ``x-auth-token``, ``Cookie``, ``Set-Cookie``, ``mcp-session-id``) as
      text (``Name: value``, to the end of the line), as a mapping's or a tuple's repr (``'authorization': 'Bearer x'``,
      ``(b'cookie', b'a=b')``) or as JSON;
    - the value after a credential-like name (``api_key``, ``access_token``, ``client_secret``, ``password``,
      ``secret``, ``token``, ``session id``...) written ``name=value`` or ``name: value``, up to the next space
      or delimiter;
    - a bearer token (``Bearer`` and 8 or more token characters) wherever it is written.
    """
    text = _BEARER.sub(rf"\1{MASK}", _URL.sub(_scrub_url, text))
    lowered = text.lower()
    if not any(name in lowered for name in (*_HEADERS, *_NAMES)):  # most lines: no name to look at
        return text
    out: list[str] = []
    done = 0
    for match in _NAMED.finditer(text):
        name_quote, name, closing, separator, value_quote = match.groups()
        if name_quote[-1:] != closing or match.start() < done:
            continue
        if "," in separator and not name_quote:  # ``cookie, then`` is prose, ``(b'cookie', b'a=b')`` a header
            continue
        start = match.end()
        if text.startswith(MASK, start):  # a URL's parameter, scrubbed already
            continue
        if value_quote:
            end = text.find(value_quote, start)
            end = len(text) if end < 0 else end
        elif name.lower() in _HEADERS:
            end = len(text) if (end := text.find("\n", start)) < 0 else end
        else:
            end = _BARE_VALUE.match(text, start).end()  # type: ignore[union-attr]  # it matches the empty string
        if end == start:
            continue
        out.append(text[done:start] + MASK)
        done = end
    return "".join(out) + text[done:] if out else text


class RedactingFormatter(logging.Formatter):
    """Formats a record (its message with its args, and its exception's text), then lets the process's one
    redactor replace every known secret (REQ-SEC-001) and :func:`scrub` the credentials it does not know
    (REQ-SEC-042). Every handler the process installs formats with it."""

    def __init__(self, fmt: str, guard: SecretGuard | None) -> None:
        super().__init__(fmt)
        self.guard = guard  # None: the environment's keys, watched by a guard made at the first record

    def format(self, record: logging.LogRecord) -> str:
        if self.guard is None:
            from .store.secrets import SecretGuard  # lazy: the store package is heavy; cli imports this module

            self.guard = SecretGuard()
        return cleaned(super().format(record), self.guard)


def cleaned(text: str, guard: SecretGuard) -> str:
    """``text`` as every log line is written: the known secrets replaced (``guard``), the unknown credentials of
    URLs, headers and ``name=value`` pairs scrubbed (:func:`scrub`), and its control sequences made inert. What
    else prints for a person what came from outside calls it too (``doctor``)."""
    return terminal_safe(scrub(guard.redact(text)))


def guard_last_resort() -> None:
    """Python's handler of last resort (stderr, for warnings logged while no handler is installed) formats
    with :class:`RedactingFormatter` too; the guard watches the environment's keys (the store is not open)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(RedactingFormatter("%(message)s", None))
    logging.lastResort = handler
