"""Killing a set of processes that may still be forking (host side; the worker has its own copy)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Collection


def kill_until_gone(victims: Callable[[], Collection[int]], seconds: float) -> None:
    """SIGKILL every pid `victims()` lists, again and again, until it lists none or `seconds` pass."""
    give_up = time.monotonic() + seconds
    while (pids := victims()) and time.monotonic() < give_up:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
