"""The paper's reranker: among one problem's candidates keep those that parse, then those that run
without raising in the sandbox, then take the one most similar to the query. It never sees the
benchmark's tests. The examples variant (beyond the paper) also keeps only candidates that pass the
examples written in the problem statement, when any do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pkg.code.syntax_check import parses

__all__ = ["Choice", "Evidence", "choose", "cosine_similarities", "parses"]


@dataclass(frozen=True)
class Evidence:
    """What the reranker knows of one candidate; `examples` is None when not checked."""

    parses: bool
    runs: bool
    similarity: float
    examples: bool | None = None


@dataclass(frozen=True)
class Choice:
    """The chosen candidate's index and the filter stage that decided the pool it came from."""

    index: int
    stage: str


def choose(evidence: Sequence[Evidence], use_examples: bool = False) -> Choice:
    """Each filter narrows the pool unless no candidate passes it; the most similar candidate of the
    final pool wins, the earliest on ties. The stage is the last filter that narrowed to survivors
    ("none" when not one candidate parses)."""
    if not evidence:
        raise ValueError("no candidates to choose from")
    filters = [("parses", [e.parses for e in evidence]), ("runs", [e.runs for e in evidence])]
    if use_examples:
        filters.append(("examples", [bool(e.examples) for e in evidence]))
    pool, stage = list(range(len(evidence))), "none"
    for name, keep in filters:
        survivors = [i for i in pool if keep[i]]
        if not survivors:
            break
        pool, stage = survivors, name
    best = max(pool, key=lambda i: (evidence[i].similarity, -i))
    return Choice(best, stage)


def cosine_similarities(query: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Cosine of each row of `candidates` with `query` (the embedders return unit vectors, but
    normalising again keeps this correct for any). Each row is reduced on its own, so equal rows get
    equal cosines and ties go to the earliest: a float32 matrix product rounds some rows differently
    by their place in the matrix (the ninth of nine MiniLM vectors came out one unit in the last place
    higher than its equals, and the paper's reranker took chunk over an identical NoRAG answer)."""
    q = query / (np.linalg.norm(query) or 1.0)
    norms = np.linalg.norm(candidates, axis=1)
    norms[norms == 0] = 1.0
    return (candidates * q).sum(axis=1) / norms
