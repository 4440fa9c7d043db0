"""What a checkpoint weighs, and single tensors of it read without the rest of the weights.

Local folders are read from disk. Hub repositories go through huggingface_hub: the file list,
sizes and commit from ``HfApi.model_info(files_metadata=True)``; small files (``config.json``,
the index of a sharded checkpoint) by one GET into the Hugging Face cache (:func:`fetch`); a
safetensors header or one tensor's bytes by an HTTP range request on the file's resolve URL,
the way ``HfApi.parse_safetensors_file_metadata`` reads headers (the first bytes of the file in
one request, the rest of the header only when it is longer). The safetensors layout (an 8-byte
little-endian header length, a JSON header of ``dtype``, ``shape`` and ``data_offsets``, then
the data) is from the format's specification, github.com/huggingface/safetensors.

On a link of 20 ms round trips every request costs more than its bytes, so positions only asks
the Hub four times for a single-file checkpoint: the file list, ``config.json``, the header
and the tensor (:func:`fetch` saves the HEAD request ``hf_hub_download`` makes first). Where the
Hub sends the header's read on to its CDN, the tensor's read goes to the CDN's URL directly.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import struct
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import torch
from huggingface_hub import (
    HfApi,
    ResolvedRevision,
    constants,
    hf_hub_url,
    try_to_load_from_cache,
)
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status
from safetensors.torch import load as load_safetensors

SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SINGLE = "model.safetensors"
#: The weight files transformers loads: ``model.safetensors``, ``model-00001-of-00003.safetensors``,
#: ``pytorch_model.bin`` and their shards (other files, like Mistral's ``consolidated.safetensors``,
#: are not loaded and not counted).
WEIGHT_FILE = re.compile(r"^(model|pytorch_model)(-\d+-of-\d+)?\.(safetensors|bin)$")
#: Bytes read from the start of a safetensors file to get its header in one request: 64 KiB
#: (all-MiniLM-L6-v2's header is 11 kB; ``HfApi.parse_safetensors_file_metadata`` reads 100 kB,
#: which it finds holds the header of 97 % of the Hub's top 1000 models); a longer header takes a
#: second request for the rest. Tensors stored within these bytes are not read again.
HEADER_READ = 64 * 1024


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
    revision : huggingface_hub.ResolvedRevision or None
        The revision asked for and the Hub commit the sizes belong to (None for a local folder):
        later reads and downloads (transformers' too) use it, so they all see one version of the
        repository and ask the Hub nothing more to resolve it.
    names : frozenset of str
        Every file of the checkpoint (weights or not).
    """

    safetensors: dict[str, int] = field(default_factory=dict)
    pickle: dict[str, int] = field(default_factory=dict)
    revision: ResolvedRevision | None = None
    names: frozenset[str] = frozenset()

    @property
    def commit(self) -> str | None:
        """The 40-hex Hub commit of :attr:`revision`; None for a local folder."""
        return self.revision.resolved if self.revision is not None else None

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
    The commit it names is recorded in the Hugging Face cache for the revision (as
    ``HfApi.resolve_revision`` records it), so that an offline load finds what was downloaded.

    Raises
    ------
    huggingface_hub.errors.HfHubHTTPError
        And its subclasses (repository or revision not found, gated, forbidden), from ``model_info``.
    HubUnreachable
        No network, or offline mode.
    """
    resolved = None
    if is_local(name_or_path):
        folder = Path(name_or_path).expanduser()
        sizes = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    else:
        try:
            info = HfApi().model_info(name_or_path, revision=revision, files_metadata=True)
        except (httpx2.TransportError, OfflineModeIsEnabled) as exc:
            raise HubUnreachable(str(exc)) from exc
        sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
        resolved = ResolvedRevision(resolved=info.sha, initial=revision, repo_id=name_or_path)
        if str(resolved) != info.sha:
            with contextlib.suppress(OSError):  # a read-only cache: offline loads go without
                _cache_write(name_or_path, Path("refs", str(resolved)), info.sha.encode())
    weights = {name: size for name, size in sizes.items() if WEIGHT_FILE.match(name)}
    return WeightFiles(safetensors={k: v for k, v in weights.items() if k.endswith(".safetensors")},
                       pickle={k: v for k, v in weights.items() if k.endswith(".bin")}, revision=resolved,
                       names=frozenset(sizes))


def cached_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit of the snapshot the Hugging Face cache holds for ``revision`` (None: ``main``) of a
    Hub repository: the folder its ``config.json`` is in (``snapshots/<commit>/``), found by
    ``huggingface_hub.try_to_load_from_cache`` through the cache's ``refs``; None where it holds none."""
    found = try_to_load_from_cache(repo_id, "config.json", revision=revision or "main")
    return Path(found).parent.name if isinstance(found, str) else None


def _cache_write(repo_id: str, relative: Path, data: bytes) -> str:
    """Write ``data`` at ``relative`` in the repository's folder of the Hugging Face cache, whole
    or not at all (a temporary file renamed, so a concurrent reader never sees part of it);
    returns the path.

    Raises
    ------
    OSError
        When the cache cannot be written.
    """
    path = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type="model") / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.incomplete")
    partial.write_bytes(data)
    os.replace(partial, path)
    return str(path)


def _get(url: str, start: int | None = None, end: int | None = None) -> tuple[bytes, str]:
    """The bytes at ``url``, all or ``start .. end - 1``, in one GET with huggingface_hub's session
    and errors, and the URL that served them: the Hub sends reads of a file stored with Xet or LFS
    on to its CDN, a signed URL for a while valid. huggingface_hub's headers (its token) go to the
    Hub's own host only; to the CDN's, as httpx does on a redirect to another host, none.

    Raises
    ------
    huggingface_hub.errors.HfHubHTTPError
        And its subclasses, for an error status.
    CheckpointError
        When a byte range was asked for and the server sent the whole file.
    """
    on_hub = urlsplit(url).netloc == urlsplit(constants.ENDPOINT).netloc
    headers = build_hf_headers() if on_hub else {}
    if start is not None:
        headers["Range"] = f"bytes={start}-{end - 1}"
    with get_session().stream("GET", url, headers=headers) as response:
        if response.status_code >= 400:
            response.read()
            hf_raise_for_status(response)
        if start is not None and response.status_code != 206:
            raise CheckpointError(f"the server sent the whole of {Path(urlsplit(url).path).name} instead of a byte range")
        return response.read(), str(response.url)


def fetch(repo_id: str, filename: str, files: WeightFiles) -> str:
    """The path of a small Hub file in the Hugging Face cache, downloaded there first when missing.

    What ``hf_hub_download`` does for a commit, in one request instead of two: the commit and the
    file's existence are known from :func:`weight_files`, so the HEAD request that
    ``hf_hub_download`` makes for them first is left out. The file goes where
    ``hf_hub_download`` would put it (``snapshots/<commit>/<filename>``, as a plain file, as
    huggingface_hub stores it where symlinks are not available), so transformers, later loads and
    offline loads find it there.

    Parameters
    ----------
    repo_id : str
        Hub id.
    filename : str
        Path in the repository, e.g. ``"config.json"``.
    files : WeightFiles
        The repository's files, from :func:`weight_files` (Hub, not a local folder).

    Raises
    ------
    huggingface_hub.errors.HfHubHTTPError
        And its subclasses, when the Hub refuses the file.
    OSError
        When the cache cannot be written.
    """
    found = try_to_load_from_cache(repo_id, filename, revision=files.commit)
    if isinstance(found, str):
        return found
    data, _ = _get(hf_hub_url(repo_id, filename, revision=files.commit))
    return _cache_write(repo_id, Path("snapshots", files.commit, filename), data)


class Checkpoint:
    """The safetensors checkpoint of a local folder or a Hub repository, read tensor by tensor.

    Only the bytes asked for are read: the index (sharded checkpoints, :func:`fetch`), the header
    of each file a wanted tensor lives in (its first :data:`HEADER_READ` bytes, in one request),
    and the wanted tensors' own bytes (less what the header's request brought). Without a network
    the files come from the Hugging Face cache, where an earlier download left them.

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
        self._starts: dict[str, bytes] = {}  # file name -> its first bytes, read with the header
        self._served: dict[str, str] = {}  # file name -> the URL its last read came from (the CDN's)
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
            index = self._on_disk(SAFETENSORS_INDEX) or fetch(name_or_path, SAFETENSORS_INDEX, files)
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
        """Bytes ``start .. end - 1`` of a file (fewer where the file ends first): a seek on
        disk, or one HTTP range request for those not among the file's first bytes already read."""
        path = self._on_disk(filename)
        if path is not None:
            with open(path, "rb") as handle:
                handle.seek(start)
                return handle.read(end - start)
        if self.offline:
            raise CheckpointError(f"the Hub cannot be reached and the local cache lacks {filename}")
        known = self._starts.get(filename, b"")
        head = known[start:end]
        if start + len(head) >= end or (known and len(known) < HEADER_READ):  # all there, or the file ends
            return head
        return head + self._get_range(filename, start + len(head), end)

    def _get_range(self, filename: str, start: int, end: int) -> bytes:
        """Bytes ``start .. end - 1`` of a Hub file in one request: at the URL its last read came from
        (the CDN's, where the Hub redirected it: a round trip to the Hub saved), else, or where that
        URL no longer answers (its signature expired), at the file's resolve URL."""
        served = self._served.get(filename)
        if served is not None:
            with contextlib.suppress(HfHubHTTPError):
                return _get(served, start, end)[0]
        data, self._served[filename] = _get(hf_hub_url(self.name, filename, revision=self.revision), start, end)
        return data

    def _header(self, filename: str) -> tuple[dict, int]:
        """The parsed JSON header of a safetensors file and the offset where its data starts."""
        if filename not in self._headers:
            self._starts[filename] = self._read(filename, 0, HEADER_READ)
            (length,) = struct.unpack("<Q", self._starts[filename][:8])
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
