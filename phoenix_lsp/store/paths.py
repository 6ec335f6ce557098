"""Where the database lives by default.

Order of precedence:

1. ``PHOENIX_LSP_DATA_DIR`` (the database is ``phoenix.db`` inside it);
2. the platform's user data directory, as ``platformdirs`` knows it (Linux and other Unix:
   ``$XDG_DATA_HOME/phoenix-lsp``, else ``~/.local/share/phoenix-lsp``; macOS:
   ``~/Library/Application Support/phoenix-lsp``; Windows: ``%APPDATA%\\phoenix-lsp``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

APP_DIR_NAME = "phoenix-lsp"
DB_FILE_NAME = "phoenix.db"
DATA_DIR_ENV = "PHOENIX_LSP_DATA_DIR"


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data directory for phoenix-lsp (see the module docstring for the rules)."""
    env = os.environ if environ is None else environ
    override = env.get(DATA_DIR_ENV, "")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir(APP_DIR_NAME, appauthor=False, roaming=True))


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """``default_data_dir(...) / "phoenix.db"``."""
    return default_data_dir(environ) / DB_FILE_NAME
