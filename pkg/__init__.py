"""PKG: a Programming Knowledge Graph that serves code context to code-generating LLMs."""

__version__ = "0.1.0"
