"""The agent route (seed 004, specs/agent-mode.md): its contracts, its script engine and its orchestrator.

Not imported by the pure core (``phoenix_lsp/core``) nor, yet, by the server. Keep this module empty:
the engine worker (``phoenix_lsp.agent.worker``) imports the package, and its start-up time counts.
"""
