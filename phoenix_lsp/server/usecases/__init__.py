"""The product's use cases, one module per user action, shared by every adapter (issue 35).

An adapter (the LSP features, the ACP agent, the terminal client's server side, a headless run) turns its
protocol into a use case's typed input, calls it, and turns the typed result, or the :class:`~.errors.Invalid`
/ :class:`~.errors.Refused` it raises, back into its protocol. The rules that hold for every surface live here,
once: the attachment rule and the deny-read list (REQ-ATTACH-001, REQ-READ-004), the route rule
(REQ-AGENT-001, REQ-AGENT-022), the image limits, and the warm-up of the model SDK.

A use case sees the server's conversations through ``server/adapter.py``'s interfaces, never the runtime's
classes, so the ACP adapter (which may not import the runtime) calls the same code as the LSP features.
"""
