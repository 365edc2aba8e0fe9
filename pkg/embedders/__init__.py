"""Embedders: one protocol, one module per provider, and a persistent cache in front of them.

A spec is `KIND` or `KIND:ARGUMENT`; EMBEDDER_KINDS says what each kind takes and builds. An
embedder's `name` is itself a spec that builds the same embedder, which is how a database's queries
find the embedder that built it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pkg.config import default_cache_dir
from pkg.embedders.base import Embedder, unit_rows
from pkg.embedders.cache import CachedEmbedder, EmbeddingCache
from pkg.errors import ConfigError, EmbedderError

if TYPE_CHECKING:
    from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder


def _minilm(_: str, cache_dir: Path) -> Embedder:
    from pkg.embedders.sentence_transformer import DEFAULT_MODEL

    return _sentence_transformer(DEFAULT_MODEL, cache_dir)


def _sentence_transformer(model: str, cache_dir: Path) -> Embedder:
    from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, onnx_dir=cache_dir / "models")


def _tuned(key: str, cache_dir: Path) -> Embedder:
    from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder
    from pkg.embedders.tuning import tuned_folder

    models = cache_dir / "models"
    folder = tuned_folder(models, key)
    if not (folder / "modules.json").exists():
        raise EmbedderError(f"no tuned model {key!r} in {models}: run `pkg tune` again (same pairs, same key)")
    return SentenceTransformerEmbedder(str(folder), onnx_dir=models, name=f"tuned:{key}")


def _voyage(model: str, _cache_dir: Path) -> Embedder:
    from pkg.embedders.voyage import DEFAULT_MODEL, VoyageEmbedder

    return VoyageEmbedder(model or DEFAULT_MODEL)


def _openai_compat(model: str, _cache_dir: Path) -> Embedder:
    from pkg.embedders.openai_compat import OpenAICompatEmbedder

    return OpenAICompatEmbedder(model)


def _static(key: str, cache_dir: Path) -> Embedder:
    from pkg.embedders.static import StaticEmbedder

    return StaticEmbedder(cache_dir / "models", key or None)


@dataclass(frozen=True)
class EmbedderKind:
    """One kind of spec: the argument it takes (`:X` required, `[:X]` optional, `` none), what it
    is, how to build it from the argument and the cache folder, whether queries are embedded apart
    from documents, and whether the persistent cache goes in front of it."""

    argument: str
    summary: str
    build: Callable[[str, Path], Embedder]
    query_differs: bool = False
    cached: bool = True


FAST_PROFILE = "static"  # the fast profile's kind: `static`, or `static:<key>` once `pkg tune` fitted it
EMBEDDER_KINDS: dict[str, EmbedderKind] = {
    "minilm": EmbedderKind("", "default, offline", _minilm),
    # Not cached: building 100k functions, the cache's lookups and writes took 60% of the embedding
    # stage and the static model 33% (py-spy), and its file would have held 0.7 GB of vectors.
    FAST_PROFILE: EmbedderKind(
        "[:KEY]",
        "fast profile: static vectors from MiniLM, ~100x faster, lower recall (with a key: fitted by `pkg tune`)",
        _static,
        cached=False,
    ),
    "st": EmbedderKind(":NAME_OR_PATH", "any sentence-transformers model", _sentence_transformer),
    "tuned": EmbedderKind(":KEY", "MiniLM tuned on a corpus by `pkg tune`, kept in the cache's models", _tuned),
    "voyage": EmbedderKind("[:MODEL]", "Voyage AI, key in VOYAGE_API_KEY", _voyage, query_differs=True),
    "openai-embed": EmbedderKind(
        ":MODEL", "any OpenAI-compatible /v1/embeddings server at PKG_EMBED_BASE_URL", _openai_compat
    ),
}
DEFAULT_SPEC = "minilm"
SPEC_HELP = ", ".join(f"{kind}{entry.argument} ({entry.summary})" for kind, entry in EMBEDDER_KINDS.items())

__all__ = [
    "DEFAULT_SPEC",
    "FAST_PROFILE",
    "EMBEDDER_KINDS",
    "SPEC_HELP",
    "CachedEmbedder",
    "Embedder",
    "EmbedderKind",
    "EmbeddingCache",
    "fit_teacher",
    "make_embedder",
    "unit_rows",
]


def make_embedder(spec: str, cache_dir: Path | None) -> Embedder:
    """Build the embedder a spec names, behind the persistent cache unless cache_dir is None or the
    kind is not worth caching (models made locally are kept in cache_dir, else the default folder)."""
    entry, argument = _kind_of(spec)
    inner = entry.build(argument, cache_dir or default_cache_dir())
    if cache_dir is None or not entry.cached:
        return inner
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"), entry.query_differs)


def fit_teacher(spec: str, cache_dir: Path, max_tokens: int) -> SentenceTransformerEmbedder:
    """The embedder a fast profile's table is fitted to (pkg.embedders.static.fit_fast_profile): the spec's
    local model reading each text's first max_tokens tokens, and uncached (its vectors are not the model's)."""
    from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder

    entry, argument = _kind_of(spec)
    teacher = entry.build(argument, cache_dir)
    if not isinstance(teacher, SentenceTransformerEmbedder):
        raise EmbedderError(f"a fast profile is fitted to a local sentence-transformers model, not {spec!r}")
    return teacher.reading_at_most(max_tokens)


def _kind_of(spec: str) -> tuple[EmbedderKind, str]:
    """The kind a spec names and its argument; ConfigError for an unknown kind or a missing argument."""
    kind, _, argument = spec.partition(":")
    entry = EMBEDDER_KINDS.get(kind)
    if entry is None:
        raise ConfigError(f"unknown embedder {spec!r}; use {SPEC_HELP}")
    if entry.argument.startswith(":") and not argument:
        raise ConfigError(f"embedder {kind!r} needs a model: {kind}{entry.argument}")
    return entry, argument
