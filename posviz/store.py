"""A process-wide store of loaded models, shared by every session of the app: bounded, thread-safe.

Plain library code (no Streamlit): the app keeps one :class:`ModelStore` per process and keys every
cached result by a :class:`ModelKey`, never by a tensor.
"""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from collections import OrderedDict
from typing import Callable, NamedTuple

import torch

from posviz import settings
from posviz.loading import BUNDLED_NAME, CONFIG_ONLY, LoadedModel, ModelLoadError, load_model

LOG = logging.getLogger("posviz")

#: Most models kept in memory at once; the least recently used goes first.
MAX_MODELS = 4


class ModelKey(NamedTuple):
    """Hashable identity of a loaded model: what caches are keyed by.

    Attributes
    ----------
    name : str or None
        Hub id or local folder; None for the bundled model.
    revision : str or None
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"`` …
    positions_only : bool
    """

    name: str | None
    revision: str | None
    device: str
    positions_only: bool = False


#: The bundled model, where nothing else is asked for or something else failed.
BUNDLED = ModelKey(None, None, "auto")


def key_for(name: str | None, revision: str | None = None, device: str = "auto",
            positions_only: bool = False) -> ModelKey:
    """The key of what a user typed: the bundled model's name (or nothing) means the bundled model;
    a model posviz ships the configuration of (:data:`posviz.loading.CONFIG_ONLY`) is positions only.

    Examples
    --------
    >>> key_for(" gpt2 ", "")
    ModelKey(name='gpt2', revision=None, device='auto', positions_only=False)
    >>> key_for("all-MiniLM-L6-v2 (bundled)") == BUNDLED
    True
    """
    name = (name or "").strip()
    return ModelKey(None if name in ("", BUNDLED_NAME) else name, (revision or "").strip() or None, device,
                    bool(positions_only) or name in CONFIG_ONLY)


class _Entry:
    """One model of the store: loaded once (under its own lock), with its size in bytes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.model: LoadedModel | None = None
        self.bytes = 0


class ModelStore:
    """The loaded models of a process, least recently used first.

    At most :data:`MAX_MODELS` models and ``budget`` bytes of weights stay loaded: after each load
    the least recently used others are dropped (the newest always stays) and their memory is given
    back. A dropped model that a run still holds is taken back, not loaded again, when its key is
    asked for before that run lets it go: there is never more than one copy of a model in memory, so
    a store that must drop models to fit (several sessions taking turns on more than ``budget``)
    holds at most the models in use on top of ``budget``. A caller that asks for a loaded model
    never waits behind another one's load; loads run
    one at a time, because transformers' loading is not thread-safe (it switches process-wide
    torch state while it builds a model on the meta device).

    Parameters
    ----------
    budget : int or None
        Most bytes of weights kept; None: :func:`posviz.settings.cache_budget` (``POSVIZ_CACHE_BYTES``,
        else 80 % of the free RAM).
    """

    def __init__(self, budget: int | None = None) -> None:
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._entries: OrderedDict[ModelKey, _Entry] = OrderedDict()
        self._dropped: weakref.WeakValueDictionary[ModelKey, LoadedModel] = weakref.WeakValueDictionary()
        self.budget = settings.cache_budget() if budget is None else budget

    def _entry(self, key: ModelKey) -> _Entry:
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            self._entries.move_to_end(key)
            return entry

    def get(self, key: ModelKey, progress: Callable[[str], None] | None = None) -> LoadedModel:
        """The model for ``key``, loaded now if needed (``progress`` is called with each loading step).

        Raises
        ------
        posviz.ModelLoadError
            As :func:`posviz.load_model`; a failed key is not kept.
        """
        entry = self._entry(key)
        with entry.lock:
            if entry.model is None:
                with self._lock:
                    entry.model = self._dropped.pop(key, None)  # still held by a run: taken back
                if entry.model is None:
                    try:
                        with self._loading:
                            entry.model = load_model(key.name, revision=key.revision, device=key.device,
                                                     progress=progress, positions_only=key.positions_only)
                    except ModelLoadError:
                        with self._lock:
                            if self._entries.get(key) is entry:
                                del self._entries[key]
                        raise
                entry.bytes = entry.model.weight_bytes
                self._evict(keep=key)
        return entry.model

    def loaded(self) -> dict[ModelKey, int]:
        """The loaded models and the bytes each holds, least recently used first."""
        with self._lock:
            return {key: entry.bytes for key, entry in self._entries.items() if entry.model is not None}

    def _evict(self, keep: ModelKey) -> None:
        """Drop least recently used models until the count and the bytes fit, then free their memory."""
        with self._lock:
            def over() -> bool:
                loaded = [e.bytes for e in self._entries.values() if e.model is not None]
                return len(loaded) > MAX_MODELS or sum(loaded) > self.budget

            for key in [k for k in self._entries if k != keep]:
                if not over():
                    break
                if self._entries[key].model is not None:
                    LOG.info("dropping %s from the model cache", key)
                    self._dropped[key] = self._entries.pop(key).model
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
