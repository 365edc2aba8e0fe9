"""Tokenizers for lexical retrieval: a pluggable protocol and a code-aware default.

`code_tokens` reads text as code. A *word* is an identifier (a letter or `_`, then letters, digits
or `_`; `[A-Za-z_][A-Za-z0-9_]*` for ASCII, and letters of any script count as letters) or a
number (a digit, then letters, digits or `_`: `42`, `0xFF`, `1e9`). Everything else, punctuation
and operators, separates words and is dropped.

Each identifier yields its whole lowercased form, then its parts, lowercased: it is split at
underscores, then at case changes. A part is a run of capitals not followed by a lowercase letter
(an acronym), or at most one capital followed by lowercase letters, or a run of digits with the
lowercase letters after it; digits right after letters stay with them. So `HTTPServerError` gives
`httpservererror http server error`, `parse_json2Dict` gives `parse_json2dict parse json2 dict`,
`__init__` gives `__init__ init`, and `parse` gives just `parse`: the parts are left out when they
are only the whole form again. Case changes are ASCII ones; other letters count as lowercase, so
an identifier in a caseless script stays whole. Numbers are kept whole and never split. There is
no stemming and, by default, no stop word.
"""

from __future__ import annotations

import re
from collections.abc import Set
from functools import lru_cache
from typing import Protocol

__all__ = ["Tokenizer", "code_tokens", "estimate_tokens"]


class Tokenizer(Protocol):
    """Any callable that turns a text into its tokens, in order (repeats count)."""

    def __call__(self, text: str, /) -> list[str]: ...


#: A word: an identifier, or a number (a decimal digit, then word characters).
_WORD = re.compile(r"[^\W\d]\w*|\d\w*")
#: Any letter that is not an ASCII capital, i.e. what counts as lowercase when splitting.
_LOWER = r"[^\W\dA-Z_]"
#: One part of an underscore-free piece of an identifier: acronym, word, or digits with a suffix.
_PART = re.compile(rf"[A-Z]+(?!{_LOWER})\d*|[A-Z]?{_LOWER}+\d*|\d+{_LOWER}*")


def code_tokens(text: str, stop_words: Set[str] = frozenset()) -> list[str]:
    """Tokens of `text` as described in the module docstring, minus any in `stop_words`
    (given in lowercase)."""
    tokens = [token for word in _WORD.findall(text) for token in _word_tokens(word)]
    if stop_words:
        return [token for token in tokens if token not in stop_words]
    return tokens


@lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    """The whole lowercased word, then its parts unless they are just the whole again."""
    whole = word.lower()
    if word[0].isdecimal():
        return (whole,)
    parts = [part.lower() for part in _PART.findall(word)]
    if parts == [whole]:
        return (whole,)
    return (whole, *parts)


_WORDS = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens of a text for no model in particular: its words and punctuation marks (the budgets of
    context blocks, expansions and the MCP tools; a model's own count is `Generator.count_tokens`)."""
    return len(_WORDS.findall(text))
