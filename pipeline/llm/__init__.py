"""The LLM layer: one interface (``types``), two backends (``anthropic_backend``, ``offline``)."""
