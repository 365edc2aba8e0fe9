"""Definitions context (`KnowledgeBase.context_at`, `pkg context`, the `defs` modes) on a real build of
tests/fixtures/context (a small package whose files import each other), on both stores."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pkg.code.stubs import python_stubs
from pkg.embedders import CachedEmbedder
from pkg.errors import ConfigError
from pkg.knowledge_base import KnowledgeBase
from retrieval import definitions
from retrieval.definitions import (
    Definition,
    RankedDefinitions,
    definitions_context,
    ranked_definitions,
    read_code,
    render,
)
from retrieval.prompt import TRUNCATED
from retrieval.search import Options
from retrieval.tokenize import estimate_tokens
from tests.conftest import FIXTURES, run_cli
from tests.test_incremental import Opener, open_store  # noqa: F401 (open_store: a fixture)

SHOP = FIXTURES / "context" / "shop"
ROUND_MONEY = 'def round_money(amount: float) -> float:\n    """Round an amount to whole cents."""'


def _at(name: str) -> str:
    return str((SHOP / name).resolve())


@pytest.fixture()
def kb(open_store: Opener, module_embedder: CachedEmbedder, tmp_path: Path) -> KnowledgeBase:  # noqa: F811
    built = KnowledgeBase(tmp_path / "kb", open_store("context"), module_embedder)
    built.build([SHOP.parent], parts=["functions"])
    return built


def _named(definitions: list[Definition]) -> dict[str, Definition]:
    return {d.name: d for d in definitions}


def test_a_function_gets_the_definitions_it_imports(kb: KnowledgeBase) -> None:
    """checkout (pricing.py:6-9) uses Cart (an annotation), TAX_RATE (re-exported by the package's
    __init__) and u.round_money (`import shop.util as u`)."""
    found = kb.context_at(_at("pricing.py"), 9, names="near")
    assert found.gated is None
    named = _named(found.definitions)
    # Record, Cart's base, is no name of checkout's: PageRank reaches it from Cart, below what the code uses;
    # shop.util, the module `u` stands for, gets an outline of what else it offers, below what u. names
    assert set(named) == {"Cart", "TAX_RATE", "round_money", "Record", "shop.util"}
    assert named["Record"].score < min(d.score for d in found.definitions if d.name not in ("Record", "shop.util"))
    assert named["shop.util"].score < named["round_money"].score
    assert named["shop.util"].stub == "def unused_helper(x): ..."  # round_money: its own stub, not twice
    assert (named["round_money"].path, named["round_money"].lines, named["round_money"].kind) == (
        _at("util.py"),
        (1, 3),
        "function",
    )
    assert named["round_money"].stub == ROUND_MONEY
    assert (named["TAX_RATE"].stub, named["TAX_RATE"].path, named["TAX_RATE"].lines) == (
        "TAX_RATE = 0.2",
        _at("models.py"),
        (6, 6),
    )
    cart = named["Cart"].stub
    assert cart.startswith('class Cart(Record):\n    """Items a customer is about to buy."""')
    for shown in ("self.owner = owner", "def add(self, item: Item) -> None:", "def total(self) -> float:"):
        assert shown in cart
    assert "def __init__(self, owner: str) -> None:" in cart
    assert "_audit" not in cart and "append" not in cart and "return" not in cart  # no bodies, no private methods
    assert found.used == ["Cart", "TAX_RATE", "u.round_money"]
    assert found.text.startswith("# shop/")
    assert found.text == render(found.definitions, _at("pricing.py"))
    assert "# shop/util.py\n" + ROUND_MONEY in found.text


def test_self_calls_reach_the_base_class_in_another_file(kb: KnowledgeBase) -> None:
    found = kb.context_at(_at("report.py"), 12)
    [record] = found.definitions
    assert (record.name, record.kind, record.path) == ("Record", "class", _at("base.py"))
    assert 'kind = "record"' in record.stub and "def save(self, path: str) -> None:" in record.stub
    assert "self.save" in record.uses and "json.dump" not in record.stub


def test_the_gate_gives_nothing_to_code_that_needs_nothing_from_elsewhere(kb: KnowledgeBase) -> None:
    # double(): a comprehension over its parameter; the rest of the file uses imports (names="all", the
    # default, takes them), but the gate reads the code near the line
    gated = kb.context_at(_at("pricing.py"), 14)
    assert (gated.definitions, gated.text, gated.used) == ([], "", [])
    assert gated.gated and "own file" in gated.gated
    assert kb.context_at(_at("pricing.py"), 14, names="near", gate="always").definitions == []
    everything = kb.context_at(_at("pricing.py"), 14, names="all", gate="always")
    assert {d.name for d in everything.definitions} == {"Cart", "TAX_RATE", "round_money", "Record", "shop.util"}
    outside = kb.context_at(_at("x.py"), 2, "import os\nos.getcwd()\n")
    assert outside.gated and "none of the 1 names" in outside.gated  # os.getcwd; the import binds, it is no use


def test_code_being_written_need_not_be_indexed_nor_parse(kb: KnowledgeBase) -> None:
    """A new file of the package, its last line half written: its relative import still resolves."""
    code = "from .models import Item\n\n\ndef make(name):\n    item = Item(name, 1.0)\n    return item.\n"
    found = kb.context_at(str(SHOP / "new.py"), 6, code)
    [item] = found.definitions
    assert item.name == "Item"
    assert item.stub.startswith(
        '@dataclass\nclass Item:\n    """One product in a cart."""\n    name: str\n    price: float'
    )
    assert "def cost(self) -> float:" in item.stub


def test_a_tight_budget_trims_a_class_before_dropping_it(kb: KnowledgeBase) -> None:
    code = "from shop.models import Cart\n\n\ndef fill(cart: Cart):\n    cart.add(None)\n"
    full = _named(kb.context_at(str(SHOP / "fill.py"), 5, code).definitions)["Cart"].stub
    tight = kb.context_at(str(SHOP / "fill.py"), 5, code, budget=estimate_tokens(full))  # the header no longer fits
    assert 0 < tight.tokens <= estimate_tokens(full)
    trimmed = _named(tight.definitions)["Cart"].stub
    assert trimmed != full and trimmed.startswith("class Cart(Record):")
    assert "Record" in _named(tight.definitions)  # Cart's base, at its least detail, rather than Cart in full
    outline = 'class Cart(Record):\n    """Items a customer is about to buy."""\n    ...'
    just = kb.context_at(str(SHOP / "fill.py"), 5, code, budget=estimate_tokens(f"# shop/models.py\n{outline}") + 2)
    assert [d.stub for d in just.definitions] == [outline]  # the last level: the header and docstring line
    nothing = kb.context_at(str(SHOP / "fill.py"), 5, code, budget=1)
    assert nothing.definitions == [] and "fits the budget of 1 tokens" in (nothing.gated or "")
    assert kb.context_at(str(SHOP / "fill.py"), 5, code, budget=1, gate="always").gated is None


def test_definitions_ranked_once_fit_each_budget_as_a_whole_call_does(kb: KnowledgeBase) -> None:
    """The second round ranks once and fits twice (the full budget, then what its snippets leave): each fit
    answers as definitions_context at that budget does, the auto gate's reason for an empty fit included."""
    code = "from shop.models import Cart\n\n\ndef fill(cart: Cart):\n    cart.add(None)\n"
    ranked = ranked_definitions(kb.store, str(SHOP / "fill.py"), 5, code)
    assert isinstance(ranked, RankedDefinitions)
    for budget in (1, 12, 40, 400):
        whole = definitions_context(kb.store, str(SHOP / "fill.py"), 5, code, budget=budget)
        assert ranked.fitted(budget) == whole
    with pytest.raises(ConfigError, match="budget must not be negative"):
        ranked.fitted(-1)


def test_bad_input_is_one_clear_error(kb: KnowledgeBase) -> None:
    with pytest.raises(ConfigError, match="line 99 is outside"):
        kb.context_at(_at("pricing.py"), 99)
    with pytest.raises(ConfigError, match="unknown gate 'sometimes'"):
        kb.context_at(_at("pricing.py"), 9, gate="sometimes")
    with pytest.raises(ConfigError, match="cannot read"):
        kb.context_at(str(SHOP / "missing.py"), 1)


def test_the_defs_modes_answer_a_query_of_code(kb: KnowledgeBase) -> None:
    code = "import shop.util as u\nfrom shop.models import Cart\n\ndef pay(cart: Cart):\n    return u.round_money(1)\n"
    results = kb.query(code, "defs", k=5).results
    assert {r.name for r in results} == {"Cart", "round_money", "Record", "shop.util"}  # Record: Cart's base
    assert all(r.kind == "DEFINITION" and r.text == r.pruned_text for r in results)
    hidden = kb.query(code, "defs", k=5, options=Options(exclude_sources=frozenset({_at("models.py")}))).results
    assert {r.name for r in hidden} == {"round_money", "shop.util"}  # Cart hidden, and Record, reached through it
    both = kb.query(code, "defs+func", k=5).results
    assert [r.name for r in both[:-1]] == [r.name for r in results] and both[-1].kind == "IMPL"


#: pricing.py without checkout's body: the code at hand while a draft of that body is checked.
WITHOUT_BODY = "".join((SHOP / "pricing.py").read_text().splitlines(keepends=True)[:7] + ["\n"] * 2)


def test_a_draft_is_checked_for_names_nothing_mentions(kb: KnowledgeBase) -> None:
    """A draft of checkout's body that misspells two names: each is listed with the definition named like it,
    and those definitions lead the context; a draft naming only real things gets none under the auto gate.
    Built without chunks, the similar code a draft brings is missing, and a note says why."""
    draft = "gross = cart.totals() * (1 + TAX_RATE)\nreturn u.round_mony(gross)\n"
    found = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=draft)
    assert found.gated is None
    assert found.similar == [] and found.notes == found.json()["notes"] == [
        "no similar code: this database holds no CHUNK nodes: its build left out the 'chunks' part"
        " (pkg build --parts ...,chunks) or found nothing for it"
    ]
    assert [(i.name, [(s.name, s.source, s.start_line) for s in i.suggestions]) for i in found.invented] == [
        ("round_mony", [("round_money", _at("util.py"), 1)]),
        ("totals", [("Cart.total", _at("models.py"), 33)]),
    ]
    ranked = [d.name for d in found.definitions]
    assert {"round_money", "Cart"} <= set(ranked) and ROUND_MONEY in found.text
    assert len(ranked) == len(set(ranked))  # Cart once: its stub shows the method named like `totals`
    assert "def total(self) -> float:" in _named(found.definitions)["Cart"].stub
    assert found.json()["invented"][0] == {
        "name": "round_mony",
        "suggestions": [{"name": "round_money", "path": _at("util.py"), "line": 1}],
    }
    real = "subtotal = cart.total()\nreturn u.round_money(subtotal * (1 + TAX_RATE))\n"  # its own binding too
    gated = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=real)
    assert (gated.invented, gated.definitions, gated.gated) == ([], [], definitions.NOTHING_INVENTED)
    always = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=real, gate="always")
    assert always.invented == [] and {"Cart", "shop.util"} <= set(_named(always.definitions))  # the code's own
    # a name mentioned only outside functions (Record's class attribute) is known: built without chunks, the
    # files are read from disk; what a module the graph does not hold offers is not the graph's to judge
    # (json.dumps: base.py uses only json.dump), unless the module is not imported either
    outside = "import json\nreturn cart.kind, json.dumps(cart.as_dict())\n"
    assert kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=outside).invented == []
    unimported = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft="return json.dumps(cart)\n").invented
    assert [i.name for i in unimported] == ["dumps"]
    with pytest.raises(ConfigError, match="Python only"):
        kb.context_at(str(SHOP / "x.js"), 1, "let a = 1;\n", draft="b();\n")


def test_a_draft_that_invents_a_name_brings_code_like_it(
    open_store: Opener,  # noqa: F811
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """Built with chunks, a draft that invents a name gets, after the definitions, the chunks of other files most
    like the code and the draft, in at most half the budget; `similar=0` and a draft that invents nothing, none."""
    kb = KnowledgeBase(tmp_path / "kb", open_store("second"), module_embedder)
    kb.build([SHOP.parent])
    draft = "gross = cart.totals() * (1 + TAX_RATE)\nreturn u.round_mony(gross)\n"
    found = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=draft)
    assert found.similar and _at("pricing.py") not in {s.path for s in found.similar} and found.notes == []
    assert [s for s in found.similar if s.code.endswith(TRUNCATED)] in ([], found.similar[-1:])  # cut to fit
    for snippet in found.similar:  # each is its file's text at its lines
        lines = Path(snippet.path).read_text().splitlines()[snippet.lines[0] - 1 : snippet.lines[1]]
        assert "\n".join(lines).strip().startswith(snippet.code.removesuffix(TRUNCATED).strip())
    assert sum(estimate_tokens(s.code) for s in found.similar) <= 256 and found.tokens <= 512
    first = found.similar[0]
    header = f"# {Path(first.path).relative_to(SHOP.parent)}:{first.lines[0]}-{first.lines[1]}\n"
    assert ROUND_MONEY in found.text and found.text.index(ROUND_MONEY) < found.text.index(header)
    assert found.json()["similar"][0] == {
        "path": first.path,
        "lines": list(first.lines),
        "name": first.name,
        "code": first.code,
    }
    alone = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, 0, draft=draft)
    assert alone.similar == [] and header not in alone.text and ROUND_MONEY in alone.text
    tight = kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, budget=40, draft=draft)
    assert sum(estimate_tokens(s.code) for s in tight.similar) <= 20 and tight.tokens <= 40
    real = "subtotal = cart.total()\nreturn u.round_money(subtotal * (1 + TAX_RATE))\n"
    assert kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, draft=real, gate="always").similar == []
    assert kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY).similar == []  # no draft, no second round
    with pytest.raises(ConfigError, match="negative"):
        kb.context_at(_at("pricing.py"), 7, WITHOUT_BODY, -1, draft=draft)


def test_a_draft_may_use_what_a_star_import_from_outside_the_graph_offers(
    module_embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """os takes forkpty from posix with `import *`; the graph cannot know all such a module offers."""
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "platform_ops.py").write_text("from json import *\n\n\ndef dump_all(items):\n    return dumps(items)\n")
    (package / "plain.py").write_text("import json\n\n\ndef load_all(text):\n    return json.loads(text)\n")
    kb = KnowledgeBase(tmp_path / "kb", embedder=module_embedder)
    kb.build([package], parts=["functions"])
    here = str(package / "user.py")
    code = "from lib import platform_ops, plain\n\n\ndef run(x):\n"
    star = kb.context_at(here, 4, code, draft="return platform_ops.JSONDecoder(x)\n", gate="always")
    plain = kb.context_at(here, 4, code, draft="return plain.JSONDecoder(x)\n", gate="always")
    assert (star.invented, [i.name for i in plain.invented]) == ([], ["JSONDecoder"])


# -- no store needed --------------------------------------------------------------------------------


def test_class_and_constant_stubs_are_read_at_build_time() -> None:
    tables = python_stubs((SHOP / "models.py").read_text())
    assert tables["constants"] == {"TAX_RATE": [6, "TAX_RATE = 0.2"]}
    assert tables["classes"]["Item"] == {
        "header": "@dataclass\nclass Item:",
        "doc": "One product in a cart.",
        "fields": ["name: str", "price: float", "quantity: int = 1"],
    }
    assert tables["classes"]["Cart"]["fields"] == ["self.owner = owner", "self.items: list[Item] = []"]
    assert python_stubs("def broken(:\n") == {"classes": {}, "constants": {}}


def test_the_code_at_hand_knows_its_scope_and_names() -> None:
    code = read_code(_at("report.py"), None, 12)
    assert (code.scope, code.own_class, code.near) == ("Report.publish", "Report", (4, 12))
    assert {"path", "self"} <= code.local and {"publish", "__init__"} <= code.members
    assert [(u.dotted, u.line) for u in code.uses_in(None) if u.dotted.startswith("self.")] == [("self.save", 12)]


@pytest.mark.cli
def test_pkg_context_prints_text_json_and_a_prompt(tmp_path: Path, env: dict[str, str]) -> None:
    db = str(tmp_path / "db")
    built = run_cli("build", str(SHOP.parent), "--db", db, "--parts", "functions", env_extra=env)
    assert built.returncode == 0, built.stderr
    text = run_cli("context", f"{_at('pricing.py')}:9", "--db", db, env_extra=env)
    assert text.returncode == 0, text.stderr
    assert "# shop/util.py\n" + ROUND_MONEY in text.stdout
    answer = json.loads(run_cli("context", f"{_at('pricing.py')}:9", "--db", db, "--format", "json").stdout)
    assert {d["name"]: (d["lines"], d["kind"]) for d in answer["definitions"]}["round_money"] == ([1, 3], "function")
    prompt = run_cli("context", f"{_at('pricing.py')}:7", "--db", db, "--format", "prompt", env_extra=env).stdout
    assert prompt.index("def round_money") < prompt.index(f"# {_at('pricing.py')}\n") and prompt.rstrip().endswith(
        'def checkout(cart: Cart) -> float:\n    """The amount to pay for a cart, tax included."""'
    )
    draft = tmp_path / "draft.py"
    draft.write_text("return u.round_mony(cart.total())\n")
    checked = run_cli("context", f"{_at('pricing.py')}:9", "--db", db, "--draft", str(draft), env_extra=env)
    assert checked.returncode == 0, checked.stderr
    assert "invented: round_mony (like round_money at shop/util.py:1)" in checked.stderr
    assert ROUND_MONEY in checked.stdout  # the definition named like it
    negative = run_cli("context", f"{_at('pricing.py')}:9", "--db", db, "--draft", str(draft), "--similar", "-1")
    assert negative.returncode != 0 and "--similar" in negative.stderr
    undrafted = run_cli("context", f"{_at('pricing.py')}:9", "--db", db, "--similar", "2")
    assert undrafted.returncode != 0 and "give --draft" in undrafted.stderr
    both = run_cli("context", f"{_at('pricing.py')}:9", "--db", db, "--code", "-", "--draft", "-", env_extra=env)
    assert both.returncode != 0 and "standard input" in both.stderr
    gated = run_cli("context", f"{_at('pricing.py')}:14", "--db", db, env_extra=env)
    assert gated.returncode == 0 and gated.stdout == "" and "no context:" in gated.stderr
    for wrong, message in ((f"{_at('pricing.py')}:0", "lines count from 1"), ("nowhere.py:3", "no file")):
        failed = run_cli("context", wrong, "--db", db, env_extra=env)
        assert failed.returncode != 0 and message in failed.stderr and len(failed.stderr.strip().splitlines()) == 1


def test_an_excerpt_of_an_indexed_file_binds_the_files_imports(kb: KnowledgeBase) -> None:
    """Code cut from an indexed file (its imports not shown, its start indented) still resolves."""
    excerpt = "    # ...\n    def pay(cart):\n        return u.round_money(cart.total() * (1 + TAX_RATE))\n"
    found = kb.context_at(_at("pricing.py"), 3, excerpt)
    # cart.total(): `total` is the corpus's one method of that name (the resolver's name-only tier)
    assert {d.name for d in found.definitions} == {"round_money", "TAX_RATE", "Cart", "Record", "shop.util"}
    assert kb.context_at(_at("pricing.py"), 2, "def twice(v):\n    return double(v)\n").gated  # double: the file's


def test_other_languages_resolve_the_names_calls_resolve_to(kb: KnowledgeBase) -> None:
    main = str((SHOP.parent / "web" / "main.ts").resolve())
    [found] = kb.context_at(main, 4).definitions
    assert (found.name, found.kind, found.path) == ("roundMoney", "function", str(SHOP.parent / "web" / "util.ts"))
    assert found.stub == "function roundMoney(amount: number): number"


def test_a_module_used_as_a_whole_gets_its_outline(kb: KnowledgeBase) -> None:
    """`from shop import util`, then nothing of it named yet: the module's public functions, a line each."""
    code = "from shop import util\n\n\ndef pay(amount):\n    return util\n"
    [module] = kb.context_at(str(SHOP / "pay.py"), 5, code).definitions
    assert (module.name, module.kind, module.path) == ("shop.util", "module", _at("util.py"))
    assert module.stub == "def round_money(amount: float) -> float: ...\ndef unused_helper(x): ..."
    named = kb.context_at(str(SHOP / "pay.py"), 5, code.replace("return util", "return util.round_money(amount)"))
    # a name of it resolves: that definition first, then the rest of the outline (what else util. offers)
    assert [(d.name, d.stub) for d in named.definitions] == [
        ("round_money", ROUND_MONEY),
        ("shop.util", "def unused_helper(x): ..."),
    ]
    assert named.definitions[0].score > named.definitions[1].score


def test_an_outline_ranked_first_leaves_out_a_function_of_it_shown_below(kb: KnowledgeBase) -> None:
    """`util` itself used near the line, `util.round_money` far above it: the module outranks the function,
    and its outline does not show round_money's line a second time."""
    code = "from shop import util\n\nX = util.round_money(1.0)\n" + "\n" * 30
    code += "def pay(amount):\n    helpers = [util, util, util]\n    return util\n"
    found = kb.context_at(str(SHOP / "pay.py"), len(code.splitlines()), code, names="all")
    assert [(d.name, d.stub) for d in found.definitions] == [
        ("shop.util", "def unused_helper(x): ..."),
        ("round_money", ROUND_MONEY),
    ]
    assert found.text.count("def round_money") == 1


def test_an_outline_above_the_functions_it_lists_keeps_to_every_budget(
    open_store: Opener,  # noqa: F811
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """`m` used near the line, its first five functions named far above it: the outline ranks first and its
    lines for those five are blanked once they get stubs of their own, not refilled with the module's longer
    later lines (a refill overran the budget); its next level, the rest of the module, takes the place of
    its emptied least detail where it fits. No `def` line is printed twice."""
    lib = tmp_path / "proj" / "lib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    short = "".join(f"def f{i}(x):\n    return x\n\n\n" for i in range(5))
    wide = "first_argument_with_a_long_name: int, second_argument_with_a_long_name: str = 'default'"
    long = "".join(f"def g{i}({wide}) -> dict[str, int]:\n    return {{}}\n\n\n" for i in range(3))
    (lib / "m.py").write_text(short + long)
    built = KnowledgeBase(tmp_path / "kb", open_store("outline"), module_embedder)
    built.build([tmp_path / "proj"], parts=["functions"])
    code = "from lib import m\n\n" + "".join(f"X{i} = m.f{i}(1)\n" for i in range(5)) + "\n" * 30
    code += "def use():\n    return [" + ", ".join(["m"] * 12) + "]\n"
    where, line = str(tmp_path / "proj" / "app.py"), len(code.splitlines())
    for budget in range(10, 260, 5):
        found = built.context_at(where, line, code, budget=budget, names="all")
        assert found.tokens <= budget
        defs = [text for text in found.text.splitlines() if text.startswith("def ")]
        assert len(defs) == len(set(defs)), budget
    everything = built.context_at(where, line, code, budget=4096, names="all")
    assert [d.name for d in everything.definitions] == ["lib.m", "f4", "f3", "f2", "f1", "f0"]
    assert everything.definitions[0].stub == "\n".join(f"def g{i}({wide}) -> dict[str, int]: ..." for i in range(3))


def test_a_constant_of_a_module_imported_from_its_package(kb: KnowledgeBase) -> None:
    """`from shop import models`, then `models.TAX_RATE`: the constant's own line, as for `import shop.models`."""
    code = "from shop import models\n\n\ndef tax(amount):\n    return amount * models.TAX_RATE\n"
    found = _named(kb.context_at(str(SHOP / "tax.py"), 5, code).definitions)
    assert (found["TAX_RATE"].kind, found["TAX_RATE"].stub) == ("constant", "TAX_RATE = 0.2")
    assert found["TAX_RATE"].score > found["shop.models"].score and "TAX_RATE" not in found["shop.models"].stub


def test_a_tight_budget_shortens_the_first_definitions_before_dropping_later_ones(kb: KnowledgeBase) -> None:
    """Cart and round_money do not both fit in full: Cart, ranked first, is trimmed so that round_money is
    there too, rather than Cart in full alone."""
    code = "import shop.util as u\nfrom shop.models import Cart\n\nSTART = u.round_money(0)\n" + "\n" * 30
    code += "def fill(cart: Cart):\n    cart.add(None)\n"
    line, where = len(code.splitlines()), str(SHOP / "fill.py")
    full = _named(kb.context_at(where, line, code, budget=4096, names="all").definitions)
    assert full["Cart"].score > full["round_money"].score
    budget = estimate_tokens(f"# shop/models.py\n{full['Cart'].stub}\n") + 2
    tight = _named(kb.context_at(where, line, code, budget=budget, names="all").definitions)
    assert tight["round_money"].stub == ROUND_MONEY
    assert tight["Cart"].stub != full["Cart"].stub and tight["Cart"].stub.startswith("class Cart(Record):")


def test_the_gate_of_a_saved_file_does_not_depend_on_names(
    open_store: Opener,  # noqa: F811
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """An import the indexed file never uses is not code being written: it opens the gate neither with
    `names="near"` nor after `names="all"` has read the whole file (it did, through the unused import)."""
    package = tmp_path / "src" / "tool"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "util.py").write_text('def helper():\n    """Help."""\n    return 1\n')
    main_text = "import os\n\nfrom tool.util import helper\n\n\ndef run():\n    return os.getcwd()\n"
    (package / "main.py").write_text(main_text)
    built = KnowledgeBase(tmp_path / "kb", open_store("gate"), module_embedder)
    built.build([tmp_path / "src"], parts=["functions"])
    main = str((package / "main.py").resolve())
    near, every = (built.context_at(main, 7, names=names) for names in ("near", "all"))
    assert near.gated and "none of the 1 names" in near.gated  # os.getcwd: the graph holds no os
    assert every.gated == near.gated and every.definitions == []
    [helper] = built.context_at(main, 7, names="all", gate="always").definitions  # its import still counts
    assert helper.name == "helper"


def test_an_indexed_files_uses_come_from_its_build_else_its_tree_read_once(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`names="all"` takes every use of the file: for an unchanged indexed file, those its build recorded
    (no walk of the whole tree); for one built without them (an older build), its tree's, read once for
    all its lines; the answers are the same."""
    read: list[tuple[int, int] | None] = []
    walk = definitions.python_uses

    def counted(node: ast.AST, window: tuple[int, int] | None = None) -> list[Any]:
        if isinstance(node, ast.Module):
            read.append(window)
        return walk(node, window)

    monkeypatch.setattr(definitions, "python_uses", counted)
    recorded = [kb.context_at(_at("pricing.py"), line, names="all") for line in (9, 14)]
    assert None not in read
    definitions._INDEXES.clear()
    index = definitions.code_index(kb.store)
    stored = index.files[_at("pricing.py")]
    index.files[stored.source] = replace(stored, uses=None)
    walked = [kb.context_at(_at("pricing.py"), line, names="all") for line in (9, 14)]
    assert read.count(None) == 1
    assert [(f.definitions, f.text) for f in walked] == [(f.definitions, f.text) for f in recorded]
    assert {d.name for d in recorded[0].definitions} >= {"Cart", "round_money"}


def test_a_name_defined_twice_alike_gets_one_stub(
    open_store: Opener,  # noqa: F811
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """Alternatives of one function under try/except (bm25s' `dumps`, with and without orjson) have the same
    stub: it is shown once; a variant with another signature is still shown."""
    package = tmp_path / "src" / "tool"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "codec.py").write_text(
        "try:\n    import orjson\n\n    def dumps(d: dict) -> str:\n        return orjson.dumps(d).decode()\n\n"
        "    def loads(text: str) -> dict:\n        return orjson.loads(text)\n"
        "except ImportError:\n    import json\n\n    def dumps(d: dict) -> str:\n        return json.dumps(d)\n\n"
        "    def loads(text: str, strict: bool = True) -> dict:\n        return json.loads(text, strict=strict)\n"
    )
    main_text = "from tool.codec import dumps, loads\n\n\ndef save(d):\n    return loads(dumps(d))\n"
    (package / "main.py").write_text(main_text)
    built = KnowledgeBase(tmp_path / "kb", open_store("twice"), module_embedder)
    built.build([tmp_path / "src"], parts=["functions"])
    found = built.context_at(str((package / "main.py").resolve()), 5, gate="always")
    assert sorted(d.stub for d in found.definitions) == [
        "def dumps(d: dict) -> str: ...",
        "def loads(text: str) -> dict: ...",
        "def loads(text: str, strict: bool = True) -> dict: ...",
    ]
    assert found.text.count("def dumps") == 1
