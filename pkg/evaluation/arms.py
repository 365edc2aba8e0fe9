"""The arms of a comparison: how each one gets its context, and the arms derived from the others."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pkg.errors import ConfigError
from pkg.knowledge_base import KnowledgeBase
from rerank.policies import DEFAULT_POLICY, POLICIES
from retrieval.search import Mode, Options


@dataclass(frozen=True)
class Arm:
    """A generating arm: a retrieval mode (None for NoRAG) and its settings."""

    name: str
    mode: Mode | None
    options: Options = Options()
    description: str = ""


GENERATING: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("norag", None, description="no context"),
        Arm("bm25", Mode.BM25_ROWS, description="BM25 over whole corpus items"),
        Arm("dense", Mode.DENSE_ROWS, description="whole corpus items by vector"),
        Arm("func-bm25", Mode.BM25_FUNC, description="BM25 over functions"),
        Arm("func-pkg", Mode.FUNC, description="PKG functions by vector, pruned"),
        Arm("block-pkg", Mode.BLOCK, description="PKG blocks by vector, pruned"),
        Arm("json-pkg", Mode.JSON, Options(with_titles=True), description="tutorial leaves, titles along the path"),
        Arm("hybrid", Mode.HYBRID, Options(hybrid_unit="func"), description="BM25 + vector over functions, RRF"),
        Arm("chunk", Mode.CHUNK, description="cAST chunks by vector"),
    )
}
RERANKED = "reranked"
RERANKED_PAPER = "reranked-paper"
RERANKED_PAPER_EXAMPLES = "reranked-paper+examples"
ORACLE = "oracle"
#: Arms that choose among the generating arms' candidates instead of generating.
DERIVED_DESCRIPTIONS = {
    RERANKED: f"the {DEFAULT_POLICY} selection policy ({POLICIES[DEFAULT_POLICY].description})",
    RERANKED_PAPER: "the paper's reranker: parses → runs alone without raising → most similar to the query",
    RERANKED_PAPER_EXAMPLES: "the paper's reranker, then only candidates passing the statement's >>> examples",
    ORACLE: "the first candidate that passes the hidden tests (an upper bound, never used to pick)",
}
RERANKING = (RERANKED, RERANKED_PAPER, RERANKED_PAPER_EXAMPLES)
DERIVED = tuple(DERIVED_DESCRIPTIONS)
ALL_ARMS = (*GENERATING, *DERIVED)
PAPER_ARMS = ("norag", "bm25", "dense", "func-bm25", "func-pkg", "block-pkg", "json-pkg", RERANKED_PAPER, ORACLE)


def expand_names(spec: str, known: Sequence[str], what: str, groups: Mapping[str, Sequence[str]]) -> list[str]:
    """Comma-separated names of `known`, each once, in order, a group's name standing for its members;
    an unknown name (or none) is a ConfigError naming the valid ones."""
    expanded: list[str] = []
    for name in (part.strip() for part in spec.split(",") if part.strip()):
        expanded.extend(n for n in groups.get(name, (name,)) if n not in expanded)
    unknown = [name for name in expanded if name not in known]
    if unknown or not expanded:
        choices = ", ".join([*known, *groups])
        raise ConfigError(f"unknown {what}(s) {', '.join(unknown) or repr(spec)}; choose from {choices}")
    return expanded


def parse_arms(spec: str) -> list[str]:
    """Comma-separated arm names, `all`, or `paper`; unknown names are an error naming the valid ones."""
    expanded = expand_names(spec, ALL_ARMS, "arm", {"all": ALL_ARMS, "paper": PAPER_ARMS})
    if any(name in DERIVED for name in expanded) and not any(name in GENERATING for name in expanded):
        raise ConfigError("reranked and oracle choose among generating arms; name at least one of those too")
    return expanded


@dataclass
class Retriever:
    """Context for a query under an arm, from one built PKG."""

    kb: KnowledgeBase
    k: int = 1

    def snippets(self, arm: Arm, query: str) -> list[str]:
        if arm.mode is None:
            return []
        answer = self.kb.query(query, arm.mode, self.k, arm.options)
        return [result.pruned_text for result in answer.results]


def needs_retrieval(arms: Sequence[str]) -> bool:
    return any(name in GENERATING and GENERATING[name].mode is not None for name in arms)
