"""The environment a command runs with: the one cleaning rule shared by the server and `sandbox run`.

Every command, whoever starts it (the bash tool inside the server, `phoenix-lsp sandbox run`, a sub-agent),
gets its environment through :func:`clean_environment` (applied in ``spawn.command_env``), so no copy of the
rule can drift from the other.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["SECRET_WORDS", "clean_environment"]

#: A variable whose name contains one of these words (any case) is taken for a credential.
SECRET_WORDS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def clean_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment tools run with: no API keys or other credentials (REQ-SEC-001, REQ-BASH-021).

    Drops every ``ANTHROPIC_*`` variable and every variable whose name looks like a credential
    (``*_API_KEY``, ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``, ...). Idempotent.
    """
    return {
        k: v
        for k, v in environ.items()
        if not k.upper().startswith("ANTHROPIC_") and not any(w in k.upper() for w in SECRET_WORDS)
    }
