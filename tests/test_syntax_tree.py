"""Python's `ast` from many threads at once, as `pkg serve`'s readers prune in parallel."""

from __future__ import annotations

import gc
import sys
import threading
import warnings
from collections.abc import Iterator

import pytest

from pkg.code.syntax_tree import parse_python

NESTED = "".join(
    f"def f{i}(x):\n    if x:\n        for y in x:\n            while y:\n                y = [z for z in y if z]\n"
    for i in range(30)
)


class Finalised:
    """Garbage whose finaliser runs Python code, so a collection mid-parse may hand the GIL over."""

    def __del__(self) -> None:
        sum(range(50))


@pytest.fixture
def eager_switching() -> Iterator[None]:
    """Threads switch as often as CPython allows and the collector runs often: under these, eight
    threads calling plain `ast.parse` fail with "AST constructor recursion depth mismatch" on
    CPython 3.11 (29 of 800 calls when measured)."""
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50, 1, 1)
    yield
    sys.setswitchinterval(interval)
    gc.set_threshold(*thresholds)


def _parse_often(depth: int, failures: list[BaseException]) -> None:
    if depth:  # threads at different stack depths, as the server's are
        _parse_often(depth - 1, failures)
        return
    for _ in range(100):
        garbage = [Finalised() for _ in range(20)]
        cycle: list[object] = [garbage]
        cycle.append(cycle)
        del garbage, cycle
        try:
            parse_python(NESTED)
        except SystemError as error:
            failures.append(error)


@pytest.mark.usefixtures("eager_switching")
def test_parse_python_is_safe_from_many_threads() -> None:
    failures: list[BaseException] = []
    threads = [threading.Thread(target=_parse_often, args=(10 * i, failures)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_parse_python_raises_what_ast_raises_and_keeps_quiet() -> None:
    with pytest.raises(SyntaxError):
        parse_python("def broken(:\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert parse_python('path = "C:\\d"\n').body  # an invalid escape: plain ast.parse warns
    assert caught == []
