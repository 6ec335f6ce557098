"""Server settings: model defaults, the per-model context windows (REQ-BED-022), and the sandbox settings
that come from initialization options or the environment (issue 12)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..sandbox.denylist import DENY_READ_ENV  # extra paths Restricted commands may not read

#: Seconds before a background command is stopped.
BACKGROUND_TIMEOUT_ENV = "PHOENIX_BACKGROUND_TIMEOUT_S"

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


def read_sandbox_settings(deny_read: list[str] | None, background_timeout_s: float | None, data_dir: Path,
                          environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sandbox fields of the hub's configuration and the problems to show the user.

    ``deny_read`` (the ``denyRead`` initialization option) adds to the defaults and to
    ``PHOENIX_LSP_DENY_READ``; the server's own data directory is always denied. ``background_timeout_s``
    (``backgroundTimeoutS``) wins over ``PHOENIX_BACKGROUND_TIMEOUT_S``. A bad value is reported and
    ignored, never fatal.
    """
    from ..sandbox.denylist import deny_read_paths, invalid_entries

    env = os.environ if environ is None else environ
    problems: list[str] = []
    entries = list(deny_read or [])
    bad = invalid_entries(entries + env.get(DENY_READ_ENV, "").split(os.pathsep))
    if bad:
        problems.append(f"phoenix-lsp: ignoring deny-read entries that are not absolute paths: {bad!r}. "
                        "Write them as /abs/path or ~/path.")
    settings: dict[str, Any] = {"deny_read": deny_read_paths(entries, [data_dir], env)}
    timeout = background_timeout_s
    raw = env.get(BACKGROUND_TIMEOUT_ENV, "").strip()
    if timeout is None and raw:
        try:
            timeout = float(raw)
            if not timeout > 0:
                raise ValueError("must be positive")
        except ValueError as exc:
            problems.append(f"phoenix-lsp: ignoring {BACKGROUND_TIMEOUT_ENV}={raw!r} ({exc}); background "
                            "commands keep the default limit of one hour. Set it to a number of seconds.")
            timeout = None
    if timeout is not None:
        settings["background_timeout_s"] = timeout
    return settings, problems
