"""Run the benchmarks: ``python -m bench [--quick] [NAME ...]``.

Each module in bench/ exposes ``figures(quick) -> list[dict]``; every figure is printed next to a baseline
measured in the same run, with the ratio, because these machines are shared and absolute numbers drift.
"""

from __future__ import annotations

import argparse
import importlib
import sys

MODULES = ["core", "store", "patch", "reading", "sandbox", "server", "cache", "fuzz", "streams", "agent_engine",
           "agent_route", "providers", "agent_tasks", "acp", "redaction", "sink",
           "hostile", "capture", "bounded_http", "terminal", "mcp_tools", "run", "images"]


def print_table(rows: list[dict[str, object]]) -> None:
    """Each figure with its baseline, the ratio and the difference between them, its goal and, when the row
    judges itself (``met``: True or False), the verdict."""
    for row in rows:
        value, base = row["value"], row.get("baseline_value")
        ratio = ""
        if isinstance(value, int | float) and isinstance(base, int | float) and base:
            ratio = f"  (x{value / base:.3g} of baseline, {value - base:+.3g} {row.get('unit', '')})"
        print(f"- {row['name']}: {value} {row.get('unit', '')}{ratio}")
        if base is not None:
            print(f"    baseline: {row.get('baseline_name')}: {base} {row.get('unit', '')}")
        if row.get("goal"):
            print(f"    goal: {row['goal']}")
        if isinstance(row.get("met"), bool):
            print(f"    verdict: {'goal met' if row['met'] else 'GOAL MISSED'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("names", nargs="*", default=MODULES, help=f"which benchmarks ({', '.join(MODULES)})")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.names:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            print(f"## {name}: not available ({exc})")
            continue
        print(f"## {name}")
        try:
            print_table(module.figures(quick=args.quick))
        except Exception as exc:  # one broken benchmark must not hide the others
            failed += 1
            print(f"   FAILED: {exc!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
