"""A plan's node written as its script alone (REQ-AGENT-045, issue 37): what the model need not write.

In this latency model's terms every character of ``run_plan``'s input is decoded by the model, so a node's
JSON framing costs time: its id, its ``tools`` URIs, ``outputs``, ``depends_on`` and ``inputs`` restate what
the script already says. A node given as a string is its code, and the server reads the rest from it:

- **id**: ``n<position>`` (1-based);
- **tools**: every catalogue tool whose function name (``server_tool``) the script mentions. A script can reach
  a tool only by its name (``getattr``, ``globals``, dunders are refused by the static check), so this is every
  tool it may call; a name that is no catalogue tool is left to fail as an unknown name;
- **inputs** and **depends_on**: the names it reads that an earlier node outputs (the latest such node);
- **outputs**: the names it assigns at its top level (not ``_``-prefixed); the server appends the object of
  them the engine returns (``{'name': name, ...}``). A script that ends with a dict literal keeps it as its
  result, and its string keys are the outputs, as in the object form;
- **answer**: a script that ends with an expression that is not a dict renders it: its result is
  ``{'answer': <the expression>}`` (REQ-AGENT-039), so the last node's last line is the reply's template. A node
  whose result holds ``answer`` declares no outputs (its result is reported whole, the answer in it).

Deterministic (the same code and earlier nodes give the same node, so the same plan hash) and pure. The code
is parsed only when it is at most ``MAX_PARSED_BYTES``; a longer one, or one that does not parse, is passed on
as it is, with no tools, for the static check to refuse with its own message.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: longer scripts are not parsed here (the static check's maxCodeBytes refuses them anyway)
MAX_PARSED_BYTES = 64 * 1024
ANSWER = "answer"
#: the line ends of Python's parser (not str.splitlines', which also splits at form feeds and other separators)
_LINES = re.compile(r"\r\n|\r|\n")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _assigned(tree: ast.Module) -> list[str]:
    """The names assigned by the module's top-level statements, in order, once each."""
    names: list[str] = []
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name) and not node.id.startswith("_") and node.id not in names:
                    names.append(node.id)
    return names


def _dict_keys(value: ast.Dict) -> list[str] | None:
    """The dict literal's keys when every one is a string naming a variable; else None."""
    keys = []
    for key in value.keys:
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str) or not key.value.isidentifier():
            return None
        keys.append(key.value)
    return keys


def _with_result(code: str, tree: ast.Module, assigned: list[str]) -> tuple[str, list[str]]:
    """The code with the object of its outputs as its last expression, and those outputs."""
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Dict):
        keys = _dict_keys(last.value)
        if keys is not None:  # the answer's node declares none: its whole result is reported, the answer kept
            return code, [] if ANSWER in keys else keys
    pairs = ", ".join(f"{name!r}: {name}" for name in assigned)
    value = last.value if isinstance(last, ast.Expr) else None
    if value is not None and value.end_lineno is not None and value.end_col_offset is not None:
        # the expression's place, as the parser counts it: lines split as it splits them, columns in UTF-8 bytes
        lines = [line.encode("utf-8", "surrogatepass") for line in _LINES.split(code)]
        start, end = lines[value.lineno - 1], lines[value.end_lineno - 1]
        head = b"\n".join([*lines[:value.lineno - 1], start[:value.col_offset]])
        segment = ast.get_source_segment(code, value) or ""
        tail = b"\n".join([end[value.end_col_offset:], *lines[value.end_lineno:]])
        return f"{_text(head)}{{{ANSWER!r}: ({segment})}}{_text(tail)}", []
    if not pairs:
        return code, []
    return f"{code.rstrip()}\n{{{pairs}}}", assigned


def node_from_code(code: str, position: int, earlier: Sequence[Mapping[str, Any]],
                   functions: Mapping[str, str]) -> dict[str, Any]:
    """The contracts' node (``kind: script``) for a node written as its code alone, at ``position`` (1-based)
    after the ``earlier`` contracts' nodes; ``functions``: each catalogue tool's function name -> its URI."""
    node: dict[str, Any] = {"id": f"n{position}", "kind": "script", "dependsOn": [], "inputs": [], "outputs": [],
                            "unit": {"code": code, "allowedTools": []}}
    if len(code.encode("utf-8", "surrogatepass")) > MAX_PARSED_BYTES:
        return node
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return node
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    tools = sorted({functions[n.id] for n in names if n.id in functions})
    producer: dict[str, str] = {}
    for before in earlier:
        for key in before.get("outputs", ()):
            producer[key] = before["id"]
    read = sorted({n.id for n in names if isinstance(n.ctx, ast.Load) and n.id in producer})
    run_code, outputs = _with_result(code, tree, _assigned(tree))
    node.update(dependsOn=sorted({producer[k] for k in read}), inputs=read, outputs=outputs,
                unit={"code": run_code, "allowedTools": tools})
    return node
