"""Near-duplicates of benchmark solutions in a retrieval corpus (contamination checks)."""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from pkg.code.syntax_tree import parse_python
from pkg.errors import BenchmarkError
from retrieval.tokenize import code_tokens

#: Tokens per shingle.
SHINGLE = 5
#: The nodes that may open with a docstring.
_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def near_duplicates(
    corpus_texts: Sequence[str], solutions: Mapping[str, str], threshold: float = 0.8
) -> list[tuple[str, int, float]]:
    """(task_id, corpus index, similarity) for every corpus item whose code is near-identical to
    a benchmark solution: Jaccard similarity of the sets of 5-token shingles at least
    `threshold`, after `normalise` and `retrieval.tokenize.code_tokens`. Ordered by task as
    given, then by similarity, highest first. An inverted index over shingles means only pairs
    sharing a shingle are ever compared.
    """
    if not 0.0 < threshold <= 1.0:
        raise BenchmarkError(f"similarity threshold must be in (0, 1], got {threshold}")
    corpus = [shingles(text) for text in corpus_texts]
    postings: defaultdict[int, list[int]] = defaultdict(list)
    for index, item in enumerate(corpus):
        for shingle in item:
            postings[shingle].append(index)
    found: list[tuple[str, int, float]] = []
    for task_id, code in solutions.items():
        solution = shingles(code)
        shared = Counter(index for shingle in solution for index in postings.get(shingle, ()))
        hits = [
            (task_id, index, common / (len(solution) + len(corpus[index]) - common)) for index, common in shared.items()
        ]
        found += sorted((hit for hit in hits if hit[2] >= threshold), key=lambda hit: (-hit[2], hit[1]))
    return found


def shingles(text: str) -> set[int]:
    """Hashes of the 5-token windows of the normalised code (one window if it is shorter)."""
    tokens = code_tokens(normalise(text))
    if len(tokens) <= SHINGLE:
        return {hash(tuple(tokens))} if tokens else set()
    return {hash(tuple(tokens[i : i + SHINGLE])) for i in range(len(tokens) - SHINGLE + 1)}


def normalise(text: str) -> str:
    """Python code without comments, docstrings and layout (re-printed from its syntax tree);
    text that does not parse as Python is returned unchanged. Names are kept."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError):
        return text
    for node in ast.walk(tree):
        if isinstance(node, _SCOPES) and _has_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    try:
        return ast.unparse(tree)
    except RecursionError:
        return text


def _has_docstring(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
