"""Fuzz figures of issue 13: hostile messages against ONE server process (REQ-PROTO-044..048).

A seeded generator (reproducible: ``seed``) writes malformed JSON, wrong JSON-RPC envelopes (ids of every JSON
type, methods that are not strings, batches), wrong param types, numbers beyond what the store takes, lone
surrogates, 5,000-character strings, ids, methods and params nested up to 30,000 levels deep, missing params,
unknown methods and notifications, answers to requests never sent, and broken framing (huge, lying or
non-numeric ``Content-Length``, headers with no body, bytes that are no message) at one server process
through ``tests.e2e.raw``. Reported:

- crashes (goal 0): the process ended;
- unanswered requests (goal 0): requests with a readable id (a string or an integer, in a frame whose header
  could be read) that got no answer; frames with a broken header are no message and expect none;
- popups (goal 0): ``window/showMessage`` and ``window/showMessageRequest`` sent;
- RSS growth over the hostile messages, beside the growth over as many valid requests (the baseline),
  and the time per message of both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the phoenix/* methods and a few standard ones, with params that are valid enough to get past the envelope
PHOENIX = [
    "phoenix/newConversation", "phoenix/listConversations", "phoenix/getConversation", "phoenix/sendMessage",
    "phoenix/cancel", "phoenix/setMode", "phoenix/respondToModeUpgrade", "phoenix/respondToApproval",
    "phoenix/setApprovalPolicy", "phoenix/setStyle", "phoenix/listModels", "phoenix/setModel",
    "phoenix/reloadInstructions", "phoenix/triggerContinuation", "phoenix/getAuditLog",
    "phoenix/listAlwaysAllowed", "phoenix/revokeAlwaysAllow",
]
STANDARD = [
    "textDocument/hover", "textDocument/codeAction", "textDocument/completion", "workspace/executeCommand",
    "textDocument/definition", "workspace/symbol", "initialize",
]
NOTIFICATIONS = [
    "textDocument/didOpen", "textDocument/didChange", "textDocument/didClose", "textDocument/didSave",
    "$/cancelRequest", "$/setTrace", "workspace/didChangeConfiguration", "initialized", "$/unknown",
    "window/workDoneProgress/cancel", "workspace/didChangeWorkspaceFolders",
]
FIELDS = ["conversationId", "workingDirectory", "text", "afterSeq", "afterId", "limit", "mode", "style",
          "policy", "approvalPolicy", "decision", "toolUseId", "approve", "model", "rule", "toolName",
          "images", "attachments", "continueFrom", "includeSubAgents", "refresh", "textDocument", "position",
          "contentChanges", "command", "arguments", "id", "range", "context", "query"]
LIMIT = 1024 * 1024  # PHOENIX_MAX_MESSAGE_BYTES of the fuzzed server: oversized messages stay cheap to send


def _value(rng: random.Random, depth: int = 0, conversation: str = "") -> Any:
    """A hostile JSON value."""
    pick = rng.randrange(18)
    if pick == 0:
        return 10**30 * rng.choice((1, -1))
    if pick == 1:
        return rng.choice((2**63, 2**64, -1, 0, 2**31, 1.5, float("1e308")))
    if pick == 2:
        return rng.choice(("\ud800", "a\udfffb", "x\ud83d", "\udc00" * 3))
    if pick == 3:
        return rng.choice(("/", "")) + "a" * rng.choice((255, 300, 5000))
    if pick == 4:
        return ""
    if pick == 5:
        return None
    if pick == 6:
        return rng.choice((True, False))
    if pick == 7 and depth < 3:
        return [_value(rng, depth + 1, conversation) for _ in range(rng.randrange(4))]
    if pick == 8 and depth < 3:
        return {rng.choice(FIELDS): _value(rng, depth + 1, conversation) for _ in range(rng.randrange(4))}
    if pick == 9:
        return conversation or "c"
    if pick == 10:
        return rng.choice(("restricted", "unrestricted", "auto", "interactive", "allow", "deny", "alwaysAllow",
                           "chat", "agent", "file:///etc/passwd", "/tmp", "../../etc", "\x00", "\u202e"))
    if pick == 11:
        return "x" * rng.choice((1, 100, 5000, 100_000))
    if pick == 12:
        return rng.randrange(-5, 5)
    if pick == 13:
        return {"kind": rng.choice(("file", "diagnostics", "x")), "uri": _value(rng, 3, conversation),
                "range": {"startLine": _value(rng, 3), "endLine": _value(rng, 3)}}
    return rng.choice(("", "id", "{}", "null", "\n", "Content-Length: 5\r\n\r\n"))


def _params(rng: random.Random, conversation: str) -> Any:
    pick = rng.randrange(10)
    if pick == 0:
        return _value(rng, 2, conversation)  # not an object
    if pick == 1:
        return []
    params = {rng.choice(FIELDS): _value(rng, 1, conversation) for _ in range(rng.randrange(5))}
    if pick < 6:
        params["conversationId"] = conversation if rng.random() < 0.7 else _value(rng, 2, conversation)
    return params


@dataclass
class Case:
    """One thing written to the server, and the id of the answer it must get (None: no answer expected)."""

    data: bytes
    expect: int | str | None
    kind: str
    method: str = ""


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _dump(message: Any) -> bytes:
    return json.dumps(message).encode()


def generate(rng: random.Random, next_id: Callable[[], int], conversation: str) -> Case:
    """One hostile message (a request expects an answer when its id can be read)."""
    kind = rng.randrange(17)
    msg_id: int | str = next_id()
    if rng.random() < 0.2:
        msg_id = f"s{msg_id}"
    if kind <= 4:  # a request: phoenix, standard or unknown, params hostile or missing
        method = rng.choice(PHOENIX * 2 + STANDARD + [f"phoenix/no{rng.randrange(9)}", "x", ""])
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if rng.random() > 0.15:
            message["params"] = _params(rng, conversation)
        return Case(_frame(_dump(message)), msg_id, "request", method)
    if kind == 5:  # a notification
        message = {"jsonrpc": "2.0", "method": rng.choice(NOTIFICATIONS)}
        if rng.random() > 0.15:
            message["params"] = _params(rng, conversation)
        return Case(_frame(_dump(message)), None, "notification")
    if kind == 6:  # not JSON
        body = rng.choice((b"{not json", b"", b"\xff\xfe\x00", b"[" * 50_000, b'{"jsonrpc": "2.0", "id": 1',
                           b"nul", b'{"a":' + b"9" * 5000 + b"}", bytes(rng.randrange(256) for _ in range(40))))
        return Case(_frame(body), None, "not JSON")
    if kind == 7:  # JSON, not a JSON-RPC message
        body = _dump(rng.choice(([], [{"jsonrpc": "2.0", "id": 1, "method": "x"}], 5, "s", None, {})))
        return Case(_frame(body), None, "not JSON-RPC")
    if kind == 8:  # a bad envelope with a readable id: answered with that id
        message = rng.choice((
            {"jsonrpc": "1.0", "id": msg_id, "method": "phoenix/listConversations"},
            {"jsonrpc": "2.0", "id": msg_id, "method": rng.choice((5, None, [], {"a": 1}))},
            {"id": msg_id, "method": "phoenix/listConversations", "params": {}},
        ))
        return Case(_frame(_dump(message)), msg_id, "bad envelope")
    if kind == 9:  # an id that is not an id: answered with id null
        bad_id = rng.choice((1.5, True, None, [], {"a": 1}, 10**30 + 0.5))
        body = _dump({"jsonrpc": "2.0", "id": bad_id, "method": "phoenix/listConversations", "params": {}})
        return Case(_frame(body), None, "bad id")
    if kind == 10:  # an answer to a request the server never sent
        body = _dump(rng.choice(({"jsonrpc": "2.0", "id": msg_id, "result": _value(rng, 1)},
                                 {"jsonrpc": "2.0", "id": msg_id, "error": _value(rng, 1)},
                                 {"jsonrpc": "2.0", "id": msg_id})))
        return Case(_frame(body), None, "stray answer")
    body = _dump({"jsonrpc": "2.0", "id": msg_id, "method": "phoenix/listConversations", "params": {}})
    if kind == 11:  # a huge Content-Length, lying: the body that follows is small
        length = rng.choice((b"100000000000000", b"9" * 19, str(LIMIT + 1).encode()))
        return Case(b"Content-Length: " + length + b"\r\n\r\n" + body, msg_id, "huge length")
    if kind == 12:  # a Content-Length that is not a byte count: no message, no answer
        length = rng.choice((b"9" * 30, b"9" * 5000, b"-5", b"abc", b"", b"0x10", b"1e3"))
        return Case(b"Content-Length: " + length + b"\r\n\r\n" + body, None, "broken length")
    if kind == 13:  # more announced than sent (under the limit): the next message must not be swallowed
        return Case(b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randrange(1, 500)) + body, msg_id,
                    "long length")
    if kind == 14:  # an honest message over the limit: refused, answered, skipped
        big = _dump({"jsonrpc": "2.0", "id": msg_id, "method": "phoenix/sendMessage",
                     "params": {"conversationId": conversation, "text": "y" * (LIMIT + 10)}})
        if rng.random() < 0.9:  # keep the run's bytes reasonable
            return Case(b"Content-Length: 5\r\n\r\n" + body[:5], None, "short length")
        return Case(_frame(big), msg_id, "over the limit")
    if kind == 16:  # nested thousands of levels deep, in the id, the params or the method
        return _deep(rng, msg_id, conversation)
    garbage = rng.choice((b"\r\n", b"hello\r\n\r\n", b"Content-Type: x\r\n\r\n", b"\x00" * 100,
                          b"Content-Length: 10\r\nContent-Length: 20\r\n"))
    return Case(garbage, None, "garbage")


def _deep(rng: random.Random, msg_id: int | str, conversation: str) -> Case:
    """A message nested ``levels`` deep somewhere (issue 24: ``"id": [[[[...`` once ended the server). The
    decoder recurses once per level: the server must refuse it before decoding, and answer it when its id can
    be read (it comes first here)."""
    levels = rng.choice((65, 200, 1_000, 5_000, 30_000))
    nest, close = b"[" * levels, b"]" * levels
    if rng.random() < 0.3:  # objects, which every walk of a value also recurses into
        nest, close = b'{"a":' * levels, b"}" * levels
    where = rng.randrange(5)
    head = b'{"jsonrpc":"2.0","id":%s,' % _dump(msg_id)
    if where == 0:  # the id itself: no id to answer with
        end = close if rng.random() < 0.5 else b""  # closed, or cut off
        return Case(_frame(b'{"jsonrpc":"2.0","id":' + nest + end + b',"method":"phoenix/listConversations"}'),
                    None, "deep id")
    if where == 1:
        return Case(_frame(head + b'"method":' + nest + close + b"}"), msg_id, "deep method")
    if where == 2:
        method = rng.choice(PHOENIX + STANDARD).encode()
        return Case(_frame(head + b'"method":"%s","params":' % method + nest + close + b"}"), msg_id, "deep params")
    if where == 3:
        body = (head + b'"method":"phoenix/sendMessage","params":{"conversationId":%s,"text":"x","attachments":'
                % _dump(conversation) + nest + close + b"}}")
        return Case(_frame(body), msg_id, "deep field")
    return Case(_frame(b'{"jsonrpc":"2.0","method":"textDocument/didChange","params":' + nest + close + b"}"),
                None, "deep notification")


@dataclass
class FuzzResult:
    messages: int
    requests: int
    crashed: bool
    crash_detail: str
    unanswered: list[Any] = field(default_factory=list)
    unanswered_cases: list[tuple[str, bytes]] = field(default_factory=list)  # kind and first bytes of each
    popups: list[Any] = field(default_factory=list)
    rss_before_kb: int = 0
    rss_after_kb: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    baseline_rss_growth_kb: int = 0
    baseline_seconds: float = 0.0
    rss_by_batch_kb: list[int] = field(default_factory=list)
    accepted: dict[str, int] = field(default_factory=dict)  # requests that succeeded, by method
    conversations: int = 0  # conversations in the store at the end (newConversation can succeed)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def run(count: int, seed: int = 13, *, batch: int = 250, baseline: bool = True) -> FuzzResult:
    """``count`` hostile messages at one server process, in batches whose answers are awaited."""
    from tests.e2e.raw import raw_server
    from tests.fake_anthropic import FakeAnthropic, Reply

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        fake.handler = lambda body: Reply.text_reply("ok")
        work = Path(tmp) / "work"
        work.mkdir()
        env = {**fake.env("sk-ant-fuzz-key-000000000000"), "PHOENIX_MAX_MESSAGE_BYTES": str(LIMIT),
               "PHOENIX_CONFIG_DIR": str(Path(tmp) / "config")}
        async with raw_server(Path(tmp) / "data", env) as s:
            await s.initialize(work)
            created = await s.request("phoenix/newConversation", {"workingDirectory": str(work)})
            conversation = created["result"]["conversationId"]
            result = FuzzResult(messages=0, requests=0, crashed=False, crash_detail="")
            if baseline:  # as many valid requests: what the server's memory does anyway
                before, t0 = _rss_kb(s.proc.pid), time.perf_counter()
                for start in range(0, count, batch):
                    ids = [s.send("phoenix/getConversation", {"conversationId": conversation, "limit": 5})
                           for _ in range(min(batch, count - start))]
                    await s.drain()
                    for msg_id in ids:
                        await s.answer(msg_id)
                result.baseline_seconds = time.perf_counter() - t0
                result.baseline_rss_growth_kb = _rss_kb(s.proc.pid) - before
            result.rss_before_kb = _rss_kb(s.proc.pid)
            t0 = time.perf_counter()
            for start in range(0, count, batch):
                expected: list[Any] = []
                cases: dict[Any, Case] = {}
                methods: dict[Any, str] = {}
                for _ in range(min(batch, count - start)):
                    case = generate(rng, s.next_id, conversation)
                    result.kinds[case.kind] = result.kinds.get(case.kind, 0) + 1
                    s.write(case.data)
                    result.messages += 1
                    if case.expect is not None:
                        expected.append(case.expect)
                        cases[case.expect] = case
                        methods[case.expect] = case.method
                # a valid request closes the batch: everything before it was read once it is answered
                expected.append(s.send("phoenix/listConversations", {}))
                result.requests += len(expected)
                keys = [(type(msg_id).__name__, msg_id) for msg_id in expected]
                try:
                    await s.drain()
                    with contextlib.suppress(TimeoutError):  # what is still missing then is unanswered
                        await s.wait_until(lambda keys=keys: all(k in s.answers for k in keys), 30, "answers")
                except (AssertionError, ConnectionError) as exc:
                    result.crashed, result.crash_detail = True, str(exc)[:2000]
                    break
                result.rss_by_batch_kb.append(_rss_kb(s.proc.pid))
                for msg_id, key in zip(expected, keys, strict=True):
                    if "result" in s.answers.get(key, {}) and msg_id in methods:
                        result.accepted[methods[msg_id]] = result.accepted.get(methods[msg_id], 0) + 1
                    if key not in s.answers:
                        result.unanswered.append(msg_id)
                        if msg_id in cases:
                            result.unanswered_cases.append((cases[msg_id].kind, cases[msg_id].data[:300]))
            result.seconds = time.perf_counter() - t0
            if not result.crashed:
                result.rss_after_kb = _rss_kb(s.proc.pid)
            result.popups = s.popups
            if not result.crashed:
                listed = await s.request("phoenix/listConversations", {"includeSubAgents": True})
                result.conversations = len(listed["result"]["conversations"])
    return result


def figures(quick: bool) -> list[dict[str, Any]]:
    count = 2_000 if quick else 10_000
    r = asyncio.run(run(count))
    per = r.seconds / max(r.messages, 1) * 1e3
    base_per = r.baseline_seconds / max(count, 1) * 1e3
    return [
        {"name": f"fuzz: crashes over {r.messages:,} hostile messages (one process, seed 13)",
         "value": int(r.crashed), "unit": "", "goal": "0"},
        {"name": f"fuzz: unanswered requests (of {r.requests:,} with a readable id)", "value": len(r.unanswered),
         "unit": "", "goal": "0"},
        {"name": "fuzz: popups sent (window/showMessage, showMessageRequest)", "value": len(r.popups), "unit": "",
         "goal": "0"},
        {"name": "fuzz: RSS growth over the hostile messages", "value": r.rss_after_kb - r.rss_before_kb,
         "unit": "KiB", "baseline_name": f"RSS growth over {count:,} valid getConversation requests",
         "baseline_value": r.baseline_rss_growth_kb, "goal": "bounded (no growth with the messages' sizes)"},
        {"name": "fuzz: time per hostile message", "value": round(per, 3), "unit": "ms",
         "baseline_name": "time per valid getConversation", "baseline_value": round(base_per, 3)},
        {"name": "fuzz: messages by kind", "value": json.dumps(r.kinds, sort_keys=True), "unit": ""},
        {"name": "fuzz: requests that succeeded (state the RSS growth holds: conversations, messages, documents)",
         "value": json.dumps(r.accepted, sort_keys=True) + f"; conversations at the end: {r.conversations}",
         "unit": ""},
        {"name": "fuzz: RSS after each batch of 250", "value": " ".join(f"{k // 1024}" for k in r.rss_by_batch_kb),
         "unit": "MiB"},
    ]
