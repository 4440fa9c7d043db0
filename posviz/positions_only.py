"""Positions without the weights: a model built on the meta device, its positional modules alone made real.

As ``from_pretrained`` does for weights a checkpoint lacks, each positional module is allocated and
initialised by the family's own ``_init_weights`` (rotary frequencies, fixed sinusoids); each learned
positional tensor is then read from the safetensors checkpoint by byte ranges
(:class:`posviz.hub.Checkpoint`). Seconds for a model of any size.
"""

from __future__ import annotations

from typing import Callable

import torch
from transformers import AutoModel, PreTrainedModel

from posviz import hub
from posviz.families import Family
from posviz.hooks import resolve


def _materialize(model: PreTrainedModel, family: Family, checkpoint: Callable[[], hub.Checkpoint],
                 device: torch.device) -> None:
    """Give the positional modules of a model built on the meta device real tensors, in place.

    Each module of every spec's :meth:`~posviz.positions.PositionSpec.modules` is allocated on ``device`` and
    initialised by the family's own ``_init_weights`` (as ``from_pretrained`` does for weights a
    checkpoint lacks): that computes rotary frequencies and fixed sinusoids. Then, as
    ``from_pretrained`` does, each parameter the checkpoint stores is read from it (one tensor
    each, in its stored dtype). A fixed sinusoid the checkpoint does not store (or that cannot
    be read) keeps its computed values.

    Raises
    ------
    hub.CheckpointError
        When a learned positional tensor cannot be read: no safetensors file, no network, or no
        tensor of that name.
    """
    base = model.base_model
    for spec, path in ((spec, path) for spec in family.positions for path in spec.modules()):
        module = resolve(base, path)
        if module is None:
            continue
        module.to_empty(device=device)
        with torch.no_grad():
            for sub in module.modules():
                model._init_weights(sub)
            for local, parameter in module.named_parameters():
                try:
                    stored = checkpoint().find(f"{path}.{local}")
                    if stored is None:
                        raise hub.CheckpointError(f"its checkpoint has no tensor for {path}.{local}")
                except hub.CheckpointError:
                    if spec.computed:
                        continue
                    raise
                parameter.copy_(checkpoint().tensor(stored))


def load_positions(path: str, revision: str | None, config, family: Family,
                    files: hub.WeightFiles | None, device: torch.device) -> PreTrainedModel:
    """The base model built on the meta device, with real tensors in its positional modules only.

    Parameters
    ----------
    path : str
        Hub id or local folder.
    revision : str or None
    config : transformers.PretrainedConfig
    family : Family
        Its entry of the family table: which modules hold positions.
    files : hub.WeightFiles or None
        The checkpoint's weight files (None without a network: the local cache).
    device : torch.device
        Where the positional tensors go.

    Returns
    -------
    transformers.PreTrainedModel
        The base model, in eval mode.

    Raises
    ------
    hub.CheckpointError
    """
    from transformers import initialization

    with torch.device("meta"), initialization.meta_device_safe_creation_ops():
        model = AutoModel.from_config(config, attn_implementation="eager", trust_remote_code=False)
    found: list[hub.Checkpoint] = []

    def checkpoint() -> hub.Checkpoint:
        if not found:
            found.append(hub.Checkpoint(path, revision, files))
        return found[0]

    _materialize(model, family, checkpoint, device)
    return model.base_model.eval()
