"""The LLM estimator plugin (the LLMulator method): digit-by-digit numeric prediction."""
