"""BM25 lexical retrieval over (id, text) documents, on bm25s' precomputed sparse score matrix.

Scoring is Okapi BM25 exactly as rank_bm25's `BM25Okapi` computes it (bm25s `method="atire"` for
the term-frequency part, `idf_method="robertson"` for the idf):

    score(q, d) = sum over query tokens t (repeats count) of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln((N - df(t) + 0.5) / (df(t) + 0.5))

with one difference: a token found in more than half of the documents, whose idf would be negative,
weighs 0 here, where `BM25Okapi` gives it epsilon times the mean idf of the vocabulary instead.
Texts are tokenized by a pluggable `Tokenizer` (default `code_tokens`) and handed to bm25s as token
ids with our own vocabulary; bm25s' English tokenizer is never used.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pkg.config import BM25_META
from pkg.errors import ConfigError, StoreError, StoreNotFoundError
from retrieval.tokenize import Tokenizer, code_tokens

if TYPE_CHECKING:
    import bm25s

__all__ = ["BM25Index"]

#: Our part of a saved index, beside bm25s' own files: format, tokenizer, parameters and ids.
_META = BM25_META
_META_KEYS = frozenset({"format", "tokenizer", "k1", "b", "has_terms", "ids"})
_FORMAT = 1


class BM25Index:
    """An immutable BM25 index of documents named by unique string ids. Use `build` or `load`."""

    def __init__(self, ids: Sequence[str], model: bm25s.BM25 | None, tokenizer: Tokenizer, k1: float, b: float) -> None:
        """Wrap a built bm25s model (None when the corpus has no token at all)."""
        self._ids = tuple(ids)
        self._model = model
        self._tokenizer = tokenizer
        self._spec = _tokenizer_spec(tokenizer)
        self._k1 = k1
        self._b = b
        self._id_rank = np.empty(len(self._ids), dtype=np.int64)
        self._id_rank[sorted(range(len(self._ids)), key=self._ids.__getitem__)] = np.arange(len(self._ids))

    @property
    def ids(self) -> tuple[str, ...]:
        """The document ids, in build order."""
        return self._ids

    @property
    def k1(self) -> float:
        """BM25's term-frequency saturation parameter."""
        return self._k1

    @property
    def b(self) -> float:
        """BM25's document-length normalisation parameter."""
        return self._b

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        tokenizer: Tokenizer = code_tokens,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25Index:
        """Index `texts[i]` under `ids[i]`; an empty corpus is allowed."""
        _check_corpus(ids, texts, k1, b)
        vocab: dict[str, int] = {}
        docs = [[vocab.setdefault(token, len(vocab)) for token in tokenizer(text)] for text in texts]
        model = None
        if vocab:
            import bm25s  # noqa: PLC0415 (its SciPy took ~0.2 s of every cold query, vector modes included)

            model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="robertson")
            model.index((docs, vocab), create_empty_token=False, show_progress=False)
        return cls(ids, model, tokenizer, k1, b)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The (id, score) of the k best documents with a positive score, best first, equal
        scores in ascending id order."""
        if k < 1:
            raise ConfigError("k must be at least 1")
        if self._model is None:
            return []
        vocab = self._model.vocab_dict
        token_ids = [vocab[token] for token in self._tokenizer(query) if token in vocab]
        if not token_ids:
            return []
        scores = self._model.get_scores_from_ids(token_ids)
        return [(self._ids[i], float(scores[i])) for i in self._best(scores, k)]

    def _best(self, scores: np.ndarray, k: int) -> np.ndarray:
        """Indices of the k highest positive scores, best first, ties by id."""
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            kth = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth]
        order = np.lexsort((self._id_rank[hits], -scores[hits]))
        return hits[order[:k]]

    def save(self, directory: Path) -> None:
        """Write the index to `directory` atomically: it is written beside it, then renamed over
        any index already there, so a crash leaves the old index or the new one, never a mix
        (or, in the instant between the two renames, none)."""
        directory = Path(directory)
        try:
            _check_replaceable(directory)
            directory.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".tmp", dir=directory.parent))
            try:
                self._write(staging)
                _replace(staging, directory)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        except OSError as exc:
            raise StoreError(f"cannot save the BM25 index to {directory}: {exc}") from exc

    def _write(self, directory: Path) -> None:
        """Write bm25s' files and ours into the existing, empty `directory`, and sync them."""
        if self._model is not None:
            self._model.save(directory, show_progress=False)
        meta = {
            "format": _FORMAT,
            "tokenizer": self._spec,
            "k1": self.k1,
            "b": self.b,
            "has_terms": self._model is not None,
            "ids": list(self._ids),
        }
        (directory / _META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        for path in directory.iterdir():
            _fsync(path)
        _fsync(directory)

    @classmethod
    def load(cls, directory: Path, tokenizer: Tokenizer = code_tokens) -> BM25Index:
        """Read an index written by `save`; `tokenizer` must be the one it was built with."""
        directory = Path(directory)
        meta = _read_meta(directory)
        spec = _tokenizer_spec(tokenizer)
        if meta["tokenizer"] != spec:
            raise ConfigError(
                f"the BM25 index at {directory} was built with tokenizer {meta['tokenizer']}, "
                f"not {spec}: rebuild it or load it with its own tokenizer"
            )
        model = _load_model(directory) if meta["has_terms"] else None
        if model is not None and model.scores["num_docs"] != len(meta["ids"]):
            raise StoreError(f"the BM25 index at {directory} is inconsistent: its ids do not match its scores")
        return cls(meta["ids"], model, tokenizer, meta["k1"], meta["b"])


def _check_corpus(ids: Sequence[str], texts: Sequence[str], k1: float, b: float) -> None:
    """Refuse mismatched or duplicate ids and out-of-range parameters."""
    if len(ids) != len(texts):
        raise ConfigError(f"{len(ids)} ids for {len(texts)} texts: there must be one id per text")
    if len(set(ids)) != len(ids):
        raise ConfigError("document ids must be unique")
    if k1 < 0 or not 0 <= b <= 1:
        raise ConfigError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, not k1={k1}, b={b}")


def _tokenizer_spec(tokenizer: Tokenizer) -> dict[str, Any]:
    """What names a tokenizer in a saved index: its qualified name and, for a `functools.partial`,
    the arguments it binds (sets as sorted lists), as plain JSON values."""
    func: Any = tokenizer
    params: dict[str, Any] = {}
    if isinstance(tokenizer, partial):
        func = tokenizer.func
        params = {key: _plain(value) for key, value in sorted(tokenizer.keywords.items())}
        if tokenizer.args:
            params["args"] = [_plain(value) for value in tokenizer.args]
    name = f"{func.__module__}.{getattr(func, '__qualname__', type(func).__qualname__)}"
    try:
        return json.loads(json.dumps({"name": name, "params": params}))
    except TypeError as exc:
        raise ConfigError(f"the arguments of tokenizer {name} cannot be saved: {exc}") from exc


def _plain(value: Any) -> Any:
    """`value` with sets made sorted lists, so that equal sets save alike."""
    return sorted(value) if isinstance(value, (set, frozenset)) else value


def _check_replaceable(directory: Path) -> None:
    """Refuse to replace anything but nothing, an empty directory or a saved index."""
    if not directory.exists():
        return
    if not directory.is_dir() or (any(directory.iterdir()) and not (directory / _META).is_file()):
        raise StoreError(f"refusing to replace {directory}: it is not a BM25 index")


def _replace(staging: Path, directory: Path) -> None:
    """Rename the complete `staging` to `directory`, replacing what is there."""
    if directory.exists():
        old = directory.with_name(f".{directory.name}.{secrets.token_hex(4)}.old")
        directory.rename(old)
        try:
            staging.rename(directory)
        except OSError:
            old.rename(directory)
            raise
        shutil.rmtree(old)
    else:
        staging.rename(directory)
    _fsync(directory.parent)


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_meta(directory: Path) -> dict[str, Any]:
    """Our JSON of a saved index, checked for its format."""
    try:
        meta = json.loads((directory / _META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreNotFoundError(f"no BM25 index at {directory}") from None
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the BM25 index at {directory}: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT or not _META_KEYS <= meta.keys():
        raise StoreError(f"the BM25 index at {directory} has an unknown format")
    return meta


def _load_model(directory: Path) -> bm25s.BM25:
    """bm25s' part of a saved index."""
    import bm25s  # noqa: PLC0415 (as in `build`)

    try:
        return bm25s.BM25.load(directory, show_progress=False)
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read the BM25 index at {directory}: {exc}") from exc
