"""The server's features, one module each with a ``setup(server)`` that registers its handlers."""
