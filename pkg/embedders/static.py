"""The fast profile: a static embedder, one vector per vocabulary token, distilled once from the
packaged MiniLM; a text's vector is the mean of its tokens' vectors.

The recipe is Model2Vec's (Tulkens & van Dongen, 2024): run every vocabulary token alone through the
sentence model, rotate the vectors onto their principal axes, and down-weight frequent tokens with SIF
weights estimated from a Zipf law over the vocabulary's order. No training data, ~20 s on two cores.
Choices made on a development sample (the first 3,002 functions of bench/corpora.py's site-packages
corpus, 300 docstring first lines as known-item queries), recall@1 / @10: the token's own output beats
the mean over `[CLS] token [SEP]` (0.48/0.79 against 0.45/0.74); SIF coefficient 1e-5 gives up a little
at @1 for more at @10 against Model2Vec's 1e-4 (0.50/0.74) and beats 1e-3 (0.37/0.65). MiniLM itself:
0.65/0.93, embedding those functions 140x slower (80 s against 0.57 s).

`pkg tune` on a database of the fast profile then fits a table of its own (`fitted_table`, spec
`static:<key>`): the rows that make each of the corpus's texts (the mean of its tokens' rows) come
nearest to a sentence model's vector of that text, by least squares with a ridge toward the distilled
table (rotated onto the sentence model's axes), as Model2Vec's tokenlearn fits a table to a teacher's
outputs on a corpus."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pkg.embedders.base import Embedder, unit_rows
from pkg.errors import EmbedderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

RECIPE = "static-minilm-v1"  # the file name of the distilled table; a new recipe gets a new name
MAX_TOKENS = 512  # a static model costs nothing per token, so it reads twice MiniLM's 256
SIF_COEFFICIENT = 1e-5  # weight = a / (a + p(token)); see the module's docstring
_DISTIL_BATCH = 1024
FIT_RIDGE = 0.1  # the pull toward the distilled table; see bench_search's fitted fast profile in the README
FIT_STEPS = 200  # conjugate-gradient steps at most


class StaticEmbedder(Embedder):
    """Static token vectors from `folder`/RECIPE.npy, distilled there on first use, or from the table
    `pkg tune` fitted there under a key (`fitted_path`)."""

    def __init__(self, folder: Path, fitted: str | None = None) -> None:
        self.name = "static" if fitted is None else f"static:{fitted}"
        self._folder, self._fitted = folder, fitted
        self._table_path = folder / f"{RECIPE}.npy" if fitted is None else fitted_path(folder, fitted)
        self._table: np.ndarray | None = None
        self._tokenizer: Tokenizer | None = None

    @property
    def dim(self) -> int:
        return int(self._load()[0].shape[1])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        table, tokenizer = self._load()
        vectors = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if encoding.ids:
                vectors[row] = table[encoding.ids].mean(axis=0)
        return unit_rows(vectors)

    def _load(self) -> tuple[np.ndarray, Tokenizer]:
        if self._table is None or self._tokenizer is None:
            from tokenizers import Tokenizer

            from pkg.embedders.sentence_transformer import packaged_minilm_path

            model_dir = packaged_minilm_path()
            if not self._table_path.exists():
                if self._fitted is not None:
                    raise EmbedderError(
                        f"no fitted static table {self._fitted!r} in {self._folder}: run `pkg tune` again"
                    )
                write_atomically(self._table_path, distil(model_dir))
            self._table = np.load(self._table_path)
            tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(MAX_TOKENS)
            self._tokenizer = tokenizer
        return self._table, self._tokenizer


def distil(model_dir: str) -> np.ndarray:
    """One float32 row per token id of the sentence model at model_dir: the model's output at the
    token's position in `[CLS] token [SEP]`, rotated onto the principal axes, scaled by its SIF weight."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbedderError("distilling the static model needs sentence-transformers and torch") from exc
    hf_logging.disable_progress_bar()
    model = SentenceTransformer(model_dir, device="cpu")
    tokenizer = model.tokenizer
    transformer = cast("torch.nn.Module", model[0].auto_model)  # the Hugging Face model under the first module
    ids = torch.arange(tokenizer.vocab_size)
    rows = []
    with torch.inference_mode():
        for start in range(0, len(ids), _DISTIL_BATCH):
            tokens = ids[start : start + _DISTIL_BATCH]
            first, last = (
                torch.full_like(tokens, tokenizer.cls_token_id),
                torch.full_like(tokens, tokenizer.sep_token_id),
            )
            batch = torch.stack([first, tokens, last], dim=1)
            hidden = transformer(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
            rows.append(hidden[:, 1].float().numpy())
    vectors = np.concatenate(rows)
    centred = vectors - vectors.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    # WordPiece vocabularies list tokens roughly by frequency: Zipf's law turns rank into probability
    rank = np.arange(1, len(vectors) + 1, dtype=np.float64)
    probability = (1 / rank) / np.sum(1 / rank)
    weights = SIF_COEFFICIENT / (SIF_COEFFICIENT + probability)
    return np.asarray((centred @ axes.T) * weights[:, None], dtype=np.float32)


def fit_fast_profile(
    folder: Path,
    teacher: str,
    teacher_reads: int | None,
    texts: Sequence[str],
    embed: Callable[[Sequence[str]], np.ndarray],
) -> tuple[str, bool]:
    """The key of the table fitted in `folder` to the teacher's vectors of the texts (`embed` gives them,
    one row per text, each read to teacher_reads tokens at most, None for the model's length), and whether
    it was fitted now: the same teacher, length and texts find it made."""
    key = fitted_key(teacher, teacher_reads, texts)
    path = fitted_path(folder, key)
    if path.exists():
        return key, False
    base = StaticEmbedder(folder)
    table, _ = base._load()
    write_atomically(path, fitted_table(table, token_rows(base, texts), embed(texts)))
    return key, True


def token_rows(embedder: StaticEmbedder, texts: Sequence[str]) -> list[list[int]]:
    """The token ids of each text, as the embedder averages their rows."""
    _, tokenizer = embedder._load()
    return [list(encoding.ids) for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def fitted_path(folder: Path, key: str) -> Path:
    """Where the table fitted under a key lives."""
    return folder / f"static-{key}.npy"


def fitted_key(teacher: str, teacher_reads: int | None, texts: Sequence[str]) -> str:
    """The key of the table fitted to the teacher's vectors of the texts, with this module's recipe."""
    digest = hashlib.sha256(json.dumps([RECIPE, FIT_RIDGE, FIT_STEPS, teacher, teacher_reads]).encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()[:16]


def fitted_table(
    base: np.ndarray, rows: Sequence[Sequence[int]], targets: np.ndarray, ridge: float = FIT_RIDGE
) -> np.ndarray:
    """The table T nearest the base whose mean rows fit the targets: it minimises
    ||A T - Y||^2 + ridge ||T - P||^2, A holding each text's token shares, Y the targets (unit rows) and
    P the base table turned and scaled onto the targets' space (orthogonal Procrustes on A·base against Y),
    so that a token no text holds keeps its distilled row in the new space. Solved by conjugate gradients
    on the normal equations, all columns at once."""
    from scipy.sparse import csr_matrix  # noqa: PLC0415  # only `pkg tune` fits a table

    if not rows or len(rows) != len(targets):
        raise EmbedderError(f"fitting a static table needs one target per text ({len(rows)} texts, {len(targets)})")
    shares = _token_shares(rows, base.shape[0], csr_matrix)
    wanted = np.asarray(targets, dtype=np.float64)
    start = np.asarray(base, dtype=np.float64)
    mapped = shares @ start
    left, singular, right = np.linalg.svd(mapped.T @ wanted)
    prior = (singular.sum() / max(float((mapped * mapped).sum()), 1e-12)) * (start @ (left @ right))
    transposed = shares.T.tocsr()

    def normal(table: np.ndarray) -> np.ndarray:
        return transposed @ (shares @ table) + ridge * table

    table = prior.copy()
    residual = transposed @ wanted + ridge * prior - normal(table)
    direction = residual.copy()
    size = (residual * residual).sum(axis=0)
    for _ in range(FIT_STEPS):
        if float(size.max()) < 1e-12:
            break
        image = normal(direction)
        step = size / np.maximum((direction * image).sum(axis=0), 1e-300)
        table += direction * step
        residual -= image * step
        new_size = (residual * residual).sum(axis=0)
        direction = residual + direction * (new_size / np.maximum(size, 1e-300))
        size = new_size
    return np.asarray(table, dtype=np.float32)


def _token_shares(rows: Sequence[Sequence[int]], vocabulary: int, csr_matrix: type) -> Any:
    """The sparse matrix of each text's tokens, each counted as its share of the text's tokens."""
    indptr, indices, shares = [0], [], []
    for ids in rows:
        tokens, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
        indices.append(tokens)
        shares.append(counts / max(len(ids), 1))
        indptr.append(indptr[-1] + len(tokens))
    return csr_matrix((np.concatenate(shares), np.concatenate(indices), indptr), shape=(len(rows), vocabulary))


def write_atomically(path: Path, table: np.ndarray) -> None:
    """Save the table so that a reader never sees half of it (another process may distil at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial.npy")
    np.save(partial, table)
    os.replace(partial, path)
