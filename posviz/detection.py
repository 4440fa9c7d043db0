"""Structural detection: the positional modules of a model type the family table does not list.

For a model type outside :data:`posviz.families.FAMILIES`, posviz builds the model from its
config on the meta device (no memory is allocated, so a model of any size takes seconds) and
looks at its own modules: their attribute names, class names, shapes and buffers, and the names
of the functions of its modeling module. It names what it finds, with the module path and how
sure it is, and says what structure alone cannot tell (a table's offset; whether every layer
applies a rotary module). Where it is sure enough, :meth:`Detection.family` makes a
:class:`~posviz.families.Family` of it (a learned ``nn.Embedding`` table, a rotary module that
returns cos and sin as Llama's does), so that the pages show the model's own values.

Confidence, in three words:

- **certain**: the module has the name or the class transformers gives that kind of module, and
  its structure fits (an ``nn.Embedding`` called ``position_embeddings``; a ``*RotaryEmbedding``
  with an ``inv_freq`` buffer that returns cos and sin of the right width on the meta device);
- **likely**: the name or the class says so, but posviz cannot check the structure;
- **guess**: only part of the name points that way (``char_position_embeddings`` may hold
  something else, e.g. 2-D box coordinates), or a config flag contradicts it.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import re
from dataclasses import dataclass, field
from typing import Iterator

import torch
from torch import nn

from posviz.families import FAMILIES, Family, family_of
from posviz.positions.base import PositionSpec
from posviz.positions.learned import LearnedTableSpec, module_offset, padding_offset
from posviz.positions.rotary import RotarySpec

#: Each kind of positional module posviz recognises, in words.
KINDS = {
    "learned table": "a learned table of position vectors",
    "rotary": "a rotary module (RoPE)",
    "relative bias": "a relative-position bias table",
    "relative embeddings": "relative-position embeddings",
    "sinusoid": "a fixed sinusoid module",
    "convolutional": "a convolutional positional embedding",
    "alibi": "an ALiBi bias builder",
}
#: How sure a finding is, surest first (see the module's docstring).
CONFIDENCE = ("certain", "likely", "guess")

#: Attribute names transformers gives a learned table of absolute positions.
TABLE_NAMES = frozenset({"position_embeddings", "position_embedding", "embed_positions", "wpe", "pos_embed",
                         "pos_emb", "pos_embedding", "positional_embedding", "position_embedding_table",
                         "positions_embed", "pos_encoding", "positional_encoding"})
#: Any other name of this form is reported as a guess.
_TABLE_LIKE = re.compile(r"pos(ition)?s?(al)?_?(emb|enc)")
RELATIVE_BIAS_NAMES = frozenset({"relative_attention_bias", "rel_attn_embed", "relative_position_bias_table",
                                 "rel_pos_bias", "relative_bias", "rel_bias"})
RELATIVE_EMBEDDING_NAMES = frozenset({"rel_embeddings", "rel_pos_emb", "distance_embedding", "rel_pos_h",
                                      "rel_pos_w", "emb_rel_k", "emb_rel_v"})
#: Class-name patterns -> kind (:data:`KINDS`): the first that matches wins.
_CLASSES = (
    (re.compile(r"Rotary|Rope[A-Z]|RoPE"), "rotary"),
    (re.compile(r"PositionalConvEmbedding"), "convolutional"),
    (re.compile(r"AxialPosition"), "learned table"),
    (re.compile(r"Sinusoid|SinePosition|PositionEmbeddingSine"), "sinusoid"),
    (re.compile(r"RelativePositionBias|RelativeAttentionBias"), "relative bias"),
    (re.compile(r"RelPositional|RelativePositional|RelativePositionEmbedding"), "relative embeddings"),
)
_ALIBI = re.compile("alibi", re.I)
#: Position ids of the meta-device call of a rotary module.
_PROBE_POSITIONS = 4


class BuildError(RuntimeError):
    """A model could not be built from its config on the meta device; the message says why in one line.

    Attributes
    ----------
    reason : {"no AutoModel class", "missing package", "construction failed"}
        The kind of failure.
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Finding:
    """One positional module found by structure.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    path : str
        Attribute path below the base model (``model.base_model``); for an ALiBi builder, the
        function's qualified name (``transformers.models.bloom.modeling_bloom.build_alibi_tensor``).
    class_name : str
        The module's class (``"Embedding"``, ``"GraniteRotaryEmbedding"``), ``"Parameter"`` for a
        bare tensor, ``"function"`` for a builder.
    shape : tuple of int
        The table's shape (rows, width; [buckets, heads] for a bias table), the ``inv_freq``
        buffer's for a rotary module; empty where there is no tensor.
    confidence : str
        One of :data:`CONFIDENCE`.
    reason : str
        Why posviz thinks so, in words.
    count : int
        How many modules of the same name pattern, class and shape were found (one per layer:
        ``layers.*.attn.rotary_emb``); ``path`` is the first.
    offset : int or None
        Learned tables: rows before position 0, where the structure tells (the module's own
        ``offset``, or RoBERTa's ``padding_idx + 1``); None where it does not (0 is assumed).
    shown : bool
        Whether :meth:`Detection.family` turns it into a component the pages show.
    """

    kind: str
    path: str
    class_name: str
    shape: tuple[int, ...]
    confidence: str
    reason: str
    count: int = 1
    offset: int | None = None
    shown: bool = False
    offset_rule: str = field(default="", repr=False)  # "module" or "padding": how the offset is read

    @property
    def pattern(self) -> str:
        """The path with layer indices replaced by ``*`` where the finding repeats per layer."""
        return _pattern(self.path) if self.count > 1 else self.path

    def describe(self) -> str:
        """The finding in one clause: what, where, its class and shape, how sure and why."""
        shape = " × ".join(str(n) for n in self.shape)
        what = ", ".join(filter(None, (f"{self.count} of them" if self.count > 1 else "", self.class_name, shape)))
        return f"{KINDS[self.kind]} at `{self.pattern}` ({what}; {self.confidence}: {self.reason})"

    def spec(self, component: str = "") -> PositionSpec:
        """The family-table component of a shown finding (:attr:`shown`).

        Raises
        ------
        ValueError
            For a finding posviz does not show.
        """
        if not self.shown:
            raise ValueError(f"posviz does not show {KINDS[self.kind]} found by structure ({self.path}).")
        if self.kind == "rotary":
            return RotarySpec(self.path, style="undetermined", component=component)
        offset = {"module": module_offset, "padding": padding_offset}.get(self.offset_rule)
        return LearnedTableSpec(self.path, offset, component=component)


@dataclass(frozen=True)
class Detection:
    """What structural detection found in one model type, and what it could not tell.

    Attributes
    ----------
    model_type : str
        ``config.model_type``.
    findings : tuple of Finding
        Every positional module found, in module order (ALiBi builders last).
    unknowns : tuple of str
        What structure alone could not tell, one clause each.
    error : str or None
        Why the model could not be built on the meta device (then nothing was inspected).
    """

    model_type: str
    findings: tuple[Finding, ...] = ()
    unknowns: tuple[str, ...] = ()
    error: str | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds found (:data:`KINDS`), each once, in order."""
        return tuple(dict.fromkeys(f.kind for f in self.findings))

    @property
    def shown(self) -> tuple[Finding, ...]:
        """The findings the pages show (:attr:`Finding.shown`)."""
        return tuple(f for f in self.findings if f.shown)

    def family(self) -> Family | None:
        """A :class:`Family` of the shown findings (one component each, named by its path where
        there are several), or None where none is sure enough to show.

        No token, segment or LayerNorm path is set: structure does not tell how the model makes
        its input from them. Components are named by the first part of their paths
        (``text_model``, ``vision_model``), or by their whole paths where those coincide.
        """
        shown = self.shown
        if not shown:
            return None
        heads = [f.path.split(".")[0] for f in shown]
        names = heads if len(set(heads)) == len(heads) else [f.path for f in shown]
        return Family(tuple(f.spec(name if len(shown) > 1 else "") for f, name in zip(shown, names)))

    def sentence(self) -> str:
        """What posviz found by structure, how sure, what it shows and what it could not tell, in words."""
        if self.error is not None:
            return f"posviz could not build this model on the meta device to look at its modules: {self.error.rstrip('.')}."
        if not self.findings:
            return ("posviz found no positional module by structure: no position table, rotary module, "
                    "relative-position bias or embeddings, sinusoid, convolutional positional embedding or ALiBi "
                    "builder. Either this model has no positional encoding (the order of its tokens then comes only "
                    "from a recurrence, a convolution or a causal mask, as in Mamba or RWKV), or it encodes "
                    "positions in a form posviz cannot recognise."
                    + "".join(f" It could not tell {u}." for u in self.unknowns if u != _ALWAYS))
        found = "; ".join(f.describe() for f in self.findings)
        shown = self.shown
        shows = (f"The pages show {' and '.join(f'`{f.path}`' for f in shown)}." if shown
                 else "None of them is in a form the pages can show without the family's entry in the table.")
        return f"posviz found by structure {found}. {shows} It could not tell {'; '.join(self.unknowns)}."


# ---------------------------------------------------------------- building


def meta_model(config) -> nn.Module:
    """The model of ``config`` built on the meta device (shapes only, nothing allocated).

    Parameters
    ----------
    config : transformers.PretrainedConfig

    Returns
    -------
    transformers.PreTrainedModel
        ``AutoModel.from_config(config)``, every tensor on the meta device (posviz reads
        positions below its ``base_model``, as :class:`~posviz.loading.LoadedModel` does).

    Raises
    ------
    BuildError
        Where transformers has no AutoModel class for the config, needs a package that is not
        installed, or fails to build from this config; the message names the cause in one line.
    """
    from transformers import AutoModel, initialization

    try:
        with torch.device("meta"), initialization.meta_device_safe_creation_ops():
            model = AutoModel.from_config(config, trust_remote_code=False)
    except ImportError as exc:
        raise BuildError(f"needs a package that is not installed ({_first_line(exc)})", "missing package") from exc
    except Exception as exc:  # noqa: BLE001  any failure of a third-party constructor is reported, not raised
        if "Unrecognized configuration class" in str(exc):
            raise BuildError(f"no AutoModel class for {type(config).__name__}", "no AutoModel class") from exc
        raise BuildError(f"{type(exc).__name__}: {_first_line(exc)}", "construction failed") from exc
    return model


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message (its type where it has none)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


# ---------------------------------------------------------------- looking


def _pattern(path: str) -> str:
    """``layers.3.attn.rotary_emb`` -> ``layers.*.attn.rotary_emb``."""
    return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", path)


def _join(path: str, name: str) -> str:
    """``path.name``, or ``name`` below the model itself (``path`` empty)."""
    return f"{path}.{name}" if path else name


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _by_class(name: str) -> str | None:
    return next((kind for pattern, kind in _CLASSES if pattern.search(name)), None)


def _rotary(path: str, module: nn.Module) -> Finding:
    """A rotary module: certain where it has ``inv_freq`` and returns (cos, sin) of width
    2 · len(inv_freq) for position ids [1, n] on the meta device (Llama's contract), the form
    :class:`~posviz.positions.rotary.RotarySpec` reads."""
    name = type(module).__name__
    inv_freq = getattr(module, "inv_freq", None)
    if not isinstance(inv_freq, torch.Tensor):
        sets = [local.removesuffix("_inv_freq") for local, _ in module.named_buffers(recurse=False)
                if local.endswith("_inv_freq") and not local.endswith("original_inv_freq")]
        if sets:
            return Finding("rotary", path, name, (), "likely",
                           f"its class is named for rotary embeddings, with {len(sets)} sets of frequencies "
                           f"({', '.join(sets)}): layers of different types rotate by different frequencies")
        return Finding("rotary", path, name, (), "likely" if name.endswith("RotaryEmbedding") else "guess",
                       "its class is named for rotary embeddings, but it has no inv_freq buffer (its frequencies "
                       "are computed elsewhere)")
    shape = tuple(inv_freq.shape)
    device = inv_freq.device
    try:
        with torch.no_grad():
            out = module(torch.zeros(1, device=device), torch.arange(_PROBE_POSITIONS, device=device)[None])
        fits = (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)
                and all(tuple(t.shape) == (1, _PROBE_POSITIONS, 2 * inv_freq.numel()) for t in out))
    except Exception:  # noqa: BLE001  a module with another call contract: reported as such
        fits = False
    if fits:
        return Finding("rotary", path, name, shape, "certain",
                       f"an inv_freq buffer of {inv_freq.numel()} frequencies, and called with position ids it "
                       "returns cos and sin as Llama's rotary module does", shown=True)
    return Finding("rotary", path, name, shape, "likely",
                   f"an inv_freq buffer of {inv_freq.numel()} frequencies, but it does not return cos and sin as "
                   "Llama's rotary module does (another call contract: a vision or multimodal rotary, or "
                   "frequencies picked by layer type)")


def _table(path: str, tensor: torch.Tensor, class_name: str, embedding: nn.Embedding | None, holder: nn.Module,
           modeling) -> Finding | None:
    """A learned table named like absolute position embeddings (``embedding``: its nn.Embedding;
    None for a tensor held otherwise, by ``holder``); None where the name does not say so.

    Its offset is read where the structure tells it: the module's own ``offset`` (OPT, BART), or
    ``padding_idx + 1`` where the table has a padding row and the modeling code numbers positions
    with ``create_position_ids_from_input_ids`` (RoBERTa's rule, on ``holder`` or in ``modeling``)."""
    leaf = _leaf(path)
    if not _table_name(leaf):
        return None
    shape = tuple(tensor.shape)
    if leaf not in TABLE_NAMES:
        return Finding("learned table", path, class_name, shape, "guess",
                       f"named like position embeddings, but `{leaf}` is not a usual name for a table of token "
                       "positions (it may hold 2-D box or grid coordinates, or object queries)")
    if embedding is None or tensor.dim() != 2:
        grid = "; its rows are probably a grid of image patches" if tensor.dim() > 2 else ""
        return Finding("learned table", path, class_name, shape, "likely",
                       f"a learned tensor named `{leaf}`, not an nn.Embedding{grid}")
    offset, rule, how = None, "", ""
    numbering = any(hasattr(m, "create_position_ids_from_input_ids") for m in (holder, modeling))
    if isinstance(getattr(embedding, "offset", None), int):
        offset, rule, how = embedding.offset, "module", f"; its own offset attribute skips {embedding.offset} rows"
    elif embedding.padding_idx is not None and numbering:
        offset, rule = embedding.padding_idx + 1, "padding"
        how = (f"; positions probably start at padding_idx + 1 = {offset} (the modeling code numbers positions "
               "with create_position_ids_from_input_ids, as RoBERTa's does)")
    return Finding("learned table", path, class_name, shape, "certain",
                   f"an nn.Embedding named `{leaf}`, {shape[0]} rows of width {shape[1]}{how}", offset=offset,
                   offset_rule=rule, shown=True)


def _table_name(leaf: str) -> bool:
    """Whether an attribute name is that of an absolute position table (a usual name, or one like it)."""
    return "rel" not in leaf and (leaf in TABLE_NAMES or bool(_TABLE_LIKE.search(leaf)))


def _named(kind: str, path: str, tensor: torch.Tensor, class_name: str) -> Finding:
    """A tensor with the name transformers gives a kind of positional module."""
    return Finding(kind, path, class_name, tuple(tensor.shape), "certain",
                   f"named `{_leaf(path)}`, as transformers names {KINDS[kind]}")


def _by_name(path: str, tensor: torch.Tensor, class_name: str, embedding: nn.Embedding | None, holder: nn.Module,
             modeling) -> Finding | None:
    """A relative-bias table, relative embeddings or a learned table, by the tensor's name."""
    if _leaf(path) in RELATIVE_BIAS_NAMES:
        return _named("relative bias", path, tensor, class_name)
    if _leaf(path) in RELATIVE_EMBEDDING_NAMES:
        return _named("relative embeddings", path, tensor, class_name)
    return _table(path, tensor, class_name, embedding, holder, modeling)


def _fixed(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors a module holds that are not learned: its buffers, and plain tensor attributes
    (VideoMAE's sinusoid table)."""
    yield from module.named_buffers(recurse=False)
    yield from ((name, value) for name, value in vars(module).items() if isinstance(value, torch.Tensor))


def _by_class_name(path: str, module: nn.Module, kind: str) -> Finding:
    """A sinusoid, convolutional or relative module recognised by its class name."""
    weight = next((t for t in (*module.parameters(), *module.buffers())), None)
    shape = tuple(weight.shape) if weight is not None and kind != "convolutional" else ()
    return Finding(kind, path, type(module).__name__, shape, "certain" if kind == "convolutional" else "likely",
                   f"its class is named for {KINDS[kind]}")


def _modules(model: nn.Module, modeling) -> Iterator[Finding]:
    """Every positional module of ``model`` by class and name, in module order; the inside of a
    recognised module is not searched (a sinusoid's table, a convolution's weights)."""
    claimed: list[str] = []
    for path, module in model.named_modules():
        if any(path.startswith(c + ".") for c in claimed):
            continue
        kind = _by_class(type(module).__name__) if path else None  # the model itself: its own tensors only
        if kind is None and isinstance(getattr(module, "inv_freq", None), torch.Tensor):
            kind = "rotary"
        if kind is not None:
            claimed.append(path)
            yield _rotary(path, module) if kind == "rotary" else _by_class_name(path, module, kind)
            continue
        holder = model.get_submodule(path.rpartition(".")[0])
        weight = getattr(module, "weight", None)
        if path and (isinstance(module, nn.Embedding) or (_table_name(_leaf(path)) and isinstance(weight, nn.Parameter))):
            embedding = module if isinstance(module, nn.Embedding) else None
            claimed.append(path)
            found = _by_name(path, weight, type(module).__name__, embedding, holder, modeling)
            if found is not None:
                yield found
            continue
        for local, tensor in module.named_parameters(recurse=False):
            found = _by_name(_join(path, local), tensor, "Parameter", None, module, modeling)
            if found is not None:
                yield found
        for local, tensor in _fixed(module):
            if _table_name(local) and tensor.is_floating_point() and tensor.dim() >= 2:
                yield Finding("sinusoid", _join(path, local), "tensor", tuple(tensor.shape), "likely",
                              f"a fixed tensor (not learned) named `{local}`: probably a sinusoid table")


def _alibi(model: nn.Module, modeling) -> Iterator[Finding]:
    """The functions of the modeling module named for ALiBi, weighed against the config's ``alibi`` flag."""
    config = getattr(model, "config", None)
    flag = next(((name, getattr(config, name)) for name in ("alibi", "use_alibi") if hasattr(config, name)), None)
    builders = [name for name, function in inspect.getmembers(modeling, inspect.isfunction)
                if _ALIBI.search(name) and function.__module__ == modeling.__name__]
    public = [name for name in builders if not name.startswith("_")]
    for name in public or builders:  # BLOOM's _get_alibi_slopes is a helper of its build_alibi_tensor
        qualified = f"{modeling.__name__}.{name}"
        if flag is not None and not flag[1]:
            yield Finding("alibi", qualified, "function", (), "guess",
                          f"the modeling module defines `{name}`, but config.{flag[0]} is False: this model "
                          "probably does not use it")
        else:
            yield Finding("alibi", qualified, "function", (), "likely",
                          f"the modeling module defines `{name}`"
                          + (f" and config.{flag[0]} is True" if flag is not None else ""))


def _grouped(findings: Iterator[Finding]) -> tuple[Finding, ...]:
    """One finding per (kind, path pattern, class): a module per layer counted, not repeated; the
    first one's shape, or none where their shapes differ (Swin's bias tables, one per stage)."""
    groups: dict[tuple, Finding] = {}
    for found in findings:
        key = (found.kind, _pattern(found.path), found.class_name)
        first = groups.get(key)
        if first is None:
            groups[key] = found
            continue
        differ = first.shape != found.shape
        groups[key] = dataclasses.replace(first, count=first.count + 1, shape=() if differ else first.shape,
                                          shown=first.shown and not differ,
                                          reason=first.reason + ("; their shapes differ" if differ
                                                                 and first.shape else ""))
    return tuple(groups.values())


_UNKNOWN = {
    "learned table": "whether the model adds row p of {path} to the token at position p, and at which input "
                     "(encoder, decoder, a vision tower){offset}",
    "rotary": "whether every layer applies {path}, to all of each head's dimensions, and which dimensions it pairs",
    "relative bias": "how offsets map to the rows of {path} (its bucket function), so it is not shown",
    "relative embeddings": "how the attention combines {path} with queries and keys, so it is not shown",
    "sinusoid": "the layout and offset of {path} (sin and cos halves or interleaved; 1-D or 2-D), so it is not shown",
    "convolutional": "what {path} adds: a convolution over the input features, its positional signal depends on "
                     "the content, so there is no table to show",
    "alibi": "whether the forward pass calls {path}, and with which slopes, so it is not shown",
}
_ALWAYS = ("any positional information computed inside the forward pass by code that is not a module of these "
           "names (posviz looks at module names, classes, shapes and function names only)")


def _unknowns(findings: tuple[Finding, ...]) -> tuple[str, ...]:
    """What the structure of these findings does not tell, one clause each, plus :data:`_ALWAYS`."""
    said = []
    for found in findings:
        if found.confidence == "guess":
            continue
        offset = ""
        if found.kind == "learned table":
            offset = ("; its offset is read from the module" if found.offset_rule == "module" else
                      f"; the offset {found.offset} is inferred, not checked" if found.offset_rule else
                      "; whether rows are skipped before position 0 (an offset): 0 is assumed")
        said.append(_UNKNOWN[found.kind].format(path=f"`{found.pattern}`", offset=offset))
    if any(f.kind == "learned table" and not f.shown and f.confidence != "guess" for f in findings):
        said.append("the values of a table that is not an nn.Embedding module: posviz shows a table found by "
                    "structure only where it is one (rows × width), a module it can hook")
    return (*dict.fromkeys(said), _ALWAYS)


def detect(model: nn.Module, model_type: str = "") -> Detection:
    """The positional modules of a model, by structure (a model built on the meta device, or a real one).

    Parameters
    ----------
    model : torch.nn.Module
        A transformers model (its base model is searched; paths are below it).
    model_type : str
        Its ``config.model_type``, for the sentence (default: the config's, where it has one).

    Returns
    -------
    Detection
    """
    base = getattr(model, "base_model", model)
    modeling = inspect.getmodule(type(model))
    model_type = model_type or getattr(getattr(model, "config", None), "model_type", "")
    findings = _grouped(itertools.chain(_modules(base, modeling), _alibi(base, modeling)))
    beside = [name for name, child in model.named_children()
              if child is not base and all(m is not base for m in child.modules())]
    outside = (f"what the modules beside the base model hold ({', '.join(f'`{n}`' for n in beside)}): the base "
               f"model of {type(model).__name__} is its part `{model.base_model_prefix}`, and posviz reads that "
               "part only",) if base is not model and beside else ()
    return Detection(model_type, findings, (*outside, *_unknowns(findings)))


def detect_config(config) -> Detection:
    """:func:`detect` on the model of ``config`` built on the meta device (:func:`meta_model`);
    a Detection with :attr:`~Detection.error` set where it cannot be built. Never raises for a
    config transformers knows."""
    try:
        model = meta_model(config)
    except BuildError as exc:
        return Detection(config.model_type, error=str(exc))
    return detect(model, config.model_type)


def family_for(config) -> tuple[Family, Detection | None]:
    """The Family posviz uses for ``config``, and the detection it came from.

    A model type in :data:`~posviz.families.FAMILIES`: its entry (:func:`~posviz.families.family_of`)
    and None. Any other: :func:`detect_config`, and the family of what it found
    (:meth:`Detection.family`), or ``Family()`` (an unknown scheme) where nothing is sure enough.
    """
    if config.model_type in FAMILIES:
        return family_of(config), None
    detection = detect_config(config)
    return detection.family() or Family(), detection
