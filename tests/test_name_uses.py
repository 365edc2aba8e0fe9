"""The names a Python tree uses (ingest.name_uses), and the build recording them for definitions context."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from ingest.name_uses import NameUse, decoded, encoded, python_uses
from pkg.embedders import CachedEmbedder
from pkg.graph import Label
from pkg.knowledge_base import KnowledgeBase
from pkg.schema import FileNode
from tests.conftest import FIXTURES
from tests.test_incremental import Opener, open_store  # noqa: F401 (open_store: a fixture)

CODE = """import os.path, json as j
from shop import *


@register(os.sep)
class Report(Base):
    def render(self, rows):
        total = sum(r.amount for r in rows)
        super().render(j.dumps(total), self.width)
        rows[0].price.round()
        return os.path.join(self.root, "out")
"""


def test_each_chain_is_one_use_and_an_import_a_binding() -> None:
    """`os.path.join` is one use, not three; a store (`total = `), a call's receiver that is no name
    (`rows[0].price`) and a star import give none; the order is the syntax tree's (a class's decorators after
    its body)."""
    assert python_uses(ast.parse(CODE)) == [
        NameUse("os", 1, True),
        NameUse("j", 1, True),
        NameUse("Base", 6, False),
        NameUse("sum", 8, False),
        NameUse("r.amount", 8, False),
        NameUse("rows", 8, False),
        NameUse("super().render", 9, False),
        NameUse("j.dumps", 9, False),
        NameUse("total", 9, False),
        NameUse("self.width", 9, False),
        NameUse("rows", 10, False),
        NameUse("os.path.join", 11, False),
        NameUse("self.root", 11, False),
        NameUse("register", 5, False),
        NameUse("os.sep", 5, False),
    ]


def test_a_window_keeps_the_statements_reaching_into_it() -> None:
    """Blank lines hold nothing; a window on line 10 holds the class (its bases and decorator), the method,
    and of the method's body only line 10's statement; the decorator's line is the class's first."""
    tree = ast.parse(CODE)
    assert python_uses(tree, (3, 4)) == []
    assert [u.dotted for u in python_uses(tree, (10, 10))] == ["Base", "rows", "register", "os.sep"]
    assert [u.dotted for u in python_uses(tree, (5, 5))] == ["Base", "register", "os.sep"]


def test_the_recorded_form_reads_back_the_same() -> None:
    uses = python_uses(ast.parse(CODE))
    text = encoded(uses)
    rows = json.loads(text)
    assert decoded(text) == uses
    assert rows[0] == ["os", 1, 1] and rows[2] == ["Base", 6]


def test_a_build_records_each_python_files_uses(
    open_store: Opener,  # noqa: F811
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """Each FILE of a Python file keeps the uses of its whole tree, apart from the refs the linker reads;
    one `ast` rejects keeps none; both stores give them back."""
    shop = FIXTURES / "context" / "shop"
    broken = tmp_path / "src" / "broken.py"
    broken.parent.mkdir()
    broken.write_text("def f(:\n    return g()\n")
    kb = KnowledgeBase(tmp_path / "kb", open_store("uses"), module_embedder)
    kb.build([shop, broken.parent], parts=["functions"])
    files = {Path(f.source).name: f for f in kb.store.label_records(Label.FILE) if isinstance(f, FileNode)}
    stored = files["pricing.py"].uses
    assert stored is not None
    assert decoded(stored) == python_uses(ast.parse((shop / "pricing.py").read_text()))
    assert ["u.round_money", 9] in json.loads(stored) and "uses" not in json.loads(files["pricing.py"].refs)
    assert files["broken.py"].uses is None
