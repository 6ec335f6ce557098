"""The one redacting formatter of every log handler (REQ-SEC-042): known secrets and the credentials a library's
line carries unknown to the guard (URL userinfo, query values, credential headers) never reach a log."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.log_redact import MASK, scrub
from phoenix_lsp.server import logs
from phoenix_lsp.store import SecretGuard


@pytest.mark.req("REQ-SEC-042")
@pytest.mark.parametrize(("line", "secret", "kept"), [
    ('HTTP Request: POST http://user:PASS-77@127.0.0.1:9/v1/chat/completions "HTTP/1.1 200 OK"', "PASS-77",
     "127.0.0.1:9/v1/chat/completions"),
    ("HTTP Request: POST http://127.0.0.1:8/mcp?token=TOK-88&x=1 \"HTTP/1.1 202 Accepted\"", "TOK-88", "/mcp?token="),
    ("GET https://host/cb#access_token=FRAG-99&state=1", "FRAG-99", "#access_token="),
    ("https://X-Amz-Credential@host/?X-Amz-Signature=SIG-11", "SIG-11", "X-Amz-Signature="),
    ("git clone https://ghp_TOKEN12@github.com/o/r", "ghp_TOKEN12", "github.com/o/r"),
    ("headers={'authorization': 'Bearer sk-12', 'content-type': 'application/json'}", "sk-12", "application/json"),
    ("[(b'x-api-key', b'KEY-13'), (b'host', b'api')]", "KEY-13", "(b'host', b'api')"),
    ('{"Cookie": "session=CK-14; other=2", "Accept": "*/*"}', "CK-14", '"Accept": "*/*"'),
    ("Authorization: Bearer BR-15 and more\nnext line", "BR-15", "next line"),
    ("Set-Cookie: sid=SC-16; HttpOnly", "SC-16", "Set-Cookie: "),
    ("OpenAI(api_key=AK-17, base_url=x)", "AK-17", "base_url=x"),
    ("connect password: PW-18 to the db", "PW-18", "to the db"),
    ("Received session ID: 4f1c9e-SID-19", "SID-19", "Received session ID: "),
    ("[(b'mcp-session-id', b'SID-20')]", "SID-20", "mcp-session-id"),
    ("retrying with bearer abcdefgh-TOKEN-21 after 401", "TOKEN-21", "after 401"),
])
def test_credentials_a_library_logs_are_scrubbed_and_the_rest_kept(line: str, secret: str, kept: str) -> None:
    out = scrub(line)
    assert secret not in out and MASK in out and kept in out, out


@pytest.mark.req("REQ-SEC-042")
@pytest.mark.parametrize("line", [
    "usage: max_tokens: 5, input_tokens=3, token_count=2",
    "a cookie, then more; the authorization header was missing",
    "conversation c-1: 3 messages, 2 tool calls",
    "see https://example.com/docs/page for more",
])
def test_ordinary_lines_are_left_alone(line: str) -> None:
    assert scrub(line) == line


@pytest.mark.req("REQ-SEC-042")
def test_the_file_handler_scrubs_library_records_their_args_and_their_exceptions(tmp_path: Path) -> None:
    guard = SecretGuard(environ={})
    guard.add_secret("KNOWN-SECRET-VALUE-1")
    root = logging.getLogger()
    before = list(root.handlers)
    level = root.level
    try:
        logs.setup(tmp_path, "INFO", guard)
        (handler,) = [h for h in root.handlers if h not in before]
        library = logging.getLogger("httpx")
        library.info('HTTP Request: %s %s "%s"', "POST", "http://u:ARG-PASS@127.0.0.1/v1?key=ARG-KEY", "200")
        try:
            raise RuntimeError("failed with Authorization: Bearer EXC-TOKEN and KNOWN-SECRET-VALUE-1")
        except RuntimeError:
            library.exception("request failed")
        handler.flush()
    finally:
        for h in root.handlers[:]:
            if h not in before:
                root.removeHandler(h)
                h.close()
        root.setLevel(level)
    written = (tmp_path / "phoenix-lsp.log").read_text()
    assert "HTTP Request: POST http://[REDACTED]@127.0.0.1/v1?key=[REDACTED]" in written
    assert "Traceback" in written and "RuntimeError" in written
    for secret in ("ARG-PASS", "ARG-KEY", "EXC-TOKEN", "KNOWN-SECRET-VALUE-1"):
        assert secret not in written


@pytest.mark.req("REQ-SEC-042")
def test_window_log_message_is_scrubbed_too() -> None:
    sent: list[str] = []
    handler = logs.ClientLogHandler(lambda params: sent.append(params.message), SecretGuard(environ={}))
    record = logging.LogRecord("mcp.client", logging.WARNING, __file__, 1, "GET %s", ("http://h/mcp?token=WL-1",),
                               None)
    handler.emit(record)
    assert sent == ["mcp.client: GET http://h/mcp?token=[REDACTED]"]


@pytest.mark.req("REQ-SEC-042")
def test_a_warning_logged_before_any_handler_is_installed_is_scrubbed_on_stderr(tmp_path: Path) -> None:
    """Python prints such a warning on stderr with its handler of last resort (an editor shows the server's
    stderr); the command line puts the redacting formatter on it first thing."""
    code = ("import logging, sys\nfrom phoenix_lsp import cli\nsys.argv = ['phoenix-lsp', 'no-such-command']\n"
            "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
            "logging.getLogger('httpx').warning('HTTP Request: GET http://u:LR-PASS@h/x?token=LR-TOKEN')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert "HTTP Request: GET http://[REDACTED]@h/x?token=[REDACTED]" in done.stderr, done.stderr
    assert "LR-PASS" not in done.stderr and "LR-TOKEN" not in done.stderr


@pytest.mark.req("REQ-SEC-042")
def test_no_module_installs_a_log_handler_but_the_two_that_use_the_formatter() -> None:
    """A handler set up anywhere else could bypass the redacting formatter: the log's handlers are made in
    ``server/logs.py`` (and the last resort in ``log_redact.py``), each with ``RedactingFormatter``."""
    package = Path(__file__).resolve().parents[2] / "phoenix_lsp"
    calls = {"addHandler", "basicConfig", "FileHandler", "StreamHandler", "setFormatter", "dictConfig", "fileConfig",
             "lastResort"}
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # logs.ClientLogHandler formats with RedactingFormatter: adding it is fine
        fine = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and _adds_the_client_handler(n)}
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
            if name in calls and id(node) not in fine:
                found.append(f"{path.relative_to(package)}:{getattr(node, 'lineno', 0)} {name}")
    places = {f.split(":")[0] for f in found}
    assert places == {"server/logs.py", "log_redact.py"}, found


def _adds_the_client_handler(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "addHandler"):
        return False
    given = node.args[0] if node.args else None
    return (isinstance(given, ast.Call) and isinstance(given.func, ast.Attribute)
            and given.func.attr == "ClientLogHandler")
