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


#: Names older checkpoints store a weight-normalised tensor under, by the name transformers 5 gives it
#: (its "legacy" ``WeightRenaming``s in ``transformers.conversion_mapping``): wav2vec 2.0's
#: ``pos_conv_embed.conv.weight_g`` / ``weight_v``.
_LEGACY_NAMES = {"parametrizations.weight.original0": "weight_g", "parametrizations.weight.original1": "weight_v"}


def _stored_name(checkpoint: hub.Checkpoint, name: str) -> str | None:
    """The checkpoint's name of the tensor ``name`` (below the base model): itself, or its legacy name."""
    found = checkpoint.find(name)
    for new, old in _LEGACY_NAMES.items():
        if found is None and name.endswith(new):
            found = checkpoint.find(name.removesuffix(new) + old)
    return found


def _allocate(model: PreTrainedModel, base: torch.nn.Module, path: str, device: torch.device) -> torch.nn.Module | None:
    """Give the module (or the lone buffer) at ``path`` real tensors on ``device``, initialised by the
    family's own ``_init_weights``; the module whose parameters the checkpoint may hold, or None.

    A buffer of a module that holds more (CTRL's ``pos_encoding`` on the model itself) is allocated
    alone, and its owner's ``_init_weights`` fills it (a fixed sinusoid): nothing to read.
    """
    target = resolve(base, path)
    if isinstance(target, torch.Tensor):
        owner_path, _, name = path.rpartition(".")
        owner = resolve(base, owner_path) if owner_path else base
        setattr(owner, name, torch.empty_like(target, device=device))
        model._init_weights(owner)
        return None
    if target is None:
        return None
    target.to_empty(device=device)
    for sub in target.modules():
        model._init_weights(sub)
    return target


def _materialize(model: PreTrainedModel, family: Family, checkpoint: Callable[[], hub.Checkpoint],
                 device: torch.device) -> None:
    """Give the positional modules of a model built on the meta device real tensors, in place.

    Each module of every spec's :meth:`~posviz.positions.PositionSpec.modules` is allocated on ``device`` and
    initialised by the family's own ``_init_weights`` (as ``from_pretrained`` does for weights a
    checkpoint lacks): that computes rotary frequencies and fixed sinusoids. Then, as
    ``from_pretrained`` does, each parameter the checkpoint stores is read from it (one tensor
    each, in its stored dtype; under its legacy name where an older checkpoint uses one). A fixed
    sinusoid the checkpoint does not store (or that cannot be read) keeps its computed values.

    Raises
    ------
    hub.CheckpointError
        When a learned positional tensor cannot be read: no safetensors file, no network, or no
        tensor of that name.
    """
    base = model.base_model
    for spec, path in ((spec, path) for spec in family.positions for path in spec.modules()):
        with torch.no_grad():
            module = _allocate(model, base, path, device)
            for local, parameter in module.named_parameters() if module is not None else ():
                try:
                    stored = _stored_name(checkpoint(), f"{path}.{local}")
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
