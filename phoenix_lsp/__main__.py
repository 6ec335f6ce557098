"""``python -m phoenix_lsp`` is the ``phoenix-lsp`` command."""

import sys

from .cli import main

sys.exit(main())
