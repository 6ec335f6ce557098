"""The import graph of ``phoenix_lsp``, read from the source (nothing is imported).

    python scripts/imports.py            every module with what it imports, then the circles
    python scripts/imports.py --circles  only the circles (exit status 1 when there is one)
    python scripts/imports.py --lazy     only the lazy imports (inside a function or under TYPE_CHECKING)
    python scripts/imports.py --inside   every import inside a function, the package's and others', with its line
    python scripts/imports.py --sizes    the package's files over 300 lines, and whether each says why

An edge is any import of one ``phoenix_lsp`` module by another: at the top of the module, inside a function
(marked ``fn``), under ``if TYPE_CHECKING:`` (marked ``tc``), or through ``importlib.import_module`` (or a
``LazyModule``) with a literal name (marked ``fn``). ``from package import name`` leads to ``package.name``
when that is a module, else to the package. A circle is a set of modules that reach each other through such edges.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "phoenix_lsp"
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    how: str  # "top", "fn" (inside a function) or "tc" (under TYPE_CHECKING)
    line: int


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Each import statement (or literal ``import_module`` call) with where it is: top, fn or tc."""

    def walk(node: ast.AST, how: str) -> Iterator[tuple[ast.AST, str]]:
        for child in ast.iter_child_nodes(node):
            inner = how
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "fn"
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk_one(stmt, "tc" if how == "top" else how)
                for stmt in child.orelse:
                    yield from walk_one(stmt, how)
                continue
            yield from walk_one(child, inner)

    def walk_one(node: ast.AST, how: str) -> Iterator[tuple[ast.AST, str]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, how
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "LazyModule")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node, "fn" if how == "top" else how
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            how = "fn"
        yield from walk(node, how)

    yield from walk(tree, "top")


def edges(root: Path = ROOT) -> list[Edge]:
    """Every import of a package module by another."""
    known = modules(root)
    found: list[Edge] = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, how in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                for alias in node.names:
                    full = f"{stem}.{alias.name}"
                    targets.append(full if full in known else stem)
            else:
                assert isinstance(node, ast.Call)
                targets = [node.args[0].value]  # type: ignore[attr-defined]
            for target in targets:
                while target and target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != name:
                    found.append(Edge(name, target, how, getattr(node, "lineno", 0)))
    return found


@dataclass(frozen=True)
class Inside:
    """An import statement (or literal ``import_module`` call) inside a function, of any module."""
    path: Path
    line: int
    text: str  # the source line, with its comment

    @property
    def reason(self) -> str:
        """What the comment on its line says after ``lazy:`` (empty when it gives no reason)."""
        _, marker, why = self.text.partition("# lazy:")
        return why.strip() if marker else ""


def inside(root: Path = ROOT) -> list[Inside]:
    """Every import inside a function in the package (the standard library's and other packages' too)."""
    found: list[Inside] = []
    for path in modules(root).values():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node, how in _imports(ast.parse(source, str(path))):
            if how == "fn":
                line = getattr(node, "lineno", 0)
                found.append(Inside(path, line, lines[line - 1].strip()))
    return found


#: a package file longer than this says why in its module docstring, in a line starting with ``OVER`` (then its
#: reason: "Over 300 lines: ..." or "Over 300 lines for a reason: ...")
LONG = 300
OVER = "Over 300 lines"


def sizes(root: Path = ROOT) -> list[tuple[Path, int, str]]:
    """Each package file over :data:`LONG` lines, its length and the reason its docstring gives (or "")."""
    found: list[tuple[Path, int, str]] = []
    for path in modules(root).values():
        source = path.read_text(encoding="utf-8")
        count = len(source.splitlines())
        if count > LONG:
            doc = ast.get_docstring(ast.parse(source, str(path))) or ""
            reason = next((line.strip()[len(OVER):].removeprefix(" for a reason").lstrip(": ").strip()
                           for line in doc.splitlines() if line.strip().startswith(OVER)), "")
            found.append((path, count, reason))
    return sorted(found, key=lambda item: -item[1])


def circles(found: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, largest first."""
    graph: dict[str, set[str]] = {}
    for e in found:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0

    def connect(v: str) -> None:  # recursion depth is bounded by the number of modules
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(result, key=lambda c: (-len(c), c))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/imports.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--circles", action="store_true", help="only the circles; exit 1 when there is one")
    parser.add_argument("--lazy", action="store_true", help="only the imports inside functions or TYPE_CHECKING")
    parser.add_argument("--inside", action="store_true", help="every import inside a function, with its line")
    parser.add_argument("--sizes", action="store_true", help=f"the files over {LONG} lines, with their reasons")
    args = parser.parse_args(argv)
    if args.inside:
        within = inside()
        for i in within:
            print(f"{i.path.relative_to(ROOT)}:{i.line}: {i.text}")
        print(f"{len(within)} imports inside functions ({sum(1 for i in within if not i.reason)} without a reason)")
        return 0
    if args.sizes:
        for path, count, reason in sizes():
            print(f"{count:5} {path.relative_to(ROOT)}: {reason or 'NO REASON (' + OVER + ': ... in its docstring)'}")
        return 0
    found = edges()
    loops = circles(found)
    if args.lazy:
        for e in found:
            if e.how != "top":
                print(f"{e.source}:{e.line} -> {e.target} ({e.how})")
        return 0
    if not args.circles:
        by_source: dict[str, list[Edge]] = {}
        for e in found:
            by_source.setdefault(e.source, []).append(e)
        for name in modules():
            out = sorted({(e.target, e.how) for e in by_source.get(name, [])})
            marks = ", ".join(t if how == "top" else f"{t} ({how})" for t, how in out)
            print(f"{name}: {marks}" if marks else name)
        lazy = sum(1 for e in found if e.how != "top")
        print(f"\n{len(modules())} modules, {len(found)} imports ({lazy} lazy: inside a function or under "
              "TYPE_CHECKING)")
    print(f"{len(loops)} circles" + (":" if loops else ""))
    for loop in loops:
        print("  " + " <-> ".join(m.removeprefix(PACKAGE + ".") for m in loop))
    return 1 if args.circles and loops else 0


if __name__ == "__main__":
    sys.exit(main())
