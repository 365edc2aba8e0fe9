"""Process-wide settings of Python's cyclic garbage collector, held while some work runs. Builds,
linking passes and definitions-context calls may overlap on threads of one process (`pkg serve` beside
`pkg watch`), so each setting is made by the first holder and undone by the last one to end, whatever
the order they end in."""

from __future__ import annotations

import atexit
import functools
import gc
import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Generic, TypeVar

T = TypeVar("T")

#: The collector's first threshold while a build runs. A build allocates millions of objects that live
#: until it ends (the parsed corpus) and, per file, trees that die young by reference counting; at the
#: default 700 those trees outlive collections, are promoted and set off full collections, each one
#: walking the whole corpus: 28% of parsing bench_scale's 100k corpus (31.6 of 112.6 CPU s, 132 full
#: collections). At 100,000 there was none; the build's peak memory rose 6% (2.90 to 3.08 GB at 100k).
BUILD_GC_THRESHOLD = 100_000


class _Held(ContextDecorator, Generic[T]):
    """A setting that `apply` makes when the first holder enters (returning what was there) and
    `restore` undoes with that when the last holder leaves; a context manager and a decorator."""

    def __init__(self, apply: Callable[[], T], restore: Callable[[T], None]) -> None:
        self._apply, self._restore = apply, restore
        self._lock = threading.Lock()
        self._holders = 0
        self._found: list[T] = []  # what `apply` found, while anyone holds the setting

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._found = [self._apply()]
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                self._restore(self._found.pop())


def _raise_threshold() -> tuple[int, int, int]:
    found = gc.get_threshold()
    gc.set_threshold(max(BUILD_GC_THRESHOLD, found[0]), *found[1:])
    return found


def _pause() -> bool:
    was_on = gc.isenabled()
    gc.disable()
    return was_on


def _resume(was_on: bool) -> None:
    if was_on:
        gc.enable()


#: The first threshold raised to BUILD_GC_THRESHOLD while any build runs.
collecting_rarely = _Held(_raise_threshold, lambda found: gc.set_threshold(*found))

#: The collector off while any holder runs: a linking pass, whose tables and memos are millions of small
#: containers that live until it ends and hold no cycles to free (the collector's passes over them while
#: they were young took 2.3 of the link stage's 27 s at 100k functions), and a definitions-context call.
#: Reference counting still frees everything else.
collector_paused = _Held(_pause, _resume)


def keep_out_of_collections() -> None:
    """Collect, then move every object alive now to the collector's permanent generation, out of the
    scans of every later collection (`gc.freeze`); what was frozen before is first made collectable
    again, so the cycles of tables given up since (an index rebuilt) are freed here.

    For tables built once and read by many calls: with the definitions index of a 20k-function graph the
    process tracks ~6*10^5 objects, and each full collection that the calls' own allocations set off scanned
    all of them (0.29 s a collection, on a loaded machine; nothing once frozen), inside whichever call it fell.
    Objects frozen are still freed by reference counting as usual; at exit they are unfrozen, so that the
    interpreter's last collection finalizes them (frozen, extension objects were reported leaked)."""
    _unfreeze_at_exit()
    gc.unfreeze()
    gc.collect()
    gc.freeze()


@functools.cache
def _unfreeze_at_exit() -> None:
    atexit.register(gc.unfreeze)
