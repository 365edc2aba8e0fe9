"""Reranking of generated candidates (parse, run in a sandbox, pick the most similar)."""
