"""Discovery of files and JSONL rows: what is read, what is skipped and why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest.sources import Skipped, discover, read_items
from pkg.config import MAX_FILE_BYTES
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


def _skips(skipped: list[Skipped], root: Path) -> list[tuple[str, str]]:
    return [(str(Path(s.path).relative_to(root)), s.reason) for s in skipped]


def test_discover_walks_recursively_and_lists_every_skip(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "venv").mkdir()  # a package named venv, like the standard library's: no pyvenv.cfg
    (tmp_path / "venv" / "__init__.py").write_text("def create(env_dir): pass\n")
    (tmp_path / "miniconda" / "conda-meta").mkdir(parents=True)
    (tmp_path / "miniconda" / "site.py").write_text("def conda(): pass\n")
    (tmp_path / ".venv").mkdir()  # hidden, and not an environment
    (tmp_path / "node_modules").mkdir()
    files, skipped = discover([tmp_path])
    assert [str(p.relative_to(tmp_path)) for p in files] == [
        "pkg/a.py",
        "pkg/blob.py",
        "pkg/latin.py",
        "pkg/sub/b.py",
        "venv/__init__.py",
    ]
    assert _skips(skipped, tmp_path) == [
        (".git", "version-control data"),
        (".hidden.py", "hidden"),
        (".venv", "hidden"),
        ("__pycache__", "bytecode cache"),
        ("env", "virtual environment (holds pyvenv.cfg)"),
        ("miniconda", "conda environment (holds conda-meta/)"),
        ("node_modules", "installed npm packages"),
        ("pkg/notes.txt", "unsupported file type .txt"),
        ("pkg/sub/loop", f"already read: same directory as {(tmp_path / 'pkg').resolve()}"),
    ]


def test_broken_symlinks_are_listed_and_the_walk_goes_on(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("def ok(): pass\n")
    os.symlink("self_loop.py", tmp_path / "self_loop.py")
    os.symlink("b.py", tmp_path / "a.py")
    os.symlink("a.py", tmp_path / "b.py")
    os.symlink("gone.py", tmp_path / "dangling.py")
    os.symlink("real.py", tmp_path / "twin.py")
    os.mkfifo(tmp_path / "pipe.py")  # reading it would block
    files, skipped = discover([tmp_path])
    assert files == [(tmp_path / "real.py").resolve()]
    assert _skips(skipped, tmp_path) == [
        ("a.py", "symlink loop"),
        ("b.py", "symlink loop"),
        ("dangling.py", "dangling symlink"),
        ("pipe.py", "not a regular file"),
        ("self_loop.py", "symlink loop"),
        ("twin.py", f"already read: same file as {(tmp_path / 'real.py').resolve()}"),
    ]
    with pytest.raises(CorpusError, match="^symlink loop: .*self_loop.py$"):
        discover([tmp_path / "self_loop.py"])


def test_files_over_the_size_cap_are_listed_and_the_default_takes_10_mb(tmp_path: Path) -> None:
    ten_mb = "\n".join(f"def f{i}(): return {i}" for i in range(500_000))[: 10 * 1024 * 1024]
    (tmp_path / "big.py").write_text(ten_mb[: ten_mb.rindex("\n")] + "\n")
    (tmp_path / "small.py").write_text("def s(): pass\n")
    size = (tmp_path / "big.py").stat().st_size
    assert size > 10_000_000 and size <= MAX_FILE_BYTES
    assert discover([tmp_path])[0] == [(tmp_path / "big.py").resolve(), (tmp_path / "small.py").resolve()]
    files, skipped = discover([tmp_path], max_file_bytes=size - 1)
    assert files == [(tmp_path / "small.py").resolve()]
    assert _skips(skipped, tmp_path) == [
        ("big.py", f"{size:,} bytes, over the size cap of {size - 1:,} (--max-file-size)")
    ]


def test_binary_and_encodings(tmp_path: Path) -> None:
    _tree(tmp_path)
    items, skipped = read_items((tmp_path / "pkg" / "blob.py").resolve())
    assert items == [] and skipped[0].reason == "binary file"
    items, skipped = read_items((tmp_path / "pkg" / "latin.py").resolve())
    assert skipped == [] and "return 'é'\n" in items[0].text and "\r" not in items[0].text
    assert items[0].row is None and [u.text for u in items[0].units] == [items[0].text]


def test_explicit_files_and_duplicates(tmp_path: Path) -> None:
    _tree(tmp_path)
    files, skipped = discover([tmp_path / ".hidden.py", tmp_path / "pkg", tmp_path / "pkg" / "a.py"])
    assert sorted(p.name for p in files) == [".hidden.py", "a.py", "b.py", "blob.py", "latin.py"]
    assert _skips(skipped, tmp_path)[-1] == (
        "pkg/a.py",
        f"already read: same file as {(tmp_path / 'pkg' / 'a.py').resolve()}",
    )


def test_missing_path_is_a_corpus_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        discover([tmp_path / "nope"])


def test_jsonl_rows_every_fence_counts(tmp_path: Path) -> None:
    rows = [
        {"instruction": "Add numbers", "input": "", "output": "```python\ndef add(a, b):\n    return a + b\n```"},
        {
            "instruction": "Fix:\n```py\ndef broken(x):\n    return x\n```",
            "input": "",
            "output": "Here:\n```python\ndef one():\n    pass\n\ndef two():\n    pass\n```"
            "\nand\n```\ndef three():\n    pass\n```",
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


def _databases(root: Path) -> None:
    """A folder of code beside PKG databases of every vintage: marked, and older ones known by their files."""
    (root / "code.py").write_text("def kept(): pass\n")
    for name, holds in (
        ("marked", "PKG-DATABASE"),
        ("embedded", "pkg.sqlite"),
        ("neo4j/bm25/func", "pkg-bm25.json"),
    ):
        (root / name).mkdir(parents=True)
        (root / name / holds).write_text("{}")
        (root / name / "index.json").write_text('{"read": "never"}')  # what a build indexed before
    (root / "own").mkdir()
    (root / "own" / "vocab.index.json").write_text('{"split_command": 180}')


def test_discover_never_reads_a_pkg_database(tmp_path: Path) -> None:
    _databases(tmp_path)
    files, skipped = discover([tmp_path], own_db=tmp_path / "own")
    assert files == [(tmp_path / "code.py").resolve()] and dict(_skips(skipped, tmp_path)) == {
        "embedded": "PKG database (holds pkg.sqlite)",
        "marked": "PKG database (holds PKG-DATABASE)",
        "neo4j": "PKG database (holds BM25 indexes in bm25/)",
        "own": "PKG database (this build's --db)",
    }


def test_a_path_in_a_database_is_skipped_and_only_databases_raise(tmp_path: Path) -> None:
    _databases(tmp_path)
    files, skipped = discover([tmp_path / "code.py", tmp_path / "neo4j" / "bm25"])
    assert files == [(tmp_path / "code.py").resolve()]
    inside = f"inside {tmp_path / 'neo4j'}, a PKG database (holds BM25 indexes in bm25/)"
    assert _skips(skipped, tmp_path) == [("neo4j/bm25", inside)]
    with pytest.raises(CorpusError) as raised:
        discover([tmp_path / "marked", tmp_path / "own" / "vocab.index.json"], own_db=tmp_path / "own")
    assert str(raised.value) == (
        f"{tmp_path / 'marked'}: PKG database (holds PKG-DATABASE); {tmp_path / 'own' / 'vocab.index.json'}: "
        f"inside {tmp_path / 'own'}, a PKG database (this build's --db); a build never reads a PKG database"
    )
