"""``phoenix-lsp run``: the headless adapter (issue 38, specs/run.md). One turn of a conversation, run without a
person: the prompt from the command line or stdin (``prompt.py``), the events written as they come and the result
(``client.py``), every approval and upgrade request denied at once through the core's own answer events, and the
run's patches written by the run itself, as the terminal client writes an editor's edits (``files.py``). The
boot (``run_boot.py``) builds the hub every adapter shares and drives the turn through the use cases."""
