"""The launcher's entry: ``python -I -S <this directory> [options] -- command...`` (build.py).

Run as a directory, this file is the top-level ``__main__`` and the directory itself is the first entry of
``sys.path``. The directory is taken off that path (its module names must not stand in for the standard
library's) and the sandbox directory is put at its end, so that the launcher is imported as the package
``launcher`` and its modules import each other relatively, as they do inside ``phoenix_lsp``.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
    del sys.path[0]
sys.path.append(os.path.dirname(_HERE))

from launcher import main  # type: ignore[import-not-found]  # noqa: E402  (after the path is set; found at run time only)

sys.exit(main(sys.argv[1:]))
