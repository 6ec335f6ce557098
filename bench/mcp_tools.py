"""MCP tools in the conversation (issue 37, specs/mcp.md), beside baselines measured in the same run.

- Many tools (REQ-MCP-022): 400 tools with descriptions of ordinary length; the tokens of what every request
  carries when only the search tool is sent, against the tokens of the 400 definitions sent inline; and one search
  (ranking the 400 and writing the best five whole) against what the inline list cost each request to write
  (``json.dumps`` of the definitions).
- Images (REQ-MCP-021): a 1280 x 800 screenshot-like PNG through a tool's image gate (decoded, its pixels encoded
  again), against the attachments' path for the same bytes (decoded, passed on as they are).
- One call of 1,000 records (the aggregate's, issue 37) through the hub both routes call, from the real issues
  server over stdio, its declared output schema checked by the hub (``mcp_output.py``: compiled once, after the
  depth bound), against the same call checked by the SDK's ``call_tool`` (pure-Python ``jsonschema``), as before;
  and the longest a tool's lookup (``hub.info``, what a plan's prepare asks the hub) waits while that call is in
  flight on the same hub (the early start's node, REQ-AGENT-044), with either check.
"""

from __future__ import annotations

import base64
import io
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from phoenix_lsp.llm.images import prepare_image
from phoenix_lsp.tools import mcp_images, mcp_search
from phoenix_lsp.tools.patch import estimate_tokens

_FILLER = ("It reports on one part of a large estate of services: the status, the owners, the history of changes, "
           "the open alerts and the links to the runbooks. ")


def _definitions(count: int) -> list[dict[str, Any]]:
    return [{"name": f"mcp__estate__service_{n:04d}", "description": f"Counts the alerts of service {n}. " + _FILLER,
             "input_schema": {"type": "object", "properties": {
                 "limit": {"type": "integer", "default": 10}, "region": {"type": "string"}}}}
            for n in range(count)]


def _best_ms(run: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def _screenshot() -> bytes:
    image = Image.new("RGB", (1280, 800))
    image.putdata([((x // 40) * 8 % 256, (y // 25) * 8 % 256, (x ^ y) % 256) for y in range(800) for x in range(1280)])
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _lookup_during(hub: Any, uri: str, arguments: dict[str, Any]) -> float:
    """The longest ``hub.info`` of ``uri`` took, asked again and again while one call of it runs (seconds)."""
    done = threading.Event()

    def call() -> None:
        hub.call(uri, arguments)
        done.set()

    caller = threading.Thread(target=call)
    longest = 0.0
    caller.start()
    while not done.is_set():
        t0 = time.perf_counter()
        hub.info(uri)
        longest = max(longest, time.perf_counter() - t0)
    caller.join()
    return longest


def _call_ms(rounds: int) -> tuple[float, float, float, float, float]:
    """The best time of one 1,000-record call, the hub's check then the SDK's (in turn, same server data), and the
    longest lookup during such a call (the best of the rounds): the hub's check, the SDK's, the hub's check with
    the gate on the hub's loop."""
    from mcp.client.session import ClientSession

    from phoenix_lsp.agent.agent_config import McpRegistry
    from phoenix_lsp.agent.mcp_hub import McpHub

    class _NoCheck:
        def problem(self, *_: Any) -> None:
            return None

        def forget(self, _: str) -> None:
            return None

    class SdkChecked(McpHub):
        """The hub as it was: the SDK's session checks each result (and the hub does not)."""

        session_class = ClientSession

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._outputs = _NoCheck()  # type: ignore[assignment]

    class GateOnLoop(McpHub):
        """The hub's check, its gate on the hub's loop (before the gate ran in the thread that called)."""

        def call(self, uri: str, arguments: Any = None, timeout_s: float = 30.0) -> Any:
            async def answer_and_gate() -> Any:
                return self._gated(await self._answer(uri, dict(arguments or {}), timeout_s))[0]

            return self._submit(answer_and_gate(), 60.0)

    server = Path(__file__).resolve().parents[1] / "tests" / "agent" / "issues_server.py"
    uri, arguments = "mcp://issues/list_issues", {"state": "all", "limit": 1000}
    with tempfile.TemporaryDirectory() as name:
        entry = {"command": [sys.executable, str(server)], "connectTimeoutS": 60,
                 "args": ["--data", str(Path(name) / "issues.json"), "--issues", "1000"]}
        registry = McpRegistry.model_validate({"servers": {"issues": entry}})
        best = {f"{which}{part}": float("inf") for which in ("hub", "sdk", "loop") for part in ("", " lookup")}
        with McpHub(registry) as hub, SdkChecked(registry) as sdk, GateOnLoop(registry) as loop:
            clients = (("hub", hub), ("sdk", sdk), ("loop", loop))
            for _which, client in clients:
                assert len(client.call(uri, arguments)) == 1000  # connected, listed, warm
            for _ in range(rounds):
                for which, client in clients:
                    t0 = time.perf_counter()
                    client.call(uri, arguments)
                    best[which] = min(best[which], time.perf_counter() - t0)
                    lookup = _lookup_during(client, uri, arguments)
                    best[f"{which} lookup"] = min(best[f"{which} lookup"], lookup)
    return tuple(best[k] * 1000 for k in ("hub", "sdk", "hub lookup", "sdk lookup", "loop lookup"))  # type: ignore[return-value]


def figures(quick: bool = False) -> list[dict[str, Any]]:
    rounds = 3 if quick else 20
    tools = _definitions(400)
    kinds = {str(d["name"]): "read" for d in tools}
    search = mcp_search.definition(tools)
    index = mcp_search.Index(tools)  # read once per gathering, as the server does
    png = _screenshot()
    b64 = base64.b64encode(png).decode()
    hub_ms, sdk_ms, hub_lookup_ms, sdk_lookup_ms, loop_lookup_ms = _call_ms(rounds)
    return [
        {
            "name": "tokens of the MCP tools every request carries, 400 tools: the search tool alone",
            "value": estimate_tokens([search]), "unit": "tokens",
            "baseline_name": "the 400 definitions inline", "baseline_value": estimate_tokens(tools),
            "goal": "",
        },
        {
            "name": "one search of 400 tools ('alerts of service 217'), the best five written whole",
            "value": round(_best_ms(lambda: mcp_search.answer(index, kinds, {"query": "alerts of service 217"}),
                                    rounds), 3), "unit": "ms",
            "baseline_name": "writing the 400 inline definitions once (json.dumps), as each request did",
            "baseline_value": round(_best_ms(lambda: json.dumps(tools), rounds), 3),
            "goal": "",
        },
        {
            "name": f"a tool's 1280x800 PNG ({len(png) // 1024} KB) through the image gate (decoded, encoded again)",
            "value": round(_best_ms(lambda: mcp_images.gate(((b64, "image/png"),), 1), rounds), 2), "unit": "ms",
            "baseline_name": "the attachments' path for the same bytes (decoded, passed on as they are)",
            "baseline_value": round(_best_ms(lambda: prepare_image(png, "image/png"), rounds), 2),
            "goal": "",
        },
        {
            "name": "one MCP call of 1,000 records (issues server, stdio), its output schema checked by the hub",
            "value": round(hub_ms, 1), "unit": "ms",
            "baseline_name": "the same call checked by the SDK's call_tool (pure-Python jsonschema), as before",
            "baseline_value": round(sdk_ms, 1),
            "goal": "",
        },
        {
            "name": "the longest tool lookup (a plan's prepare asks the hub) while that call is in flight, hub's check",
            "value": round(hub_lookup_ms, 1), "unit": "ms",
            "baseline_name": "the same with the SDK's check (on the hub's one event loop)",
            "baseline_value": round(sdk_lookup_ms, 1),
            "goal": "",
        },
        {
            "name": "the longest tool lookup while that call is in flight, the gate in the thread that called",
            "value": round(hub_lookup_ms, 1), "unit": "ms",
            "baseline_name": "the gate on the hub's loop (the hub's check)", "baseline_value": round(loop_lookup_ms, 1),
            "goal": "",
        },
    ]
