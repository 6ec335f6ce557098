"""The agent route (seed 004, specs/agent-mode.md): so far its contracts and its script engine.

Not imported by the pure core (``phoenix_lsp/core``) nor, yet, by the server. Keep this module empty:
the engine worker (``phoenix_lsp.agent.worker``) imports the package, and its start-up time counts.
"""
