"""The server's features: the lifecycle (``lifecycle.py``, with the boot line), then one module per group of
``phoenix/*`` requests, each with a ``HANDLERS`` table of its module-level handlers (installed by ``served.py``)."""
