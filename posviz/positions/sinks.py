"""Learned attention-sink logits: one more "key" per head that takes part in the softmax (GPT-OSS)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from torch import nn

from posviz.hooks import Patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature


@dataclass
class AttentionSinks(PositionEncoding):
    """A learned logit ``s_h`` per layer and head that joins each softmax as an extra key and is then dropped.

    GPT-OSS's ``eager_attention_forward`` concatenates ``s_h`` to every row of scores, takes the
    softmax and drops that column: the weights on the real keys of a row sum to
    ``Σ_j e^{a_j} / (Σ_j e^{a_j} + e^{s_h}) < 1``. Not tied to any position: it gives a head a place
    to put attention other than the first token, which otherwise takes that role (the attention sink
    of Xiao et al., "Efficient Streaming Language Models with Attention Sinks", 2023).

    Attributes
    ----------
    logits : np.ndarray
        float32 [layers, heads], the parameters ``layers.{i}.self_attn.sinks``.
    """

    logits: np.ndarray = field(default=None, repr=False)

    scheme: ClassVar[str] = "attention_sinks"
    label: ClassVar[str] = "learned attention-sink logits"

    def describe(self) -> str:
        low, high = float(self.logits.min()), float(self.logits.max())
        return ("Learned attention sinks (GPT-OSS): each head of each layer has a logit s_h that joins the softmax of "
                "every query as one more key and is then dropped, so the weights on the real tokens sum to less than "
                "1. It belongs to no position: it gives a head somewhere to put attention other than the first token "
                f"(Xiao et al., 2023, StreamingLLM). Logits here run from {low:.3g} to {high:.3g}; values come from "
                f"`{self.source}.<layer>.self_attn.sinks`.")

    def signature(self) -> Signature:
        return Signature("Attention-sink logit s_h by layer (over the heads)", "layer", "logit", "sinks",
                         {"largest": self.logits.max(axis=1), "mean": self.logits.mean(axis=1),
                          "smallest": self.logits.min(axis=1)}, x_name="layers", markers=True,
                         caption="A larger logit takes more of each row's weight away from the real tokens.")


@dataclass(frozen=True)
class SinkLogitsSpec(PositionSpec):
    """The ``sinks`` parameter of every layer's attention (``{path}.{i}.self_attn.sinks``).

    Not positional information (the word-order demonstration leaves it alone) and not read by a
    positions-only load (it lives in the attention modules, whose weights stay where they are).

    Attributes
    ----------
    path : str
        Path of the layer list below the base model.
    """

    path: str = "layers"

    encoding: ClassVar[type[PositionEncoding]] = AttentionSinks
    positional: ClassVar[bool] = False

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> AttentionSinks | None:
        layers = config.get_text_config().num_hidden_layers
        found = [resolve(model, f"{self.path}.{i}.self_attn.sinks") for i in range(layers)]
        if any(p is None or p.device.type == "meta" for p in found):
            return None
        logits = np.stack([p.detach().float().cpu().numpy() for p in found])
        return AttentionSinks(self.path, 0, heads=logits.shape[1], logits=logits, component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        return []
