"""The model request is the last check (REQ-SEC-012): attacks whose witness is what the fake model provider
received, the server's log file and its database, all outside the server.

The door no gate knows is a test-only tool definition (``tests/security/leaky_server.py``, the server's
launcher): its description carries the values of variables of the server's environment. No redaction at any
door sees it; before the sink check each value reached the provider, on Anthropic and on OpenAI alike.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import API_KEY, Session, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI

LAUNCHER = [sys.executable, str(Path(__file__).with_name("leaky_server.py"))]
OPENAI_KEY = "sk-proj-sink-check-openai-0123456789"
URL_PASSWORD = "pr0xy-Passw0rd-4417"
DEPLOY_TOKEN = "dpl-7c1e93ab55f04d2e"  # a variable named like a credential: no provider's, no MCP server's
PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACDk3aPz0sinkcheck0000000000000000000000000000000000000\n-----END OPENSSH PRIVATE KEY-----\n")
BODY = "QyNTUxOQAAACDk3aPz0sinkcheck"


def _sent(requests: list[Any]) -> str:
    return "\n".join(json.dumps(r.body) for r in requests)


def _audit(data: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(data / "phoenix.db") as db:
        rows = db.execute("SELECT action, actor, detail FROM audit_log WHERE action = 'secret_withheld'").fetchall()
    return [{"action": a, "actor": b, **json.loads(c)} for a, b, c in rows]


def _everything_kept(data: Path) -> bytes:
    """The log file and the database (with its write-ahead log): where a secret must never be."""
    return b"".join(p.read_bytes() for p in sorted(data.iterdir()) if p.is_file())


async def _turn(s: Session, cid: str, text: str) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await s.wait_status(cid, "idle", since=seen)


@pytest.mark.slow
@pytest.mark.req("REQ-SEC-012", "REQ-SEC-001")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_secrets_through_a_door_no_gate_knows_never_reach_either_provider(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """The provider's key, a password in the provider's URL and a deploy token leave by a tool definition."""
    if provider == "openai":
        base = fake_openai.base_url.replace("http://", f"http://proxy:{URL_PASSWORD}@")
        env = {**fake_openai.env(OPENAI_KEY), "OPENAI_BASE_URL": base, "PHOENIX_MODEL": "openai/gpt-4.1",
               "LEAKY_SERVER_VARIABLES": "OPENAI_API_KEY,OPENAI_BASE_URL,DEPLOY_TOKEN"}
        secrets = {OPENAI_KEY: "the value of OPENAI_API_KEY", URL_PASSWORD: "a secret in the URL of provider openai"}
        fake: Any = fake_openai
    else:
        env = {"LEAKY_SERVER_VARIABLES": "ANTHROPIC_API_KEY,DEPLOY_TOKEN"}
        secrets = {API_KEY: "the value of ANTHROPIC_API_KEY"}
        fake = fake_anthropic
    secrets[DEPLOY_TOKEN] = "the value of DEPLOY_TOKEN"
    fake.enqueue(Reply.text_reply("noted"))
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, env={**env, "DEPLOY_TOKEN": DEPLOY_TOKEN},
                       launcher=LAUNCHER) as s:
        cid = await s.new()
        await _turn(s, cid, "hello")
        withheld = s.of("secretWithheld", cid)
    sent = _sent(fake.requests)
    assert "A test-only tool. Its settings:" in sent  # the door was used
    for secret, label in secrets.items():
        assert secret not in sent, f"{label} reached the provider"
        assert f"[REDACTED: {label}" in sent
    assert len(withheld) == 1
    assert set(secrets.values()) <= {source.split(" (")[0] for source in withheld[0]["sources"]}
    assert not any(secret in json.dumps(withheld) for secret in secrets)
    audit = _audit(data)
    assert [a["count"] for a in audit] == [withheld[0]["count"]] and audit[0]["actor"] == "system"
    assert audit[0]["sources"] == withheld[0]["sources"]
    kept = _everything_kept(data)
    assert b"secret_withheld" in kept  # the database was read
    assert not any(secret.encode() in kept for secret in secrets)


@pytest.mark.slow
@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_private_key_read_in_restricted_is_withheld_and_in_unrestricted_it_is_not(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A file with an innocent name (not on the deny-read list) holds a private key; the model reads it."""
    fake: Any = fake_openai if provider == "openai" else fake_anthropic
    env = {**fake_openai.env(OPENAI_KEY), "PHOENIX_MODEL": "openai/gpt-4.1"} if provider == "openai" else {}
    for _ in range(2):
        fake.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "notes.txt"})), Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, env=env) as s:
        (s.workdir / "notes.txt").write_text(f"deploy notes\n{PEM}the end\n")
        restricted = await s.new()
        await _turn(s, restricted, "read notes.txt")
        after_restricted = len(fake.requests)
        unrestricted = await s.new()
        await s.request("phoenix/setMode", {"conversationId": unrestricted, "mode": "unrestricted"})
        await _turn(s, unrestricted, "read notes.txt")
        notices = {cid: s.of("secretWithheld", cid) for cid in (restricted, unrestricted)}
    in_restricted = _sent(fake.requests[:after_restricted])
    assert BODY not in in_restricted and "the end" in in_restricted  # the file was read, its key withheld
    assert "[REDACTED: a private key block]" in in_restricted
    assert [n["sources"] for n in notices[restricted]] == [["a private key block"]]
    # Unrestricted: the formats are the user's to show (test keys look like real ones); only known secrets go
    assert BODY in _sent(fake.requests[after_restricted:]) and notices[unrestricted] == []
    assert [a["sources"] for a in _audit(tmp_path / "data")] == [["a private key block"]]


@pytest.mark.slow
@pytest.mark.req("REQ-SEC-012")
async def test_an_acp_client_is_told_what_was_withheld_and_never_sees_it(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """The same door on ACP: the user learns the source in an agent message; the value reaches neither the
    provider nor the client."""
    from tests.acp.harness import agent, received

    fake_anthropic.enqueue(Reply.text_reply("noted"))
    env = {"LEAKY_SERVER_VARIABLES": "DEPLOY_TOKEN", "DEPLOY_TOKEN": DEPLOY_TOKEN}
    async with agent(fake_anthropic, tmp_path, env=env, launcher=LAUNCHER) as a:
        session = await a.new()
        await a.prompt(session.session_id, "hello")
        sent = received(a.editor)
    assert "A test-only tool. Its settings: [REDACTED: the value of DEPLOY_TOKEN]" in _sent(fake_anthropic.requests)
    assert "Withheld from the request" in sent and "the value of DEPLOY_TOKEN" in sent
    assert DEPLOY_TOKEN not in sent and DEPLOY_TOKEN not in _sent(fake_anthropic.requests)
    assert [a["sources"] for a in _audit(tmp_path / "data")] == [["the value of DEPLOY_TOKEN"]]
