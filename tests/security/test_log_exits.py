"""Exits, not doors (issue 34): a credential in a URL never reaches the log file, whoever logs it.

An HTTP library logs every request's URL at INFO (``HTTP Request: POST http://...``), with whatever the URL
holds: a token in an MCP server's URL, a password in a provider's base URL. The server never registered those as
secrets, so redacting the known secrets was not enough. The witness is the log file in the data directory
(``phoenix-lsp.log``), read after the server has stopped; the fake model and the MCP server show the credential
was really in use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.mcp_helpers import TOKEN, free_port, http_server
from tests.e2e.harness import last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow  # each test starts the server as a subprocess

URL_TOKEN = "url-tok-5Kq8Zr3Wm0Hx"
URL_PASSWORD = "url-pass-9Jd2Lw7Nc4"


def _log(data_dir: Path) -> str:
    return (data_dir / "phoenix-lsp.log").read_text()


@pytest.mark.req("REQ-SEC-042", "REQ-SEC-001")
async def test_a_token_in_an_mcp_servers_url_never_reaches_the_log(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    port = free_port()
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"servers": {"records": {
        "url": f"http://127.0.0.1:{port}/mcp?token={URL_TOKEN}&team=phx",
        "secretsRef": {"Authorization": "env:PHX_TEST_RECORDS_AUTH"}, "trustAnnotations": True,
        "connectTimeoutS": 60}}}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps({"allow": ["mcp://records/*"]}))
    env = {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities),
           "PHX_TEST_RECORDS_AUTH": f"Bearer {TOKEN}"}
    fake_anthropic.enqueue(Reply.text_reply("Nothing to do."))
    with http_server(tmp_path / "records.json", port):
        async with session(fake_anthropic, tmp_path, env=env) as s:
            cid = await s.new()
            mark = last_seq(s, cid)
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "look", "route": "agent"})
            await wait_idle(s, cid, mark, timeout=120)
    system = json.dumps(fake_anthropic.requests[0].body)
    assert "mcp://records/get_record" in system  # the route listed the server's tools: the URL was used
    log = _log(s.data_dir)
    assert f"127.0.0.1:{port}/mcp?token=[REDACTED]" in log  # the library's line is there, scrubbed
    assert URL_TOKEN not in log
    for path in s.data_dir.rglob("*"):
        if path.is_file():
            assert URL_TOKEN.encode() not in path.read_bytes(), path.name


@pytest.mark.req("REQ-SEC-042", "REQ-SEC-001")
async def test_a_password_in_the_openai_base_url_never_reaches_the_log(
        fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    base = fake_openai.base_url.replace("http://", f"http://phoenix:{URL_PASSWORD}@")
    fake_openai.enqueue(Reply.text_reply("Hello."))
    env = {"OPENAI_API_KEY": "sk-proj-log-exit-key-0123456789", "OPENAI_BASE_URL": base,
           "PHOENIX_MODEL": "openai/gpt-4.1"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hi"})
        await wait_idle(s, cid, mark)
        assert "".join(e["text"] for e in s.of("textDelta", cid)) == "Hello."
    assert fake_openai.requests  # the turn went through the URL with the password
    log = _log(s.data_dir)
    assert "HTTP Request: POST http://[REDACTED]@127.0.0.1" in log
    assert URL_PASSWORD not in log
