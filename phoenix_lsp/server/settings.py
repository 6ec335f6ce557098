"""Server settings: model defaults and the per-model context windows (REQ-BED-022)."""

from __future__ import annotations

DEFAULT_MODEL = "claude-sonnet-4-5"

#: Known context windows in tokens. Unknown models get the smallest known one (REQ-BED-022).
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-opus-4-1": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-sonnet-4-5[1m]": 1_000_000,
}


def context_window(model: str) -> int:
    """The context window of ``model``; the smallest known window when the model is unknown."""
    return CONTEXT_WINDOWS.get(model, min(CONTEXT_WINDOWS.values()))
