"""The engine worker: runs ONE unit with pydantic-monty and exits (``python -m phoenix_lsp.agent.worker``).

Started cold (its unit is written before it starts) or warm (``--warm``, REQ-AGENT-037: it imports
pydantic-monty and starts its monty pool, writes ``{"ready": true}``, and waits for ``{"go": true}`` on the
FIFO before it reads its unit); either way it runs one unit and ends.

Started by ``MontyEngine`` under the Restricted kernel sandbox (no network, writes only to its scratch
directory, rlimits). Protocol, one JSON object per line:

- the unit is read from ``<scratch>/unit.json`` (written before the start), with ``functions``: the names
  its allowed tools are called by (``mcp://records/get_record`` is ``records_get_record``);
- worker -> host, on the original stdout: ``{"call": name, "args": [...], "kwargs": {...}}`` for each host
  function the script calls, then one ``{"done": envelope}``;
- host -> worker, on the FIFO named by argv[1]: ``{"return": value}`` or ``{"error": {kind, code, message}}``.

Nothing else may reach the host: fds 1 and 2 are pointed at /dev/null before anything is imported, so a
warning or a stray print cannot corrupt the protocol. Standard library and pydantic_monty only (no pydantic
models here: the host validates the envelope), to keep the start cheap.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import sys
import time
from types import ModuleType
from typing import Any, TextIO

from phoenix_lsp.agent import helpers

#: helper calls a unit may make on top of its tool calls (each is a suspension of monty)
MAX_HELPER_CALLS = 100_000
_SIGNATURE = {match.group(1): match.group(2) for match in re.finditer(r"(\w+)(\([^)]*\))", helpers.SIGNATURES)}
FROZEN_CLOCK = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
RANDOM_SEED = 0


class _Stop(Exception):
    """A host call failed in a way the script may not recover from (budget, policy)."""


def _monty() -> ModuleType:
    """pydantic-monty, imported once fds 1 and 2 point at /dev/null (``main``): nothing it prints reaches the host."""
    import pydantic_monty  # lazy: only after main has set the protocol's stdout aside

    return pydantic_monty


def _error(kind: str, code: str, message: str) -> dict[str, Any]:
    return {"kind": kind, "code": code, "message": message}


def _classify(exc: BaseException) -> dict[str, Any]:
    pm = _monty()
    if isinstance(exc, pm.MontySyntaxError):
        return _error("CODE", "STATIC_CHECK", exc.display(format="type-msg"))
    if isinstance(exc, pm.MontyCrashedError):
        return _error("ENGINE", "PROC_CRASH", str(exc))
    if isinstance(exc, pm.MontyRuntimeError):
        text = exc.display(format="type-msg")
        kind = text.split(":", 1)[0].strip()
        if kind == "TimeoutError" and "time limit" in text:
            return _error("BUDGET", "CPU_LIMIT", text)
        if kind == "MemoryError":
            return _error("BUDGET", "MEM_LIMIT", text)
        if kind == "RecursionError":
            return _error("BUDGET", "DEPTH_LIMIT", text)
        if kind == "PermissionError" or "is not supported in this environment" in text:
            # the run-time line behind the static check: no OS handler, so files and environment are refused
            return _error("DENIED", "CAPABILITY_DENIED", text)
        return _error("CODE", "RUNTIME_ERROR", exc.display(format="traceback")[-2000:])
    return _error("ENGINE", "PROC_CRASH", f"{type(exc).__name__}: {exc}")


def _oversize(value: Any, where: str, max_string: int, max_items: int) -> dict[str, Any] | None:
    """A BUDGET error when ``value`` (JSON: nested lists and dicts) holds a string longer than ``max_string``
    characters or a list or dict of more than ``max_items`` items, else None. Walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > max_string:
                return _error("BUDGET", "STRING_LIMIT", f"{where} holds a string of {len(item)} characters; "
                              f"the limit is {max_string} (budget maxStringLength)")
        elif isinstance(item, list | tuple | dict):
            if len(item) > max_items:
                return _error("BUDGET", "ARRAY_LIMIT", f"{where} holds a collection of {len(item)} items; "
                              f"the limit is {max_items} (budget maxArraySize)")
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            else:
                stack.extend(item)
    return None


def run(unit: dict[str, Any], out: TextIO, replies: TextIO, monty: Any = None) -> dict[str, Any]:
    """Run `unit`; return the envelope (a dict in the ResultEnvelope's wire shape). `monty`: a pydantic-monty
    pool this process started before its unit came (a warm worker); its one session is this unit's."""
    pm = _monty()
    budgets = unit.get("budgets", {})
    max_output = int(budgets.get("maxOutputBytes", 64 * 1024))
    max_calls = int(budgets.get("maxToolCalls", 100))
    max_string = int(budgets.get("maxStringLength", 1 << 20))
    max_items = int(budgets.get("maxArraySize", 100_000))

    def oversize(value: Any, where: str) -> dict[str, Any] | None:
        return _oversize(value, where, max_string, max_items)

    printed: list[str] = []
    state: dict[str, Any] = {"printed": 0, "calls": 0, "stop": None, "tool_error": None, "waited": 0.0,
                             "started": 0.0}
    cpu_s = float(budgets.get("cpuS", 2.0))

    def sink(_stream: str, text: str) -> None:
        state["printed"] += len(text.encode())
        if state["printed"] <= max_output:
            printed.append(text)

    def stop_if_oversize(value: Any, where: str) -> None:
        """End the script, past any ``except`` of its own, when ``value`` is over a size limit."""
        too_big = oversize(value, where)
        if too_big is not None:
            state["stop"] = too_big
            raise _Stop(too_big["message"])

    def tool(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            stop = state["stop"]
            if stop is not None:
                raise _Stop(stop["message"])
            state["calls"] += 1
            if state["calls"] > max_calls:
                state["stop"] = _error("BUDGET", "MAX_TOOL_CALLS", f"more than {max_calls} tool calls")
                raise _Stop(f"more than {max_calls} tool calls")
            stop_if_oversize([args, kwargs], f"the arguments of {name}")
            asked = time.perf_counter()
            out.write(json.dumps({"call": name, "args": list(args), "kwargs": kwargs}) + "\n")
            out.flush()
            line = replies.readline()
            state["waited"] += time.perf_counter() - asked
            reply = json.loads(line) if line else {"error": _error("ENGINE", "PROTOCOL", "no reply")}
            if "error" in reply:
                error = reply["error"]
                if error.get("kind") in ("DENIED", "BUDGET", "ENGINE"):
                    state["stop"] = error
                elif state["tool_error"] is None:
                    state["tool_error"] = error
                raise RuntimeError(f"{name} failed: {error.get('message', '')}")
            answer = reply.get("return")
            stop_if_oversize(answer, f"the answer of {name}")
            return answer

        return call

    def helper(name: str, function: Any) -> Any:
        """A helper (``helpers.py``): no tool call; its time counts in cpuS (monty's own limit stops its clock
        while a function outside it runs), what it is given and returns in the size limits."""

        def spent() -> float:
            return float(time.perf_counter() - state["started"] - state["waited"])

        def over_cpu() -> None:
            if spent() > cpu_s:
                state["stop"] = _error("BUDGET", "CPU_LIMIT", f"the script ran past its {cpu_s:g} s of execution "
                                       f"(its helpers included, in {name})")
                raise _Stop(state["stop"]["message"])

        def call(*args: Any, **kwargs: Any) -> Any:
            if state["stop"] is not None:
                raise _Stop(state["stop"]["message"])
            over_cpu()
            stop_if_oversize([args, kwargs], f"the arguments of {name}")
            try:
                value = function(*args, **kwargs)
            except helpers.HelperError as exc:
                if state["helper_error"] is None:
                    state["helper_error"] = _error("CODE", "INVALID_ARGUMENTS", str(exc))
                raise
            except TypeError as exc:  # wrong arguments for the helper itself (too few, unknown keyword)
                reason = str(exc).removeprefix(f"{name}() ")
                message = f"{name}: {reason}; its call is {name}{_SIGNATURE.get(name, '(...)')}"
                if state["helper_error"] is None:
                    state["helper_error"] = _error("CODE", "INVALID_ARGUMENTS", message)
                raise helpers.HelperError(message) from None
            over_cpu()
            stop_if_oversize(value, f"the result of {name}")
            return value

        return call

    state["helper_error"] = None
    lookup: dict[str, Any] = {name: helper(name, function) for name, function in helpers.HELPERS.items()}
    lookup.update({name: tool(name) for name in unit.get("functions", ())})
    limits: Any = {
        "max_feed_duration_secs": cpu_s,
        "max_memory": int(budgets.get("memoryBytes", 64 << 20)),
        "max_recursion_depth": int(budgets.get("maxDepth", 200)),
        "max_suspensions": 1000 + 10 * max_calls + MAX_HELPER_CALLS,
    }
    os_policy: Any = {"datetime": FROZEN_CLOCK, "random_start": {"seed": RANDOM_SEED}, "sleep": "zero",
                      "process_time": "zero"}
    started = 0.0
    result: Any = None
    error = oversize(unit.get("params", {}), "the params")
    if error is not None:
        return {"ok": False, "error": error, "output": "", "metrics": {"cpuMs": 0.0, "toolCalls": 0}}
    try:
        opened = contextlib.nullcontext(monty) if monty is not None else pm.Monty()
        with opened as pool, pool.checkout(limits=limits, os_policy=os_policy) as session:
            started = state["started"] = time.perf_counter()
            result = session.feed_run(
                unit["code"], inputs=dict(unit.get("params", {})), external_lookup=lookup, print_callback=sink)
    except pm.MontyError as exc:
        error = _classify(exc)
    # the script's execution time in the engine (the feed; pool start and host calls excluded)
    cpu_ms = (time.perf_counter() - started - state["waited"]) * 1000 if started else 0.0
    if state["stop"] is not None:  # wins even when the script caught the exception
        error = state["stop"]
    elif error is not None and error["code"] == "RUNTIME_ERROR" and state["tool_error"] is not None:
        error = state["tool_error"]
    elif (error is not None and error["code"] == "RUNTIME_ERROR" and state["helper_error"] is not None
          and state["helper_error"]["message"] in error["message"]):  # that helper error ended it, uncaught
        error = state["helper_error"]
    output = "".join(printed)
    if error is None:
        error = oversize(result, "the result")
    if error is None:
        try:
            encoded = json.dumps(result)
        except (TypeError, ValueError) as exc:
            error = _error("CODE", "RUNTIME_ERROR", f"the result is not JSON: {exc}")
        else:
            if state["printed"] + len(encoded.encode()) > max_output:
                error = _error("BUDGET", "OUTPUT_LIMIT", f"printed text and result exceed {max_output} bytes")
    if error is None and state["printed"] > max_output:
        error = _error("BUDGET", "OUTPUT_LIMIT", f"printed text exceeds {max_output} bytes")
    metrics = {"cpuMs": cpu_ms, "toolCalls": min(state["calls"], max_calls)}
    if error is not None:
        return {"ok": False, "error": error, "output": output, "metrics": metrics}
    return {"ok": True, "result": result, "output": output, "metrics": metrics}


def main(argv: list[str]) -> int:
    out_fd = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    out = os.fdopen(out_fd, "w", encoding="utf-8")
    scratch = os.path.dirname(argv[1])
    monty: Any = None
    with open(argv[1], encoding="utf-8") as replies:
        if argv[2:3] == ["--warm"]:  # started ahead of its unit (REQ-AGENT-037): prepare, say so, wait for it
            pm = _monty()
            monty = pm.Monty()
            monty.__enter__()
            out.write(json.dumps({"ready": True}) + "\n")
            out.flush()
            if json.loads(replies.readline() or "{}").get("go") is not True:
                return 0  # the host let it go unused
        with open(os.path.join(scratch, "unit.json"), encoding="utf-8") as f:
            unit = json.load(f)
        try:
            envelope = run(unit, out, replies, monty)
        except Exception as exc:  # never silent: the host sees what broke
            envelope = {"ok": False, "error": _error("ENGINE", "PROC_CRASH", f"{type(exc).__name__}: {exc}")}
        finally:
            if monty is not None:
                monty.__exit__(None, None, None)
    out.write(json.dumps({"done": envelope}) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
