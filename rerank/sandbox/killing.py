"""Killing a set of processes that may still be forking (host side; the worker sweeps its own)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from rerank.sandbox.worker import kill_each


def kill_until_gone(victims: Callable[[], Collection[int]], seconds: float) -> None:
    """SIGKILL every pid `victims()` lists, again and again, until it lists none or `seconds` pass."""
    give_up = time.monotonic() + seconds
    while (pids := victims()) and time.monotonic() < give_up:
        kill_each(pids)
        time.sleep(0.01)
