"""The arms of a comparison: how each one gets its context, and the arms derived from the others."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pkg.errors import ConfigError
from pkg.knowledge_base import KnowledgeBase
from rerank.policies import DEFAULT_POLICY, POLICIES
from retrieval.fusion import Fusion
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
        # unpruned and by RRF, as its committed runs were made (pkg query's hybrid prunes since it became the
        # default mode, and fuses scores since that ranked better on bench_search)
        Arm(
            "hybrid",
            Mode.HYBRID,
            Options(hybrid_unit="func", with_pruning=False, fusion=Fusion.RRF),
            description="BM25 + vector over functions, RRF",
        ),
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


#: The temperature of a sampled arm's replies unless the run sets another.
SAMPLE_TEMPERATURE = 0.8
_SAMPLED = re.compile(r"^(?P<arm>[a-z0-9-]+)@(?P<count>[0-9]+)$")


@dataclass(frozen=True)
class Sampled:
    """`ARM@N`: a generating arm sampled N times (seeds 1..N, a temperature above zero), the default
    policy choosing among its samples alone; the compute-parity control for the pool of arms."""

    arm: str
    count: int

    @property
    def name(self) -> str:
        return f"{self.arm}@{self.count}"

    def sample(self, index: int) -> str:
        """The arm name of sample `index` (1..count) in the records."""
        return f"{self.name}#{index}"

    @property
    def samples(self) -> tuple[str, ...]:
        """The arm names of all its samples, in seed order."""
        return tuple(self.sample(index) for index in range(1, self.count + 1))

    @property
    def description(self) -> str:
        return (
            f"{self.arm} sampled {self.count} times (seeds 1-{self.count}), the {DEFAULT_POLICY} policy choosing "
            f"among those samples alone (no sample plays NoRAG's part); the samples are {self.name}#1-{self.count}"
        )


def sampled_arm(name: str) -> Sampled | None:
    """The sampled arm `name` stands for (`ARM@N`, ARM a generating arm, N at least 2), else None."""
    match = _SAMPLED.match(name)
    if not match or match["arm"] not in GENERATING:
        return None
    count = int(match["count"])
    if count < 2:
        raise ConfigError(f"{name}: a sampled arm needs at least 2 samples to choose among")
    return Sampled(match["arm"], count)


def sampled_of(record_arm: str) -> Sampled | None:
    """The sampled arm whose sample the record's arm name is (`norag@4#2`), else None."""
    name, hash_sign, index = record_arm.rpartition("#")
    found = sampled_arm(name) if hash_sign and index.isdigit() else None
    return found if found and record_arm in found.samples else None


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
    """Comma-separated arm names, `all`, `paper`, or sampled arms (`norag@4`); unknown names are an error
    naming the valid ones."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    sampled = list(dict.fromkeys(name for name in names if sampled_arm(name)))
    rest = ",".join(name for name in names if name not in sampled)
    if sampled and not rest:
        return sampled
    try:
        expanded = expand_names(rest, ALL_ARMS, "arm", {"all": ALL_ARMS, "paper": PAPER_ARMS}) + sampled
    except ConfigError as exc:
        raise ConfigError(f"{exc}, or a sampled arm ARM@N such as norag@4") from exc
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
