"""The Agent Client Protocol adapter (issue 28, specs/acp.md): ``phoenix-lsp acp`` speaks ACP v1 as an agent over
the same conversations, store, sandbox and approvals as the LSP server. An ACP session is a conversation.

One job per module: ``agent`` (the ACP methods), ``client`` (the runtime's ``Editor`` and ``User``,
``adapter.Client``), ``updates`` (phoenix events as ``session/update``), ``results`` (a call's whole output, read
when its final update is sent), ``replay`` (the history on ``session/load``), ``options`` (config options and
slash commands), ``listing`` (``session/list``'s pages), ``errors`` (every error's what / why / next), ``asking``
(approvals and upgrade requests as ``session/request_permission``), ``files`` (reads and patches through
``fs/*``), ``prompt`` (a prompt's content blocks as a user message), ``mcp`` (a session's MCP servers), ``sender``
(updates sent in order). Like every adapter it never
imports the runtime: ``boot.py`` wires it.
"""
