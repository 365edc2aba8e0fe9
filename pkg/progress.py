"""The progress protocol of long work, called as (stage, done, total): a build's stages are
"parse", "embed" and "write" (after "wait" when another build of the database holds it); a
comparison's "generate ARM", "test", "run alone", "examples" and "similarity"."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]


def no_progress(stage: str, done: int, total: int) -> None:
    """A progress sink that ignores everything."""
