"""Reaching into a model's own modules: find one by its path, record or replace what it outputs.

posviz reads every number from the modules that compute it, through one mechanism: forward hooks
registered for one ``with`` block (:func:`hooked`), acting only on the forward passes of the
thread that opened the block, and always removed on leaving it. The input representation records
the outputs of the embedding modules with it; the word-order demonstration replaces the output of
the positional modules (:class:`Patch`) to take positions out. This mirrors PyTorch's
``nn.Module.register_forward_hook`` contract: a hook that returns a value replaces the module's
output for every later hook and for the rest of the forward pass.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from torch import nn


def resolve(root: nn.Module, path: str) -> Any:
    """The attribute (a submodule, a tensor, a number) at a dotted ``path`` below ``root``.

    Parameters
    ----------
    root : nn.Module
        Usually the base model (``model.base_model``).
    path : str
        Dotted attribute path, e.g. ``"embeddings.position_embeddings"`` or
        ``"encoder.block.0.layer.0.SelfAttention"`` (list items by their index).

    Returns
    -------
    object or None
        None where any step is missing or None (OPT's ``project_in`` exists only for some widths).
    """
    node = root
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


@dataclass(frozen=True)
class Patch:
    """A replacement of one module's output inside :func:`hooked`.

    Attributes
    ----------
    description : str
        What the patch does, in words, for the UI ("`wpe` output set to 0").
    module : nn.Module
        The module whose output is replaced.
    transform : callable
        ``transform(output) -> new output``, e.g. ``torch.zeros_like``.
    """

    description: str
    module: nn.Module
    transform: Callable[[Any], Any]


def output_patch(root: nn.Module, path: str, description: str, transform: Callable[[Any], Any]) -> list[Patch]:
    """``[Patch(description, module, transform)]`` for the module at ``path`` below ``root``
    (:func:`resolve`); ``[]`` where the model has no such module (an optional part)."""
    module = resolve(root, path)
    return [] if module is None else [Patch(description, module, transform)]


@contextmanager
def hooked(capture: Mapping[str, nn.Module] | None = None,
           patches: Sequence[Patch] = (), inputs: Mapping[str, nn.Module] | None = None) -> Iterator[dict[str, Any]]:
    """Forward hooks on a model's own modules for the duration of a ``with`` block.

    Patches are registered first, so a module that is both patched and captured is recorded as
    patched (the word-order demonstration records the zeroed position vectors it adds).

    Parameters
    ----------
    capture : mapping of str to nn.Module, optional
        Name -> module whose first output in the block is recorded under that name (a tensor
        [batch, n, d], or whatever the module returns).
    patches : sequence of Patch
        Outputs to replace.
    inputs : mapping of str to nn.Module, optional
        Name -> module whose first input in the block (its first positional argument, e.g. what
        an embedding LayerNorm receives) is recorded under that name.

    Yields
    ------
    dict of str to object
        The recorded outputs and inputs, filled as the forward passes inside the block run.

    Notes
    -----
    The hooks act only on forward passes run by the thread that entered the block, so a model
    shared by several sessions of the app is left alone for the others. They are removed on
    leaving the block, also after an exception.
    """
    owner = threading.get_ident()
    captured: dict[str, Any] = {}

    def patching(transform: Callable[[Any], Any]):
        def hook(_module, _args, output):
            return transform(output) if threading.get_ident() == owner else None
        return hook

    def recording(name: str):
        def hook(_module, _args, output):
            if threading.get_ident() == owner:
                captured.setdefault(name, output)
        return hook

    def recording_input(name: str):
        def hook(_module, args):
            if threading.get_ident() == owner and args:
                captured.setdefault(name, args[0])
        return hook

    handles = []
    try:
        for patch in patches:
            handles.append(patch.module.register_forward_hook(patching(patch.transform)))
        for name, module in (capture or {}).items():
            handles.append(module.register_forward_hook(recording(name)))
        for name, module in (inputs or {}).items():
            handles.append(module.register_forward_pre_hook(recording_input(name)))
        yield captured
    finally:
        for handle in handles:
            handle.remove()
