"""`pkg tune`: the packaged MiniLM fine-tuned on a corpus's own functions, with in-batch negatives.

A training pair is a Python function's docstring summary (its first paragraph, on one line) and the
function's code without that docstring, as CodeSearchNet pairs them; its hard negative is the function
of the same file that shares most words with the summary, and a pair is batched beside the pair whose
code that is. The model is trained with sentence-transformers' MultipleNegativesRankingLoss (each
summary against its own code, the batch's other codes being the negatives), its word embeddings and
lowest layers left as they are, and saved under the models folder as `tuned-<key>`, the key hashing the
pairs and the settings: the same pairs and settings find the model already made. The spec
`tuned:<key>` names it (pkg.embedders.EMBEDDER_KINDS)."""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import math
import os
import random
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkg.code.search_text import name_words, sole_function, without_docstring
from pkg.errors import TuningError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TUNED_PREFIX = "tuned-"  # a tuned model's folder in the models folder: tuned-<key>
MIN_SUMMARY_WORDS = 3  # CodeSearchNet's filter: shorter summaries say too little to search by
MIN_CODE_LINES = 3  # the def line and at least two lines of body left once the docstring is gone
#: The training recipe's version, hashed into the key: a model trained by another recipe from the same pairs
#: and settings is another model (and the embedding cache keeps vectors by the key).
RECIPE = 4  # 2: hard negatives, batches without a repeated text; 3: hard negatives in the batch, frozen layers;
# 4: batches of like length
#: Texts a fast profile's table is fitted on at most: the tuned model embeds each of them.
FIT_TEXTS = 20_000
WARMUP_SHARE = 0.1  # of the training steps, the learning rate rising linearly (sentence-transformers' examples)
#: Batches' worth of examples sorted by length together before they are cut into batches (as transformers'
#: LengthGroupedSampler does): a batch pads its texts to its longest, and a function has 100 tokens on
#: average against the 128 read, so batches of like length train faster (2.6 -> 2.3 s a step of 32 pairs).
LENGTH_WINDOW = 50


@dataclass(frozen=True)
class Pair:
    """A docstring summary, the code of its function without the docstring, and a hard negative: the
    code of another function of the same file (mine_pairs), which is in the batch when it is a pair's."""

    query: str
    code: str
    negative: str = ""


@dataclass(frozen=True)
class TuneSettings:
    """How `pkg tune` trains: at most max_pairs pairs (a seeded sample), epochs over them, batch_size
    pairs per step (the in-batch negatives), the learning rate of AdamW, the seed, the tokens of a text
    read in training (the tuned model reads as many as MiniLM, 256, when it embeds), and whether each
    pair is batched beside its hard negative's pair, and how many of the lowest layers stay untrained.
    On bench_search's 5k corpus (885 pairs), 128 tokens trained in 2.0 min against 4.0 for 256, with
    recall@10 equal (0.833) and recall@1 0.486 against 0.495 (3 of 317 queries). Hard negatives: half
    of the queries the tuned model missed at rank 1 had a function of the same file first. Three
    frozen layers, the hard negative in the batch instead of a third text and batches of like length
    (2.3 s a step of 32 pairs against 7.9): 1.4 min against 3.0, recall@1 func 0.505 and hybrid 0.524
    against 0.502 and 0.514, recall@10 0.842 and 0.871 against 0.823 and 0.861, at 1e-4 (at 2e-5 the
    top layers alone learn too little: hybrid recall@1 0.451)."""

    max_pairs: int = 20_000
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 1e-4
    seed: int = 0
    max_tokens: int = 128
    hard_negatives: bool = True
    frozen_layers: int = 3

    def given(self, **options: Any) -> TuneSettings:
        """These settings with the options a user gave over them (None: not given, this one stays)."""
        return replace(self, **{name: value for name, value in options.items() if value is not None})


#: How `pkg tune` trains on a database of the fast profile unless told otherwise. There the tuned model
#: only teaches the static table, and reading 64 tokens with 4 layers frozen halves a step (0.72 s against
#: 1.47 for 32 pairs, bench_tune) while the fitted table ranks bench_search's held-out queries as well or
#: better (hybrid recall@1 +0.013 [+0.003, +0.025], 4 helped and 0 hurt; recall@10 +0.009 [0, +0.022]).
#: The tuned MiniLM itself would lose (func recall@1 -0.057), so the default profile keeps TuneSettings'.
FAST_PROFILE_TUNING = TuneSettings(max_tokens=64, frozen_layers=4)


def summary_of(docstring: str) -> str:
    """A docstring's first paragraph on one line."""
    return " ".join(docstring.strip().split("\n\n")[0].split())


def docstring_pair(code: str) -> Pair | None:
    """The pair of a function's source (one def, dedented, decorators included), or None when it has
    no docstring, its summary is shorter than MIN_SUMMARY_WORDS words, the docstring shares a line with
    other code, or fewer than MIN_CODE_LINES non-blank lines stay without it."""
    function = sole_function(code)
    docstring = ast.get_docstring(function, clean=True) if function else None
    if function is None or docstring is None or len(function.body) == 1:
        return None
    kept = without_docstring(code, function)
    summary = summary_of(docstring)
    if kept is None or len(summary.split()) < MIN_SUMMARY_WORDS:
        return None
    if sum(1 for line in kept.split("\n") if line.strip()) < MIN_CODE_LINES:
        return None
    return Pair(summary, kept)


def mine_pairs(
    functions: Iterable[tuple[str, str]], exclude: Sequence[str] = (), max_pairs: int | None = None, seed: int = 0
) -> list[Pair]:
    """The pairs of the functions, given as (file path, source), leaving out files that match a glob of
    `exclude` and every pair whose summary or code another pair already has (two equal texts in one
    batch would each be the other's negative); at most max_pairs of them, a sample drawn with the seed,
    in the order of the functions. Each pair's negative is the function of its file (its code without
    docstring when it has a pair) that shares most words with the summary, or in a file of one function
    another pair's code, drawn with the seed."""
    pairs: list[Pair] = []
    files: list[str] = []
    codes_by_file: dict[str, list[str]] = {}
    seen: set[str] = set()
    for path, source in functions:
        if excluded(path, exclude):
            continue
        pair = docstring_pair(source)
        codes_by_file.setdefault(path, []).append(pair.code if pair else source)
        if pair is None or pair.query.lower() in seen or pair.code in seen:
            continue
        seen.update((pair.query.lower(), pair.code))
        pairs.append(pair)
        files.append(path)
    if max_pairs is not None and len(pairs) > max_pairs:
        chosen = sorted(random.Random(seed).sample(range(len(pairs)), max_pairs))
        pairs, files = [pairs[i] for i in chosen], [files[i] for i in chosen]
    draw = random.Random(seed)
    words: dict[str, set[str]] = {}  # by code: its words, read once however many pairs share its file
    return [
        replace(pair, negative=_negative(pair, codes_by_file[path], pairs, draw, words))
        for pair, path in zip(pairs, files)
    ]


def excluded(path: str, exclude: Sequence[str]) -> bool:
    """Whether a file matches one of the `--exclude` globs."""
    return any(fnmatch.fnmatchcase(path, glob) for glob in exclude)


def fit_texts(
    functions: Iterable[tuple[str, str]], pairs: Sequence[Pair], exclude: Sequence[str] = (), seed: int = 0
) -> list[str]:
    """The texts a fast profile's table is fitted on (pkg.embedders.static): the functions' search texts,
    given as (file path, text), outside files matching a glob of `exclude`, then the pairs' summaries (the
    kind of text a query is), each once; at most FIT_TEXTS of them, a sample drawn with the seed."""
    kept = [text for path, text in functions if not excluded(path, exclude)]
    texts = list(dict.fromkeys([*kept, *(pair.query for pair in pairs)]))
    if len(texts) > FIT_TEXTS:
        texts = [texts[i] for i in sorted(random.Random(seed).sample(range(len(texts)), FIT_TEXTS))]
    return texts


def _negative(
    pair: Pair, siblings: Sequence[str], pairs: Sequence[Pair], draw: random.Random, words: dict[str, set[str]]
) -> str:
    """The function of the pair's file sharing most words with its summary, else another pair's code
    ("" when there is none)."""
    others = [code for code in siblings if code != pair.code]
    if not others:
        return draw.choice([p.code for p in pairs if p.code != pair.code] or [""])
    asked = set(name_words(pair.query).split())

    def shared(code: str) -> int:
        if code not in words:
            words[code] = set(name_words(code).split())
        return len(asked & words[code])

    return max(others, key=shared)


def model_key(pairs: Sequence[Pair], settings: TuneSettings, base: str) -> str:
    """The hash naming the model trained from the base model on these pairs with these settings."""
    digest = hashlib.sha256(json.dumps([base, RECIPE, asdict(settings)]).encode())
    for pair in pairs:
        digest.update(json.dumps([pair.query, pair.code, pair.negative]).encode())
    return digest.hexdigest()[:16]


def tuned_folder(models_dir: Path, key: str) -> Path:
    """Where the model of a key lives."""
    return models_dir / f"{TUNED_PREFIX}{key}"


def tune(
    pairs: Sequence[Pair], settings: TuneSettings, models_dir: Path, show_progress: bool = False
) -> tuple[str, bool]:
    """Train the packaged MiniLM on the pairs unless the models folder has it already; its key, and
    whether it was trained now. Raises TuningError for fewer pairs than one batch."""
    from pkg.embedders.onnx_encoder import onnx_encoder
    from pkg.embedders.sentence_transformer import packaged_minilm_path

    if len(pairs) < max(settings.batch_size, 2):
        raise TuningError(
            f"only {len(pairs)} (docstring, code) pairs to tune on; need at least {max(settings.batch_size, 2)} "
            "(one batch: --batch-size), from Python functions with a docstring of three words or more"
        )
    base = packaged_minilm_path()
    key = model_key(pairs, settings, os.path.basename(base))
    target = tuned_folder(models_dir, key)
    if (target / "modules.json").exists():
        return key, False
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        _train(base, pairs, settings, partial, show_progress)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    except OSError as exc:
        raise TuningError(f"cannot save the tuned model to {target}: {exc}") from exc
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    onnx_encoder(target, models_dir)  # its query side exported now, not by the first query
    return key, True


def partners(pairs: Sequence[Pair]) -> list[list[int]]:
    """The pairs' indices in groups to be batched together: each pair with the pair whose code is its
    hard negative, and so on along such links (all within one file), so the negative is in the batch."""
    by_code = {pair.code: index for index, pair in enumerate(pairs)}
    parent = list(range(len(pairs)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for index, pair in enumerate(pairs):
        if (other := by_code.get(pair.negative)) is not None:
            parent[root(index)] = root(other)
    groups: dict[int, list[int]] = {}
    for index in range(len(pairs)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())


def distinct_batches(
    examples: Sequence[Sequence[str]], size: int, seed: int, together: Sequence[Sequence[int]] = ()
) -> list[list[int]]:
    """The examples' indices in batches of `size`, no text twice in a batch (a text repeated in a batch
    would be a negative of itself): an example that would repeat one waits for a later batch; what
    cannot fill a batch is left out (a short batch would hold fewer negatives than the others). The
    examples are drawn in an order of the seed, those of a group of `together` (the others each alone)
    one after another, so that they mostly share a batch, and each LENGTH_WINDOW batches' worth of them
    sorted by the length of their code; the batches come in an order of the seed."""
    draw = random.Random(seed)
    grouped = {index for group in together for index in group}
    groups = [list(group) for group in together] + [[i] for i in range(len(examples)) if i not in grouped]
    draw.shuffle(groups)
    waiting = [index for group in _by_length(groups, examples, size * LENGTH_WINDOW) for index in group]
    batches: list[list[int]] = []
    while len(waiting) >= size:
        batch: list[int] = []
        held: set[str] = set()
        later: list[int] = []
        for position, index in enumerate(waiting):
            if len(batch) == size:
                later += waiting[position:]
                break
            texts = {text.strip().lower() for text in examples[index]}
            if texts & held:
                later.append(index)
            else:
                batch.append(index)
                held |= texts
        if len(batch) < size:
            break
        batches.append(batch)
        waiting = later
    draw.shuffle(batches)
    return batches


def _by_length(groups: list[list[int]], examples: Sequence[Sequence[str]], window: int) -> list[list[int]]:
    """The groups in runs of about `window` examples, each run sorted by the length of its groups'
    code texts (all but an example's first), longest first."""

    def length(group: list[int]) -> int:
        return -max(sum(len(text) for text in examples[index][1:]) for index in group)

    runs: list[list[list[int]]] = [[]]
    held = 0
    for group in groups:
        if held >= window:
            runs.append([])
            held = 0
        runs[-1].append(group)
        held += len(group)
    return [group for run in runs for group in sorted(run, key=length)]


def _texts(pair: Pair) -> list[str]:
    """What one training example holds: the summary and its code (the negatives are the batch's codes)."""
    return [pair.query, pair.code]


def training_batches(pairs: Sequence[Pair], settings: TuneSettings) -> list[list[int]]:
    """The passes over the pairs as one run of batches, each pass in its own seeded order, each pair
    beside its hard negative's pair when settings ask for hard negatives."""
    texts = [_texts(pair) for pair in pairs]
    together = partners(pairs) if settings.hard_negatives else []
    return [
        batch
        for epoch in range(settings.epochs)
        for batch in distinct_batches(texts, settings.batch_size, settings.seed + epoch, together)
    ]


def _train(base: str, pairs: Sequence[Pair], settings: TuneSettings, out: Path, show_progress: bool) -> None:
    """Fine-tune the model at base on the pairs and save it to out.

    `old_fit` is sentence-transformers' own training loop (AdamW, linear warm-up then decay, gradient
    clipping, a tqdm bar) that needs nothing more than it installs; its `fit` goes through the Trainer,
    which needs the packages datasets and accelerate, which PKG does not install."""
    import torch
    from sentence_transformers import InputExample, SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch.utils.data import DataLoader
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    model = SentenceTransformer(base, device="cpu")
    reads = model.max_seq_length  # 256, from the packaged model's sentence_bert_config.json
    model.max_seq_length = min(settings.max_tokens, reads or settings.max_tokens)
    _freeze(model, settings.frozen_layers)
    if not hasattr(model, "old_fit"):
        raise TuningError("this sentence-transformers has no old_fit (3.0 to 6.2 have it): install one of those")
    examples = [InputExample(texts=_texts(pair)) for pair in pairs]
    batches = training_batches(pairs, settings)
    if not batches:
        raise TuningError(f"no batch of {settings.batch_size} pairs without a repeated text: lower --batch-size")
    loader: DataLoader[InputExample] = DataLoader(examples, batch_sampler=batches)  # type: ignore[arg-type]
    model.old_fit(
        train_objectives=[(loader, MultipleNegativesRankingLoss(model))],
        epochs=1,
        warmup_steps=math.ceil(WARMUP_SHARE * len(batches)),
        optimizer_params={"lr": settings.learning_rate},
        show_progress_bar=show_progress,
    )
    model.max_seq_length = reads
    model.save(str(out))


def _freeze(model: SentenceTransformer, layers: int) -> None:
    """Leave the word embeddings and the lowest `layers` transformer layers as the base model has them."""
    encoder: Any = model[0].auto_model  # a BertModel; torch's typing of submodules knows no fields
    stack = encoder.encoder.layer
    if not 0 <= layers <= len(stack):
        raise TuningError(f"--frozen-layers {layers}: the model has {len(stack)} layers")
    if layers:
        for module in (encoder.embeddings, *stack[:layers]):
            module.requires_grad_(False)
