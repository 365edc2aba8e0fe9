"""The collector settings held while work runs: made by the first holder, undone by the last."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

from pkg.collector import BUILD_GC_THRESHOLD, collecting_rarely, collector_paused, keep_out_of_collections


def test_a_pause_held_twice_ends_only_when_the_second_holder_leaves() -> None:
    assert gc.isenabled()
    with collector_paused:
        with collector_paused:
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_leaves_a_stopped_collector_stopped() -> None:
    gc.disable()
    try:
        with collector_paused:
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collecting_rarely_raises_the_first_threshold_and_restores_what_it_found() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    try:
        with collecting_rarely:
            with collecting_rarely:
                assert gc.get_threshold() == (BUILD_GC_THRESHOLD, 11, 12)
            assert gc.get_threshold() == (BUILD_GC_THRESHOLD, 11, 12)
        assert gc.get_threshold() == (700, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_a_decorated_call_runs_with_the_collector_off() -> None:
    seen = []

    @collector_paused
    def work() -> None:
        seen.append(gc.isenabled())

    work()
    work()
    assert seen == [False, False] and gc.isenabled()


class _Cyclic:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_tables_kept_out_of_collections_are_freed_once_given_up_and_kept_again() -> None:
    table = _Cyclic()
    alive = weakref.ref(table)
    keep_out_of_collections()
    assert gc.get_freeze_count() > 0
    del table
    gc.collect()
    assert alive() is not None  # frozen: no collection scans it
    keep_out_of_collections()  # what was frozen is collectable again first
    assert alive() is None


def test_frozen_objects_are_finalized_at_exit() -> None:
    """The interpreter's last collection ignores frozen objects: kept out of collections, an object in a
    cycle was never finalized (extension types then reported themselves leaked)."""
    program = (
        "from pkg.collector import keep_out_of_collections\n"
        "class Table:\n"
        "    def __init__(self): self.me = self\n"
        "    def __del__(self): print('finalized', flush=True)\n"
        "table = Table()\n"
        "keep_out_of_collections()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == "finalized\n"
