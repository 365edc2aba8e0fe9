"""A function's name as a ranking signal: its BM25 document and whether a query names it."""

from __future__ import annotations

import pytest

from retrieval.names import NAME_REPEATS, function_document, name_in_query, query_words, short_name
from retrieval.tokenize import code_tokens


def test_a_function_document_leads_with_its_short_name() -> None:
    text = "def split(s):\n    return s.split()\n"
    document = function_document("shlex.split", text)
    assert document == "split\nsplit\nsplit\n" + text
    assert code_tokens(document).count("split") == NAME_REPEATS + 2
    assert short_name("indent.<locals>.prefixed_lines") == "prefixed_lines"


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("split", True),
        ("TextWrapper._split", True),
        ("HtmlDiff._split_line", True),  # every part of the name is in the query
        ("quote", True),  # "quotes" and "quote" stem alike
        ("join", False),
        ("split_command_lines_all", False),  # "all" is not in the query
        ("__init__", False),
        ("", False),  # a name without words names nothing
    ],
)
def test_a_query_names_a_function_when_it_holds_every_word_of_its_name(name: str, named: bool) -> None:
    words = query_words("split a shell command line into arguments, honouring quotes")
    assert name_in_query(name, words) is named


def test_names_match_the_query_after_stemming_and_splitting() -> None:
    assert name_in_query("parse_set", query_words("Parses a character set."))
    assert name_in_query("standardiseName", query_words("Standardises a property or value name."))
    assert not name_in_query("parse_set", query_words("Parses a character."))
