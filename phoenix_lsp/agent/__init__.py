"""The agent route (seed 004, specs/agent-mode.md): its contracts, its script engine, its orchestrator, the MCP
client and the capability manifest's gate.

Not imported by the pure core (``phoenix_lsp/core``); the server uses it through ``server/agent_route.py``,
importing the MCP client only when the route is first used. Keep this module empty:
the engine worker (``phoenix_lsp.agent.worker``) imports the package, and its start-up time counts.
"""
