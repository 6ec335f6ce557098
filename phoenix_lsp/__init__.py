"""phoenix-lsp: an AI coding agent that lives inside any editor through the Language Server Protocol."""
