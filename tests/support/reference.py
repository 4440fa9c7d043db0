"""The ground truth of the comparisons: the model's own modules, run with hooks, independently of posviz.

Tests load a checkpoint with plain transformers (the ``reference`` and ``bundled_reference``
fixtures of conftest) and run it here: :class:`Capture` records what named submodules receive
and return during one forward pass; :func:`own_attention` is the model's own
``output_attentions=True`` result.
"""

from __future__ import annotations

import numpy as np
import torch


class Capture:
    """Records inputs / outputs of named submodules of a model during one forward pass."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.inputs: dict[str, torch.Tensor] = {}
        self.outputs: dict[str, torch.Tensor] = {}
        self._handles = []

    def input_of(self, path: str) -> "Capture":
        module = self.model.get_submodule(path)

        def hook(_mod, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            self.inputs[path] = x.detach().clone()

        self._handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        return self

    def output_of(self, path: str) -> "Capture":
        module = self.model.get_submodule(path)

        def hook(_mod, _args, out):
            if isinstance(out, tuple):
                out = out[0]
            self.outputs[path] = out.detach().clone()

        self._handles.append(module.register_forward_hook(hook))
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()


def random_ids(n: int, seed: int = 0) -> torch.Tensor:
    """[1, n] token ids in [1000, 20000): never a pad / bos / eos / special id of any tiny family."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1000, 20000, (1, n), generator=g)


def encode(tok, text, text_pair=None, **kw):
    return tok(text, text_pair, return_tensors="pt", **kw)


def run_model(model, batch, *, encoder_decoder: bool, **kw):
    """Run the model's own forward (the encoder for encoder-decoder models)."""
    with torch.no_grad():
        if encoder_decoder:
            return model.get_encoder()(**batch, **kw)
        return model(**batch, **kw)


def stacked(attentions) -> np.ndarray:
    """A model's ``output_attentions`` tuple (one [1, heads, q, k] per layer) as [layers, heads, q, k]."""
    return torch.stack([a[0] for a in attentions]).float().numpy()


def own_attention(model, batch, *, encoder_decoder: bool) -> np.ndarray:
    """The model's own output_attentions=True result, stacked to [layers, heads, n, n]."""
    out = run_model(model, batch, encoder_decoder=encoder_decoder, output_attentions=True)
    return stacked(out.attentions)
