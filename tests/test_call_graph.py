"""The code graph: CALLS, CONTAINS, INHERITS and IMPORTS edges, measured against a traced run of the
standard library's own tests (Python), hand-counted on one fixture per other language, resolved as
Python scopes and imports bind names, and kept right by incremental builds on both stores."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from bench.bench_call_graph import SMALL, measure
from ingest.link import Linker, link_edges
from ingest.parse import parse_corpus
from ingest.structure import FunctionAt, file_structure, innermost
from pkg.embedders import CachedEmbedder
from pkg.errors import ConfigError
from pkg.graph import Edge, Rel
from pkg.knowledge_base import KnowledgeBase
from pkg.schema import ClassNode, FileNode, NameNode, NodeRecord, record_of
from tests.conftest import FIXTURES, STDLIB, STDLIB_SLICE, run_cli
from tests.helpers import build
from tests.store_support import snapshot
from tests.test_incremental import Opener, assert_same_graph, open_store  # noqa: F401 (open_store: a fixture)

STRUCTURE = FIXTURES / "structure"


def _graph(paths: list[Path]) -> tuple[dict[str, NodeRecord], list[Edge]]:
    """The records of a parsed corpus and its CONTAINS, IMPORTS and linked edges."""
    corpus = parse_corpus(paths, parts={"functions"})
    records = {n.id: record_of(n) for n in corpus.nodes}
    tables = ([r for r in records.values() if isinstance(r, kind)] for kind in (FileNode, ClassNode, NameNode))
    own = [e for s in corpus.sources for e in s.graph.edges if e.type in (Rel.CONTAINS, Rel.IMPORTS)]
    return records, own + link_edges(*tables)


def _named(records: dict[str, NodeRecord], edges: list[Edge], rel: Rel) -> set[tuple[str, ...]]:
    """The edges of one type as (source name, target name[, resolution]); a FILE is "FILE"."""

    def name(node_id: str) -> str:
        return str(getattr(records[node_id], "name", records[node_id].LABEL.value))

    return {
        (name(e.src), name(e.dst), *([e.props["resolution"]] if rel is Rel.CALLS else []))
        for e in edges
        if e.type is rel
    }


# -- Python, against execution ------------------------------------------------------------------
def test_python_calls_match_a_traced_run() -> None:
    """textwrap, shlex and difflib under their own test suites: recall of the explicitly called pairs
    and precision of the edges whose call site ran, both at least 0.90."""
    result = measure(SMALL)
    assert result.tests_run > 100 and result.traced_pairs > 50 and result.executed_edges > 40
    assert result.recall_explicit >= 0.90, result.missed
    assert result.precision >= 0.90, result.unobserved
    assert result.recall_all >= 0.8  # implicit and indirect calls included


# -- Python, resolution -------------------------------------------------------------------------
_PACKAGE = {
    "pkg/__init__.py": "from .util import helper\n",
    "pkg/util.py": """\
        def helper(x):
            return x


        def other():
            return helper(1)
        """,
    "pkg/shapes.py": """\
        from . import util
        from .util import helper as h


        class Base:
            def __init__(self):
                self.n = 0

            def area(self):
                return self.scale()

            def scale(self):
                return 1

            @classmethod
            def make(cls):
                return cls.build()

            @classmethod
            def build(cls):
                return cls()


        class Square(Base):
            def scale(self):
                return super().scale() * 2

            def both(self):
                def inner():
                    return h(2)

                return inner() + util.helper(3) + self.area()
        """,
    "main.py": """\
        import pkg.util as u
        import pkg
        from pkg.shapes import Square


        def run():
            s = Square()
            u.other()
            pkg.helper(4)
            return s.both() + len([])
        """,
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _calls_in(root: Path, files: dict[str, str]) -> set[tuple[str, ...]]:
    """The named CALLS edges (with their resolutions) of a corpus of `files` written under `root`."""
    _write(root, files)
    records, edges = _graph([root])
    return _named(records, edges, Rel.CALLS)


def test_python_names_resolve_through_scopes_imports_and_classes(tmp_path: Path) -> None:
    _write(tmp_path, _PACKAGE)
    records, edges = _graph([tmp_path])
    assert _named(records, edges, Rel.CALLS) == {
        ("other", "helper", "local"),
        ("Base.area", "Base.scale", "self"),
        ("Base.area", "Square.scale", "override"),  # self may be a Square
        ("Base.make", "Base.build", "self"),  # cls.build()
        ("Base.build", "Base.__init__", "self"),  # cls(): the class itself
        ("Square.scale", "Base.scale", "super"),
        ("Square.both.<locals>.inner", "helper", "import"),  # from .util import helper as h
        ("Square.both", "Square.both.<locals>.inner", "local"),
        ("Square.both", "helper", "import"),  # util.helper, util from `from . import util`
        ("Square.both", "Base.area", "self"),
        ("run", "Base.__init__", "import"),  # Square() runs Base.__init__
        ("run", "other", "import"),  # import pkg.util as u
        ("run", "helper", "import"),  # pkg.helper, re-exported by pkg/__init__.py
        ("run", "Square.both", "instance"),  # s = Square(); s.both()
    }
    assert _named(records, edges, Rel.INHERITS) == {("Square", "Base")}
    assert {m for f, m in _named(records, edges, Rel.IMPORTS) if m != "FILE"} == {"pkg", "pkg.util", "pkg.shapes"}
    files = {r.id: Path(r.source).relative_to(tmp_path).as_posix() for r in records.values() if isinstance(r, FileNode)}
    by_path = {(files.get(e.src), files.get(e.dst)) for e in edges if e.type is Rel.IMPORTS and e.dst in files}
    assert by_path == {
        ("pkg/__init__.py", "pkg/util.py"),
        ("pkg/shapes.py", "pkg/util.py"),  # from . import util: the module pkg.util
        ("main.py", "pkg/util.py"),
        ("main.py", "pkg/__init__.py"),
        ("main.py", "pkg/shapes.py"),
    }
    assert _named(records, edges, Rel.CONTAINS) == {
        ("FILE", "helper"),
        ("FILE", "other"),
        ("Base", "Base.__init__"),
        ("Base", "Base.scale"),
        ("Base", "Base.make"),
        ("Base", "Base.build"),
        ("Square", "Square.scale"),
        ("FILE", "Base"),
        ("FILE", "Square"),
        ("Base", "Base.area"),
        ("Square", "Square.both"),
        ("FILE", "Square.both.<locals>.inner"),
        ("FILE", "run"),
    }


_TYPED = {
    "app/__init__.py": "",
    "app/core.py": """\
        from __future__ import annotations

        from typing import Optional, Self


        class Formatter:
            def __init__(self):
                self.width = 80

            def write(self, text):
                return text


        class Plain(Formatter):
            def write(self, text):
                return text.upper()


        class Context:
            formatter_class = Formatter

            def __init__(self, parent: Context | None = None):
                self.parent = parent
                self.formatter = self.formatter_class()

            @property
            def depth(self) -> int:
                return 0 if self.parent is None else self.parent.depth + 1

            @depth.setter
            def depth(self, value):
                self.fixed = value

            def invoke(self, name: str) -> str:
                return self.formatter.write(name)

            def child(self) -> Self:
                return type(self)(self)

            @classmethod
            def root(cls):
                return cls._make()

            @classmethod
            def _make(cls):
                return cls()


        class Command:
            def run(self, ctx: Context, out: Formatter):
                return out.write(ctx.invoke("run"))

            def parent_of(self, ctx: Optional["Context"]):
                return ctx.parent.invoke("up")

            def made(self):
                ctx = Context.root()
                return ctx.child().invoke("x")


        class Shape:
            def area(self):
                return self.size() * 2


        class Square(Shape):
            def size(self):
                return 1


        class Circle(Shape):
            def size(self):
                return 3


        def make_context() -> "Context":
            c = Context()
            c.depth = 3
            return c


        PLAIN = Plain()
        """,
    "main.py": """\
        import typing as t

        from app.core import PLAIN, Context, Square, make_context


        def describe(shape, other):
            if isinstance(shape, Square):
                return shape.size()
            with Context() as ctx:
                ctx.invoke("w")
            other.size()
            return make_context().depth


        class Runner:
            def go(__this, ctx: t.Optional["Context"]):
                __this.stop()
                return ctx.invoke("go")

            def stop(self):
                return None


        def render(out=PLAIN):
            return out.write(PLAIN.write("x"))
        """,
}


def test_python_receivers_resolve_through_types(tmp_path: Path) -> None:
    """Annotations (X | None, Optional, strings, Self), constructor calls, return types, attributes
    of self and of the class (one holding a class), with, isinstance, cls(), type(self)(...),
    abstract dispatch and properties: each edge with the resolution that found it."""
    _write(tmp_path, _TYPED)
    records, edges = _graph([tmp_path])
    assert _named(records, edges, Rel.CALLS) == {
        ("Context.__init__", "Formatter.__init__", "instance"),  # self.formatter_class(): a class attribute
        ("Context.depth", "Context.depth", "property"),  # self.parent.depth: the getter
        ("Context.invoke", "Formatter.write", "instance"),  # self.formatter = self.formatter_class(): no subclass
        ("Context.child", "Context.__init__", "instance"),  # type(self)(self)
        ("Context.root", "Context._make", "self"),
        ("Context._make", "Context.__init__", "self"),  # cls()
        ("Command.run", "Context.invoke", "annotation"),  # ctx: Context
        ("Command.run", "Formatter.write", "annotation"),  # out: Formatter, which may be a Plain
        ("Command.run", "Plain.write", "override"),
        ("Command.parent_of", "Context.invoke", "annotation"),  # parent: Context | None
        ("Command.made", "Context.root", "local"),
        ("Command.made", "Context.child", "inferred"),  # root() returns cls._make(), which returns cls()
        ("Command.made", "Context.invoke", "inferred"),  # child() -> Self
        ("Shape.area", "Square.size", "override"),  # defined only in subclasses
        ("Shape.area", "Circle.size", "override"),
        ("make_context", "Context.__init__", "local"),
        ("make_context", "Context.depth", "property"),  # c.depth = 3: the setter
        ("describe", "Square.size", "annotation"),  # isinstance(shape, Square); other.size() is unknown
        ("describe", "Context.__init__", "import"),
        ("describe", "Context.invoke", "instance"),  # with Context() as ctx
        ("describe", "make_context", "import"),
        ("describe", "Context.depth", "property"),  # make_context() -> "Context"
        ("Runner.go", "Runner.stop", "self"),  # __this: the first parameter
        ("Runner.go", "Context.invoke", "annotation"),  # t.Optional["Context"]
        ("render", "Plain.write", "instance"),  # PLAIN = Plain() in the module imported from; out=PLAIN
    }
    by_id = {r.id: r for r in records.values() if isinstance(r, NameNode)}
    accessors = {
        (by_id[e.src].name, by_id[e.dst].start_line)
        for e in edges
        if e.type is Rel.CALLS and e.props["resolution"] == "property"
    }
    assert accessors == {("Context.depth", 26), ("make_context", 30), ("describe", 26)}  # getter 26, setter 30


_HEADERS = {
    "deco.py": """\
        def tag(name):
            return lambda f: f


        def default():
            return 1


        def outer():
            @tag("inner")
            def inner(x=default()):
                return x

            return inner()
        """,
}


def test_decorators_and_defaults_are_called_where_the_function_is_defined(tmp_path: Path) -> None:
    """A decorator or a default value runs in the scope that defines the function, not in it."""
    assert _calls_in(tmp_path, _HEADERS) == {
        ("outer", "tag", "local"),
        ("outer", "default", "local"),
        ("outer", "outer.<locals>.inner", "local"),
    }


_GUESSES = {
    "stack.py": """\
        class Stack:
            def pop(self):
                return None

            def peek_top(self):
                return None


        def drain(stack, items):
            stack.peek_top()
            return items.pop()
        """,
}


def test_an_unknown_receiver_is_guessed_only_for_names_no_builtin_type_has(tmp_path: Path) -> None:
    """``items.pop()`` may be a list's: no name-only edge to the one ``pop`` of the corpus."""
    assert _calls_in(tmp_path, _GUESSES) == {("drain", "Stack.peek_top", "name-only")}


_HELD = {
    "held.py": """\
        class Base:
            def __init__(self, size):
                self.size = size


        class Child(Base):
            def __init__(self):
                start = super().__init__
                start(3)


        Alias = Child


        def make(cls=None):
            if cls is None:
                cls = Base
            return cls(1), Alias()
        """,
}


def test_a_variable_holding_a_class_or_a_function_is_called_through(tmp_path: Path) -> None:
    """Calling a variable calls the class (its ``__init__``) or the function it holds."""
    assert _calls_in(tmp_path, _HELD) == {
        ("Child.__init__", "Base.__init__", "inferred"),  # start = super().__init__
        ("make", "Base.__init__", "inferred"),  # cls = Base
        ("make", "Child.__init__", "inferred"),  # Alias = Child
    }


_CLASS_BODY = {
    "walking.py": """\
        def walk(self):
            yield self
            yield from self.subparts()


        def attach(self, other):
            return other.as_string()
        """,
    "message.py": """\
        class Message:
            def as_string(self):
                return ""

            __str__ = as_string

            from walking import walk, attach

            def subparts(self):
                return []

            def parts(self):
                return list(self.walk())

            def show(self):
                return self.__str__()

            def adopt(self):
                return self.attach(Message())


        def first(message: Message):
            return next(message.walk())
        """,
    "use.py": """\
        def each(node):
            return list(node.walk())
        """,
}


def test_a_class_body_binding_a_method_or_an_import_gives_the_class_a_method(tmp_path: Path) -> None:
    """``__str__ = as_string`` and ``from walking import walk`` in a class body: what the name calls is
    the method or the imported function (the standard library has 378 such aliases), also for a receiver of
    no known type when no other function has that name, and such a function called on an instance gets it as
    its first argument."""
    assert _calls_in(tmp_path, _CLASS_BODY) == {
        ("Message.show", "Message.as_string", "instance"),
        ("Message.parts", "walk", "instance"),
        ("Message.adopt", "attach", "instance"),
        ("first", "walk", "annotation"),
        ("each", "walk", "name-only"),  # of an unknown receiver: the one function a class binds as `walk`
        ("walk", "Message.subparts", "inferred"),  # self: what its callers call it on
        ("attach", "Message.as_string", "inferred"),  # other: the argument after the receiver
    }


_SLOT = {
    "interpolation.py": """\
        class Interpolation:
            def before_get(self, value):
                return value


        class BasicInterpolation(Interpolation):
            def before_get(self, value):
                return value.strip()


        class ExtendedInterpolation(Interpolation):
            def before_get(self, value):
                return value.upper()


        class Parser:
            _DEFAULT = Interpolation()

            def __init__(self, interpolation=None):
                self._interpolation = interpolation
                if interpolation is None:
                    self._interpolation = self._DEFAULT

            def get(self, value):
                return self._interpolation.before_get(value)


        class StrictParser(Parser):
            _DEFAULT = BasicInterpolation()


        class Fixed:
            def __init__(self):
                self.only = BasicInterpolation()

            def get(self, value):
                return self.only.before_get(value)
        """,
}


def test_a_receiver_holding_a_class_and_its_subclass_reaches_the_family(tmp_path: Path) -> None:
    """configparser's interpolation: `self._interpolation` holds the class attribute a subclass overrides, so it
    is a slot for the family and a caller may pass another member (ExtendedInterpolation); a receiver holding
    one class alone does not."""
    assert _calls_in(tmp_path, _SLOT) == {
        ("Parser.get", "Interpolation.before_get", "inferred"),
        ("Parser.get", "BasicInterpolation.before_get", "inferred"),
        ("Parser.get", "ExtendedInterpolation.before_get", "override"),
        ("Fixed.get", "BasicInterpolation.before_get", "instance"),
    }


_DEFAULTED = {
    "policies.py": """\
        class Compat:
            def fetch(self, value):
                return value


        class Modern:
            def fetch(self, value):
                return value.strip()


        compat = Compat()
        modern = Modern()


        class Message:
            def __init__(self, policy=compat):
                self.policy = policy

            def get(self, value):
                return self.policy.fetch(value)


        class Part(Message):
            def __init__(self, policy=None):
                if policy is None:
                    policy = modern
                super().__init__(policy)
        """,
}


def test_a_parameter_with_a_default_also_holds_what_its_callers_pass(tmp_path: Path) -> None:
    """email's `Message.__init__(self, policy=compat32)`: the default is one value of the parameter, and
    `MIMEPart` passes the `default` policy (an EmailPolicy), so `self.policy.header_fetch_parse` may run either."""
    assert _calls_in(tmp_path, _DEFAULTED) == {
        ("Message.get", "Compat.fetch", "inferred"),
        ("Message.get", "Modern.fetch", "inferred"),
        ("Part.__init__", "Message.__init__", "super"),
    }


_MODULE_VALUES = {
    "base64code.py": "def header_encode(text):\n    return text\n",
    "quopricode.py": "def header_encode(text):\n    return text.upper()\n",
    "charset.py": """\
        import base64code
        import quopricode as qp


        class Charset:
            def __init__(self, short):
                self.short = short

            def _encoder(self):
                if self.short:
                    return base64code
                return qp

            def header_encode(self, text):
                module = self._encoder()
                return module.header_encode(text)
        """,
}


def test_a_module_a_function_returns_is_called_through(tmp_path: Path) -> None:
    """email's `Charset._get_encoder` returns the module `email.base64mime` or `email.quoprimime`, imported
    plainly or under another name: `encoder_module.header_encode(...)` runs either module's function."""
    _write(tmp_path, _MODULE_VALUES)
    records, edges = _graph([tmp_path])
    called = {
        (Path(records[e.dst].source).name, e.props["resolution"])
        for e in edges
        if e.type is Rel.CALLS and getattr(records[e.src], "name", "") == "Charset.header_encode"
    }
    assert called == {("charset.py", "self"), ("base64code.py", "inferred"), ("quopricode.py", "inferred")}


_ALTERNATIVES = {
    "policies.py": """\
        class Plain:
            def fold(self, text):
                return text


        class Fancy:
            def fold(self, text):
                return text.strip()


        def pick(flag):
            return Plain() if flag else Fancy()


        def fold_all(flag, text):
            chosen = pick(flag)
            return chosen.fold(text)


        class Holder:
            def __init__(self, policy=None):
                self.policy = policy or Fancy()

            def run(self, text):
                return self.policy.fold(text)


        def format_name(name, policy="plain"):
            if isinstance(policy, str):
                policy = Plain()
            return policy.fold(name)
        """,
}


def test_each_branch_of_a_conditional_and_each_operand_of_or_is_a_value(tmp_path: Path) -> None:
    """email's `policy = msg.policy if self.policy is None else self.policy`: either branch may be the value
    (a local, an attribute or what a function returns), as either operand of `a or b` may; a literal among the
    values (`formataddr(pair, charset='utf-8')`, then `charset = Charset(charset)`) leaves the others known."""
    assert _calls_in(tmp_path, _ALTERNATIVES) == {
        ("fold_all", "pick", "local"),
        ("fold_all", "Plain.fold", "inferred"),
        ("fold_all", "Fancy.fold", "inferred"),
        ("Holder.run", "Fancy.fold", "inferred"),  # or what the callers pass (none here)
        ("format_name", "Plain.fold", "instance"),  # a literal is of no class of the corpus: Plain's alone
    }


_DISPATCH = {
    "cmd.py": """\
        import abc


        class Command:
            arity = 1

            def main(self):
                self.prepare()
                return self.invoke()

            def invoke(self):
                \"\"\"For subclasses.\"\"\"
                raise NotImplementedError("no")

            def prepare(self):
                raise NotImplementedError

            @abc.abstractmethod
            def close(self):
                ...

            def describe(self):
                return hasattr(self, "label") and getattr(self, "arity")


        class Group(Command):
            def invoke(self):
                return 1

            def close(self):
                return 2

            @property
            def label(self):
                return "group"

            @property
            def arity(self):
                return 2


        def run(cmd: Command):
            cmd.close()
            return cmd.arity
        """,
}


def test_abstract_methods_give_way_to_overrides_and_reflection_reads_properties(tmp_path: Path) -> None:
    """A method only raising NotImplementedError (or @abstractmethod) is no callee when overrides
    exist; getattr/hasattr with a constant name read a property, also one a subclass defines over a
    class attribute."""
    assert _calls_in(tmp_path, _DISPATCH) == {
        ("Command.main", "Command.prepare", "self"),  # abstract, but no subclass defines it
        ("Command.main", "Group.invoke", "override"),
        ("Command.describe", "Group.label", "property"),  # hasattr(self, "label")
        ("Command.describe", "Group.arity", "property"),  # getattr(self, "arity")
        ("run", "Group.close", "override"),
        ("run", "Group.arity", "property"),
    }


_REDEFINED = {
    "errors.py": """\
        class Error:
            def show(self):
                return self.message()

            def hint(self):
                return self.label

            def message(self):
                return "error"

            @property
            def label(self):
                return "e"


        class Usage(Error):
            def show(self):
                return "usage"

            def hint(self):
                return super().hint()


        class Missing(Usage):
            def message(self):
                return "missing"

            @property
            def label(self):
                return "m"


        class Unknown(Error):
            def message(self):
                return "unknown"


        class Silent(Error):
            def hint(self):
                return ""

            @property
            def label(self):
                return "s"


        class Titled:
            @property
            def title(self):
                return self.text()

            def text(self):
                return "t"


        class Upper(Titled):
            @property
            def title(self):
                return super().title.upper()

            def text(self):
                return "u"
        """,
}


def test_a_call_on_self_reaches_only_the_subclasses_that_inherit_or_call_back_its_method(tmp_path: Path) -> None:
    """`self` in Error.show is never a Missing (Usage redefines show without calling it back), so
    Missing.message is no callee of Error.show, while Unknown.message is; Usage.hint calls super's, so
    Missing's getter is read by Error.hint, and Silent's is not (Silent redefines hint); Upper's title reads
    super()'s, so Titled.title may run on an Upper. Without the rule Missing.message and Silent.label
    would be callees."""
    assert _calls_in(tmp_path, _REDEFINED) == {
        ("Error.show", "Error.message", "self"),
        ("Error.show", "Unknown.message", "override"),
        ("Error.hint", "Error.label", "property"),
        ("Error.hint", "Missing.label", "property"),
        ("Usage.hint", "Error.hint", "super"),
        ("Titled.title", "Titled.text", "self"),
        ("Titled.title", "Upper.text", "override"),  # Upper's title reads super()'s
        ("Upper.title", "Titled.title", "property"),
    }


_CONTAINERS = {
    "params.py": """\
        import typing as t


        class Param:
            def render(self):
                return "p"


        class Option(Param):
            def render(self):
                return "o"


        class Command:
            def __init__(self):
                self.by_name: t.Dict[str, Param] = {}

            def params(self) -> t.List["Param"]:
                return []

            def built(self):
                return Param()

            def first(self) -> "Param":
                return Param()

            def made(self):
                self.built().render()

            def declared(self):
                self.first().render()

            def each(self):
                for param in self.params():
                    param.render()

            def named(self, name):
                return self.by_name[name].render()

            def got(self, name):
                return self.by_name.get(name).render()

            def unknown(self, rows):
                for row in rows:
                    row.render()
                return self[0].render()
        """,
}


def test_elements_of_annotated_containers_have_the_element_type(tmp_path: Path) -> None:
    """``List[X]``, ``Dict[K, X]``: iterating, indexing and ``.get`` give an X (or a subclass);
    an element of an unannotated container, or of ``self``, stays unknown. A declared return type
    is an annotation too (a subclass may come back); what a body returns is exactly that class."""
    assert _calls_in(tmp_path, _CONTAINERS) == {
        ("Command.each", "Command.params", "self"),
        ("Command.each", "Param.render", "annotation"),  # params() -> List["Param"]
        ("Command.each", "Option.render", "override"),
        ("Command.made", "Command.built", "self"),
        ("Command.made", "Param.render", "inferred"),  # built() returns Param(): no subclass
        ("Command.declared", "Command.first", "self"),
        ("Command.declared", "Param.render", "annotation"),  # first() -> "Param"
        ("Command.declared", "Option.render", "override"),
        ("Command.named", "Param.render", "annotation"),  # self.by_name: Dict[str, Param]
        ("Command.named", "Option.render", "override"),
        ("Command.got", "Param.render", "annotation"),
        ("Command.got", "Option.render", "override"),
    }


_MIXINS = {
    "headers.py": """\
        class BaseHeader(str):
            def __new__(cls, name, value):
                cls.parse(value)
                self = str.__new__(cls, value)
                self.callback()
                return self


        class DateHeader:
            @classmethod
            def parse(cls, value):
                return value


        class AddressHeader:
            @classmethod
            def parse(cls, value):
                return value


        def make(name):
            return type("_" + name, (DateHeader, BaseHeader), {})
        """,
}


def test_a_mixin_reaches_the_methods_its_partners_define_in_its_file(tmp_path: Path) -> None:
    """``cls.parse()`` where neither the class, its bases nor its subclasses define parse: the
    class is mixed in at run time, so each ``parse`` of the file's other classes is a candidate."""
    assert _calls_in(tmp_path, _MIXINS) == {
        ("BaseHeader.__new__", "DateHeader.parse", "ambiguous"),
        ("BaseHeader.__new__", "AddressHeader.parse", "ambiguous"),
    }


_SUPER_MIXINS = {
    "headers.py": """\
        class BaseHeader(str):
            def __new__(cls, name, value):
                self = str.__new__(cls, value)
                self.init(name)
                return self

            def init(self, name):
                self.name = name


        class DateHeader:
            def init(self, name):
                super().init(name)


        class UniqueDateHeader(DateHeader):
            def init(self, name):
                super().init(name)


        class Server:
            def close(self):
                return None


        class TCPServer(Server):
            def close(self):
                return None


        class ThreadingMixIn:
            def close(self):
                super().close()


        class ThreadingTCPServer(ThreadingMixIn, TCPServer):
            pass


        class Loose:
            def setUp(self):
                super().setUp()


        class FirstCase:
            def setUp(self):
                return 1


        class SecondCase:
            def setUp(self):
                return 2


        class Outside(dict):
            def init(self, name):
                super().init(name)
        """,
}


def test_super_in_a_mixin_goes_to_the_partner_it_is_combined_with(tmp_path: Path) -> None:
    """``super().m()`` in a class whose bases lack m: through the classes that combine it with others, the
    method after it in their order (ThreadingMixIn before TCPServer); with no such class, the one method of
    that name in the file's other classes that ends the chain (email's headers, combined by `type()` at run
    time), and a call of that method on the partner runs the mixin's too. Not guessed among unrelated
    classes, nor where the mixin has a base outside the corpus (dict)."""
    assert _calls_in(tmp_path, _SUPER_MIXINS) == {
        ("BaseHeader.__new__", "BaseHeader.init", "self"),
        ("BaseHeader.__new__", "DateHeader.init", "override"),
        ("BaseHeader.__new__", "UniqueDateHeader.init", "override"),
        ("DateHeader.init", "BaseHeader.init", "super"),
        ("UniqueDateHeader.init", "DateHeader.init", "super"),
        ("ThreadingMixIn.close", "TCPServer.close", "super"),
    }


def _chain_of_calls() -> str:
    """g0 returns a Target, g1 returns g0(), ... g7 returns g6(); h1 returns g7(), ... h5 returns h4();
    `early` calls run on h5() (13 calls deep), then `late` on g6() (7 deep)."""
    lines = ["class Target:", "    def run(self):", "        return 1", "", "", "def g0():", "    return Target()"]
    for k in range(1, 8):
        lines += ["", "", f"def g{k}():", f"    return g{k - 1}()"]
    for k in range(1, 6):
        lines += ["", "", f"def h{k}():", f"    return {'g7' if k == 1 else f'h{k - 1}'}()"]
    lines += ["", "", "def early():", "    return h5().run()", "", "", "def late():", "    return g6().run()", ""]
    return "\n".join(lines)


def test_a_type_cut_short_deep_in_one_chain_is_found_again_nearer_the_top(tmp_path: Path) -> None:
    """Types are followed through at most a few calls: `early`'s chain is too long, and on its way it asks
    what g6() gives, too deep to reach Target. `late` asks the same nearer the top, and reaches it (the
    answer cut short is not kept for it; it was, so an edge depended on the order calls were linked in)."""
    (tmp_path / "chain.py").write_text(_chain_of_calls())
    records, edges = _graph([tmp_path])
    assert {e for e in _named(records, edges, Rel.CALLS) if e[1] == "Target.run"} == {
        ("late", "Target.run", "inferred")
    }


_GUESSED = {
    "actions.py": """\
        class Formatter:
            def add_text(self, text):
                return text


        class Parser:
            def _get_formatter(self):
                return Formatter()

            def get(self, key):
                return key


        class VersionAction:
            def __call__(self, parser, version):
                formatter = parser._get_formatter()
                formatter.add_text(version)
                found = parser.get(version)
                return found.strip()


        def configure(options):
            return options.get("x").add_text("y")
        """,
}


def test_a_call_on_an_unknown_receiver_returns_what_the_one_method_of_its_name_returns(tmp_path: Path) -> None:
    """argparse's `formatter = parser._get_formatter()` in an action, `parser` being whatever the caller
    passes: the corpus has one `_get_formatter`, whose return types `formatter` (inferred). A name a built-in
    type has too (`get`: a dict's) guesses nothing, as its edge does not."""
    assert _calls_in(tmp_path, _GUESSED) == {
        ("VersionAction.__call__", "Parser._get_formatter", "name-only"),
        ("VersionAction.__call__", "Formatter.add_text", "inferred"),
    }


_HANDED_ON = {
    "keys.py": """\
        class SafeKey:
            def __init__(self, obj):
                self.obj = obj


        def by_length(text):
            return len(text)


        def sort(items):
            return items


        def ordered(values):
            return sorted(values, key=SafeKey)


        def longest(words):
            return max(words, key=by_length)


        def lengths(words):
            return list(map(by_length, words))


        def in_place(words):
            words.sort(key=by_length)


        def plain(words):
            return sorted(words, key=len), filter(lambda w: w, words)


        def mine(values):
            return sort(values)
        """,
}


def test_a_function_handed_to_a_builtin_that_calls_it_is_called(tmp_path: Path) -> None:
    """`sorted(values, key=SafeKey)` calls SafeKey (pprint's `_safe_key`), as do `max(key=)`, `map(f, xs)` and
    `xs.sort(key=f)`, the callee found as its name is; a built-in key (`len`), a lambda, and a function of
    the corpus that shadows the built-in's name are no such call."""
    assert _calls_in(tmp_path, _HANDED_ON) == {
        ("ordered", "SafeKey.__init__", "local"),
        ("longest", "by_length", "local"),
        ("lengths", "by_length", "local"),
        ("in_place", "by_length", "local"),
        ("mine", "sort", "local"),
    }


_LOCAL_CONTAINERS = {
    "groups.py": """\
        class Group:
            def add(self, item):
                return item


        class Exclusive:
            def add(self, item):
                return item


        def copy_actions(actions, exclusive):
            group_map = {}
            for action in exclusive:
                group_map[action] = Exclusive()
            group_map["all"] = Group()
            for action in actions:
                group_map.get(action).add(action)


        def add_all(items):
            groups = []
            groups.append(Group())
            for group in groups:
                group.add(items)


        def unknown(groups, items):
            for group in groups:
                group.add(items)
        """,
}


def test_a_local_dict_or_list_holds_the_instances_its_scope_puts_into_it(tmp_path: Path) -> None:
    """argparse's `group_map = {}`, `group_map[action] = mutex_group`, then `group_map.get(action,
    self)._add_action(...)`: an element of a local container of no class of the corpus is one of what its scope
    puts into it. A parameter nothing is put into stays unknown (its `add` is no method the corpus defines once)."""
    assert _calls_in(tmp_path, _LOCAL_CONTAINERS) == {
        ("copy_actions", "Exclusive.add", "instance"),
        ("copy_actions", "Group.add", "instance"),
        ("add_all", "Group.add", "instance"),
    }


_SELF_FAMILY = {
    "parsing.py": """\
        class Message:
            def attach(self, part):
                return part


        class Parser:
            def __init__(self):
                self._stack = []
                self._names = []

            def push(self):
                self._stack.append(Message())
                self._names.append("root")

            def close(self):
                root = self._stack.pop()
                root.attach(self._stack[-1])
                return self._names.pop().upper()


        class Formatter:
            def format(self, action):
                return action


        class Container:
            def add(self, action):
                return self._formatter().format(action)

            def group(self):
                return Group(self)

            def remove(self, action):
                return action


        class ArgumentParser(Container):
            def _formatter(self):
                return Formatter()

            def remove(self, action):
                return action


        class Group(Container):
            def __init__(self, container):
                self._container = container

            def remove(self, action):
                return self._container.remove(action)
        """,
}


def test_self_may_be_any_subclass_that_runs_the_method(tmp_path: Path) -> None:
    """What `self` gives where the class alone does not tell: the value of a method only subclasses define
    (argparse's `self._get_formatter()` in `_ActionsContainer`), the elements of a list attribute the class
    fills (email's `self._msgstack.append(msg)`, then `self._msgstack.pop()`; a string put in calls nothing),
    and `self` handed to another object, which may be an instance of any subclass running the method
    (`_MutuallyExclusiveGroup(self)`: its `_container` is a parser or a group)."""
    assert _calls_in(tmp_path, _SELF_FAMILY) == {
        ("Parser.close", "Message.attach", "inferred"),
        ("Container.add", "ArgumentParser._formatter", "override"),
        ("Container.add", "Formatter.format", "inferred"),
        ("Container.group", "Group.__init__", "local"),
        ("Group.remove", "Container.remove", "inferred"),
        ("Group.remove", "ArgumentParser.remove", "inferred"),
        ("Group.remove", "Group.remove", "inferred"),
    }


def test_self_handed_from_a_class_with_many_subclasses_stands_for_none_of_them(tmp_path: Path) -> None:
    """Nine subclasses below the class handing `self` say little of which one it is (sklearn's estimator mixins
    have 263): the receiver keeps the class itself, and a call on it reaches no subclass's method."""
    subclasses = "".join(f"class Sub{i}(Base):\n    def remove(self, x):\n        return x\n\n\n" for i in range(9))
    base = """\
        class Base:
            def group(self):
                return Group(self)

            def remove(self, x):
                return x


        class Group:
            def __init__(self, container):
                self._container = container

            def remove(self, x):
                return self._container.remove(x)


        """
    files = {"many.py": textwrap.dedent(base) + subclasses}
    assert {edge for edge in _calls_in(tmp_path, files) if edge[0] == "Group.remove"} == {
        ("Group.remove", "Base.remove", "inferred")
    }


_TOKENS = {
    "tokens.py": """\
        import os


        class Token(list):
            @property
            def text(self):
                return "".join(x.text for x in self)  # the elements: any token

            @property
            def value(self):
                return 0


        class Word(Token):
            @property
            def text(self):
                return "w"

            @property
            def first(self):
                return self[0].text


        class A(Token):
            value = 1

        class B(Token):
            @property
            def value(self):
                return 2

        class C(Token):
            @property
            def value(self):
                return 3

        class D(Token):
            @property
            def value(self):
                return 4

        class E(Token):
            @property
            def value(self):
                return 5


        def show(token, path: str):
            return token.text, os.sep.text, path.text, token.value
        """,
}


def test_a_property_of_an_unknown_receiver_is_guessed_among_few_of_its_name(tmp_path: Path) -> None:
    """A property read on an element of a container, or on a plain variable of no known type, links to
    the getters of that name in the file (property-name) when there are at most four: not on a
    module or an annotated variable, and not among five (`value`)."""
    assert _calls_in(tmp_path, _TOKENS) == {
        ("Token.text", "Token.text", "property-name"),
        ("Token.text", "Word.text", "property-name"),
        ("Word.first", "Token.text", "property-name"),
        ("Word.first", "Word.text", "property-name"),
        ("show", "Token.text", "property-name"),
        ("show", "Word.text", "property-name"),
    }


_PASSED = {
    "proxy.py": """\
        class Parser:
            def get(self):
                return 1

            def section(self):
                return Proxy(self, "s")


        class Proxy:
            def __init__(self, parser, name):
                self._parser = parser

            def read(self):
                return self._parser.get()


        class Sink:
            def close(self):
                return 0


        def helper(item, *, sink):
            item.get()
            sink.close()


        def run():
            helper(Parser(), sink=Sink())


        class Base:
            def init(self, value):
                value.get()


        class Child(Base):
            def init(self, value):
                Base.init(self, value)


        def main():
            Child().init(Parser())


        class Factory:
            @classmethod
            def build(cls, item):
                return item.get()


        def make():
            return Factory.build(Parser())
        """,
}


def test_an_untyped_parameter_has_the_types_its_callers_pass(tmp_path: Path) -> None:
    """What the corpus's callers pass to an untyped parameter types it (inferred): positionally past
    a bound self (or cls), by keyword, through a class (``Base.init(self, value)``: self given) and through
    ``self._parser = parser``; a method only built-in types share (get, close) is no guess without."""
    assert _calls_in(tmp_path, _PASSED) == {
        ("Parser.section", "Proxy.__init__", "local"),
        ("Proxy.read", "Parser.get", "inferred"),
        ("helper", "Parser.get", "inferred"),
        ("helper", "Sink.close", "inferred"),
        ("run", "helper", "local"),
        ("Base.init", "Parser.get", "inferred"),
        ("Child.init", "Base.init", "local"),
        ("main", "Child.init", "instance"),
        ("Factory.build", "Parser.get", "inferred"),  # cls bound even through the class
        ("make", "Factory.build", "local"),
    }


_ELEMENTS = {
    "tokens.py": """\
        class TokenList(list):
            @property
            def value(self):
                return "".join(x.value for x in self)  # an element of any token list

            def fold(self):
                return self[0].fold()


        class Terminal(str):
            @property
            def value(self):
                return str(self)

            def fold(self):
                return str(self)


        class Space(Terminal):
            @property
            def value(self):
                return " "


        class Domain(TokenList):
            @property
            def domain(self):
                return self[-1].value


        class LocalPart(TokenList):
            @property
            def local(self):
                for part in self:
                    return part.value


        class AddrSpec(TokenList):
            @property
            def domain(self):
                return self[-1].domain


        class Address(TokenList):
            @property
            def domain(self):
                return self[0].domain


        def get_domain(value):
            domain = Domain()
            domain.append(Terminal(value))
            domain.insert(0, Space())
            return domain, value


        def get_local_part(value):
            local_part = LocalPart()
            local_part.extend([Terminal(value)])
            return local_part, ""


        def get_address(value):
            addr_spec = AddrSpec()
            token, value = get_local_part(value)
            addr_spec.append(token)
            token, rest = get_domain(value)
            addr_spec[1] = token
            return Address([addr_spec]).domain
        """,
}


def test_elements_of_user_containers_are_what_the_corpus_puts_in(tmp_path: Path) -> None:
    """The elements of a user-defined container are what the corpus appends, inserts, extends, sets
    or constructs it with, into an instance of the class or of a subclass (``self`` may be any): a
    property of an element links through its type (property), a method too (inferred), with no guess
    by name; ``a, b = f()`` binds the items of the tuple f returns."""
    assert _calls_in(tmp_path, _ELEMENTS) == {
        ("TokenList.value", "TokenList.value", "property"),  # LocalPart and Domain in an AddrSpec
        ("TokenList.value", "Terminal.value", "property"),
        ("TokenList.value", "Space.value", "property"),
        ("TokenList.fold", "TokenList.fold", "inferred"),
        ("TokenList.fold", "Terminal.fold", "inferred"),
        ("Domain.domain", "Terminal.value", "property"),
        ("Domain.domain", "Space.value", "property"),
        ("LocalPart.local", "Terminal.value", "property"),
        ("AddrSpec.domain", "Domain.domain", "property"),  # LocalPart has no domain
        ("Address.domain", "AddrSpec.domain", "property"),
        ("get_address", "get_local_part", "local"),
        ("get_address", "get_domain", "local"),
        ("get_address", "Address.domain", "property"),
    }


_UNPACKED = {
    "words.py": """\
        class Word:
            def fold(self):
                return "w"


        class Space:
            def fold(self):
                return " "


        class Line(list):
            def words(self):
                return [w for w in self]


        def get_word():
            word = Word()
            return word, ""


        def get_pair():
            if input():
                return get_word()
            return Word(), Space()


        class Reader:
            parse = staticmethod(get_pair)

            @classmethod
            def first(cls):
                word, _ = cls.parse()
                return word.fold()


        def second():
            _, space = get_pair()
            return space.fold()


        def swapped():
            left, right = Space(), Word()
            return right.fold()


        def starred():
            word, *rest = get_pair()
            return word.fold()


        def lines():
            line = Line()
            line.append(Word())
            for word in line.words():
                word.fold()
        """,
}


def test_unpacking_binds_the_items_of_a_returned_tuple(tmp_path: Path) -> None:
    """``a, b = f()`` binds each name to the values at its position in the tuples f returns (also
    through ``return g()`` and ``staticmethod(f)``), ``a, b = x, y`` each to its own; a starred
    target binds nothing; a comprehension returned holds what its element holds."""
    assert _calls_in(tmp_path, _UNPACKED) == {
        ("get_pair", "get_word", "local"),
        ("Reader.first", "get_pair", "instance"),
        ("Reader.first", "Word.fold", "inferred"),
        ("second", "get_pair", "local"),
        ("second", "Space.fold", "inferred"),  # get_word's "" holds nothing to follow
        ("swapped", "Word.fold", "instance"),
        ("starred", "get_pair", "local"),
        ("lines", "Line.words", "instance"),
        ("lines", "Word.fold", "inferred"),
    }


def test_an_empty_tuple_annotation_is_a_type_of_nothing(tmp_path: Path) -> None:
    """``tuple[()]`` (packaging's ``BuildTag``) has no arguments: linking reads past it, it does not raise."""
    files = {
        "tags.py": """\
            from typing import Tuple

            BuildTag = tuple[()] | tuple[int, str]


            def helper():
                return ()


            def empty(tag: Tuple[()], other: "tuple[()]") -> tuple[()]:
                first, second = empty_pair()
                return helper()


            def empty_pair() -> Tuple[()]:
                return helper()
            """
    }
    assert _calls_in(tmp_path, files) == {
        ("empty", "helper", "local"),
        ("empty", "empty_pair", "local"),
        ("empty_pair", "helper", "local"),
    }


_SHADOWED = {
    "config.py": """\
        class Plain:
            def before(self):
                return 1


        class Fancy(Plain):
            def before(self):
                return 2


        class Config:
            default = Plain()

            def __init__(self):
                self.interpolation = self.default

            def get(self):
                return self.interpolation.before()


        class Strict(Config):
            default = Fancy()
        """,
}


def test_an_attribute_of_self_has_what_subclasses_assign_in_their_bodies(tmp_path: Path) -> None:
    """``self.default`` may be read on a subclass that assigns its own in its class body (configparser's
    _DEFAULT_INTERPOLATION): both values, inferred."""
    assert _calls_in(tmp_path, _SHADOWED) == {
        ("Config.get", "Plain.before", "inferred"),
        ("Config.get", "Fancy.before", "inferred"),
    }


def test_the_linker_answers_what_a_name_refers_to(tmp_path: Path) -> None:
    """Linker.resolve, mro and members, for an indexed file and for code that was never indexed."""
    _write(tmp_path, _TYPED)
    records, _ = _graph([tmp_path])
    files = [r for r in records.values() if isinstance(r, FileNode)]
    classes = [r for r in records.values() if isinstance(r, ClassNode)]
    linker = Linker(files, classes, [r for r in records.values() if isinstance(r, NameNode)])
    core = next(f for f in files if f.source.endswith("core.py"))

    def names(found: list[NameNode | ClassNode]) -> list[tuple[str, str]]:
        return [(type(n).__name__, n.name) for n in found]

    assert names(linker.resolve(core, "Command.parent_of", "ctx.parent.invoke")) == [("NameNode", "Context.invoke")]
    assert names(linker.resolve(core, "Context.invoke", "self.formatter.write")) == [("NameNode", "Formatter.write")]
    assert names(linker.resolve(core, "Command.run", "out.write")) == [
        ("NameNode", "Formatter.write"),
        ("NameNode", "Plain.write"),
    ]
    assert names(linker.resolve(core, "Context.root", "cls._make")) == [("NameNode", "Context._make")]
    assert names(linker.resolve(core, "", "Context")) == [("ClassNode", "Context")]
    assert names(linker.resolve(core, "Command.made", "ctx")) == []  # a variable, not a definition
    assert linker.resolve(core, "Command.run", "ctx.no_such_method") == []
    edited = textwrap.dedent("""\
        from app.core import Context


        def fresh(c: Context):
            return c.child()
        """)
    [unindexed] = [
        r for r in file_structure(str(tmp_path / "scratch.py"), "python", edited, "f0", []) if isinstance(r, FileNode)
    ]
    assert names(linker.resolve(unindexed, "fresh", "c.child")) == [("NameNode", "Context.child")]
    plain, formatter, context = (next(c for c in classes if c.name == n) for n in ("Plain", "Formatter", "Context"))
    assert linker.mro(plain) == [plain, formatter]
    assert [n.name for n in linker.members(formatter)] == ["Formatter.__init__", "Formatter.write"]
    assert sorted(n.name for n in linker.members(context)).count("Context.depth") == 2  # getter and setter


def test_overload_stubs_fold_into_their_implementation(tmp_path: Path) -> None:
    """One function per @overload family (the implementation), its stubs' signatures kept in refs;
    a stub with no implementation after it stays a function."""
    _write(
        tmp_path,
        {
            "picks.py": """\
                import typing as t
                from typing import overload


                @overload
                def pick(x: int) -> int: ...
                @t.overload
                def pick(x: str) -> str: ...
                def pick(x):
                    return x


                @overload
                def lone(x: int) -> int: ...


                def use():
                    return pick(1)
                """
        },
    )
    records, edges = _graph([tmp_path])
    functions = sorted((r.name, r.start_line) for r in records.values() if isinstance(r, NameNode))
    assert functions == [("lone", 13), ("pick", 9), ("use", 17)]
    assert _named(records, edges, Rel.CALLS) == {("use", "pick", "local")}
    [file] = [r for r in records.values() if isinstance(r, FileNode)]
    assert json.loads(file.refs)["overloads"] == [
        ["pick", "def pick(x: int) -> int"],
        ["pick", "def pick(x: str) -> str"],
        ["lone", "def lone(x: int) -> int"],
    ]


# -- the other languages, hand-counted ----------------------------------------------------------
#: Per fixture: its CONTAINS, INHERITS and CALLS edges, counted by hand.
LANGUAGE_CASES: dict[str, tuple[set[tuple[str, ...]], set[tuple[str, ...]], set[tuple[str, ...]]]] = {
    "Shapes.java": (
        {
            ("FILE", "Shape"),
            ("FILE", "Base"),
            ("FILE", "Square"),
            ("Base", "Base.area"),
            ("Base", "Base.scale"),
            ("Square", "Square.side"),
        },
        {("Base", "Shape"), ("Square", "Base")},
        {
            ("Base.area", "Base.scale", "self"),
            ("Square.side", "Base.area", "self"),
            ("Square.side", "Base.scale", "self"),
        },
    ),
    "shapes.go": (
        {
            ("FILE", "Counter"),
            ("Counter", "Counter.Add"),
            ("Counter", "Counter.Get"),
            ("FILE", "Total"),
            ("FILE", "helper"),
        },
        set(),
        {
            ("Counter.Add", "Counter.Get", "self"),
            ("Total", "Counter.Add", "instance"),  # c := &Counter{}
            ("Total", "Counter.Get", "instance"),
            ("Total", "helper", "local"),
        },
    ),
    "shapes.rs": (
        {
            ("FILE", "Named"),
            ("FILE", "Dog"),
            ("Dog", "Dog.name"),
            ("Dog", "Dog.describe"),
            ("Dog", "Dog.new"),
            ("FILE", "make"),
        },
        {("Dog", "Named")},  # impl Named for Dog
        {("Dog.name", "Dog.describe", "self"), ("make", "Dog.new", "qualified"), ("make", "Dog.name", "local")},
    ),
    "shapes.c": (
        {("FILE", "point"), ("FILE", "square"), ("FILE", "norm"), ("FILE", "main")},
        set(),
        {("norm", "square", "local"), ("main", "norm", "local")},  # abs is not in the corpus
    ),
    "shapes.cpp": (
        {
            ("FILE", "Animal"),
            ("FILE", "Bird"),
            ("Animal", "Animal.legs"),
            ("Animal", "Animal.total"),
            ("Bird", "Bird.legs"),
            ("Bird", "Bird.wings"),
            ("FILE", "count"),
        },
        {("Bird", "Animal")},
        {
            ("Animal.total", "Animal.legs", "self"),
            ("Bird.wings", "Animal.total", "self"),
            ("Bird.wings", "Bird.legs", "self"),
            ("count", "Bird.wings", "local"),
            ("count", "Animal.total", "local"),
        },
    ),
    "Shapes.cs": (
        {
            ("FILE", "Zoo.IFeed"),
            ("FILE", "Zoo.Keeper"),
            ("FILE", "Zoo.HeadKeeper"),
            ("Zoo.Keeper", "Zoo.Keeper.Feed"),
            ("Zoo.Keeper", "Zoo.Keeper.Log"),
            ("Zoo.HeadKeeper", "Zoo.HeadKeeper.Shift"),
        },
        {("Zoo.Keeper", "Zoo.IFeed"), ("Zoo.HeadKeeper", "Zoo.Keeper")},
        {("Zoo.Keeper.Feed", "Zoo.Keeper.Log", "self"), ("Zoo.HeadKeeper.Shift", "Zoo.Keeper.Feed", "self")},
    ),
    "shapes.ts": (
        {
            ("FILE", "Sized"),
            ("FILE", "Box"),
            ("FILE", "BigBox"),
            ("Box", "Box.size"),
            ("Box", "Box.width"),
            ("BigBox", "BigBox.width"),
            ("FILE", "total"),
        },
        {("Box", "Sized"), ("BigBox", "Box")},
        {("Box.size", "Box.width", "self"), ("BigBox.width", "Box.width", "self"), ("total", "Box.size", "local")},
    ),
    "shapes.js": (
        {
            ("FILE", "Stack"),
            ("Stack", "Stack.constructor"),
            ("Stack", "Stack.push"),
            ("Stack", "Stack.size"),
            ("FILE", "fill"),
            ("FILE", "report"),
        },
        set(),
        # this.items.push(x) is a method of a field: not Stack.push
        {
            ("Stack.push", "Stack.size", "self"),
            ("fill", "Stack.push", "instance"),  # const s = new Stack()
            ("fill", "report", "local"),
            ("report", "Stack.size", "local"),
        },
    ),
}


@pytest.mark.parametrize("fixture", sorted(LANGUAGE_CASES))
def test_language_structure_is_exactly_the_hand_count(fixture: str) -> None:
    records, edges = _graph([STRUCTURE / fixture])
    contains, inherits, calls = LANGUAGE_CASES[fixture]
    assert _named(records, edges, Rel.CONTAINS) == contains
    assert _named(records, edges, Rel.INHERITS) == inherits
    assert _named(records, edges, Rel.CALLS) == calls
    assert len([e for e in edges if e.type is Rel.CALLS]) == len(calls)


#: Per fixture of tests/fixtures/typed: its CALLS edges, counted by hand. Box and Bag both define
#: size; by name each call would reach both (ambiguous), the receiver's declared type picks one.
TYPED_CASES: dict[str, set[tuple[str, str, str]]] = {
    "Typed.java": {
        ("Use.count", "Box.size", "annotation"),  # Box b
        ("Use.weigh", "Bag.size", "annotation"),  # Bag g = new Bag()
        ("Use.guess", "Box.size", "instance"),  # var h = new Box()
    },
    "Typed.cs": {
        ("Store.Use.Count", "Store.Box.Size", "annotation"),
        ("Store.Use.Weigh", "Store.Bag.Size", "annotation"),
        ("Store.Use.Guess", "Store.Box.Size", "instance"),  # var h = new Box()
    },
    "typed.ts": {
        ("count", "Box.size", "annotation"),  # b: Box
        ("weigh", "Bag.size", "instance"),  # const g = new Bag()
        ("guess", "Box.size", "annotation"),  # const h: Box = ...
    },
    "typed.go": {
        ("Bag.Twice", "Bag.Size", "self"),  # x *Bag, the receiver
        ("Bag.Twice", "Box.Size", "annotation"),  # b *Box, not the receiver
        ("Count", "Box.Size", "annotation"),
        ("Weigh", "Bag.Size", "instance"),  # g := &Bag{}
        ("Guess", "Box.Size", "annotation"),  # var h Box
    },
}


@pytest.mark.parametrize("fixture", sorted(TYPED_CASES))
def test_receivers_typed_by_declarations(fixture: str) -> None:
    records, edges = _graph([FIXTURES / "typed" / fixture])
    assert _named(records, edges, Rel.CALLS) == TYPED_CASES[fixture]


# -- stores: cross-file edges follow incremental builds -----------------------------------------
def _calls(store_graph: set[tuple[str, str, str]]) -> int:
    return sum(1 for _, rel, _ in store_graph if rel == "CALLS")


def test_cross_file_edges_follow_edits_and_deletions(
    open_store: Opener,  # noqa: F811 (the fixture)
    module_embedder: CachedEmbedder,
    tmp_path: Path,
) -> None:
    """Editing the callee's file re-links the calls into it, deleting it removes them; each time the
    incremental graph equals a clean build of the corpus as it is."""
    root = tmp_path / "corpus"
    _write(root, _PACKAGE)
    shutil.copy(STDLIB / "textwrap.py", root / "textwrap.py")
    store = open_store("incremental")
    build([root], store, module_embedder, parts={"functions"})
    first = snapshot(store)
    kb = KnowledgeBase(tmp_path / "kb", store, module_embedder)  # the store queries the CLI uses
    assert {(c.function.name, c.line, c.resolution) for found in kb.calls("run") for c in found.calls} == {
        ("Base.__init__", 7, "import"),
        ("other", 8, "import"),
        ("helper", 9, "import"),
        ("Square.both", 10, "instance"),
    }
    assert {c.function.name for found in kb.calls("helper", callers=True) for c in found.calls} == {
        "other",
        "Square.both.<locals>.inner",
        "Square.both",
        "run",
    }
    # only the calls resolved in the ways asked for, the limit counting what is left of them
    assert [
        ([c.function.name for c in calls], left_out, filtered_out)
        for _, calls, left_out, filtered_out in kb.calls("run", limit=2, resolutions=["instance", "import"])
    ] == [(["Base.__init__", "other"], 2, 0)]
    assert [
        ([c.function.name for c in calls], left_out, filtered_out)
        for _, calls, left_out, filtered_out in kb.calls("run", resolutions=["instance"])
    ] == [(["Square.both"], 0, 3)]
    with pytest.raises(ConfigError, match="unknown resolution 'certain': use local, import, self"):
        kb.calls("run", resolutions=["self", "certain"])
    assert [(depth, getattr(r, "name", "FILE")) for depth, r in kb.file_outline("pkg/shapes.py")] == [
        (0, "FILE"),
        (1, "Base"),
        (2, "Base.__init__"),
        (2, "Base.area"),
        (2, "Base.scale"),
        (2, "Base.make"),
        (2, "Base.build"),
        (1, "Square"),
        (2, "Square.scale"),
        (2, "Square.both"),
        (1, "Square.both.<locals>.inner"),
    ]

    util = root / "pkg" / "util.py"
    util.write_text(util.read_text().replace("def other():", "def renamed():"))  # main.run called other
    build([root], store, module_embedder, parts={"functions"})
    edited = snapshot(store)
    assert _calls(edited.edges) == _calls(first.edges) - 1
    util.unlink()
    build([root], store, module_embedder, parts={"functions"})
    incremental = snapshot(store)
    # helper (twice), the imports into util.py and other's own call are gone with the file
    assert _calls(incremental.edges) < _calls(edited.edges)

    clean = open_store("clean")
    build([root], clean, module_embedder, parts={"functions"})
    assert_same_graph(incremental, snapshot(clean))


@pytest.mark.cli
def test_the_cli_shows_callers_callees_and_files(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    built = run_cli("build", str(STRUCTURE), "--db", db, "--parts", "functions")
    assert built.returncode == 0, built.stderr
    callees = run_cli("graph", "callees", "Square.side", "--db", db, "--format", "json")
    assert callees.returncode == 0, callees.stderr
    [side] = json.loads(callees.stdout)
    assert (side["name"], Path(side["source"]).name) == ("Square.side", "Shapes.java")
    assert [(c["name"], c["line"], c["resolution"]) for c in side["callees"]] == [
        ("Base.area", 13, "self"),
        ("Base.scale", 13, "self"),
    ]
    capped = run_cli("graph", "callees", "Square.side", "--db", db, "--limit", "1")
    assert capped.stdout.splitlines()[1:] == [
        f"  -> Base.area  {STRUCTURE / 'Shapes.java'}:8  (line 13, self)",
        "  ... 1 more (--limit 1)",
    ]
    capped_json = run_cli("graph", "callees", "Square.side", "--db", db, "--limit", "1", "--format", "json")
    assert [(f["left_out"], len(f["callees"])) for f in json.loads(capped_json.stdout)] == [(1, 1)]
    callers = run_cli("graph", "callers", "Counter.Get", "--db", db)
    assert callers.returncode == 0, callers.stderr
    assert [line.split()[:2] for line in callers.stdout.splitlines()[1:]] == [["<-", "Counter.Add"], ["<-", "Total"]]
    built_by = run_cli("graph", "callers", "Counter.Get", "--db", db, "--resolution", "instance")
    assert built_by.stdout.splitlines()[1:] == [
        f"  <- Total  {STRUCTURE / 'shapes.go'}:14  (line 19, instance)",
        "  ... 1 resolved in other ways (--resolution)",
    ]
    as_json = run_cli("graph", "callers", "Counter.Get", "--db", db, "--resolution", "instance", "--format", "json")
    assert [(len(f["callers"]), f["left_out"], f["filtered_out"]) for f in json.loads(as_json.stdout)] == [(1, 0, 1)]
    unknown = run_cli("graph", "callers", "Counter.Get", "--db", db, "--resolution", "certain")
    assert unknown.returncode == 2 and "'certain' is not one of 'local', 'import'" in unknown.stderr
    outline = run_cli("graph", "file", "shapes.rs", "--db", db)
    assert outline.stdout.splitlines()[1:] == [
        "  CLASS Named  1-3",
        "  CLASS Dog  5-7",
        "    NAME Dog.name  10-12",
        "    NAME Dog.describe  16-18",
        "    NAME Dog.new  19-21",
        "  NAME make  24-27",
    ]
    missing = run_cli("graph", "callers", "no_such_function", "--db", db)
    assert missing.returncode == 1 and missing.stderr == "pkg: no function named 'no_such_function'\n"


_COPIED = {
    "parts.py": """\
        class Part:
            def fold(self):
                return "p"

            @property
            def value(self):
                return "v"


        class Parts(list):
            pass


        def build():
            parts = Parts()
            parts.append(Part())
            return parts


        def refold(tree):
            parts = list(build()) + list(tree)
            first = parts.pop(0)
            rest = build()[1:]
            return first.fold() + "".join(p.value for p in rest) + sorted(tree)[0].fold()
        """,
}


def test_a_copy_or_slice_of_a_container_holds_its_elements(tmp_path: Path) -> None:
    """``list(xs)`` and ``xs[i:j]`` hold the elements of xs, ``a + b`` what a holds (email's
    _refold_parse_tree copies a token list, prepends to the copy, then pops and folds its parts); of an
    untyped xs (`sorted(tree)`), nothing is known."""
    assert _calls_in(tmp_path, _COPIED) == {
        ("refold", "build", "local"),
        ("refold", "Part.fold", "inferred"),
        ("refold", "Part.value", "property"),
    }


def test_the_line_map_finds_the_innermost_function_as_the_scan_does() -> None:
    """FunctionAt (each line's function painted once) against innermost() (a scan per line), on every
    line of real files with nested functions and on a tie of one-line functions (the first one wins)."""
    by_file: dict[str, list[NameNode]] = {}
    for node in parse_corpus([*STDLIB_SLICE, STDLIB / "functools.py"]).nodes:
        if isinstance(name := record_of(node), NameNode):
            by_file.setdefault(name.source, []).append(name)
    tie = [
        NameNode(id=f"go{i}", source="a.go", name=f"f{i}", row=None, lang="go", start_line=3, end_line=3)
        for i in (1, 2)
    ]
    by_file["a.go"] = tie
    assert any("<locals>" in n.name for names in by_file.values() for n in names)
    for names in by_file.values():
        function_at = FunctionAt(names)
        lines = range(max(n.end_line for n in names) + 3)
        assert [function_at(line) for line in lines] == [innermost(names, line) for line in lines]
    assert FunctionAt(tie)(3) is tie[0]
