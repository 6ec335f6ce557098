"""A secret never reaches the database (REQ-SEC-001)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from phoenix_lsp.store import AuditEntry, SecretGuard, SecretLeakError, Store
from tests.store.conftest import MakeRecord

KEY = "sk-ant-api03-" + "Zx9" * 20


def _db_bytes(db_path: Path) -> bytes:
    # The main file and the write-ahead log: a refused text must be in neither.
    data = db_path.read_bytes()
    wal = db_path.with_name(db_path.name + "-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


@pytest.mark.req("REQ-SEC-001")
def test_every_write_path_refuses_the_api_key(
    db_path: Path, make_record: MakeRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = make_record()
    with Store(db_path) as store:
        store.create_conversation(rec)
        store.append_messages(rec.id, [(0, "{}")])
        # Set after the store opened: the guard reads the current value at each write.
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        leaky = json.dumps({"tool_output": f"ANTHROPIC_API_KEY={KEY}\nLANG=C.UTF-8"})
        writes: list[Callable[[], object]] = [
            lambda: store.create_conversation(make_record(title=f"key {KEY}")),
            lambda: store.create_conversation(make_record(working_directory=f"/path/{KEY}")),
            lambda: store.update_title(rec.id, KEY),
            lambda: store.save_state(rec.id, leaky, "idle", 1.0),
            lambda: store.save_state(rec.id, "{}", KEY, 1.0),
            lambda: store.append_messages(rec.id, [(1, "{}"), (2, leaky)]),
            lambda: store.append_event(rec.id, 1, leaky),
            lambda: store.append_audit(AuditEntry(1.0, rec.id, "agent", "tool_refused", None, None, leaky)),
            lambda: store.put_image(b"\x89PNG" + KEY.encode(), "image/png"),
        ]
        for write in writes:
            with pytest.raises(SecretLeakError) as info:
                write()
            message = str(info.value)
            assert "ANTHROPIC_API_KEY" in message
            assert KEY not in message
        # Nothing partial: the refused batch's first (clean) message was not written either.
        assert store.message_count(rec.id) == 1
        assert store.list_conversations()[0].title == rec.title
        assert store.query_audit(None) == []
        # Clean texts still go through, and a redacted text is accepted.
        store.append_messages(rec.id, [(1, store.guard.redact(leaky))])
        assert "[REDACTED]" in store.load(rec.id).messages[1]
        assert store.check_integrity() == []
    assert KEY.encode() not in _db_bytes(db_path)


@pytest.mark.req("REQ-SEC-001")
def test_short_or_unset_key_is_not_a_secret(
    store: Store, make_record: MakeRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = make_record()
    store.create_conversation(rec)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "abc")  # < 8 chars would match ordinary text by accident
    store.append_messages(rec.id, [(0, '"abc abc"')])
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    store.append_messages(rec.id, [(1, json.dumps(KEY))])
    assert store.message_count(rec.id) == 2


@pytest.mark.req("REQ-SEC-001")
def test_registered_secret_from_initialization_options_is_refused(store: Store, make_record: MakeRecord) -> None:
    rec = make_record()
    store.create_conversation(rec)
    secret = "key-given-in-initialization-options-123"
    store.guard.add_secret(secret)
    store.guard.add_secret("short")  # ignored: too short to be told apart from ordinary words
    with pytest.raises(SecretLeakError, match="a registered secret"):
        store.save_state(rec.id, json.dumps({"apiKey": secret}), "idle", 1.0)
    store.save_state(rec.id, '"a short word"', "idle", 1.0)


@pytest.mark.req("REQ-SEC-001")
def test_guard_redacts_longest_secret_first() -> None:
    guard = SecretGuard(["OUTER", "INNER"], environ={"OUTER": "abcdefgh-12345678", "INNER": "abcdefgh"})
    assert guard.redact("x abcdefgh-12345678 y abcdefgh z") == "x [REDACTED] y [REDACTED] z"
    with pytest.raises(SecretLeakError, match="the value of INNER"):
        guard.check("..abcdefgh..", "a test text")


@pytest.mark.req("REQ-SEC-001", "REQ-PROTO-049")
def test_a_key_known_twice_is_looked_for_once_and_stays_refused_when_the_variable_goes() -> None:
    """The server registers the key it read from ANTHROPIC_API_KEY: every text was scanned for it twice (a
    20 MB answer is checked as it streams and again when stored)."""
    key = "sk-ant-known-twice-0123456789"
    env = {"ANTHROPIC_API_KEY": key}
    guard = SecretGuard(["ANTHROPIC_API_KEY"], environ=env)
    guard.add_secret(key)
    assert [value for _label, value in guard._secrets()] == [key]
    with pytest.raises(SecretLeakError, match="the value of ANTHROPIC_API_KEY"):
        guard.check(f"..{key}..", "a test text")
    env.clear()  # the variable is gone: the registered copy still guards
    with pytest.raises(SecretLeakError, match="a registered secret"):
        guard.check(f"..{key}..", "a test text")


@pytest.mark.req("REQ-SEC-012", "REQ-SEC-001")
@pytest.mark.parametrize(("name", "secret"), [
    ("GITHUB_TOKEN", True), ("DEPLOY_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("STRIPE_SECRET", True),
    ("DB_PASSWORD", True), ("PGPASSWORD", True), ("GIT_AUTH", True), ("GITLAB_PAT", True), ("apikey", True),
    ("AWS_ACCESS_KEY_ID", False), ("TOKEN_FILE", False), ("SSH_AUTH_SOCK", False), ("SECRET_DIR", False),
    ("HOME", False), ("PATH", False), ("PWD", False), ("MONKEY_BUSINESS", False), ("TOKENIZER", False),
])
def test_a_variable_named_like_a_credential_is_a_secret(name: str, secret: bool) -> None:
    value = "v4lue-0f-the-variable"
    guard = SecretGuard(environ={name: value, "OTHER": "not-a-secret-at-all"})
    assert ((f"the value of {name}", value) in guard.known()) is secret
    assert (guard.redact(f"x {value} y") == "x [REDACTED] y") is secret
    assert "not-a-secret-at-all" not in {v for _label, v in guard.known()}


@pytest.mark.req("REQ-SEC-012")
def test_a_credential_variable_that_is_short_or_a_path_is_not_a_secret() -> None:
    guard = SecretGuard(environ={"A_TOKEN": "1234567", "B_KEY": "/home/me/key.pem", "C_SECRET": "~/s3cret-file"})
    assert guard.known() == []


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize(("url", "found"), [
    ("https://mcp.example/mcp?token=t0k3n-in-the-query&page=2", ["t0k3n-in-the-query"]),
    ("https://mcp.example/mcp?api_key=abcdefgh12&model=gpt-4-turbo-long", ["abcdefgh12"]),
    ("http://user:Pa55w0rd-here@proxy.example/v1", ["Pa55w0rd-here"]),
    ("https://ghp_abcdefghijkl@github.example/repo", ["ghp_abcdefghijkl"]),
    ("https://mcp.example/mcp?token=short", []),
    ("https://mcp.example/mcp?page=2345678901", []),
    ("http://[::1:bad/", []),
    ("", []),
])
def test_the_secrets_of_a_url(url: str, found: list[str]) -> None:
    from phoenix_lsp.store.secrets import url_secrets

    assert url_secrets(url) == found
    guard = SecretGuard(environ={})
    guard.add_url(url, "a secret in the URL of X")
    assert guard.known() == [("a secret in the URL of X", v) for v in found]


@pytest.mark.req("REQ-SEC-012")
def test_a_registered_secret_keeps_its_first_label() -> None:
    guard = SecretGuard(environ={})
    guard.add_secret("value-of-the-key", "the API key of provider openai")
    guard.add_secret("value-of-the-key", "something else")
    guard.add_secret("another-value-1")
    assert guard.known() == [("a registered secret", "another-value-1"),  # in the values' order
                             ("the API key of provider openai", "value-of-the-key")]
