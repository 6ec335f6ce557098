"""The static check every script passes before it runs (REQ-AGENT-008, acceptance 9).

The engine (pydantic-monty) is itself hermetic only up to a point: it has ``eval``, an ``import`` of its
own small standard library (``time``, ``random``, ``os``...) and a clock of the worker unless told
otherwise. So a script is refused, before anything starts, when it is longer than ``maxCodeBytes``
(``CODE``/``CODE_SIZE``) or when it uses any of the constructs below (``CODE``/``STATIC_CHECK``): these are
mistakes of the script's author (the model), which a re-plan can fix, so they are ``CODE`` errors, not
``DENIED`` ones (``DENIED`` is kept for capabilities: a tool the unit may not call). The worker's run-time
settings (no OS handler, frozen clock, seeded random) are the second line behind this check.
"""

from __future__ import annotations

import ast

from .contracts import AgentError, ErrorCode, ErrorKind

#: names a script may not mention at all: code execution, introspection, files, environment, process
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "__import__", "open", "input", "breakpoint", "globals", "locals", "vars",
    "getattr", "setattr", "delattr", "dir", "type", "object", "memoryview", "help", "exit", "quit",
    "__builtins__", "os", "sys", "time", "datetime", "random", "environ", "getenv", "pathlib", "io",
})


def check(code: str, max_code_bytes: int) -> AgentError | None:
    """None when `code` may run; otherwise why not (the first problem found)."""
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > max_code_bytes:
        return AgentError(kind=ErrorKind.CODE, code=ErrorCode.CODE_SIZE,
                          message=f"the script is {size} bytes; the limit is {max_code_bytes}")
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        return _refuse(f"syntax error at line {exc.lineno}: {exc.msg}")
    except ValueError as exc:  # e.g. a NUL byte
        return _refuse(f"not parseable: {exc}")
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import | ast.ImportFrom):
            return _refuse(f"line {line}: import is not allowed; use only the given tools and builtins")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            return _refuse(f"line {line}: {node.id!r} is not allowed (no eval, files, environment or clock)")
        if isinstance(node, ast.Name | ast.Attribute | ast.alias):
            name = node.id if isinstance(node, ast.Name) else (
                node.attr if isinstance(node, ast.Attribute) else node.name)
            if name.startswith("__"):
                return _refuse(f"line {line}: dunder names such as {name!r} are not allowed")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_NAMES:
            return _refuse(f"line {line}: '.{node.attr}' is not allowed (no eval, files, environment or clock)")
        if isinstance(node, ast.Global | ast.Nonlocal | ast.ClassDef | ast.AsyncFunctionDef | ast.Await):
            return _refuse(f"line {line}: {type(node).__name__} is not allowed in a script")
    return None


def _refuse(message: str) -> AgentError:
    return AgentError(kind=ErrorKind.CODE, code=ErrorCode.STATIC_CHECK, message=message)
