"""The collector settings held while work runs: made by the first holder, undone by the last."""

from __future__ import annotations

import gc

from pkg.collector import BUILD_GC_THRESHOLD, collecting_rarely, collector_paused


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
