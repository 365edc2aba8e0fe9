"""The query side of a local sentence-transformers model in ONNX Runtime, so that a query never
imports PyTorch: the model's transformer is exported once to ONNX (with PyTorch, into the models
folder of the cache), its tokenizer runs in `tokenizers`, and the pooling its folder declares is
done in numpy (the embedder normalises).

Only folders whose modules are a Transformer, a Pooling by mean or by the CLS token, and optionally
a Normalize qualify (all-MiniLM-L6-v2 and the models `pkg tune` writes); others stay in PyTorch."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pkg.errors import EmbedderError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

RECIPE = "onnx-v1"  # part of the exported file's name: a new export recipe gets new files
_OPSET = 17
_MODULES = ("Transformer", "Pooling")  # the class names of a folder's modules.json types, in order
_NORMALIZE = "Normalize"
_POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}  # the ones encode() does
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class Layout:
    """What a sentence-transformers folder declares about its modules: the tokens it reads and its
    pooling (a Normalize after it changes nothing here: the embedder normalises every vector)."""

    max_tokens: int
    pooling: str  # "mean" or "cls"


def _read_json(path: Path) -> dict | list:
    try:
        loaded: dict | list = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded


def layout(model_dir: Path) -> Layout | None:
    """The folder's Layout when ONNX can reproduce its model, else None."""
    modules = _read_json(model_dir / "modules.json")
    if not isinstance(modules, list) or not 2 <= len(modules) <= 3:
        return None
    types = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if tuple(types[:2]) != _MODULES or types[2:] not in ([], [_NORMALIZE]):
        return None
    mode = _pooling(_read_json(model_dir / modules[1].get("path", "") / "config.json"))
    max_tokens = _max_tokens(model_dir)
    if mode is None or not isinstance(max_tokens, int) or not (model_dir / "tokenizer.json").exists():
        return None
    return Layout(max_tokens, mode)


def _weights(model_dir: Path) -> Path | None:
    return next((model_dir / f for f in _WEIGHT_FILES if (model_dir / f).exists()), None)


def _pooling(config: dict | list) -> str | None:
    """The pooling of a Pooling module's config: sentence-transformers 6 writes `"pooling_mode": "mean"`
    (`pkg tune`'s models), earlier versions one true `pooling_mode_*` flag (the packaged MiniLM)."""
    if not isinstance(config, dict):
        return None
    if isinstance(config.get("pooling_mode"), str):
        return config["pooling_mode"] if config["pooling_mode"] in _POOLINGS.values() else None
    chosen = [key for key, on in config.items() if key.startswith("pooling_mode") and on is True]
    return _POOLINGS.get(chosen[0]) if len(chosen) == 1 else None


def _max_tokens(model_dir: Path) -> int | None:
    """The model's input length: sentence_bert_config's max_seq_length, which sentence-transformers 6 no
    longer writes; it keeps the length as the tokenizer's model_max_length."""
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        settings = _read_json(model_dir / name)
        if isinstance(settings, dict) and isinstance(settings.get(key), int):
            return int(settings[key])
    return None


def export_path(model_dir: Path, folder: Path) -> Path | None:
    """Where the export of the model in model_dir goes: named by the folder and its weights' size and
    time, so that a model written again (a new `pkg tune`) gets a new export. None without weights."""
    weights = _weights(model_dir)
    if weights is None:
        return None
    stat = weights.stat()
    key = f"{model_dir.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return folder / f"{RECIPE}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def export(model_dir: Path, path: Path) -> None:
    """Export the model's transformer (token ids, attention mask, token types -> last hidden state)
    to ONNX at path, atomically (another process may export at once)."""
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbedderError("exporting a model to ONNX needs torch and transformers") from exc
    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir)).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        # the tracer warns of values it fixes at the sample's shape; none of them depend on it (the
        # parity test compares texts of 1 to 256 tokens, alone and padded in one batch)
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHidden(),
                (sample, sample, torch.zeros_like(sample)),
                str(partial),
                input_names=["ids", "mask", "types"],
                output_names=["hidden"],
                dynamic_axes={"ids": axes, "mask": axes, "types": axes, "hidden": axes},
                opset_version=_OPSET,
                dynamo=False,
            )
        os.replace(partial, path)
    except Exception as exc:  # any exporter failure becomes one typed error
        partial.unlink(missing_ok=True)
        raise EmbedderError(f"cannot export {model_dir} to ONNX: {exc}") from exc


class OnnxEncoder:
    """A sentence-transformers folder's model in ONNX Runtime: texts in, the model's vectors out."""

    def __init__(self, model_dir: Path, model_layout: Layout, onnx_path: Path) -> None:
        self._layout = model_layout
        self._tokenizer = _tokenizer(model_dir, model_layout.max_tokens)
        self._session = _session(onnx_path)

    @property
    def dim(self) -> int:
        return int(self._session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str]) -> np.ndarray:
        """One float32 row per text, pooled as the folder declares (not normalised)."""
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(None, {"ids": ids, "mask": mask, "types": types})
        if self._layout.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return np.asarray(pooled, dtype=np.float32)


def _tokenizer(model_dir: Path, max_tokens: int) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.enable_padding()  # to the longest text of a batch, as sentence-transformers pads
    return tokenizer


def _session(onnx_path: Path) -> InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings about unused initialisers are noise here
    # One thread: a query is a few dozen tokens, and a second thread spins against the machine's other
    # work; at load 9.5 on the 2 cores one 15-token query took 78-96 ms (median of 40) on one thread
    # and 167-190 ms on two (as for torch: pkg/server.py's MODEL_THREADS).
    options.intra_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors for a bad file
        raise EmbedderError(f"cannot load the ONNX model {onnx_path}: {exc}") from exc


def onnx_encoder(model_dir: Path, folder: Path) -> OnnxEncoder | None:
    """The model in model_dir in ONNX Runtime, exported into folder on first use; None when the
    folder's modules are not ones ONNX reproduces here."""
    model_layout = layout(model_dir)
    path = export_path(model_dir, folder)
    if model_layout is None or path is None:
        return None
    if not path.exists():
        export(model_dir, path)
    return OnnxEncoder(model_dir, model_layout, path)
