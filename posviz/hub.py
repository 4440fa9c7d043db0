"""What a checkpoint weighs, and single tensors of it read without the rest of the weights.

Local folders are read from disk. Hub repositories go through huggingface_hub: the file sizes
from ``HfApi.model_info(files_metadata=True)``, the index with ``hf_hub_download``, and a
safetensors header or one tensor's bytes by an HTTP range request on the file's resolve URL,
the way ``HfApi.parse_safetensors_file_metadata`` reads headers. The safetensors layout (an
8-byte little-endian header length, a JSON header of ``dtype``, ``shape`` and ``data_offsets``,
then the data) is from the format's specification, github.com/huggingface/safetensors.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import torch
from huggingface_hub import HfApi, hf_hub_download, hf_hub_url, try_to_load_from_cache
from huggingface_hub.errors import OfflineModeIsEnabled
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status
from safetensors.torch import load as load_safetensors

SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SINGLE = "model.safetensors"
#: The weight files transformers loads: ``model.safetensors``, ``model-00001-of-00003.safetensors``,
#: ``pytorch_model.bin`` and their shards (other files, like Mistral's ``consolidated.safetensors``,
#: are not loaded and not counted).
WEIGHT_FILE = re.compile(r"^(model|pytorch_model)(-\d+-of-\d+)?\.(safetensors|bin)$")


class CheckpointError(ValueError):
    """The checkpoint cannot give what was asked (no safetensors file, a missing tensor, a server
    that ignores byte ranges); the message says which."""


class HubUnreachable(ConnectionError):
    """The Hub did not answer: no network, or ``HF_HUB_OFFLINE=1``."""


@dataclass(frozen=True)
class WeightFiles:
    """The weight files of a checkpoint, by format.

    Attributes
    ----------
    safetensors, pickle : dict of str to int
        File name -> size in bytes, for ``*.safetensors`` and ``*.bin`` (PyTorch pickle) files.
    commit : str or None
        The Hub commit the sizes belong to (None for a local folder): later reads use it, so
        they all see one version of the repository.
    """

    safetensors: dict[str, int] = field(default_factory=dict)
    pickle: dict[str, int] = field(default_factory=dict)
    commit: str | None = None

    @property
    def total(self) -> int:
        """Bytes of the files transformers loads: the safetensors ones where there are any, else
        the pickle ones. Loaded in the checkpoint's dtype, the weights take about as much memory."""
        return sum((self.safetensors or self.pickle).values())


def is_local(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names a folder on this machine rather than a Hub repository."""
    return os.path.isdir(os.path.expanduser(name_or_path))


def weight_files(name_or_path: str, revision: str | None = None) -> WeightFiles:
    """The weight files of a local folder or a Hub repository, and their sizes.

    For a Hub id this is one API call, not retried: the first thing to ask the Hub, since it
    tells quickly whether the repository and revision exist and whether the Hub can be reached.

    Raises
    ------
    huggingface_hub.errors.HfHubHTTPError
        And its subclasses (repository or revision not found, gated, forbidden), from ``model_info``.
    HubUnreachable
        No network, or offline mode.
    """
    commit = None
    if is_local(name_or_path):
        folder = Path(name_or_path).expanduser()
        sizes = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    else:
        try:
            info = HfApi().model_info(name_or_path, revision=revision, files_metadata=True)
        except (httpx2.TransportError, OfflineModeIsEnabled) as exc:
            raise HubUnreachable(str(exc)) from exc
        sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
        commit = info.sha
    weights = {name: size for name, size in sizes.items() if WEIGHT_FILE.match(name)}
    return WeightFiles(safetensors={k: v for k, v in weights.items() if k.endswith(".safetensors")},
                       pickle={k: v for k, v in weights.items() if k.endswith(".bin")}, commit=commit)


class Checkpoint:
    """The safetensors checkpoint of a local folder or a Hub repository, read tensor by tensor.

    Only the bytes asked for are read: the index (sharded checkpoints), the header of each file
    a wanted tensor lives in, and the wanted tensors' own bytes. Without a network the files
    come from the Hugging Face cache, where an earlier download left them.

    Parameters
    ----------
    name_or_path : str
        Local folder or Hub id.
    revision : str or None
        Branch, tag or commit (Hub only).
    files : WeightFiles or None
        The repository's weight files (:func:`weight_files`); None when the Hub cannot be reached.

    Raises
    ------
    CheckpointError
        When the checkpoint has no safetensors weights (or, offline, none in the cache).
    """

    def __init__(self, name_or_path: str, revision: str | None, files: WeightFiles | None):
        self.name = name_or_path
        self.revision = (files.commit if files is not None else None) or revision
        self.local = is_local(name_or_path)
        self.offline = files is None
        self._headers: dict[str, tuple[dict, int]] = {}
        if self.offline:
            if not (self._on_disk(SAFETENSORS_SINGLE) or self._on_disk(SAFETENSORS_INDEX)):
                raise CheckpointError("the Hub cannot be reached and the local cache holds none of its weights")
            single = self._on_disk(SAFETENSORS_SINGLE) is not None
        elif not files.safetensors:
            raise CheckpointError("its weights are stored only as PyTorch pickle files (.bin), which cannot be "
                                  "read in part (or safely)")
        else:
            single = SAFETENSORS_SINGLE in files.safetensors
        if single:
            self.weight_map = {name: SAFETENSORS_SINGLE for name in self._header(SAFETENSORS_SINGLE)[0]}
        else:
            index = self._on_disk(SAFETENSORS_INDEX) or hf_hub_download(name_or_path, SAFETENSORS_INDEX,
                                                                       revision=self.revision)
            self.weight_map = json.loads(Path(index).read_text())["weight_map"]

    def _on_disk(self, filename: str) -> str | None:
        """The file's path where it is on this machine: in the local folder, or, offline, in the
        Hugging Face cache; else None."""
        if self.local:
            path = Path(self.name).expanduser() / filename
            return str(path) if path.is_file() else None
        if self.offline:
            found = try_to_load_from_cache(self.name, filename, revision=self.revision)
            return found if isinstance(found, str) else None
        return None

    def _read(self, filename: str, start: int, end: int) -> bytes:
        """Bytes ``start .. end - 1`` of a file: a seek on disk, or one HTTP range request."""
        path = self._on_disk(filename)
        if path is not None:
            with open(path, "rb") as handle:
                handle.seek(start)
                return handle.read(end - start)
        if self.offline:
            raise CheckpointError(f"the Hub cannot be reached and the local cache lacks {filename}")
        url = hf_hub_url(self.name, filename, revision=self.revision)
        headers = {**build_hf_headers(), "Range": f"bytes={start}-{end - 1}"}
        with get_session().stream("GET", url, headers=headers) as response:
            if response.status_code >= 400:
                response.read()
                hf_raise_for_status(response)
            if response.status_code != 206:
                raise CheckpointError(f"the server sent the whole of {filename} instead of a byte range")
            return response.read()

    def _header(self, filename: str) -> tuple[dict, int]:
        """The parsed JSON header of a safetensors file and the offset where its data starts."""
        if filename not in self._headers:
            (length,) = struct.unpack("<Q", self._read(filename, 0, 8))
            header = json.loads(self._read(filename, 8, 8 + length))
            header.pop("__metadata__", None)
            self._headers[filename] = header, 8 + length
        return self._headers[filename]

    def tensor(self, name: str) -> torch.Tensor:
        """One tensor of the checkpoint, in its stored dtype (bf16, fp16, fp32 …) and shape.

        Raises
        ------
        KeyError
            When the checkpoint has no tensor of that name.
        """
        filename = self.weight_map[name]
        header, data_start = self._header(filename)
        entry = header[name]
        start, end = entry["data_offsets"]
        data = self._read(filename, data_start + start, data_start + end)
        single = json.dumps({name: dict(entry, data_offsets=[0, end - start])}).encode()
        single += b" " * (-len(single) % 8)
        return load_safetensors(struct.pack("<Q", len(single)) + single + data)[name]

    def find(self, suffix: str) -> str | None:
        """The stored name of the tensor at module path ``suffix`` below the base model: the name
        itself, or one with a prefix (``bert.``, ``model.``, ``transformer.`` …); None if absent."""
        matches = [name for name in self.weight_map if name == suffix or name.endswith("." + suffix)]
        return min(matches, key=len) if matches else None
