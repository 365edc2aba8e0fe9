"""The second round of context for a draft: where code drafted for a line invents a name, the code of
other files most like the code at hand and the draft together joins the definitions (RepoCoder's
iterative retrieval, its query made of what the model has just written).

Measured on the repository benchmark (257 tasks, Qwen2.5-Coder-1.5B, 512 tokens of context), where the
in-file reply invents a name: three BM25 chunks for the code at hand and that reply (the `recheck` arm)
raised edit similarity by +0.009 [+0.001, +0.020]; the definitions named like the invented names alone,
by +0.001 [-0.002, +0.003]. Shown the real name, the model mostly writes around it; shown code that does
what it was about to do (a sibling backend's `match_file`), it writes that. This round (the `defs+draft`
arm): +0.006 [-0.001, +0.015], 7 tasks up and 4 down by 0.1 or more.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Unpack

from pkg.collector import collector_paused
from pkg.errors import ConfigError, MissingPartError
from pkg.stores.base import GraphStore
from retrieval.definitions import (
    DEFAULT_BUDGET,
    ContextOptions,
    DefinitionsContext,
    SimilarCode,
    display_path,
    ranked_definitions,
    read_source,
)
from retrieval.prompt import TRUNCATED, fit_snippets
from retrieval.search import Mode, Options, retrieve

#: Snippets of similar code for a draft that invents a name, by default (the `recheck` arm's).
SIMILAR = 3
#: Lines of the code at hand, up to the line, that go with the draft into the query (the benchmark's query).
QUERY_LINES = 10
#: The share of the budget the similar code may take; the definitions get the rest (bm25+defs' split).
SIMILAR_SHARE = 0.5


@collector_paused  # as definitions_context
def draft_context(
    store: GraphStore,
    db_dir: Path,
    path: str,
    line: int | None = None,
    text: str | None = None,
    similar: int = SIMILAR,
    **options: Unpack[ContextOptions],
) -> DefinitionsContext:
    """definitions_context, and where a draft invents a name, the `similar` chunks of other files most like
    the code at hand's last QUERY_LINES lines and the draft (BM25), in at most SIMILAR_SHARE of the budget,
    the definitions fitted to what is left. The definitions are collected and ranked once, the file read once."""
    if similar < 0:
        raise ConfigError("the number of similar snippets must not be negative")
    text = read_source(path) if text is None else text
    found = ranked_definitions(store, path, line, text, **options)
    if isinstance(found, DefinitionsContext):
        return found
    budget = options.get("budget", DEFAULT_BUDGET)
    draft = options.get("draft")
    if not draft or not found.invented or not similar:
        return found.fitted(budget)
    try:
        snippets = _similar_code(store, db_dir, path, line, text, draft, similar, options)
    except MissingPartError as missing:  # a database of --parts functions: the definitions alone, and why
        return replace(found.fitted(budget), notes=[f"no similar code: {missing}"])
    headers = [f"# {display_path(s.path, path)}:{s.lines[0]}-{s.lines[1]}" for s in snippets]
    blocks = [f"{header}\n{s.code.rstrip()}" for header, s in zip(headers, snippets)]
    kept, _ = fit_snippets(blocks, int(budget * SIMILAR_SHARE), found.count)  # a cut keeps its header
    kept = [block for block in kept if block.split("\n", 1)[1] != TRUNCATED]  # not a header alone
    if not kept:
        return found.fitted(budget)
    chosen = [replace(s, code=block.split("\n", 1)[1]) for s, block in zip(snippets, kept)]
    rest = found.fitted(budget - sum(found.count(block) for block in kept))
    # similar code after the stubs, nearest the code it serves, as the benchmark lays similar code out
    rendered = "\n\n".join(part for part in [rest.text.rstrip("\n"), *kept] if part) + "\n"
    return replace(rest, text=rendered, tokens=found.count(rendered), similar=chosen, gated=None)


def _similar_code(
    store: GraphStore,
    db_dir: Path,
    path: str,
    line: int | None,
    text: str,
    draft: str,
    k: int,
    options: ContextOptions,
) -> list[SimilarCode]:
    """The k chunks of other files that BM25 ranks first for the code's last lines and the draft."""
    before = text.splitlines()[:line]
    query = "\n".join([*before[-QUERY_LINES:], draft])
    excluded = frozenset({path, *options.get("exclude_sources", frozenset())})
    results = retrieve(store, None, query, Mode.BM25_CHUNK, k, db_dir, Options(exclude_sources=excluded)).results
    return [SimilarCode(r.path, r.lines, r.name, r.pruned_text) for r in results]
