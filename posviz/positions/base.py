"""What every positional scheme offers: a spec (where it lives in a family) and an encoding (what it holds).

A scheme is one file of this package. Its **spec** (a :class:`PositionSpec`) is an entry of the
family table (:mod:`posviz.families`): where the scheme lives in a model of that family, which
modules a positions-only load must fill, how its positional information is taken out for the
word-order demonstration. ``spec.read(...)`` gives its **encoding** (a :class:`PositionEncoding`):
the numbers, read from the model's own modules, in one of two faces:

- ``vectors(positions)``: a vector per position (a learned or sinusoidal table row, the cos/sin
  features of a rotary position, a DeBERTa relative embedding); the position-position matrix is
  then their similarity (dot product or cosine);
- ``bias(positions)``: a per-head bias added to the attention score of query m and key n (ALiBi,
  bucketed relative bias); the position-position matrix is that bias.

Views ask an encoding what it has (``has_vectors``, ``has_bias``, ``bands``, ``grid``, ``signature()``,
``metric_label()``) and never compare scheme names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch

#: Similarity metrics of vector schemes, as the views name them.
METRICS = ("dot", "cosine")


class PositionRemovalError(ValueError):
    """The model's positional information cannot be taken out by a forward hook; the message says why."""


@dataclass(frozen=True)
class Layers:
    """Which layers a positional component acts on, read from a per-layer list of the config.

    Models that mix schemes say so layer by layer: Gemma 3, ModernBERT and Cohere 2 with
    ``config.layer_types`` ("sliding_attention" / "full_attention"), SmolLM3 and Llama 4 with
    ``config.no_rope_layers`` (1: rotary, 0: none).

    Attributes
    ----------
    key : str
        The config attribute holding one value per layer.
    value : str or int
        The value that marks a layer as this component's.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(no_rope_layers=[1, 1, 1, 0], get_text_config=lambda: cfg)
    >>> Layers("no_rope_layers", 0).of(cfg)
    (3,)
    """

    key: str
    value: str | int

    def of(self, config) -> tuple[int, ...]:
        """The 0-based indices of the layers whose ``config.<key>`` entry equals :attr:`value`.

        Raises
        ------
        ValueError
            Where the config has no such per-layer list.
        """
        values = getattr(config.get_text_config(), self.key, None)
        if values is None:
            raise ValueError(f"The config has no per-layer list '{self.key}'.")
        return tuple(i for i, v in enumerate(values) if v == self.value)


def layer_list(layers: tuple[int, ...]) -> str:
    """Layers in words, 0-based, every one of them named: "layer 3", "layers 0, 3 and 6"; a long list by
    the layers it leaves out of its span ("22 layers: 0 to 25 but 5, 11, 17 and 23").

    Examples
    --------
    >>> layer_list((3,)), layer_list((0, 3, 6)), layer_list((0, 1, 2, 4, 5, 6))
    ('layer 3', 'layers 0, 3 and 6', 'layers 0, 1, 2, 4, 5 and 6')
    >>> layer_list(tuple(i for i in range(26) if i % 6 != 5)), layer_list(tuple(range(0, 24, 3)))
    ('22 layers: 0 to 25 but 5, 11, 17 and 23', '8 layers: 0, 3, 6, 9, 12, 15, 18 and 21')
    """
    def listed(items) -> str:
        items = [str(i) for i in items]
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"

    if len(layers) == 1:
        return f"layer {layers[0]}"
    if len(layers) <= 6:
        return f"layers {listed(layers)}"
    first, last = layers[0], layers[-1]
    missing = [i for i in range(first, last + 1) if i not in layers]
    if not missing:
        return f"{len(layers)} layers: {first} to {last}"
    if len(missing) < len(layers) / 2:
        return f"{len(layers)} layers: {first} to {last} but {listed(missing)}"
    return f"{len(layers)} layers: {listed(layers)}"


@dataclass(frozen=True)
class Signature:
    """The figure that characterises one positional component at a glance (the Model page's).

    Attributes
    ----------
    title, xlabel, ylabel : str
    name : str
        What the values are called in a download ("norm", "theta", "slope", "bias").
    series : dict of str to np.ndarray
        Line name -> values, each [k].
    x : np.ndarray or None
        The x of each value (default: 0 .. k - 1).
    x_name : str
        What x is called in a download ("positions", "offsets").
    log_y, markers : bool
    caption : str
        One sentence under the figure (what to look for).
    """

    title: str
    xlabel: str
    ylabel: str
    name: str
    series: dict[str, np.ndarray]
    x: np.ndarray | None = None
    x_name: str = "positions"
    log_y: bool = False
    markers: bool = False
    caption: str = ""


@dataclass
class PositionEncoding(ABC):
    """Base of every scheme's encoding: the numbers of one positional component of a model.

    Attributes
    ----------
    source : str
        Module path (below the base model) or function the values come from.
    num_positions : int
        Positions the views offer: 0 .. num_positions - 1.
    heads : int or None
        Number of heads for per-head biases; None where the scheme is shared by all heads.
    axis_label : str
        What a row is called on figures ("position", "relative position bucket").
    first_label : int
        The label of row 0 on figures (negative for relative positions).
    component : str
        Which part of the model, where it has several (T5: "encoder", "decoder"; MPNet:
        "absolute table", "relative bias"; Gemma 3: "global rotary", "local rotary"); empty otherwise.
    layers : tuple of int or None
        The 0-based layers it acts on, where a model mixes schemes layer by layer
        (:class:`Layers`); None: every layer.
    """

    source: str
    num_positions: int
    heads: int | None = field(default=None, kw_only=True)
    axis_label: str = field(default="position", kw_only=True)
    first_label: int = field(default=0, kw_only=True)
    component: str = field(default="", kw_only=True)
    layers: tuple[int, ...] | None = field(default=None, kw_only=True)

    #: Short name of the scheme (``"learned_absolute"``, ``"rotary"`` …): for tests and file names.
    scheme: ClassVar[str] = ""
    #: The scheme in words, for the UI.
    label: ClassVar[str] = ""
    #: The formula in LaTeX, for ``st.latex``.
    formula: ClassVar[str] = ""
    #: A vector per position (:meth:`vectors`): similarity, projection, probes apply.
    has_vectors: ClassVar[bool] = False
    #: A per-head score bias (:meth:`bias`).
    has_bias: ClassVar[bool] = False
    #: What the vectors are, in a figure title ("position embeddings").
    vector_name: ClassVar[str] = "position embeddings"
    #: What each of :data:`METRICS` is for this scheme's vectors (the radio's captions); empty for bias schemes.
    metric_names: ClassVar[dict[str, str]] = {}
    #: What the matched sinusoid's width is, in words (:attr:`reference_width`).
    width_meaning: ClassVar[str] = ""
    #: What the matched sinusoid has to do with this scheme, with ``{width}`` for its width; or empty.
    reference_note: ClassVar[str] = ""

    @abstractmethod
    def describe(self) -> str:
        """One paragraph for the UI: what the values are, the formula in words, and its source."""

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        """float32 [n, d] on the model's device, row i for ``positions[i]``.

        Raises
        ------
        TypeError
            For a scheme without a vector per position (``has_vectors`` False).
        """
        raise TypeError(f"{type(self).__name__} has no vector per position")

    def bias(self, positions: np.ndarray) -> np.ndarray:
        """float32 [heads, n, n]: the bias added to the score of query ``positions[i]`` and key
        ``positions[j]``; NaN where the key is masked (causal).

        Raises
        ------
        TypeError
            For a scheme without a score bias (``has_bias`` False).
        """
        raise TypeError(f"{type(self).__name__} adds no bias to the attention scores")

    def metric_label(self, metric: str) -> str:
        """What the position-position matrix of ``metric`` is called on figures ("P·Pᵀ", "cosine";
        "bias" for bias schemes)."""
        if self.has_bias:
            return "bias"
        return "cosine" if metric == "cosine" else "P·Pᵀ"

    @property
    def reference_width(self) -> int:
        """The width of the sinusoid that matches this encoding's vectors (:attr:`width_meaning`)."""
        return int(self.vectors(np.array([0])).shape[-1])

    @property
    def bands(self) -> tuple[slice | np.ndarray, ...]:
        """Frequency bands the vectors split into (rotary), fastest first (slices, or index arrays);
        empty for other schemes."""
        return ()

    @property
    def band_names(self) -> tuple[str, ...]:
        """What each of :attr:`bands` is called on figures: "band 1 (fastest)" … "band k (slowest)"."""
        last = len(self.bands) - 1
        return tuple(f"band {b + 1}" + (" (fastest)" if b == 0 else " (slowest)" if b == last else "")
                     for b in range(last + 1))

    @property
    def grid(self):
        """The 2-D grid of image patches the rows form (a vision tower's table:
        :class:`posviz.positions.patches.PatchGrid`); None where the rows are a sequence."""
        return None

    def signature(self) -> Signature | None:
        """The Model page's figure of this component; None where there is nothing to draw."""
        return None

    def layer_detail(self) -> str:
        """What sets this component apart on a layer strip ("base 10 000, linear × 8"); empty by default."""
        return ""


@dataclass(frozen=True)
class PositionSpec(ABC):
    """Where one positional component lives in a model family, and how to read it.

    An entry of :data:`posviz.families.FAMILIES`; subclasses are frozen dataclasses of paths
    (below the base model) and the family's own functions.

    Attributes
    ----------
    component : str
        Its name where a family has several (T5: "encoder", "decoder"); empty otherwise.
    layers : Layers or None
        The layers it acts on where the family mixes schemes layer by layer; None: every layer.
    """

    component: str = field(default="", kw_only=True)
    layers: Layers | None = field(default=None, kw_only=True)

    #: The class of what :meth:`read` returns: gives the scheme's name and label.
    encoding: ClassVar[type[PositionEncoding]]
    #: Whether the model knows where a token stands through this component (False: no encoding).
    positional: ClassVar[bool] = True
    #: Whether the family's own ``_init_weights`` computes the values of :meth:`modules` (a fixed
    #: sinusoid), so that a checkpoint may lack them.
    computed: ClassVar[bool] = False

    @property
    def scheme(self) -> str:
        """The scheme's short name (:attr:`PositionEncoding.scheme`)."""
        return self.encoding.scheme

    @property
    def label(self) -> str:
        """The scheme in words (:attr:`PositionEncoding.label`)."""
        return self.encoding.label

    @abstractmethod
    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> PositionEncoding | None:
        """The encoding of this component, from the model's own modules.

        Parameters
        ----------
        model : nn.Module
            The base model.
        config : transformers.PretrainedConfig
        heads : int
            Attention heads per layer.
        max_tokens : int
            The longest input the model accepts (positions offered where the scheme has no table).

        Returns
        -------
        PositionEncoding or None
            None where the module is missing in this model (an optional part).
        """

    @property
    def input_path(self) -> str | None:
        """Path of the module whose output the model adds to the token embeddings at the input (a
        position table); None for schemes that act inside attention."""
        return None

    def modules(self) -> tuple[str, ...]:
        """Paths of the modules a positions-only load must give real tensors (none by default:
        the scheme is a function of the config)."""
        return ()

    def table_positions(self, model: nn.Module) -> int | None:
        """Positions a stored table holds (its rows less the offset); None for schemes without one."""
        return None

    @abstractmethod
    def removal(self, model: nn.Module) -> list[Patch]:
        """The patches that take this component's positional information out of ``model``.

        Returns
        -------
        list of Patch
            Empty where the module is missing.

        Raises
        ------
        PositionRemovalError
            Where no forward hook can reach it; the message says why.
        """
