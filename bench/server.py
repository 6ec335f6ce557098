"""Server figures of issue 3, each beside a baseline measured in the same run.

- cancel during a streaming LLM response -> idle event (p50/p99), baseline: a trivial request's round trip;
- event latency: text delta leaves the fake LLM -> phoenix/event at the client (p50/p99, 10,000 deltas, loss and
  order checked), baseline: the same stamped stream read directly by the SDK client (no server in between);
- start-up: process start -> initialize answered, and idle RSS, baseline: a bare `python -c pass`; and the
  same beside an interpreter that only imports pygls's language server (REQ-PROTO-050, issue 26: < 300 ms) and
  beside a pygls server with no features answering initialize (what any server on pygls pays: its import,
  lsprotocol's converter, the (un)structuring of the initialize messages; issue 35: <= 1.1x), in wall time and
  in the CPU time each process has run when its answer is read (a busy machine lengthens the first, not the
  second);
- exit: `exit` notification after a shutdown -> process gone, baseline: a bare interpreter ending;
- restore: 1,000 conversations / 100,000 messages in the store -> listConversations answered, baseline: the
  store's own list call in this process.

The fake Anthropic server runs as a separate process so that it does not share a GIL with the client.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class _Fake:
    """The fake Anthropic server in its own process, scripted from a file."""

    def __init__(self, replies: list[dict[str, Any]], workdir: Path) -> None:
        script = workdir / "script.json"
        script.write_text(json.dumps(replies))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--script", str(script)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.base_url = line.split()[-1]

    def env(self, api_key: str = "sk-ant-bench-key-0000000000") -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _latency_and_cancel(quick: bool) -> list[dict[str, Any]]:
    from tests.e2e.harness import session

    deltas = 2_000 if quick else 10_000
    cancels = 10 if quick else 40
    # paced like a real model (1 ms apart): the figure is transit time, not a backlog of a burst
    paced = {"text": "x" * deltas, "deltas": deltas, "stamp": True, "delay_s": 0.001}
    replies: list[dict[str, Any]] = [paced]  # through the server
    replies.append(paced)  # baseline: read directly by the SDK client
    replies += [{"text": "thinking", "deltas": 8, "hang_after_events": 4, "hang_limit_s": 30}] * cancels
    with tempfile.TemporaryDirectory() as tmp:
        fake = _Fake(replies, Path(tmp))
        try:
            async with session(fake, Path(tmp), check_schema=False) as s:  # type: ignore[arg-type]
                cid = await s.new()
                first = len(s.events)
                await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "stream"})
                await s.wait_status(cid, "idle", timeout=120)
                stamps, seqs, latencies = [], [], []
                for event, arrived in zip(s.events[first:], s.arrivals[first:], strict=True):
                    if event["kind"] == "textDelta":
                        for stamp in filter(None, event["text"].split(";")):
                            stamps.append(int(stamp))
                            latencies.append((arrived - int(stamp)) / 1e6)
                        seqs.append(event["seq"])
                in_order = stamps == sorted(stamps) and seqs == sorted(seqs)
                lost = deltas - len(stamps)

                base = await _direct_latencies(fake, deltas)

                rtts, cancel_ms = [], []
                for _ in range(cancels):
                    t0 = time.perf_counter()
                    await s.request("phoenix/listConversations", {})
                    rtts.append((time.perf_counter() - t0) * 1000)
                    mark = s.events[-1]["seq"]
                    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "again"})
                    await s.wait_event(lambda e, m=mark: e["kind"] == "textDelta" and e["seq"] > m, 20)
                    t0 = time.perf_counter()
                    await s.request("phoenix/cancel", {"conversationId": cid})
                    await s.wait_event(
                        lambda e, m=mark: e["kind"] == "status" and e["status"] == "idle" and e["seq"] > m,
                        20,
                    )
                    cancel_ms.append((time.perf_counter() - t0) * 1000)
        finally:
            fake.stop()
    return [
        {
            "name": f"event latency, text delta -> phoenix/event, p50 ({deltas:,} deltas, lost {lost}, "
            f"in order: {in_order})",
            "value": round(statistics.median(latencies), 3),
            "unit": "ms",
            "baseline_name": "same stream read directly by the SDK client, p50",
            "baseline_value": round(statistics.median(base), 3),
            "goal": "p50 < 2 ms, no loss, no reordering",
        },
        {
            "name": "event latency p99",
            "value": round(_pct(latencies, 0.99), 3),
            "unit": "ms",
            "baseline_name": "direct SDK read p99",
            "baseline_value": round(_pct(base, 0.99), 3),
            "goal": "",
        },
        {
            "name": f"cancel during streaming -> idle event, p50 ({cancels} runs)",
            "value": round(statistics.median(cancel_ms), 2),
            "unit": "ms",
            "baseline_name": "listConversations round trip, p50",
            "baseline_value": round(statistics.median(rtts), 2),
            "goal": "p99 < 50 ms",
        },
        {
            "name": "cancel -> idle p99",
            "value": round(_pct(cancel_ms, 0.99), 2),
            "unit": "ms",
            "baseline_name": "listConversations round trip, p99",
            "baseline_value": round(_pct(rtts, 0.99), 2),
            "goal": "< 50 ms",
        },
    ]


async def _direct_latencies(fake: _Fake, deltas: int) -> list[float]:
    from phoenix_lsp.llm.client import LlmClient, LlmRequest

    out: list[float] = []

    def on_text(text: str) -> None:
        now = time.monotonic_ns()
        for stamp in filter(None, text.split(";")):
            out.append((now - int(stamp)) / 1e6)

    env = fake.env()
    client = LlmClient(api_key=env["ANTHROPIC_API_KEY"], base_url=env["ANTHROPIC_BASE_URL"])
    try:
        await client.stream(LlmRequest("bench", "", [{"role": "user", "content": "x"}], None), on_text)
    finally:
        await client.aclose()
    return out


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _cpu_ms(pid: int) -> float:
    """The CPU time the threads of process ``pid`` have run so far, as the scheduler counts it (ns, in
    /proc/PID/task/*/schedstat): unlike the wall time, not lengthened by waiting for a CPU on a busy machine."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return total / 1e6


def _read_until_id(stdout: Any, wanted: int) -> None:
    """Read framed messages until the answer with id `wanted` (notifications on the way are skipped)."""
    while True:
        length = 0
        while (line := stdout.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if json.loads(stdout.read(length)).get("id") == wanted:
            return


#: a language server on pygls with nothing of its own, on stdio
MINIMAL_SERVER = "from pygls.lsp.server import LanguageServer; LanguageServer('minimal', '0').start_io()"


def _startup(quick: bool) -> list[dict[str, Any]]:
    runs = 3 if quick else 7
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}}}
    starts, rss, base_starts, base_rss, exits, base_exits = [], [], [], [], [], []
    pygls_starts, minimal_starts, cpu, minimal_cpu = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-bench-key-0000000000"}
        for _ in range(runs):
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "phoenix_lsp", "serve", "--data-dir", tmp],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            assert proc.stdin and proc.stdout
            proc.stdin.write(_frame(init))
            proc.stdin.flush()
            _read_until_id(proc.stdout, 1)
            starts.append((time.perf_counter() - t0) * 1000)
            cpu.append(_cpu_ms(proc.pid))
            time.sleep(0.3)
            rss.append(_rss_mb(proc.pid))  # idle after initialize, before the client's initialized
            proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            proc.stdin.flush()
            time.sleep(0.3)
            proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            proc.stdin.flush()
            _read_until_id(proc.stdout, 2)
            t0 = time.perf_counter()
            proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
            proc.stdin.flush()
            proc.wait()
            exits.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            base = subprocess.Popen([sys.executable, "-c", "import sys; print(1, flush=True); sys.stdin.read()"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert base.stdin and base.stdout
            base.stdout.readline()
            base_starts.append((time.perf_counter() - t0) * 1000)
            base_rss.append(_rss_mb(base.pid))
            t0 = time.perf_counter()
            base.stdin.close()
            base.wait()
            base_exits.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()  # the least an LSP server on pygls can do: import it and say so
            bare = subprocess.run([sys.executable, "-c", "import pygls.lsp.server; print(1, flush=True)"],
                                  stdout=subprocess.PIPE, check=True)
            assert bare.stdout.strip() == b"1"
            pygls_starts.append((time.perf_counter() - t0) * 1000)
            # the least a server on pygls pays to answer initialize: the import, its converter (lsprotocol's
            # hooks for every LSP type) and the (un)structuring of InitializeParams and InitializeResult
            t0 = time.perf_counter()
            minimal = subprocess.Popen([sys.executable, "-c", MINIMAL_SERVER], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE)
            assert minimal.stdin and minimal.stdout
            minimal.stdin.write(_frame(init))
            minimal.stdin.flush()
            _read_until_id(minimal.stdout, 1)
            minimal_starts.append((time.perf_counter() - t0) * 1000)
            minimal_cpu.append(_cpu_ms(minimal.pid))
            minimal.kill()
            minimal.wait()
    return [
        {
            "name": "start-up: process start -> initialize answered (median)",
            "value": round(statistics.median(starts), 1),
            "unit": "ms",
            "baseline_name": "an interpreter importing pygls's language server (median)",
            "baseline_value": round(statistics.median(pygls_starts), 1),
            "goal": "< 300 ms",
        },
        {
            "name": "start-up: process start -> initialize answered (median)",
            "value": round(statistics.median(starts), 1),
            "unit": "ms",
            "baseline_name": "a pygls server with no features answering initialize (median)",
            "baseline_value": round(statistics.median(minimal_starts), 1),
            "goal": "< 300 ms",
        },
        {
            "name": "start-up CPU time: process start -> initialize answered (median)",
            "value": round(statistics.median(cpu), 1),
            "unit": "ms",
            "baseline_name": "CPU time of a pygls server with no features answering initialize (median)",
            "baseline_value": round(statistics.median(minimal_cpu), 1),
            "goal": "<= 1.1x",
        },
        {
            "name": "start-up: process start -> initialize answered (median)",
            "value": round(statistics.median(starts), 1),
            "unit": "ms",
            "baseline_name": "bare python interpreter start (median)",
            "baseline_value": round(statistics.median(base_starts), 1),
            "goal": "< 300 ms",
        },
        {
            "name": "idle RSS after initialize",
            "value": round(statistics.median(rss), 1),
            "unit": "MB",
            "baseline_name": "bare python interpreter RSS",
            "baseline_value": round(statistics.median(base_rss), 1),
            "goal": "< 100 MB",
        },
        {
            "name": "exit: exit notification -> process gone (median)",
            "value": round(statistics.median(exits), 1),
            "unit": "ms",
            "baseline_name": "bare python interpreter ending (median)",
            "baseline_value": round(statistics.median(base_exits), 1),
            "goal": "the editor is not kept waiting",
        },
    ]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _restore(quick: bool) -> list[dict[str, Any]]:
    from phoenix_lsp import codec
    from phoenix_lsp.core import machine
    from phoenix_lsp.core.values import Message, Text
    from phoenix_lsp.store import ConversationRecord, Store
    from tests.e2e.harness import session

    conversations, per = (200, 100) if quick else (1_000, 100)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        store = Store(data / "phoenix.db")
        now = time.time()
        for c in range(conversations):
            cid = f"conv{c:05d}"
            state = machine.new_conversation(cid, model="m", working_directory=tmp, sandbox=True)
            store.create_conversation(ConversationRecord(cid, None, None, False, tmp, "m", f"title {c}", now))
            items = []
            for i in range(per):
                message = Message("user" if i % 2 == 0 else "assistant", (Text(f"message {i} " * 8),))
                body = {"seq": i + 1, "time": now, "message": json.loads(codec.encode_message(message))}
                items.append((i, json.dumps(body)))
            store.append_messages(cid, items)
            store.save_state(cid, codec.encode_state(state), "idle", now)
        t0 = time.perf_counter()
        store.list_conversations()
        base = (time.perf_counter() - t0) * 1000
        store.close()
        fake = _Fake([], Path(tmp))
        try:
            async with session(fake, Path(tmp), data_dir=data, check_schema=False) as s:  # type: ignore[arg-type]
                t0 = time.perf_counter()
                result = await s.request("phoenix/listConversations", {})
                elapsed = (time.perf_counter() - t0) * 1000
                assert len(result["conversations"]) == conversations
        finally:
            fake.stop()
    return [
        {
            "name": f"restore: {conversations:,} conversations / {conversations * per:,} messages -> "
            "listConversations answered",
            "value": round(elapsed, 1),
            "unit": "ms",
            "baseline_name": "Store.list_conversations in-process",
            "baseline_value": round(base, 1),
            "goal": "< 500 ms",
        }
    ]


async def _patch_edit(quick: bool) -> list[dict[str, Any]]:
    """A replace in a 5 MB file: toolStart -> workspace/applyEdit at the client, and the edit's payload size."""
    from phoenix_lsp.tools.patch import prepare_patch
    from tests.e2e.harness import session

    runs = 3 if quick else 7
    line = "value = compute(alpha, beta, gamma)  # a line of ordinary code\n"
    text = line * (5 * 1024 * 1024 // len(line))
    replies: list[dict[str, Any]] = []
    for i in range(runs):
        marker = f"TARGET-{i}"
        replies.append({"tool_uses": [{"name": "patch", "id": f"toolu_p{i}", "input": {
            "path": "big.py", "patches": [{"operation": "replace", "oldText": marker, "newText": f"DONE-{i}"}]}}]})
        replies.append({"text": "ok"})
    with tempfile.TemporaryDirectory() as tmp:
        fake = _Fake(replies, Path(tmp))
        try:
            async with session(fake, Path(tmp), check_schema=False) as s:  # type: ignore[arg-type]
                arrivals: list[int] = []
                sizes: list[int] = []
                from lsprotocol import types

                def on_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
                    arrivals.append(time.monotonic_ns())
                    sizes.append(len(json.dumps(s.client.protocol._converter.unstructure(params))))
                    return types.ApplyWorkspaceEditResult(applied=True)

                s.on_apply_edit = on_edit
                cid = await s.new(policy="auto")
                await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
                elapsed, plan_ms = [], []
                for i in range(runs):
                    body = text[: len(text) // 2] + f"TARGET-{i}\n" + text[len(text) // 2 :]
                    (s.workdir / "big.py").write_text(body)
                    t0 = time.perf_counter()
                    prepare_patch({"path": "big.py", "patches": [{"operation": "replace", "oldText": f"TARGET-{i}",
                                                               "newText": f"DONE-{i}"}]}, body)
                    plan_ms.append((time.perf_counter() - t0) * 1000)
                    mark = s.events[-1]["seq"] if s.events else 0
                    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": f"patch {i}"})
                    start = await s.wait_event(lambda e, m=mark: e["kind"] == "toolStart" and e["seq"] > m, 30)
                    await s.wait_event(lambda e, m=mark: e["kind"] == "status" and e["status"] == "idle"
                                       and e["seq"] > m, 30)
                    started = s.arrivals[s.events.index(start)]
                    elapsed.append((arrivals[-1] - started) / 1e6)
        finally:
            fake.stop()
    size = len(text.encode())
    return [
        {
            "name": f"replace in a {size / 1e6:.1f} MB file: toolStart -> workspace/applyEdit at the client (median)",
            "value": round(statistics.median(elapsed), 2),
            "unit": "ms",
            "baseline_name": "planning the same patch in-process (median)",
            "baseline_value": round(statistics.median(plan_ms), 2),
            "goal": "< 50 ms",
        },
        {
            "name": "applyEdit payload (JSON) for that replace",
            "value": statistics.median(sizes),
            "unit": "bytes",
            "baseline_name": "file size",
            "baseline_value": size,
            "goal": "proportional to the change, not the file",
        },
    ]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    rows = asyncio.run(_latency_and_cancel(quick))
    rows += _startup(quick)
    rows += asyncio.run(_restore(quick))
    rows += asyncio.run(_patch_edit(quick))
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
