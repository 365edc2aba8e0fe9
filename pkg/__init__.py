"""PKG: a Programming Knowledge Graph that serves code context to code-generating LLMs.

The public Python API is `KnowledgeBase` (open, build, query, stats, close); it is imported on first
use so that `import pkg.graph` stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pkg.knowledge_base import KnowledgeBase

__version__ = "0.1.0"
__all__ = ["KnowledgeBase", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "KnowledgeBase":
        from pkg.knowledge_base import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'pkg' has no attribute {name!r}")
