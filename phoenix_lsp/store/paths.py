"""Where the database lives by default.

Order of precedence:

1. ``PHOENIX_LSP_DATA_DIR`` (the database is ``phoenix.db`` inside it);
2. Linux and other Unix: ``$XDG_DATA_HOME/phoenix-lsp`` when set to an absolute path, else
   ``~/.local/share/phoenix-lsp`` (XDG Base Directory specification);
3. macOS: ``~/Library/Application Support/phoenix-lsp``;
4. Windows: ``%APPDATA%\\phoenix-lsp`` (``~/AppData/Roaming`` when APPDATA is unset).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

APP_DIR_NAME = "phoenix-lsp"
DB_FILE_NAME = "phoenix.db"
DATA_DIR_ENV = "PHOENIX_LSP_DATA_DIR"


def default_data_dir(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    home: Path | None = None,
) -> Path:
    """The platform's data directory for phoenix-lsp (see the module docstring for the rules).

    The parameters default to the real environment, ``sys.platform`` and the user's home; tests pass
    their own values to check every platform on any machine.
    """
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    user_home = Path.home() if home is None else home

    override = env.get(DATA_DIR_ENV, "")
    if override:
        return Path(override).expanduser()
    if plat == "darwin":
        return user_home / "Library" / "Application Support" / APP_DIR_NAME
    if plat in ("win32", "cygwin"):
        appdata = env.get("APPDATA", "")
        base = Path(appdata) if appdata else user_home / "AppData" / "Roaming"
        return base / APP_DIR_NAME
    xdg = env.get("XDG_DATA_HOME", "")
    # The XDG spec says relative paths are invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else user_home / ".local" / "share"
    return base / APP_DIR_NAME


def default_db_path(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    home: Path | None = None,
) -> Path:
    """``default_data_dir(...) / "phoenix.db"``."""
    return default_data_dir(environ, platform, home) / DB_FILE_NAME
