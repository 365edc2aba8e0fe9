"""Embedders: one protocol, one module per provider, and a persistent cache in front of them."""

from __future__ import annotations

from pathlib import Path

from pkg.embedders.base import Embedder, unit_rows
from pkg.embedders.cache import CachedEmbedder, EmbeddingCache
from pkg.errors import ConfigError

DEFAULT_SPEC = "minilm"
SPEC_HELP = "minilm (default, offline), st:NAME_OR_PATH (any sentence-transformers model), voyage[:MODEL]"

__all__ = ["DEFAULT_SPEC", "SPEC_HELP", "CachedEmbedder", "Embedder", "EmbeddingCache", "make_embedder", "unit_rows"]


def make_embedder(spec: str, cache_dir: Path | None) -> Embedder:
    """Build the embedder a spec names, behind the persistent cache unless cache_dir is None."""
    kind, _, arg = spec.partition(":")
    query_differs = False
    if kind in ("minilm", "st"):
        from pkg.embedders.sentence_transformer import DEFAULT_MODEL, SentenceTransformerEmbedder

        if kind == "st" and not arg:
            raise ConfigError("embedder 'st' needs a model: st:NAME_OR_PATH")
        inner: Embedder = SentenceTransformerEmbedder(arg if kind == "st" else DEFAULT_MODEL)
    elif kind == "voyage":
        from pkg.embedders.voyage import DEFAULT_MODEL as VOYAGE_DEFAULT, VoyageEmbedder

        inner = VoyageEmbedder(arg or VOYAGE_DEFAULT)
        query_differs = True
    else:
        raise ConfigError(f"unknown embedder {spec!r}; use {SPEC_HELP}")
    if cache_dir is None:
        return inner
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"), query_differs)
