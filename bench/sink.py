"""Benchmark: the sink check of a model request (REQ-SEC-012), what every request pays before it leaves.

Figures (each next to baselines measured in the same run, in alternating rounds):
- the check of a clean 200,000-token request (about 800 KB: 300 messages of prose, source code as tool results
  and tool inputs, a system prompt and the tool definitions) with the secrets a configured server knows (two
  provider keys, a URL password, MCP credentials, credential-like variables) and the credential formats on
  (Restricted), median ms; baselines: ``json.dumps`` of the same request (the SDK serialises it anyway) and one
  ``str.find`` pass of one needle over the request's texts joined;
- the same request with a key in one tool result and a private key block in another (the check finds and
  replaces them), median ms.
Goal: the clean check under 5 ms.

Run: ``python -m bench sink`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phoenix_lsp.llm import sink
from phoenix_lsp.store.secrets import SecretGuard

TOKENS = 200_000
CHARS = TOKENS * 4
ENVIRON = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-bench-" + "k" * 40,
    "OPENAI_API_KEY": "sk-proj-bench-" + "o" * 40,
    "GITHUB_TOKEN": "ghp_bench" + "g" * 31,
    "DEPLOY_TOKEN": "dpl-bench-7c1e93ab55f04d2e",
    "DATABASE_PASSWORD": "correct-horse-battery-staple",
    "HOME": "/home/bench",
    "PATH": "/usr/bin:/bin",
}
PROSE = ("The parser reads the configuration, then each module registers its handlers; when a request arrives "
         "the dispatcher looks the method up and answers with the result or an error that says what to do. ")


def _guard() -> SecretGuard:
    guard = SecretGuard(environ=ENVIRON)
    guard.add_secret("mcp-files-credential-0f3c9d", "MCP server files's credential (FILES_TOKEN)")
    guard.add_url("https://mcp.example/mcp?token=mcp-url-token-5521ab", "a secret in MCP server docs's URL")
    guard.add_url("http://proxy:pr0xy-Passw0rd-4417@llm.example/v1", "a secret in the URL of provider openai")
    return guard


def _request() -> list[Any]:
    """system, messages, tools of about CHARS characters of realistic text."""
    root = Path(__file__).resolve().parent.parent / "phoenix_lsp"
    sources = [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))]
    code = "".join(sources)
    messages: list[dict[str, Any]] = []
    size, offset, i = 0, 0, 0
    while size < CHARS:
        chunk = code[offset:offset + 4000] or code[:4000]
        offset = (offset + 4000) % max(1, len(code) - 4000)
        call = f"t{i}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": PROSE * 2},
            {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": f"src/module_{i}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": chunk},
            {"type": "text", "text": PROSE}]})
        size += len(chunk) + 3 * len(PROSE) + 40
        i += 1
    system = [{"type": "text", "text": "You are phoenix, a coding agent. " + PROSE * 20}]
    tools = [{"name": f"tool_{n}", "description": PROSE, "input_schema": {"type": "object", "properties": {}}}
             for n in range(12)]
    return [system, messages, tools]


def _dirty(parts: list[Any]) -> list[Any]:
    system, messages, tools = parts
    messages = list(messages)
    pem = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n" * 6
           + "-----END OPENSSH PRIVATE KEY-----\n")
    messages[41] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t20",
                                                  "content": "export OPENAI_API_KEY=" + ENVIRON["OPENAI_API_KEY"]}]}
    messages[301] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t150", "content": pem}]}
    return [system, messages, tools]


def _alternating(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - start) * 1000)
    return [statistics.median(t) for t in times]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    rounds = 10 if quick else 60
    guard = _guard()
    clean = _request()
    dirty = _dirty(clean)
    texts: list[str] = []
    sink.strings(clean, texts)
    joined = "\x00".join(texts)
    chars = len(joined)

    def check_clean() -> object:
        fixed, found = sink.check(clean, guard.known(), True)
        assert not found and fixed[1] is clean[1]
        return fixed

    def check_dirty() -> object:
        fixed, found = sink.check(dirty, guard.known(), True)
        assert {f.label for f in found} == {"the value of OPENAI_API_KEY", "a private key block"}, found
        return fixed

    check_clean()
    check_dirty()
    ours, dumps, find, dirty_ms = _alternating(
        [check_clean, lambda: json.dumps(clean), lambda: joined.find("needle-never-there"), check_dirty], rounds)
    size = f"{chars:,} characters, about {chars // 4:,} tokens, {len(clean[1])} messages"
    return [
        {"name": f"sink check of a clean request ({size}), median", "value": round(ours, 3), "unit": "ms",
         "baseline_name": "json.dumps of the same request", "baseline_value": round(dumps, 3),
         "goal": "under 5 ms"},
        {"name": "sink check of the same clean request, median", "value": round(ours, 3), "unit": "ms",
         "baseline_name": "one str.find of one needle over its texts joined", "baseline_value": round(find, 3)},
        {"name": "sink check of the same request with a key and a private key block in two tool results, median",
         "value": round(dirty_ms, 3), "unit": "ms", "baseline_name": "the clean request's check",
         "baseline_value": round(ours, 3)},
    ]
