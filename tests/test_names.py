"""A function's name as a ranking signal: its BM25 document and whether a query names it."""

from __future__ import annotations

import pytest

from retrieval.names import (
    NAME_REPEATS,
    file_words,
    function_document,
    name_in_query,
    name_leads_query,
    query_words,
    short_name,
)
from retrieval.tokenize import code_tokens


def test_a_function_document_leads_with_its_short_name_then_its_class_and_file() -> None:
    text = "def read_token(self):\n    return self.token\n"
    document = function_document("shlex.read_token", "/usr/lib/python3.11/shlex.py", text)
    assert document == "read_token\nread_token\nread_token\nshlex\npython3.11\nshlex\n" + text
    assert code_tokens(document).count("read_token") == NAME_REPEATS + 1
    nested = function_document("Outer.run.<locals>.step", "src/pkg/jobs/__init__.py", "def step(): ...")
    assert nested.split("\n")[3:-1] == ["Outer", "run", "pkg", "jobs"]
    assert short_name("indent.<locals>.prefixed_lines") == "prefixed_lines"


def test_a_files_words_are_its_folder_and_module() -> None:
    assert file_words("/site-packages/safetensors/flax.py") == ["safetensors", "flax"]
    assert file_words("/site-packages/opentelemetry/_logs/_internal/__init__.py") == ["_logs", "_internal"]
    assert file_words("main.go") == ["main"]


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("split", True),
        ("TextWrapper._split", True),
        ("HtmlDiff._split_line", True),  # every part of the name is in the query
        ("quote", True),  # "quotes" and "quote" stem alike
        ("join", False),
        ("split_command_lines_all", False),  # "all" is not in the query
        ("split_args", True),  # "args" abbreviates "arguments"
        ("split_cmd", False),  # "cmd" begins no word of the query
        ("__init__", False),
        ("", False),  # a name without words names nothing
    ],
)
def test_a_query_names_a_function_when_it_holds_every_word_of_its_name(name: str, named: bool) -> None:
    words = query_words("split a shell command line into arguments, honouring quotes")
    assert name_in_query(name, words) is named


@pytest.mark.parametrize(
    ("name", "leads"),
    [
        ("split", True),
        ("TextWrapper._split", True),  # its short name
        ("HtmlDiff._split_line", True),  # named by the query, and its first word leads it
        ("quote", False),  # named by the query, but not its first word
        ("split_all", False),  # its first word leads the query, but "all" is not in it
        ("line_split", False),
        ("", False),
    ],
)
def test_a_query_leads_with_a_name_it_names_when_its_first_word_is_the_names_first(name: str, leads: bool) -> None:
    assert name_leads_query(name, "split a shell command line into arguments, honouring quotes") is leads


def test_a_leading_name_is_compared_after_stemming() -> None:
    assert name_leads_query("Parser.parse", "Parses a character set.")
    assert name_leads_query("parse_set", "Parses a character set.")
    assert not name_leads_query("parse", "")
    assert name_leads_query("parse", "... parse it")  # punctuation is no word
    assert not name_leads_query("parse", "Return what parse gives")


def test_names_match_the_query_after_stemming_and_splitting() -> None:
    assert name_in_query("parse_set", query_words("Parses a character set."))
    assert name_in_query("standardiseName", query_words("Standardises a property or value name."))
    assert not name_in_query("parse_set", query_words("Parses a character."))


def test_a_names_word_of_three_letters_or_more_names_the_query_word_it_begins() -> None:
    assert name_in_query("parse_set_symm_diff", query_words("Parses a set symmetric difference ([x~~y])."))
    assert name_in_query("compile_repl_group", query_words("Compiles a replacement template group reference."))
    assert name_leads_query("Frame.eval", "Evaluate 'code' in the frame.")
    assert name_in_query("info", query_words("Return certain machine-readable information."))
    assert not name_in_query("re_info", query_words("Return certain machine-readable information."))  # too short
    assert not name_in_query("diff", query_words("Undifferentiated cells"))  # a word it is inside, not begins
    assert not name_in_query("parse_setup", query_words("Parses a set."))  # the query's word is the shorter


def test_a_names_word_may_be_query_words_run_together() -> None:
    recursion = query_words("Return the index of the frame where recursion originates, None if no recursion occurred.")
    assert name_in_query("Traceback.recursionindex", recursion)
    assert name_in_query("ExceptionInfo.typename", query_words("The type name of the exception."))
    assert name_in_query("Cache.iterkeys", query_words("Iterate Cache keys in database sort order."))  # iter: begins
    assert name_in_query("splititer", query_words("Return an iterator yielding the parts of a split string."))
    assert not name_in_query("findall", query_words("Return a list of all matches in the string."))  # no "find"
    assert not name_in_query("indexof", recursion)  # "of" is shorter than a piece may be
    assert name_in_query("Cache.keysiter", query_words("Iterate Cache keys"))  # keys (stemmed), iter
    assert not name_in_query("Cache.keysort", query_words("Iterate Cache keys"))  # "sort" is no word of it
