"""Built-in llmulator plugins, each registered through the ``llmulator`` entry-point group."""
