"""The fixtures of ``phoenix-lsp run``'s tests (``harness.py``)."""

from tests.run.harness import run, run_env

__all__ = ["run", "run_env"]
