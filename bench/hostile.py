"""A cheap request's latency while hostile payloads are processed (issue 34, REQ-PROTO-061..063).

One server process on stdio, spoken to in raw bytes. Its cheap request (``phoenix/listConversations``) is timed
round trip by round trip, first on the idle server (the baseline), then while it is given a 36 MB request of 9
million short strings and, from the editor's side, a 48 MB answer of 400,000 diagnostics to the
``phoenix/editorDiagnostics`` request it sends when the model asks for the editor's problems. The cheap requests
are sent every 5 ms whether or not the last was answered, so every one held up is counted; p50 and p99 of each
phase are printed, with the worst. The goal's figure counts the requests sent while the payloads are processed:
those written when the bench's own pipe to the server holds none of a payload's bytes still unsent. A request
written behind a payload's unsent bytes waits for them to cross the one stream, whatever the server does (LSP has
one stream per editor); those are printed in a figure of their own, with everything.

The bench's client is Python too, and is kept out of what it times: the payloads are fed to the pipe a slice at
a time (one 48 MB write is copied on the client's loop), each answer goes straight to the request waiting for it,
and one whole turn (the model asks the editor's problems, the editor answers a few) runs before the baseline, so
that what a server loads once (the SDK's modules and client, which its warm-up thread imports after the first
conversation is made) is in neither phase.
Goal: p99 under 50 ms.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

STRINGS = 9_000_000
DIAGNOSTICS = 400_000


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _hostile_request() -> bytes:
    return (b'{"jsonrpc":"2.0","id":"hostile","method":"workspace/executeCommand","params":{"command":"x",'
            b'"arguments":[' + b'"a",' * STRINGS + b'"a"],"more":[' + b"[]," * 99 + b"[]]}}")


def _diagnostics_result(uri: str) -> bytes:
    """What follows the id in the 48 MB answer, made before the run (the bench's own loop must not time it)."""
    one = json.dumps({"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}},
                      "severity": 2, "source": "hostile", "message": "x"},
                     separators=(",", ":")).encode()  # 121 bytes with its comma: 400,000 of them are 48 MB
    return (b',"result":{"files":[{"uri":' + json.dumps(uri).encode() + b',"changes":1,"diagnostics":['
            + b",".join([one] * DIAGNOSTICS) + b"]}]}}")


def _answer_head(msg_id: Any, result: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(msg_id).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(head) + len(result)) + head


def _harmless(size: int) -> bytes:
    """A notification of ``size`` bytes that is one string (nobody handles ``$/`` notifications): the same bytes
    to read as the hostile request, with nothing in them to measure."""
    head = b'{"jsonrpc":"2.0","method":"$/phoenix.bench","params":{"text":"'
    return _frame(head + b"a" * (size - len(head) - 4 - 30) + b'"}}')


#: how much of a payload the bench writes at a time
FEED = 256 * 1024


class Feeder:
    """Every write of the bench's client, in order; a big one fed to the pipe a slice at a time. Written in one
    call, 48 MB is copied into the transport's buffer and later cut from its front (more copies), on the bench's
    own event loop: the round trips then timed the bench's client as much as the server (measured: stalls of up
    to 49 ms on the client's loop). Writes made while a payload is being fed wait behind it, as on one stream."""

    def __init__(self, s: Any) -> None:
        self.s = s
        self.plain = s.write
        self.queue: list[bytes] = []
        self.task: asyncio.Future[None] | None = None
        s.write = self.write

    @property
    def busy(self) -> bool:
        """Whether bytes the bench wrote are not yet in the pipe's buffer (being fed, or waiting behind)."""
        return bool(self.queue) or (self.task is not None and not self.task.done())

    def write(self, data: bytes) -> None:
        if not self.busy and len(data) <= FEED:
            self.plain(data)
            return
        self.queue.append(data)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._feed())

    async def _feed(self) -> None:
        while self.queue:
            view = memoryview(self.queue.pop(0))
            for start in range(0, len(view), FEED):
                self.plain(view[start:start + FEED])
                await self.s.drain()

    async def idle(self) -> None:
        while self.busy:
            assert self.task is not None
            await self.task


class Answers:
    """The server's answers to the bench's requests, each delivered to the one request waiting for it. The raw
    client's own wait (``RawServer.answer``) wakes every waiting request at every message that arrives, to look
    whether its answer came: with a request sent every 5 ms and a turn's notifications arriving, the bench's loop
    spent tens of ms in those wake-ups, timed as if the server were slow."""

    def __init__(self, s: Any, key: Any) -> None:
        self.s = s
        self.key = key
        self.waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}

    def arrived(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self.waiting.pop(self.key(message.get("id")), None)
            if future is not None and not future.done():
                future.set_result(message)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        msg_id = self.s.next_id()
        self.waiting[self.key(msg_id)] = future
        self.s.send(method, params, msg_id=msg_id)
        return await asyncio.wait_for(future, 60)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


async def _pings(s: Any, answers: Answers, until: Any, interval_s: float = 0.005,
                 queued: list[float] | None = None, feeder: Feeder | None = None) -> list[float]:
    """Round trips of the cheap request, one sent every ``interval_s`` whether or not the last was answered (so
    that every request held up by a payload is counted), until ``until()`` is true. A request written while the
    pipe to the server still held unsent bytes goes to ``queued`` instead (when given)."""
    times: list[float] = []
    pipe = s.proc.stdin.transport

    async def one() -> None:
        behind = queued is not None and (pipe.get_write_buffer_size() > 0 or bool(feeder and feeder.busy))
        t0 = time.perf_counter()
        await answers.request("phoenix/listConversations", {})
        (queued if behind and queued is not None else times).append((time.perf_counter() - t0) * 1000)

    sent: list[asyncio.Future[None]] = []
    while not until():
        sent.append(asyncio.ensure_future(one()))
        await asyncio.sleep(interval_s)
    await asyncio.gather(*sent)
    return times


def _after(seconds: float) -> Any:
    deadline = time.perf_counter() + seconds
    return lambda: time.perf_counter() >= deadline


async def run(seconds: float, repeats: int) -> dict[str, Any]:
    from tests.e2e.raw import RawServer, _key, encode, raw_server
    from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        asked = 0

        def reply(body: Any) -> Any:
            nonlocal asked
            asked += 1
            return Reply.tool_reply(ToolUseBlock("editor_problems", {})) if asked % 2 else Reply.text_reply("ok")

        fake.handler = reply
        work = Path(tmp) / "work"
        work.mkdir()
        app = work / "app.py"
        app.write_text("import os\n")
        env = {**fake.env("sk-ant-bench-hostile-0000000000"), "PHOENIX_CONFIG_DIR": str(Path(tmp) / "config"),
               "PHOENIX_SIGHT_TIMEOUT_MS": "30000"}
        answered = asyncio.Event()
        result = _diagnostics_result(app.as_uri())
        small = b',"result":{"files":[]}}'
        async with raw_server(Path(tmp) / "data", env) as s:
            plain_receive = s._receive

            def receive(message: dict[str, Any]) -> None:  # the editor: a 48 MB answer to editorDiagnostics
                if message.get("method") == "phoenix/editorDiagnostics" and "id" in message:
                    s.requests.append(message)
                    primed = any(r.get("method") == "phoenix/editorDiagnostics" for r in s.requests[:-1])
                    answer = result if primed else small  # the priming turn is answered as an editor would
                    s.write(_answer_head(message["id"], answer))
                    s.write(answer)
                    if primed:
                        answered.set()
                    s._arrived.set()
                    return
                plain_receive(message)
                answers.arrived(message)

            answers = Answers(s, _key)
            s._receive = receive  # type: ignore[method-assign]
            feeder = Feeder(s)
            caps = {"experimental": {"phoenix": {"version": 1, "editorSight": True}}}
            await s.request("initialize", {"processId": None, "rootUri": work.as_uri(), "capabilities": caps})
            s.notify("initialized", {})
            created = await s.request("phoenix/newConversation", {"workingDirectory": str(work)})
            cid = created["result"]["conversationId"]
            await s.request("phoenix/listConversations", {})  # warm
            # one whole turn first (the model asks the editor's problems, the editor answers a few): what a first
            # turn loads once (the SDK's client, its modules) is not what the payloads cost; then the baseline
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "what problems are there?"})
            await s.wait_until(lambda: asked >= 2, what="the priming turn")
            await asyncio.sleep(1.0)  # its end, written to the database
            idle = await _pings(s, answers, _after(seconds))
            hostile = _frame(_hostile_request())
            ended: list[float] = []

            def over() -> bool:  # both payloads processed, then half a second more
                if not ended and ("str", "hostile") in s.answers and answered.is_set() and asked >= 4:
                    ended.append(time.perf_counter())
                return bool(ended) and time.perf_counter() - ended[0] > 0.5

            async def attack() -> None:
                await asyncio.sleep(0.2)
                s.write(hostile)
                s.write(encode({"jsonrpc": "2.0", "id": "turn", "method": "phoenix/sendMessage",
                                "params": {"conversationId": cid, "text": "what problems does the editor see?"}}))
                await feeder.idle()

            attacking = asyncio.ensure_future(attack())
            queued: list[float] = []
            loaded = await _pings(s, answers, over, queued=queued, feeder=feeder)
            await attacking
            behind: dict[str, list[float]] = {"hostile": [], "harmless": []}
            for _ in range(repeats):  # one request written right behind the same bytes, hostile or harmless
                for kind, payload in (("hostile", hostile), ("harmless", _harmless(len(hostile)))):
                    s.write(payload)
                    t0 = time.perf_counter()
                    await answers.request("phoenix/listConversations", {})
                    behind[kind].append((time.perf_counter() - t0) * 1000)
            refusal = s.answers[("str", "hostile")].get("error", {}).get("message", "")
            told = json.dumps(fake.requests[-1].body.get("messages", [])[-1:]) if fake.requests else ""
            assert isinstance(s, RawServer)
    return {"idle": idle, "loaded": loaded, "queued": queued, "refusal": refusal, "told": told, "behind": behind}


def figures(quick: bool = False) -> list[dict[str, Any]]:
    result = asyncio.run(run(2.0 if quick else 5.0, 3 if quick else 7))
    idle, loaded = result["idle"], result["loaded"]
    rows: list[dict[str, Any]] = []
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        rows.append({
            "name": f"phoenix/listConversations round trip while a 36 MB request of {STRINGS:,} strings and a "
                    f"48 MB answer of {DIAGNOSTICS:,} diagnostics are processed, {label} ({len(loaded)} requests "
                    "sent with none of a payload's bytes still unsent before them)",
            "value": _pct(loaded, q), "unit": "ms",
            "baseline_name": f"the same request on the idle server, {label} ({len(idle)} requests)",
            "baseline_value": _pct(idle, q), "goal": "p99 under 50 ms" if label == "p99" else "",
        })
    everything = loaded + result["queued"]
    rows.append({"name": f"the same with the {len(result['queued'])} requests written behind a payload's unsent "
                         f"bytes, which wait for them to cross the one stream: p99 of all {len(everything)}",
                 "value": _pct(everything, 0.99), "unit": "ms",
                 "baseline_name": "p99 on the idle server", "baseline_value": _pct(idle, 0.99)})
    rows.append({"name": "the worst round trip while loaded", "value": round(max(loaded), 2), "unit": "ms",
                 "baseline_name": "the worst on the idle server", "baseline_value": round(max(idle), 2)})
    rows.append({"name": "mean round trip while loaded", "value": round(statistics.mean(loaded), 2), "unit": "ms",
                 "baseline_name": "on the idle server", "baseline_value": round(statistics.mean(idle), 2)})
    behind = result["behind"]
    rows.append({"name": f"a request written right behind the 36 MB request, median of {len(behind['hostile'])}",
                 "value": round(statistics.median(behind["hostile"]), 2), "unit": "ms",
                 "baseline_name": "right behind 36 MB of one harmless string (the bytes alone)",
                 "baseline_value": round(statistics.median(behind["harmless"]), 2)})
    rows.append({"name": "the 36 MB request was answered", "value": result["refusal"][:160] or "(no error)"})
    said = "not read" in result["told"] and "phoenix/editorDiagnostics" in result["told"]
    rows.append({"name": "the model was told the diagnostics answer was not read", "value": said})
    return rows
