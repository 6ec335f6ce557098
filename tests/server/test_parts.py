"""The runtime is made of parts, not mixins (issue 35, REQ-PROTO-064): ``Runtime`` and ``Hub`` are plain classes
holding their parts as named attributes; each part owns its state, set in its own ``__init__`` and changed only
by its own methods; no stub waits for another class to fill it in.

Read from the source (``ast``) and the classes themselves, so a mixin, an abstract member or a part's state
written from outside fails here, whichever module brings it back.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from phoenix_lsp.server.runtime import Hub, Runtime
from phoenix_lsp.server.runtime.agents import Agents
from phoenix_lsp.server.runtime.background import Background
from phoenix_lsp.server.runtime.notify import Notes
from phoenix_lsp.server.runtime.outbox import Outbox
from phoenix_lsp.server.runtime.tools import Tools
from phoenix_lsp.server.runtime.turn import Turn
from phoenix_lsp.server.runtime.windows import Windows

pytestmark = pytest.mark.req("REQ-PROTO-064")

PACKAGE = Path(__file__).resolve().parents[2] / "phoenix_lsp"
RUNTIME = PACKAGE / "server" / "runtime"
#: the conversation's parts and the hub's, with the whole they belong to
PARTS: dict[type, type] = {Turn: Runtime, Tools: Runtime, Agents: Runtime, Notes: Runtime, Outbox: Hub,
                           Windows: Hub, Background: Hub}
OWNERS = [Runtime, Hub, *PARTS]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _class(cls: type) -> ast.ClassDef:
    node = _tree(Path(inspect.getfile(cls))).body
    return next(n for n in node if isinstance(n, ast.ClassDef) and n.name == cls.__name__)


def _targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment (plain, annotated, augmented; tuple targets unpacked) writes to."""
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        found = [node.target]
    else:
        return []
    out: list[ast.expr] = []
    while found:
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found.extend(target.elts)
        else:
            out.append(target)
    return out


def _self_writes(function: ast.AST) -> set[str]:
    """The attributes of ``self`` that ``function`` assigns."""
    return {t.attr for n in ast.walk(function) for t in _targets(n)
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}


#: what a part is handed (the hub, the conversation, the hub's store...), not state it owns
COLLABORATORS = {"hub", "conversation", "store", "llm", "sandbox", "config", "sink", "spawn"}


def _state(cls: type) -> set[str]:
    """The state ``cls`` owns: what its ``__init__`` sets, but for the collaborators it is handed."""
    init = next(f for f in _class(cls).body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    return _self_writes(init) - COLLABORATORS


def test_the_runtime_and_the_hub_are_plain_classes_holding_their_parts() -> None:
    for cls in OWNERS:
        assert cls.__mro__ == (cls, object), f"{cls.__name__} is composed by inheritance: {cls.__mro__}"
    assert {"turn", "tools", "agents", "notes"} <= _state(Runtime), "the conversation's parts are named attributes"
    assert {"outbox", "windows"} <= _state(Hub), "the hub's parts are named attributes"


def test_no_part_waits_for_another_class_to_fill_it_in() -> None:
    for path in sorted(RUNTIME.glob("*.py")):
        tree = _tree(path)
        raised = [n for n in ast.walk(tree) if isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)]
        assert raised == [], f"{path.name}: a stub for another class: {[ast.unparse(n) for n in raised]}"
        abstract = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in ("ABC", "abstractmethod")]
        assert abstract == [], f"{path.name} declares abstract members for a subclass to fill in"


def test_each_part_sets_its_state_in_its_own_init() -> None:
    """A method may change the state its class's ``__init__`` set, never add state of its own."""
    for cls in OWNERS:
        declared = {t.attr for n in ast.walk(_class(cls)) if isinstance(n, ast.FunctionDef) and n.name == "__init__"
                    for t in (x for s in ast.walk(n) for x in _targets(s)) if isinstance(t, ast.Attribute)}
        for method in (n for n in _class(cls).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if method.name == "__init__":
                continue
            born = _self_writes(method) - declared
            assert born == set(), f"{cls.__name__}.{method.name} sets {sorted(born)}, which its __init__ does not"


def test_no_one_else_writes_a_parts_state() -> None:
    """Only the class that owns a piece of state assigns it: the outbox does not number a conversation's events
    by writing its seq, an adapter does not replace the tools' clipboards, a parent does not set its
    sub-agent's deadline."""
    owner_of: dict[str, list[type]] = {}
    # set once (above); common words elsewhere
    parts = {"turn", "tools", "agents", "notes", "outbox", "windows", "background"}
    for cls in OWNERS:
        for name in _state(cls) - parts:
            owner_of.setdefault(name, []).append(cls)
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = _tree(path)
        classes = {id(n): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in ast.walk(c)}
        for node in ast.walk(tree):
            for t in _targets(node):
                if not isinstance(t, ast.Attribute) or t.attr not in owner_of:
                    continue
                inside = classes.get(id(node))
                mine = isinstance(t.value, ast.Name) and t.value.id == "self"
                if mine and inside in {c.__name__ for c in owner_of[t.attr]}:
                    continue
                if mine and inside not in {c.__name__ for c in OWNERS}:
                    continue  # another class's own attribute of the same name
                written.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)[:100]}")
    assert written == [], "a part's state written from outside it:\n" + "\n".join(written)
