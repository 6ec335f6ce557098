"""A plan's nodes started while the model still writes the plan (REQ-AGENT-044, issue 37).

A model streams ``run_plan``'s input: the route is given each piece (``llm`` clients' ``on_tool``) and parses it
as it comes with ijson's push parser, which hands over each node of ``nodes`` the moment its object closes.
A node starts at once, on a worker thread of this plan's own (which also makes the checks: they may ask an MCP
server for its tools), when the nodes so far (it and the ones before
it) pass the checks the whole plan gets (``planner.prepare``: validation, dependencies on nodes already given,
every tool allowed by the capability manifest, budgets) and it needs no approval node: every tool it may call
is a read by the capability gate (REQ-AGENT-027's kinds). The first node that does not (a write, a refused
tool, an invalid node) ends it: no later node starts early, whatever it is. Started nodes run one at a time,
in the order given, each on an engine offering its own tools, and each tool call still passes the core's
permission function (a read; the core refuses any other host call while the model's answer streams).

When the whole plan is complete, the run of the plan (``executor.run``) takes an early node's report instead of
running it again when the prepared plan holds the same node and it ended ok; a node that failed early runs
again then, as any node would. If the plan is refused as a whole (invalid, a cycle, a denied tool, too many
nodes), or the turn is cancelled, the early nodes are stopped (:meth:`EarlyStart.stop`): what they did was
reading, which the same turn may do without asking.

Bounded: at most ``limits.TOOL_INPUT.max_bytes`` of input are parsed (the rest is not looked at), and at most
``run.maxNodes`` nodes are considered.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

import ijson  # type: ignore[import-untyped]  # no stubs published

from .. import limits
from .artifacts import ArtifactStore
from .contracts import BudgetsFile, EngineName, PlanNode
from .executor import open_run, step_alone
from .host import Cancellation, Host
from .planner import PlanRefused, prepare
from .report import NodeReport
from .telemetry import NodeTiming

log = logging.getLogger(__name__)

#: ``run_plan``'s node as the model writes it (an object, or its script alone: REQ-AGENT-045), and the contracts'
#: nodes before it -> the contracts' node (the one mapping: ``conversation_agent``)
NodeMapping = Callable[[Any, list[dict[str, Any]]], dict[str, Any]]
#: a node run early: as prepared, its report, its timing, its tool calls
_Ran = tuple[PlanNode, NodeReport, NodeTiming, int]


class EarlyStart:
    """One ``run_plan`` call's nodes, started as its streamed input gives them."""

    def __init__(self, *, host: Host, engine_name: EngineName, budgets: BudgetsFile, artifacts: ArtifactStore,
                 pool: Any, to_node: NodeMapping) -> None:
        self.host = host
        self.budgets = budgets
        self.pool = pool
        self.cancelled = Cancellation()  # the turn's cancel and the plan's run both set it
        self._to_node = to_node
        self._found = ijson.sendable_list()
        self._parser = ijson.items_coro(self._found, "nodes.item", use_float=True)
        self._size = 0
        self._parser_done = False
        self._given: list[dict[str, Any]] = []  # the nodes so far, as the model wrote them
        self._closed = False  # no further node starts early
        self._lock = threading.Lock()
        self._run = open_run(host=host, engine_name=engine_name, budgets=budgets, artifacts=artifacts,
                             cancelled=self.cancelled)
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="early-node")
        #: node id -> its admission and run on the worker, in the order given (the first node of an id only)
        self._queued: dict[str, concurrent.futures.Future[_Ran | None]] = {}
        self._all: list[concurrent.futures.Future[_Ran | None]] = []
        self._started: list[str] = []  # the nodes admitted, in order (the worker's)

    def wait_started(self) -> list[str]:
        """The ids of the nodes started early, once every node given so far was admitted or not and ran."""
        with self._lock:
            queued = list(self._all)
        concurrent.futures.wait(queued)
        return list(self._started)

    def feed(self, piece: str) -> None:
        """The next piece of the streamed input (on the event loop: parsing only; each node's checks, which may
        ask an MCP server for its tools, and its run are the worker's)."""
        if self._closed:
            self._end_parser()  # the parser is the event loop's alone
            return
        self._size += len(piece)
        if self._size > limits.TOOL_INPUT.max_bytes:
            self._close("the plan's input is longer than a tool input may be")
            self._end_parser()
            return
        try:
            self._parser.send(piece.encode("utf-8", "surrogatepass"))
        except Exception as exc:  # not JSON: the whole input will be refused as such
            self._close(f"its input is not JSON ({type(exc).__name__})")
            self._end_parser()
            return
        found = list(self._found)
        del self._found[:]
        with self._lock:
            for raw in found:
                if self._closed:
                    return
                # a script alone is node n<position> (REQ-AGENT-045), as the whole plan's mapping names it
                node_id = raw.get("id") if isinstance(raw, dict) else f"n{len(self._all) + 1}"
                future = self._worker.submit(self._admit, raw)
                self._all.append(future)
                if isinstance(node_id, str):
                    self._queued.setdefault(node_id, future)

    def _admit(self, raw: Any) -> _Ran | None:
        """On the worker: run the node if the nodes so far pass the whole plan's checks and it reads only; else
        no node starts early any more."""
        if self._closed:
            return None
        if not isinstance(raw, dict | str) or len(self._given) >= self.budgets.run.max_nodes:
            self._close("a node is neither an object nor a script, or there are too many")
            return None
        try:
            node = self._to_node(raw, self._given)
            given = [*self._given, node]
            prepared = prepare({"goal": "the plan being written", "nodes": given}, self.host, self.budgets)
        except PlanRefused as refused:
            self._close(f"the plan so far is refused: {refused.error.code}")
            return None
        except Exception as exc:  # a node the plan's own validation refuses
            self._close(f"node {len(self._given) + 1} is not valid ({type(exc).__name__})")
            return None
        if len(prepared.nodes) != len(given):  # an approval node was inserted: the node may write
            self._close("a node may write: it waits for the whole plan and its approvals")
            return None
        self._given = given
        ready = prepared.nodes[-1]
        if self._closed or self.cancelled.is_set():
            return None
        self._started.append(ready.id)
        before = self._run.calls.used
        report, timing = step_alone(self._run, ready, self.pool)
        return ready, report, timing, self._run.calls.used - before

    def _close(self, why: str) -> None:
        if not self._closed:
            self._closed = True
            log.debug("early start: no further node starts early: %s", why)

    def _end_parser(self) -> None:
        if self._parser_done:
            return
        self._parser_done = True
        try:
            self._parser.close()
        except Exception as exc:  # an unfinished document: nothing more to parse anyway
            log.debug("early start: parser closed mid-document (%s)", type(exc).__name__)

    def take(self, node: PlanNode) -> tuple[NodeReport, dict[str, Any], NodeTiming, int] | None:
        """The node's early report (waiting for it), its outputs, timing and tool calls, when the node ran early
        exactly as prepared and ended ok; else None (the run runs it)."""
        with self._lock:
            future = self._queued.get(node.id)
        if future is None:
            return None
        try:
            ran = future.result()
        except concurrent.futures.CancelledError:
            return None
        except Exception:  # the early step broke: the run runs the node itself
            log.exception("early start: node %s failed to run early; it runs with the plan", node.id)
            return None
        if ran is None or ran[0] != node or ran[1].status != "ok":
            return None
        _ready, report, timing, calls = ran
        return report, {key: self._run.state[key] for key in node.outputs}, timing, calls

    def stop(self) -> None:
        """No node starts early any more, those waiting never start, the one running is stopped (its unit's
        process tree killed, its tool calls refused)."""
        with self._lock:
            self._closed = True
            for future in self._all:
                future.cancel()
        self.cancelled.set()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def finish(self) -> None:
        """The plan's run is over: the worker thread ends (nothing is left for it)."""
        with self._lock:
            self._closed = True
        self._worker.shutdown(wait=False, cancel_futures=True)
