"""Shared pieces of the agent engine tests: the engine with test-double host functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from phoenix_lsp.sandbox import probe

SUPPORT = probe()
needs_sandbox = pytest.mark.skipif(not SUPPORT.available, reason=f"no kernel sandbox here: {SUPPORT.reason}")


class Recorder:
    """Host functions that record every call: a refused script must leave them untouched."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def functions(self) -> dict[str, Callable[..., Any]]:
        def get_record(index: int) -> dict[str, Any]:
            self.calls.append(("get_record", (index,)))
            return {"id": index, "status": "open" if index % 2 else "done"}

        def fail() -> None:
            self.calls.append(("fail", ()))
            raise LookupError("no such record")

        return {"get_record": get_record, "fail": fail}
