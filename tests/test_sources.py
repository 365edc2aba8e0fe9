"""Discovery of files and JSONL rows: what is read, what is skipped and why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest.sources import Skipped, discover, read_items
from pkg.errors import CorpusError


def _tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def a():\n    return 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("def b():\n    return 2\n")
    (root / "pkg" / "notes.txt").write_text("hello")
    (root / "pkg" / "blob.py").write_bytes(b"\x00\x01binary")
    (root / "pkg" / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\ndef c():\n    return '\xe9'\r\n")
    (root / ".git").mkdir()
    (root / ".git" / "hook.py").write_text("def hidden(): pass\n")
    (root / ".hidden.py").write_text("def hidden(): pass\n")
    (root / "env").mkdir()
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "env" / "lib.py").write_text("def venv(): pass\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.py").write_text("def cached(): pass\n")
    os.symlink(root / "pkg", root / "pkg" / "sub" / "loop")  # a symlink loop


def test_discover_walks_recursively_and_skips_what_it_should(tmp_path: Path) -> None:
    _tree(tmp_path)
    files, skipped = discover([tmp_path])
    names = sorted(p.name for p in files)
    assert names == ["a.py", "b.py", "blob.py", "latin.py"]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [("notes.txt", "unsupported file type .txt")]


def test_binary_and_encodings(tmp_path: Path) -> None:
    _tree(tmp_path)
    items, skipped = read_items((tmp_path / "pkg" / "blob.py").resolve())
    assert items == [] and skipped[0].reason == "binary file"
    items, skipped = read_items((tmp_path / "pkg" / "latin.py").resolve())
    assert skipped == [] and "return 'é'\n" in items[0].text and "\r" not in items[0].text
    assert items[0].row is None and [u.text for u in items[0].units] == [items[0].text]


def test_explicit_files_and_duplicates(tmp_path: Path) -> None:
    _tree(tmp_path)
    files, _ = discover([tmp_path / ".hidden.py", tmp_path / "pkg", tmp_path / "pkg" / "a.py"])
    assert sorted(p.name for p in files) == [".hidden.py", "a.py", "b.py", "blob.py", "latin.py"]


def test_missing_path_is_a_corpus_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        discover([tmp_path / "nope"])


def test_jsonl_rows_every_fence_counts(tmp_path: Path) -> None:
    rows = [
        {"instruction": "Add numbers", "input": "", "output": "```python\ndef add(a, b):\n    return a + b\n```"},
        {
            "instruction": "Fix:\n```py\ndef broken(x):\n    return x\n```",
            "input": "",
            "output": "Here:\n```python\ndef one():\n    pass\n\ndef two():\n    pass\n```\nand\n```\ndef three():\n    pass\n```",
        },
        {"instruction": "no code", "input": "", "output": "just text"},
    ]
    path = tmp_path / "alpaca.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n[1, 2]\n")
    items, skipped = read_items(path)
    assert [item.row for item in items] == [1, 2, 3]
    assert items[0].text == "Add numbers\n\n```python\ndef add(a, b):\n    return a + b\n```"
    assert items[2].text == "no code\n\njust text" and items[2].units == ()
    units = [u for item in items for u in item.units]
    assert [(u.row, u.fence) for u in units] == [(1, 0), (2, 0), (2, 1), (2, 2)]
    assert "def two" in units[2].text and "def three" in units[3].text
    assert [s.reason.split(":")[0] for s in skipped] == ["invalid JSON", "row is not a JSON object"]
    assert skipped[0].path.endswith("#row4")


def test_json_no_store_can_keep_is_skipped_with_its_reason(tmp_path: Path) -> None:
    lone, pair = '{"output": "\\ud83d alone"}', '{"output": "\\ud83d\\ude00 paired"}'
    huge, deep = '{"n": ' + "9" * 5000 + "}", '{"a": ' * 2000 + "1" + "}" * 2000
    (tmp_path / "rows.jsonl").write_text("\n".join([lone, pair, huge, deep]) + "\n")
    items, skipped = read_items(tmp_path / "rows.jsonl")
    assert [item.row for item in items] == [2] and items[0].text == "\U0001f600 paired"
    assert [(s.path.rsplit("#", 1)[1], s.reason) for s in skipped] == [
        ("row1", "unusable JSON: a \\u escape encodes half of a surrogate pair"),
        ("row3", "unusable JSON: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"),
        ("row4", "unusable JSON: nested too deeply"),
    ]
    (tmp_path / "doc.json").write_text(lone)
    assert read_items(tmp_path / "doc.json") == ([], [Skipped(str(tmp_path / "doc.json"), skipped[0].reason)])
