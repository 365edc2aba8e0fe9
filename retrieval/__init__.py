"""Retrieval: vector search per node kind, projection to functions, pruning, prompt assembly."""
