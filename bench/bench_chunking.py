"""Benchmark ingest/chunking.py against astchunk, cAST's reference chunker, on the stdlib.

Chunks the same standard-library modules with both at each size, reports files/s and MB/s
(best of ``--repeat`` passes) and the boundary agreement, and writes JSON to bench/results/.
The helpers that compare boundaries are also used by tests/test_chunking.py. Needs astchunk,
which the project's ``test`` extra installs.

    python bench/bench_chunking.py [--modules 200] [--sizes 2000 500] [--repeat 3]
"""

from __future__ import annotations

import json
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tree_sitter import Node
from tree_sitter_language_pack import get_parser

sys.path.insert(0, str(Path(__file__).parent))  # also when imported as bench.bench_chunking (tests)
from harness import bench_parser, machine, utc_now, write_result  # noqa: E402

from ingest.chunking import WHITESPACE, Chunk, chunk_source  # noqa: E402

Span = tuple[int, int]


def stdlib_modules(count: int, top_level: bool = False) -> list[Path]:
    """Return ``count`` non-empty UTF-8 stdlib modules, evenly spaced in sorted path order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = sorted(root.glob("*.py") if top_level else root.rglob("*.py"))
    paths = [p for p in candidates if "site-packages" not in p.parts and _readable(p)]
    step = max(1, len(paths) // count)
    return paths[::step][:count]


def _readable(path: Path) -> bool:
    """Whether ``path`` holds non-empty UTF-8 text."""
    try:
        return bool(path.read_text(encoding="utf-8").strip())
    except UnicodeDecodeError:
        return False


def astchunk_spans(source: str, max_chunk_size: int) -> list[Span]:
    """Return the byte span of each window astchunk 0.1 makes of Python ``source``.

    Only its first step (assigning nodes to windows) decides boundaries; the later ones
    (overlap, off by default; text rebuilding; metadata and chunk expansion) do not.
    """
    from astchunk import ASTChunkBuilder

    builder = ASTChunkBuilder(max_chunk_size=max_chunk_size, language="python", metadata_template="none")
    root = builder.parser.parse(source.encode("utf-8")).root_node
    windows = builder.assign_tree_to_windows(code=source, root_node=root)
    return [(window[0].node.start_byte, window[-1].node.end_byte) for window in windows]


def lossy_regions(source: str, max_chunk_size: int) -> list[Span]:
    """Return the spans of the root's children in which astchunk loses text at this size.

    It loses a node above the limit whose children miss some of its text: a leaf, which it
    drops, or a string body, whose only children are escape sequences. We keep that text,
    which can change how the pieces around it merge, but only inside that top-level node:
    the root's windows are never merged, so every other boundary must agree.
    """
    root = get_parser("python").parse(source.encode("utf-8")).root_node
    return [(n.start_byte, n.end_byte) for n in root.children if _loses_text(n, max_chunk_size)]


def _loses_text(node: Node, limit: int) -> bool:
    """Whether ``node`` or a descendant is above ``limit`` and its children miss some of its text."""
    stack = [node] if _size(node) > limit else []
    while stack:
        current = stack.pop()
        children = current.children
        if sum(_size(child) for child in children) < _size(current):
            return True
        stack.extend(child for child in children if _size(child) > limit)
    return False


def _size(node: Node) -> int:
    """Return the non-whitespace byte count of ``node``."""
    return len(node.text.translate(None, WHITESPACE))


def same_boundaries(chunks: list[Chunk], spans: list[Span], excluded: Sequence[Span] = ()) -> bool:
    """Whether our chunks and astchunk's window spans cut the code at the same places.

    Our chunks also cover the whitespace between windows, so they agree when there are as
    many of them and each contains its window. Chunks and windows overlapping ``excluded``
    are left out of the comparison.
    """
    ours = [(c.start_byte, c.end_byte) for c in chunks if _outside((c.start_byte, c.end_byte), excluded)]
    theirs = [span for span in spans if _outside(span, excluded)]
    return len(ours) == len(theirs) and all(
        start <= span_start and span_end <= end for (start, end), (span_start, span_end) in zip(ours, theirs)
    )


def _outside(span: Span, regions: Sequence[Span]) -> bool:
    """Whether ``span`` overlaps none of ``regions``."""
    return all(span[1] <= start or span[0] >= end for start, end in regions)


def _lines(source: str, span: Span) -> str:
    """Return the 1-based line range of a byte span of ``source``, as "first-last"."""
    data = source.encode("utf-8")
    first, last = (data.count(b"\n", 0, offset) + 1 for offset in span)
    return f"{first}-{last}"


def _best_seconds(run: Callable[[], object], repeat: int) -> float:
    """Return the fastest of ``repeat`` timed calls of ``run``."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _speed(seconds: float, files: int, size_bytes: int) -> dict[str, float]:
    """Return a pass's time with its throughput in files/s and MB/s."""
    return {
        "seconds": round(seconds, 4),
        "files_per_s": round(files / seconds, 1),
        "mb_per_s": round(size_bytes / seconds / 1e6, 3),
    }


def _agreement(paths: list[Path], sources: list[str], size: int) -> dict[str, object]:
    """Compare boundaries file by file and explain each disagreement."""
    disagreements = []
    for path, source in zip(paths, sources):
        chunks, spans = chunk_source(source, max_chunk_size=size), astchunk_spans(source, size)
        if same_boundaries(chunks, spans):
            continue
        regions = lossy_regions(source, size)
        disagreements.append(
            {
                "file": str(path),
                "chunks": len(chunks),
                "astchunk_windows": len(spans),
                "cause": "astchunk loses text of a node above the limit" if regions else "unexplained",
                "lossy_lines": [_lines(source, region) for region in regions],
                "agree_elsewhere": same_boundaries(chunks, spans, regions),
            }
        )
    identical = len(paths) - len(disagreements)
    return {"identical_files": identical, "fraction": round(identical / len(paths), 4), "disagreements": disagreements}


def bench_size(paths: list[Path], sources: list[str], size: int, repeat: int) -> dict[str, object]:
    """Time both chunkers at ``size`` and compare their boundaries."""
    from astchunk import ASTChunkBuilder

    builder = ASTChunkBuilder(max_chunk_size=size, language="python", metadata_template="none")
    total = sum(len(s.encode("utf-8")) for s in sources)
    ours = _best_seconds(lambda: [chunk_source(s, max_chunk_size=size) for s in sources], repeat)
    theirs = _best_seconds(lambda: [builder.chunkify(s) for s in sources], repeat)
    return {
        "ours": _speed(ours, len(sources), total),
        "astchunk": _speed(theirs, len(sources), total),
        "chunks": sum(len(chunk_source(s, max_chunk_size=size)) for s in sources),
        "agreement": _agreement(paths, sources, size),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 500])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    paths = stdlib_modules(args.modules)
    sources = [p.read_text(encoding="utf-8") for p in paths]
    report = {
        "timestamp": utc_now(),
        "machine": machine(),
        "files": len(paths),
        "megabytes": round(sum(len(s.encode("utf-8")) for s in sources) / 1e6, 3),
        "sizes": {str(size): bench_size(paths, sources, size, args.repeat) for size in args.sizes},
    }
    target = write_result(args.out, "chunking", report)
    print(json.dumps(report, indent=2))
    print(f"written to {target}")


if __name__ == "__main__":
    main()
