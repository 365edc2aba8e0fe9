"""A function's name as a ranking signal: BM25 reads it as a field of its own weight, and hybrid search
lifts a function whose name the query spells out ("split a shell command line" names `split`), twice as
much when the query's first word is the name's first.

Both were chosen on bench_search's dev queries (docstring summaries of the packages outside its
held-out third; MiniLM), then measured on the held-out ones (bench/results, README): the name read four
times (its definition's own and three more) against once, then its class and its file's folder and
module (safetensors' `flax.load` for "Loads a safetensors file into flax format") against neither, and a
bonus of 0.2 on fused scores in [0, 1] against none, with the name's words matched after English
stemming (`parse_set` for "Parses a character set.") rather than as written. The second 0.2 for a name the
query leads with was measured the same way (dev: MiniLM's MRR 0.670 -> 0.672, the fast profile's 0.571 ->
0.582; held-out: MiniLM's recall@1 +0.025); given to one-word names alone, it lifted `parse` over
`parse_comment` for "Parses a comment." and cost the fast profile 0.028 of recall@1. A name's word that
begins a query's word counts as named too (ABBREVIATION): held-out, MiniLM's recall@1 +0.025, the fast
profile's recall@10 +0.025 (regex's `parse_set_symm_diff` for "Parses a set symmetric difference ([x~~y]).").
So does a word that is query words run together (COMPOUND_PIECE): pytest's `recursionindex`, `typename`.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from functools import lru_cache
from pathlib import PurePath

import snowballstemmer

from retrieval.tokenize import code_tokens

#: Times a function's short name is read before its text in the BM25 documents of functions, as a
#: field weighed 3 would count in BM25F; 5 scored the same on the dev queries.
NAME_REPEATS = 3
#: What hybrid search adds to a fused score (0 to 1 with score fusion) when the query names the function,
#: and once more when the query's first word is the name's first (`name_leads_query`).
NAME_BONUS = 0.2
#: A name's word of at least this many letters also matches a query word it begins (both stemmed): names
#: abbreviate (`eval` for "Evaluate", `symm_diff` for "symmetric difference", `repl` for "replacement").
#: Chosen on the dev queries over 4 (MiniLM hybrid recall@10 +0.008 [+0.002, +0.016] against +0.002).
ABBREVIATION = 3
#: A name's word also counts as named when it is query words run together, each piece this long at least.
COMPOUND_PIECE = 3


def short_name(qualified: str) -> str:
    """The last part of a qualified name (`Class.method` -> `method`, `f.<locals>.g` -> `g`)."""
    return qualified.rsplit(".", 1)[-1]


def function_document(name: str, source: str, text: str) -> str:
    """A function's BM25 document: its short name NAME_REPEATS times, the names that qualify it (its
    class, an enclosing function), its file's folder and module (`file_words`), then its text."""
    qualifiers = [part for part in name.split(".")[:-1] if part != "<locals>"]
    return "\n".join([short_name(name)] * NAME_REPEATS + qualifiers + file_words(source) + [text])


def file_words(source: str) -> list[str]:
    """The last folder and the module of a file (`.../safetensors/flax.py` -> safetensors, flax); a
    package's `__init__` stands for its folder (`.../_logs/_internal/__init__.py` -> _logs, _internal)."""
    path = PurePath(source)
    parts = [*path.parent.parts, *([path.stem] if path.stem != "__init__" else [])]
    return parts[-2:]


def query_words(query: str) -> frozenset[str]:
    """The stemmed code tokens of a query, which `name_in_query` compares names with."""
    return frozenset(_stem(token) for token in code_tokens(query))


def name_in_query(name: str, words: frozenset[str]) -> bool:
    """Whether every word of a function's short name (its identifier's parts, stemmed) is among the
    query's words, abbreviates one (`_spelled_out`) or runs several together (`_run_together`): `split`,
    `_split` and `split_line` are in "split a shell command line into arguments", `split_args` too
    ("arguments"), `join` is not."""
    raw = _name_words(short_name(name))
    return bool(raw) and all(_spelled_out(_stem(word), words) or _run_together(word, words) for word in raw)


def _run_together(word: str, words: Collection[str]) -> bool:
    """Whether a name's word is query words written as one (`recursionindex` for "the index ... where
    recursion ...", `typename` for "The type name of the exception."): pieces of at least COMPOUND_PIECE
    letters, each spelled out."""
    if len(word) < 2 * COMPOUND_PIECE:
        return False
    openings = _openings(frozenset(words))
    ends = {0}
    for start in range(len(word)):
        # a piece begins as a query word does (stemming keeps a word's first letters): most are no piece
        if start in ends and word[start : start + COMPOUND_PIECE] in openings:
            ends |= {
                end
                for end in range(start + COMPOUND_PIECE, len(word) + 1)
                if end < len(word) or start > 0
                if _spelled_out(_stem(word[start:end]), words)
            }
    return len(word) in ends


@lru_cache(maxsize=256)
def _openings(words: frozenset[str]) -> frozenset[str]:
    """The first COMPOUND_PIECE letters of each word."""
    return frozenset(word[:COMPOUND_PIECE] for word in words)


def _spelled_out(part: str, words: Collection[str]) -> bool:
    """Whether a name's word (stemmed) is one of the words (stemmed) or, of ABBREVIATION letters or more,
    begins one."""
    return part in words or (len(part) >= ABBREVIATION and any(word.startswith(part) for word in words))


def name_leads_query(name: str, query: str) -> bool:
    """Whether the query names a function (`name_in_query`) and leads with its name's first word (both
    stemmed): a description leads with the action, so "split a shell command line into arguments,
    honouring quotes" leads with `split`, `_split` and `split_line` but only names `quote`, and
    "Parses a comment." leads with `parse_comment` as much as with `parse`."""
    parts = _name_words(short_name(name))
    lead = _leading_word(query)
    return bool(parts and lead) and _spelled_out(_stem(parts[0]), (lead,)) and name_in_query(name, query_words(query))


@lru_cache(maxsize=256)
def _leading_word(query: str) -> str:
    """A query's first word, stemmed ("" for a query without words)."""
    tokens = code_tokens(query)
    return _stem(tokens[0]) if tokens else ""


@lru_cache(maxsize=1 << 16)
def _name_words(name: str) -> tuple[str, ...]:
    """An identifier's words in order (`_split_line` -> split, line)."""
    tokens = code_tokens(name)
    return tuple(tokens[1:] or tokens)


#: Snowball's English (Porter 2) stemmer: a well-kept pure-Python package, 15 ms to import. It keeps
#: the word being stemmed on itself, so threads (`pkg serve`) take turns.
_STEMMER = snowballstemmer.stemmer("english")
_STEMMING = threading.Lock()


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    with _STEMMING:
        return str(_STEMMER.stemWord(word))
