"""retrieval.invented: the names a draft invents, read against real code."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from retrieval.invented import attributes_of, bound_names, identifiers, mentioned, unknown

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: What `mentioned` reads that the tokenizer does not: the prefixes of string literals.
STRING_PREFIXES = {"r", "b", "f", "u", "rb", "br", "fr", "rf", "R", "B", "F", "U", "Rb", "bR", "RB", "BR"}


@pytest.mark.parametrize("module", ["argparse.py", "email/message.py", "json/decoder.py", "dataclasses.py"])
def test_the_pattern_reads_the_names_the_tokenizer_reads(module: str) -> None:
    """Parity with Python's tokenizer on real modules (strings with quotes, f-strings, comments, numbers
    such as 0o777 and 1e6): the same names, but for string prefixes."""
    text = (STDLIB / module).read_text(encoding="utf-8")
    tokenized, read = set(identifiers(text)), mentioned(text)
    assert tokenized <= read
    assert read - tokenized <= STRING_PREFIXES
    assert len(tokenized) > 90


def test_words_in_strings_comments_and_numbers_are_no_names() -> None:
    code = "x = 'a lone word' + \"another\"  # zz_comment\ny = 0o777 + 1e6 + 0xFF\nz = '''many\nlines'''\n"
    assert mentioned(code) == {"x", "y", "z"}


def test_a_body_cut_short_binds_what_its_parsing_part_binds() -> None:
    body = "for k, v in items:\n    total = k\n    with open(v) as handle:\n        call(key=handle, other=\n"
    assert bound_names(body) == {"k", "v", "total", "handle"}  # the cut call parses in no way: its names unread
    assert "key" in bound_names(body.replace(", other=\n", ")\n"))  # a keyword argument's name is the callee's
    assert bound_names("import os.path as p\nfrom x import y\nclass C: pass\n") == {"p", "y", "C"}


def test_unknown_leaves_out_builtins_bindings_and_what_is_known() -> None:
    draft = "result = self.zz_helper(len(items)).strip()\nreturn zz_known(result)\n"
    assert unknown(draft, {"items"}) == ["zz_helper", "zz_known"]
    assert unknown(draft, {"items", "zz_known"}) == ["zz_helper"]


def test_attributes_are_read_from_the_heads_asked_for() -> None:
    body = "x = json.dumps(a.b.c)\nreturn os.path.join(x, json.sep)\n"
    assert attributes_of(body, {"json", "os"}) == {"dumps", "sep", "path", "join"}
