"""Defaults and environment variables."""

from __future__ import annotations

import os
from pathlib import Path

from pkg.errors import ConfigError

DEFAULT_DB_DIR = ".pkg"
#: What a database directory holds: the marker every build writes into its --db, the embedded store's
#: file, and the BM25 indexes (whichever the store: with Neo4j they are all the directory holds).
DB_MARKER = "PKG-DATABASE"
DB_FILE = "pkg.sqlite"
BM25_DIR = "bm25"
BM25_META = "pkg-bm25.json"
#: The lock one build holds on its --db: a second build of the same database waits for it (two at once
#: raced on the BM25 indexes' renames and failed; session 8, two `pkg compare` runs on one set of PKGs).
BUILD_LOCK = ".pkg-build.lock"

#: What a build can put in the graph: functions (NAME/IMPL/BLOCK, with the code structure FILE/CLASS/MODULE),
#: rows (ROW), chunks (CHUNK), json (PATH/PATHVALUE of JSON files, JSONL rows and tutorials).
PARTS = ("functions", "rows", "chunks", "json")
#: Largest cAST chunk, in non-whitespace characters.
DEFAULT_CHUNK_SIZE = 2000
MIB = 1024 * 1024
#: Files larger than this are skipped (and listed). Measured with parse_corpus: a 10 MiB file of 89,051
#: functions parses in 19 s with a peak of 1.05 GiB, the same code in ten 1 MiB files in 24 s with 0.37 GiB;
#: a 10 MiB single-line list literal in 10 s with 1.09 GiB. Time grows with the corpus either way, but one
#: file's syntax trees are held at once (~70 bytes per byte), so the cap bounds that transient peak (~1.1 GiB
#: at the default) while the files it turns away are mostly generated (amalgamations, bundles, data dumps).
#: `pkg build --max-file-size` changes it.
MAX_FILE_BYTES = 16 * MIB
#: The OpenAI API, where the OpenAI-compatible clients (the embedder and the generator) go unless told otherwise.
OPENAI_API_URL = "https://api.openai.com/v1"


def default_db_dir() -> Path:
    """Where the embedded store lives unless --db says otherwise (env PKG_DB)."""
    return Path(os.environ.get("PKG_DB", DEFAULT_DB_DIR))


def default_cache_dir() -> Path:
    """Where the embedding cache lives (env PKG_CACHE_DIR, else the XDG cache folder)."""
    if "PKG_CACHE_DIR" in os.environ:
        return Path(os.environ["PKG_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pkg"


def positive_setting(value: int | None, variable: str, default: int) -> int:
    """A positive count from the argument, else the environment variable, else the default."""
    raw = value if value is not None else os.environ.get(variable) or default
    if not str(raw).isdigit() or int(raw) < 1:
        raise ConfigError(f"{variable} must be a positive whole number, not {raw!r}")
    return int(raw)


def first_env(*names: str) -> str | None:
    """The value of the first of these environment variables that is set and not empty."""
    return next((os.environ[name] for name in names if os.environ.get(name)), None)
