"""The engine experiments: concurrent vs sequential calls, prefix caching, vLLM's async engine."""
