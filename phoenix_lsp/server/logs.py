"""The server's log: a file in the data directory and ``window/logMessage``, secrets redacted (REQ-PROTO-034).

Every handler the process installs formats with :class:`RedactingFormatter` (REQ-SEC-042): the whole line a
record makes (its message with its args, and its exception's text) passes the process's one redactor, which
knows the secrets the server holds, and then :func:`scrub`, which removes the credentials no one told the
server about from the shapes libraries log them in: an HTTP library logs every request's URL at INFO (a token in
an MCP server's URL, a password in a provider's base URL), and a debug line may show a request's headers.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:  # lsp.py imports this module at start-up; the store (and the core under it) load later
    from ..store.secrets import SecretGuard


MASK = "[REDACTED]"  # the marker SecretGuard.redact writes (not imported: the store loads after start-up)

#: a URL: a scheme, ``://``, then up to a space, a quote or an angle bracket (how logs and reprs end one)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
#: its userinfo (``user:password@``, or a token as the user name); ``@`` before the first ``/``, ``?`` or ``#``
_USERINFO = re.compile(r"^([^:]+://)[^/?#@]*@")
#: a parameter's value in its query string or fragment
_PARAM_VALUE = re.compile(r"=[^&;#]*")
#: headers that carry a credential; the value runs to the end of the line (``Bearer xyz``, cookies' ``a=b; c=d``)
_HEADERS = ("proxy-authorization", "authorization", "x-api-key", "api-key", "x-goog-api-key", "x-auth-token",
            "set-cookie", "cookie")
#: names whose value is a credential wherever they are written ``name=value`` or ``name: value``
_NAMES = ("api_key", "api-key", "apikey", "access_token", "refresh_token", "client_secret", "password", "passwd",
          "secret", "token")
_NAMED = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?-i:b)?['\"]|)(" + "|".join(re.escape(n) for n in (*_HEADERS, *_NAMES)) + r")"
    r"(?![A-Za-z0-9])(['\"]?)(\s*[:=]\s*|\s*,\s*)(?-i:b)?(['\"]?)")


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
      ``api-key``, ``x-goog-api-key``, ``x-auth-token``, ``Cookie``, ``Set-Cookie``) as text (``Name: value``,
      to the end of the line), as a mapping's or a tuple's repr (``'authorization': 'Bearer x'``,
      ``(b'cookie', b'a=b')``) or as JSON;
    - the value after a credential-like name (``api_key``, ``access_token``, ``client_secret``, ``password``,
      ``secret``, ``token``...) written ``name=value`` or ``name: value``, up to the next space or delimiter.
    """
    text = _URL.sub(_scrub_url, text)
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
            end = start
            while end < len(text) and not text[end].isspace() and text[end] not in ",;&)}]'\"":
                end += 1
        if end == start:
            continue
        out.append(text[done:start] + MASK)
        done = end
    return "".join(out) + text[done:] if out else text


class RedactingFormatter(logging.Formatter):
    """Formats a record (its message with its args, and its exception's text), then lets the process's one
    redactor replace every known secret (REQ-SEC-001) and :func:`scrub` the credentials it does not know
    (REQ-SEC-042). Every handler the process installs formats with it."""

    def __init__(self, fmt: str, guard: SecretGuard) -> None:
        super().__init__(fmt)
        self.guard = guard

    def format(self, record: logging.LogRecord) -> str:
        return scrub(self.guard.redact(super().format(record)))


class ClientLogHandler(logging.Handler):
    """Forwards the server's own log records to the client as window/logMessage."""

    LEVELS = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, send: Callable[[types.LogMessageParams], Any], guard: SecretGuard) -> None:
        super().__init__(logging.INFO)
        self.send = send
        self.setFormatter(RedactingFormatter("%(name)s: %(message)s", guard))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = self.LEVELS.get(record.levelno, types.MessageType.Log)
            self.send(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:  # logging must never break the server
            self.handleError(record)


class RateLimit(logging.Filter):
    """At most ``burst`` warnings and errors per ``window_s`` seconds from one logger; the others are counted,
    and the next line let through says how many were left out. Hostile input (REQ-PROTO-048) can cause one
    such line per message: the log must say so without growing by a traceback per message."""

    def __init__(self, burst: int = 20, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst, self.window_s, self.clock = burst, window_s, clock
        self.started = -window_s
        self.passed = 0
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        if now - self.started >= self.window_s:
            self.started, self.passed = now, 0
        if self.passed >= self.burst:
            self.dropped += 1
            return False
        self.passed += 1
        if self.dropped:
            left_out = f"{self.dropped} similar lines left out: at most {self.burst} per {self.window_s:g} s"
            record.msg = f"{record.msg} ({left_out})"
            self.dropped = 0
        return True


#: the loggers that write a line (pygls: with a traceback) per malformed message or failed request
HOSTILE_INPUT_LOGGERS = (
    "phoenix_lsp.server.transport",
    "pygls.protocol.json_rpc",
    "pygls.protocol.language_server",
    "pygls.server",
    "pygls.feature_manager",
    "pygls.workspace.workspace",
    "pygls.workspace.text_document",
)


def limit_hostile_input_logs() -> None:
    """Rate-limit the loggers of :data:`HOSTILE_INPUT_LOGGERS` (once per process)."""
    for name in HOSTILE_INPUT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RateLimit) for f in logger.filters):
            logger.addFilter(RateLimit())


def setup(data_dir: Path, level: str, guard: SecretGuard) -> None:
    """Log to a file in the data directory (never to stdout: that is the LSP channel)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(data_dir / "phoenix-lsp.log")
    except OSError:
        handler = logging.StreamHandler()  # stderr
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", guard))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    logging.getLogger("pygls").setLevel(logging.WARNING)
