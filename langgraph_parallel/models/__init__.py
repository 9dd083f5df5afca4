"""Models: the vLLM chat models, the engine and its settings, the embedded models and adapters."""
