"""Defaults and environment variables."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB_DIR = ".pkg"


def default_db_dir() -> Path:
    """Where the embedded store lives unless --db says otherwise (env PKG_DB)."""
    return Path(os.environ.get("PKG_DB", DEFAULT_DB_DIR))


def default_cache_dir() -> Path:
    """Where the embedding cache lives (env PKG_CACHE_DIR, else the XDG cache folder)."""
    if "PKG_CACHE_DIR" in os.environ:
        return Path(os.environ["PKG_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pkg"
