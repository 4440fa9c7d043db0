"""Rotary position embedding (RoPE): what a position is, and the content-free kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, output_patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature, layer_list

#: Rotary frequencies are shown in this many bands, fastest first.
BANDS = 4

_PAIRS = {"rotate_half": "(i, i + d/2), Llama's rotate_half", "interleaved": "(2i, 2i + 1), GPT-J's rotate_every_two",
          "undetermined": "that posviz could not tell from the structure (the module returns cos and sin as Llama's does)"}

#: What a rotary module's forward returns, by name (:attr:`RotarySpec.output`): ``"cos_sin"`` cos and
#: sin of ``cat(pθ, pθ)`` (Llama and most); ``"cos_sin_repeated"`` of each θ_i twice in a row
#: (Cohere's ``repeat_interleave``); ``"cos_sin_half"`` cos and sin of ``pθ`` (GPT-OSS);
#: ``"sin_cos_half"`` sin and cos of ``pθ`` (GPT-J); ``"complex"`` ``exp(i·pθ)`` times the scaling (Llama 4).
OUTPUTS = ("cos_sin", "cos_sin_repeated", "cos_sin_half", "sin_cos_half", "complex")


def _halves(out, output: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of ``p·θ_i``, [..., rotary_dim / 2] each, from a rotary module's output."""
    if output == "complex":
        return out.real, out.imag
    if output == "sin_cos_half":
        return out[1], out[0]
    cos, sin = out
    if output == "cos_sin_repeated":
        return cos[..., ::2], sin[..., ::2]
    if output == "cos_sin":
        half = cos.shape[-1] // 2
        cos, sin = cos[..., :half], sin[..., :half]
    return cos, sin


@dataclass
class RotaryEncoding(PositionEncoding):
    """The rotation a model's rotary module applies at each position.

    A position p rotates each pair of query/key dimensions i by the angle ``p·θ_i`` (Su et al.,
    "RoFormer", 2021). Its vector here is the rotation's features ``[cos(p·θ), sin(p·θ)]`` (times
    the module's ``attention_scaling``), read from the model's own rotary module, so base,
    scaling (linear, dynamic, YaRN, Llama 3 …) and partial rotary are what the model uses. Their
    dot product is the content-free kernel ``K(m, n) = Σ_i cos((m − n)·θ_i)``.

    Attributes
    ----------
    module : torch.nn.Module
        The model's rotary module (``rotary_emb``).
    style : {"rotate_half", "interleaved", "undetermined"}
        Pairs (i, i + d/2) as in Llama's ``rotate_half``, or (2i, 2i + 1) as in GPT-J's
        ``rotate_every_two``; "undetermined" for a module found by structure
        (:mod:`posviz.detection`) that returns cos and sin as Llama's does, whatever the pairs its
        attention rotates (the kernel K(m, n) does not depend on them).
    output : str
        What the module's forward returns (:data:`OUTPUTS`).
    layer_type : str or None
        The layer type passed to the module's forward, where it keeps one set of frequencies per
        layer type (Gemma 3, ModernBERT: ``"full_attention"``, ``"sliding_attention"``).
    head_dim : int
        Dimensions per head; the rotation covers ``rotary_dim`` of them.
    theta : float or None
        The base from the config (``rope_parameters["rope_theta"]``), for the description.
    rope_type : str
        The module's ``rope_type`` (``"default"``, ``"linear"``, ``"llama3"``, ``"yarn"`` …).
    multimodal : bool
        Multimodal rotary (M-RoPE, Qwen2-VL: Wang et al. 2024): the module takes temporal, height and
        width position ids, each turning its own section of the frequencies; for text the three are
        equal and it is ordinary rotary. Its :attr:`bands` are then those sections.
    """

    module: nn.Module = field(default=None, repr=False)
    style: str = "rotate_half"
    output: str = "cos_sin"
    layer_type: str | None = None
    head_dim: int = 0
    theta: float | None = None
    rope_type: str = "default"
    multimodal: bool = False

    scheme: ClassVar[str] = "rotary"
    label: ClassVar[str] = "rotary position embedding (RoPE)"
    formula: ClassVar[str] = (r"\begin{gathered} q'_m = q_m \cos(m\theta) + \mathrm{rotate}(q_m)\sin(m\theta) \\ "
                              r"K(m, n) = \sum_i \cos\big((m - n)\,\theta_i\big),\quad \theta_i = b^{-2i/d} "
                              r"\end{gathered}")
    has_vectors: ClassVar[bool] = True
    vector_name: ClassVar[str] = "rotation features [cos pθ, sin pθ]"
    metric_names: ClassVar[dict[str, str]] = {"dot": "the kernel K(m, n)", "cosine": "of unit vectors"}
    width_meaning: ClassVar[str] = "the rotated dimensions"
    reference_note: ClassVar[str] = (
        "The rotary kernel K(m, n) = Σ_i cos((m − n)·θ_i) is the Gram matrix of the sinusoid of width {width} with "
        "the same frequencies: with base 10 000 and no scaling the two are equal.")

    def _cos_sin(self, positions: np.ndarray, axes: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of ``p·θ_i`` for each position, float32 [n, rotary_dim / 2] each; with ``axes``
        (M-RoPE: [3] factors), the temporal, height and width ids are ``positions`` times each factor."""
        device = next(self.module.buffers()).device
        ids = torch.as_tensor(np.asarray(positions), dtype=torch.long, device=device)[None, :]
        if axes is not None:
            ids = torch.as_tensor(np.asarray(axes), dtype=torch.long, device=device)[:, None, None] * ids
        probe = torch.zeros(1, dtype=torch.float32, device=device)
        extra = () if self.layer_type is None else (self.layer_type,)
        with torch.no_grad():
            cos, sin = _halves(self.module(probe, ids, *extra), self.output)
        return cos[0].to(torch.float32), sin[0].to(torch.float32)

    @property
    def rotary_dim(self) -> int:
        """Dimensions per head that are rotated (``head_dim`` times the partial factor)."""
        return 2 * self._cos_sin(np.array([0]))[0].shape[-1]

    @property
    def frequencies(self) -> np.ndarray:
        """θ_i in radians per position, float64 [rotary_dim / 2], fastest first, as the module
        computes them (the angle of position 1)."""
        cos, sin = self._cos_sin(np.array([1]))
        return np.arctan2(sin[0].double().cpu().numpy(), cos[0].double().cpu().numpy())

    def metric_label(self, metric: str) -> str:
        return "cosine" if metric == "cosine" else "K(m, n)"

    def vectors(self, positions: np.ndarray, band: slice | np.ndarray | None = None) -> torch.Tensor:
        """Rotation features ``[cos(p·θ_i), sin(p·θ_i)]``, float32 [n, 2·k] for the k frequencies
        in ``band`` (all by default); their dot products are the kernel restricted to the band."""
        cos, sin = self._cos_sin(positions)
        if band is not None:
            index = band if isinstance(band, slice) else torch.as_tensor(band, device=cos.device)
            cos, sin = cos[:, index], sin[:, index]
        return torch.cat([cos, sin], dim=-1)

    @property
    def bands(self) -> tuple[slice | np.ndarray, ...]:
        """:data:`BANDS` slices of the frequencies, fastest first; for M-RoPE the indices of the
        frequencies each of the temporal, height and width ids turns (read from the module: the
        pairs a unit step of that id alone rotates)."""
        if self.multimodal:
            steps = [self._cos_sin(np.array([1]), axes=np.eye(3, dtype=int)[a])[1][0].cpu().numpy()
                     for a in range(3)]
            return tuple(np.flatnonzero(step != 0) for step in steps)
        edges = np.linspace(0, self.rotary_dim // 2, BANDS + 1).round().astype(int)
        return tuple(slice(int(a), int(b)) for a, b in zip(edges, edges[1:]))

    @property
    def band_names(self) -> tuple[str, ...]:
        """What each of :attr:`bands` is called on figures."""
        if self.multimodal:
            return tuple(f"{axis} section ({len(band)} pair{'' if len(band) == 1 else 's'})" for axis, band in
                         zip(("temporal", "height", "width"), self.bands))
        return super().band_names

    def kernel_by_offset(self, offsets: np.ndarray, band: slice | np.ndarray | None = None) -> np.ndarray:
        """``K(0, k)`` for each offset k (the kernel depends on the offset only), float32
        [len(offsets)], over all frequencies or one band."""
        features = self.vectors(np.concatenate([[0], np.asarray(offsets)]), band=band)
        return (features[1:] @ features[0]).cpu().numpy()

    def describe(self) -> str:
        base = f"base b = {self.theta:.0f}" if self.theta else "the module's own frequencies"
        partial = (f"the first {self.rotary_dim} of {self.head_dim} dimensions per head"
                   if self.head_dim and self.rotary_dim < self.head_dim
                   else f"all {self.rotary_dim} dimensions per head")
        where = (f"of {layer_list(self.layers)}" if self.layers is not None else "of every layer")
        multimodal = (" The position ids are three (temporal, height, width; M-RoPE, Wang et al. 2024, Qwen2-VL), "
                      "each turning its own section of the frequencies; for text they are equal and the rotation "
                      "is ordinary rotary." if self.multimodal else "")
        return (f"Rotary position embedding (Su et al., RoFormer, 2021): no vector is added to the input; "
                f"queries and keys {where} are rotated by p·θ_i in pairs {_PAIRS[self.style]}, over {partial}; "
                f"{base}, scaling '{self.rope_type}'. The score of query m and key n then depends on m − n only "
                "through the rotations; with content removed it is the kernel K(m, n) = Σ_i cos((m − n)·θ_i), "
                f"shown here.{multimodal} Values come from `{self.source}` ({type(self.module).__name__}).")

    def layer_detail(self) -> str:
        base = f"base {self.theta:,.0f}" if self.theta else "the module's frequencies"
        return base + ("" if self.rope_type == "default" else f", {self.rope_type} scaling")

    def signature(self) -> Signature:
        theta = self.frequencies
        return Signature(f"Rotation frequency of each dimension pair ({self.rotary_dim} rotated dims)", "pair i",
                         "radians per position", "theta", {"θ_i": theta}, x_name="pairs", log_y=True, markers=True,
                         caption=f"Fastest pair turns {theta[0]:.3g} rad per position; the slowest {theta[-1]:.3g} "
                                 f"(a full turn every {2 * np.pi / theta[-1]:,.0f} positions).")


def _identity(output: str) -> Callable:
    """The transform of a rotary module's output (:data:`OUTPUTS`) to cos = 1, sin = 0, so that
    ``q·cos + rotate(q)·sin = q`` (no rotation)."""
    if output == "complex":
        return lambda out: torch.ones_like(out)
    if output == "sin_cos_half":
        return lambda out: (torch.zeros_like(out[0]), torch.ones_like(out[1]))
    return lambda out: (torch.ones_like(out[0]), torch.zeros_like(out[1]))


@dataclass(frozen=True)
class RotarySpec(PositionSpec):
    """A rotary module shared by every layer (``rotary_emb`` of Llama, GPT-NeoX, Phi, GPT-J …).

    Attributes
    ----------
    path : str
        Path of the rotary module below the base model.
    style : {"rotate_half", "interleaved", "undetermined"}
        How the family pairs dimensions (:attr:`RotaryEncoding.style`).
    output : str
        What the module's forward returns (:data:`OUTPUTS`).
    layer_type : str or None
        The layer type the module's forward takes, where it has one set of frequencies per type
        (its base from ``rope_parameters[layer_type]``).
    head_dim : str
        The config attribute of the dimensions per head (``"qk_head_dim"`` for DeepSeek's latent
        attention, whose rotation covers only ``qk_rope_head_dim`` of them).
    multimodal : bool
        M-RoPE (:attr:`RotaryEncoding.multimodal`).
    """

    path: str = "rotary_emb"
    style: str = "rotate_half"
    output: str = "cos_sin"
    layer_type: str | None = None
    head_dim: str = "head_dim"
    multimodal: bool = False

    encoding: ClassVar[type[PositionEncoding]] = RotaryEncoding

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> RotaryEncoding | None:
        module = resolve(model, self.path)
        if module is None:
            return None
        cfg = config.get_text_config()
        rope = getattr(cfg, "rope_parameters", None) or {}
        rope_type = getattr(module, "rope_type", None)
        if self.layer_type is not None:
            rope = rope.get(self.layer_type) or {}
            rope_type = (rope_type or {}).get(self.layer_type)
        head_dim = getattr(cfg, self.head_dim, None) or cfg.hidden_size // heads
        return RotaryEncoding(self.path, max_tokens, module=module, style=self.style, output=self.output,
                              layer_type=self.layer_type, head_dim=int(head_dim), theta=rope.get("rope_theta"),
                              rope_type=rope_type or rope.get("rope_type", "default"), multimodal=self.multimodal,
                              component=self.component)

    def modules(self) -> tuple[str, ...]:
        return (self.path,)

    def removal(self, model: nn.Module) -> list[Patch]:
        return output_patch(model, self.path, f"`{self.path}` returns cos = 1, sin = 0 (no rotation)", _identity(self.output))
