"""The exit codes of ``phoenix-lsp run`` (REQ-RUN-005), named once for the command's --help, the run and the
tests. Standard library only: the command line imports it to build its parser."""

from __future__ import annotations

import signal

SUCCESS, FAILED, USAGE, LIMIT = 0, 1, 2, 3
#: a run stopped by a signal ends with 128 + its number, as a shell reports it
KILLED = {signal.SIGINT: 130, signal.SIGTERM: 143}

HELP = (
    "exit codes: 0 the turn ended with an answer; 1 the turn failed (the model service, a refused message, a "
    "conversation that cannot be read); 2 usage or configuration error (an option, the prompt, an unknown --resume "
    "id, a model or route that cannot be used); 3 the turn limit (--max-turns) or a budget (a full context window) "
    "was reached; 130 / 143 the run was stopped by SIGINT / SIGTERM (the turn is cancelled, what it streamed is "
    "stored)."
)
