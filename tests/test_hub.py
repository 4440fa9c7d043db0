"""Hub scale: positions without the weights, the size guard, hosted mode and the Hub's errors.

Hub ids are served by the session's local Hub on 127.0.0.1 (``HF_ENDPOINT``, see conftest), which
counts the bytes it sends; local folders are read from disk through the same code.
"""

from __future__ import annotations

import json
import shutil
import struct
import time
import urllib.request

import numpy as np
import pytest
import torch
from transformers import AutoModel

import posviz
from posviz import hub, settings
from tests.support.local_hub import LocalHub
from tests.support.tiny_models import ALL, SCHEME_FAMILIES, build_tiny, bundled_path


def _header(path) -> tuple[dict, int]:
    """A safetensors file's header and its length with the 8-byte prefix, read independently."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        return json.loads(handle.read(length)), 8 + length


def _same_encodings(full: posviz.LoadedModel, partial: posviz.LoadedModel) -> None:
    """Every positional component of the two loads gives the same numbers."""
    a, b = full.encodings, partial.encodings
    assert [type(e) for e in a] == [type(e) for e in b] and [e.component for e in a] == [e.component for e in b]
    for x, y in zip(a, b):
        positions = np.arange(min(x.num_positions, 48) or 1)
        if x.has_vectors:
            assert torch.equal(x.vectors(positions), y.vectors(positions))
        elif x.has_bias:
            np.testing.assert_array_equal(x.bias(positions), y.bias(positions))


@pytest.mark.parametrize("family", ALL + list(SCHEME_FAMILIES))
def test_positions_only_gives_the_full_loads_numbers(family, tiny_path, tiny_lm):
    partial = posviz.load_model(str(tiny_path(family)), positions_only=True)
    full = tiny_lm(family)
    assert partial.positions_only and partial.tokenizer is None
    assert (partial.scheme, partial.max_tokens, partial.num_parameters) == (full.scheme, full.max_tokens,
                                                                          full.num_parameters)
    _same_encodings(full, partial)
    assert partial.weight_bytes < full.weight_bytes / 2  # the rest stayed on the meta device


def _asked(local_hub, repo: str) -> list[str]:
    """The requests the local Hub had about ``repo`` (not huggingface_hub's daily agent registry)."""
    return [r for r in local_hub.requests if f"/{repo}/" in f"{r}/"]


@pytest.mark.parametrize("link", [None, (100e6, 0.02)], ids=["loopback", "100MBps-20ms"])
def test_bundled_positions_through_the_hub_read_only_the_table(link, local_hub, bundled_lm):
    repo = local_hub.add(f"posviz-test/minilm-positions-{'shaped' if link else 'loopback'}", bundled_path())
    header, _ = _header(bundled_path() / "model.safetensors")
    start, end = header["embeddings.position_embeddings.weight"]["data_offsets"]
    with local_hub.shaped(*(link or (None, 0.0))):
        partial = posviz.load_model(repo, positions_only=True)
    assert local_hub.sent <= 1.1 * (end - start), (local_hub.sent, end - start, local_hub.requests)
    assert local_hub.sent >= end - start
    assert len(_asked(local_hub, repo)) <= 4, local_hub.requests  # file list, config, header, tensor
    assert not [r for r in local_hub.requests if r.startswith("GET") and r.endswith("model.safetensors")]
    table = partial.model.embeddings.position_embeddings.weight
    assert torch.equal(table, bundled_lm.model.embeddings.position_embeddings.weight)
    np.testing.assert_array_equal(partial.encodings[0].matrix, bundled_lm.encodings[0].matrix)


def test_reads_the_hub_sends_to_its_cdn_go_there_directly(local_hub, bundled_lm):
    """The Hub redirects a weight file's reads to a signed CDN URL: after the header's read the
    tensor is read there, not through the Hub again; once the signature expires, through the Hub."""
    repo = local_hub.add("posviz-test/minilm-cdn", bundled_path())
    files = hub.weight_files(repo)
    with local_hub.redirecting():
        local_hub.reset()
        checkpoint = hub.Checkpoint(repo, None, files)
        table = checkpoint.tensor("embeddings.position_embeddings.weight")
        asked = _asked(local_hub, repo)
        local_hub.expire()
        local_hub.reset()
        again = checkpoint.tensor("embeddings.word_embeddings.weight")
        after_expiry = _asked(local_hub, repo)
    expected = bundled_lm.model.embeddings.position_embeddings.weight
    assert torch.equal(table, expected)
    assert [r.split()[1].split("/")[1] for r in asked] == ["posviz-test", "cdn", "cdn"], asked  # header, tensor
    assert torch.equal(again, bundled_lm.model.embeddings.word_embeddings.weight)
    assert [r.split()[1].split("/")[1] for r in after_expiry] == ["cdn", "posviz-test", "cdn"], after_expiry


def test_sharded_bf16_checkpoint_through_the_hub(local_hub, tiny_path, tmp_path):
    folder = tmp_path / "sharded"
    shutil.copytree(tiny_path("bert"), folder)
    (folder / "model.safetensors").unlink()
    AutoModel.from_pretrained(tiny_path("bert")).to(torch.bfloat16).save_pretrained(folder, max_shard_size="40KB")
    index = json.loads((folder / hub.SAFETENSORS_INDEX).read_text())
    shard = index["weight_map"]["embeddings.position_embeddings.weight"]
    assert len(set(index["weight_map"].values())) > 2
    header, header_bytes = _header(folder / shard)
    entry = header["embeddings.position_embeddings.weight"]
    assert entry["dtype"] == "BF16"
    repo = local_hub.add("posviz-test/tiny-bert-sharded-bf16", folder)

    partial = posviz.load_model(repo, positions_only=True)
    start, end = entry["data_offsets"]
    first = max(header_bytes, min(hub.HEADER_READ, (folder / shard).stat().st_size))  # the header's one request
    needed = (end - start) + first + (folder / hub.SAFETENSORS_INDEX).stat().st_size + \
        (folder / "config.json").stat().st_size
    assert local_hub.sent <= 1.1 * needed + 2_000, (local_hub.sent, needed)  # + the file list
    assert len(_asked(local_hub, repo)) <= 5, local_hub.requests  # file list, config, index, header, tensor
    full = posviz.load_model(repo)
    assert full.dtype == torch.bfloat16
    stored = AutoModel.from_pretrained(folder).embeddings.position_embeddings.weight
    np.testing.assert_array_equal(partial.encodings[0].matrix, stored.detach().float().numpy())
    _same_encodings(full, partial)


def test_a_full_model_loads_through_the_hub(local_hub, bundled_lm):
    repo = local_hub.add("posviz-test/minilm-full", bundled_path())
    lm = posviz.load_model(repo)
    assert lm.name == repo and not lm.positions_only
    ours, bundled = posviz.input_representation(lm, "The cat sat"), posviz.input_representation(bundled_lm, "The cat sat")
    assert ours.tokens == bundled.tokens
    np.testing.assert_array_equal(ours.normalized, bundled.normalized)
    assert local_hub.sent > (bundled_path() / "model.safetensors").stat().st_size


@pytest.fixture
def published(local_hub, tiny_path):
    """A tiny BERT (with tokenizer) on the local Hub."""
    return local_hub.add("posviz-test/tiny-bert", tiny_path("bert"))


@pytest.mark.parametrize("case, expected", [
    ("missing", "No model 'posviz-test/nothing-here' on the Hugging Face Hub"),
    ("gated", "is gated: accept its licence"),
    ("forbidden", "is refused (403)"),
    ("revision", "has no revision 'no-such-branch'"),
    ("offline", "No network, and 'posviz-test/never-fetched' is not in the local Hugging Face cache"),
])
def test_hub_errors_have_their_messages(case, expected, local_hub, published, tiny_path):
    name, revision = published, None
    if case == "missing":
        name = "posviz-test/nothing-here"
    elif case == "gated":
        local_hub.gated.add(published)
    elif case == "forbidden":
        local_hub.forbidden.add(published)
    elif case == "revision":
        revision = "no-such-branch"
    if case == "offline":
        name = local_hub.add("posviz-test/never-fetched", tiny_path("bert"))
        with local_hub.offline(), pytest.raises(posviz.ModelLoadError) as info:
            posviz.load_model(name)
    else:
        with pytest.raises(posviz.ModelLoadError) as info:
            posviz.load_model(name, revision=revision)
    assert expected in str(info.value)
    if case in ("gated", "forbidden", "missing"):
        assert "HF_TOKEN" in str(info.value)


@pytest.mark.parametrize("name", ["bad id with spaces", "a/b/c/d", "org/--x"])
def test_a_malformed_id_has_the_missing_model_message(name):
    with pytest.raises(posviz.ModelLoadError, match=f"No model '{name}' on the Hugging Face Hub"):
        posviz.load_model(name)


def test_offline_a_cached_model_still_loads(local_hub, published):
    posviz.load_model(published)
    with local_hub.offline():
        lm = posviz.load_model(published)
        again = posviz.load_model(published, positions_only=True)
    assert lm.tokenizer is not None and again.positions_only


def test_positions_only_keeps_the_config_in_the_cache(local_hub, tiny_path, tiny_lm):
    repo = local_hub.add("posviz-test/tiny-llama-config-cached", tiny_path("llama"))
    posviz.load_model(repo, positions_only=True)
    assert [r.split()[0] for r in _asked(local_hub, repo)] == ["GET", "GET"]  # file list, config.json
    local_hub.reset()
    posviz.load_model(repo, positions_only=True)
    assert len(_asked(local_hub, repo)) == 1  # the file list; config.json from the cache
    with local_hub.offline():
        rotary = posviz.load_model(repo, positions_only=True)  # rotary: the cached config is enough
    _same_encodings(tiny_lm("llama"), rotary)


def test_not_a_model_and_no_tokenizer(local_hub, tmp_path):
    (tmp_path / "readme").mkdir()
    (tmp_path / "readme" / "README.md").write_text("# a dataset card\n")
    with pytest.raises(posviz.ModelLoadError, match="is not a transformers model"):
        posviz.load_model(local_hub.add("posviz-test/just-a-readme", tmp_path / "readme"))
    bare = local_hub.add("posviz-test/no-tokenizer", build_tiny("bert", tmp_path / "bare", with_tokenizer=False))
    with pytest.raises(posviz.NoTokenizerError, match="has no tokenizer files") as info:
        posviz.load_model(bare)
    assert info.value.positions_readable and "positions only" in str(info.value)
    # a SentencePiece tokenizer made from nothing (T5's) holds its word-boundary piece "▁" beside the special tokens
    bare_t5 = local_hub.add("posviz-test/no-tokenizer-t5", build_tiny("t5", tmp_path / "bare-t5", with_tokenizer=False))
    with pytest.raises(posviz.NoTokenizerError, match="has no tokenizer files"):
        posviz.load_model(bare_t5)
    assert posviz.load_model(bare, positions_only=True).max_tokens == 64


def test_size_guard_refuses_before_downloading(local_hub, published, tiny_path, monkeypatch):
    size = (tiny_path("bert") / "model.safetensors").stat().st_size
    with pytest.raises(posviz.ModelTooLargeError) as info:
        posviz.load_model(published, max_bytes=size - 1)
    assert (info.value.size, info.value.budget) == (size, size - 1)
    assert "positions only" in str(info.value)
    assert local_hub.sent < size / 2
    monkeypatch.setenv("POSVIZ_MAX_MODEL_BYTES", f"{size // 1000}kB")
    with pytest.raises(posviz.ModelTooLargeError):
        posviz.load_model(published)
    assert posviz.load_model(published, positions_only=True).positions_only
    monkeypatch.setenv("POSVIZ_MAX_MODEL_BYTES", f"{size}")
    assert posviz.load_model(published).tokenizer is not None


@pytest.fixture
def pickle_only(local_hub, tiny_path, tmp_path):
    """Two repositories with PyTorch pickle weights only: a tiny BERT and a tiny Llama."""
    repos = {}
    for family in ("bert", "llama"):
        folder = tmp_path / family
        shutil.copytree(tiny_path(family), folder)
        (folder / "model.safetensors").unlink()
        model = AutoModel.from_pretrained(tiny_path(family))
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
        repos[family] = local_hub.add(f"posviz-test/{family}-pickle", folder)
    return repos


def test_pickle_weights(pickle_only, monkeypatch, tiny_lm):
    assert posviz.load_model(pickle_only["bert"]).tokenizer is not None  # on one's own machine: allowed
    with pytest.raises(posviz.ModelLoadError, match=r"cannot be read on their own: .*\(\.bin\)"):
        posviz.load_model(pickle_only["bert"], positions_only=True)
    rotary = posviz.load_model(pickle_only["llama"], positions_only=True)  # rotary: the config is enough
    _same_encodings(tiny_lm("llama"), rotary)
    monkeypatch.setenv("POSVIZ_HOSTED", "1")
    with pytest.raises(posviz.ModelLoadError, match="loads safetensors only"):
        posviz.load_model(pickle_only["bert"])


@pytest.mark.parametrize("hosted", [False, True])
def test_remote_code_never_runs(hosted, local_hub, tmp_path, monkeypatch):
    if hosted:
        monkeypatch.setenv("SPACE_ID", "someone/posviz")
    marker = tmp_path / "remote-code-ran"
    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "posviz-custom", "auto_map": {"AutoConfig": "configuration_custom.CustomConfig",
                                                    "AutoModel": "modeling_custom.CustomModel"}}))
    code = f"open({str(marker)!r}, 'w').write('ran')\nfrom transformers import PretrainedConfig\n" \
           "class CustomConfig(PretrainedConfig):\n    model_type = 'posviz-custom'\n"
    (folder / "configuration_custom.py").write_text(code)
    (folder / "modeling_custom.py").write_text(code)
    repo = local_hub.add(f"posviz-test/custom-code-{hosted}", folder)
    for positions_only in (False, True):
        with pytest.raises(posviz.ModelLoadError, match="posviz never runs remote code"):
            posviz.load_model(repo, positions_only=positions_only)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["{folder}", "./model", "/etc", "~", "C:\\models\\bert"])
def test_hosted_mode_refuses_paths(name, tiny_path, monkeypatch):
    monkeypatch.setenv("POSVIZ_HOSTED", "1")
    with pytest.raises(posviz.ModelLoadError, match="does not open files or folders on its server"):
        posviz.load_model(name.format(folder=tiny_path("bert")))
    assert posviz.load_model(None).name == posviz.BUNDLED_NAME  # the bundled model is ours to open


def test_settings(monkeypatch):
    assert settings.parse_bytes("8GB") == 8 * 10**9
    assert settings.parse_bytes(" 512 MiB ") == 512 * 2**20
    assert settings.parse_bytes("1000") == 1000
    with pytest.raises(ValueError, match="Not a size"):
        settings.parse_bytes("lots")
    for var in ("SPACE_ID", "POSVIZ_HOSTED", "POSVIZ_MAX_TEXT"):
        monkeypatch.delenv(var, raising=False)
    assert not settings.hosted() and settings.max_text_chars() == 100_000
    monkeypatch.setenv("SPACE_ID", "someone/posviz")
    assert settings.hosted() and settings.max_text_chars() == 2_000
    monkeypatch.setenv("POSVIZ_MAX_TEXT", "300")
    assert settings.max_text_chars() == 300
    free = settings.free_memory(torch.device("cpu"))
    assert 0 < settings.model_budget(torch.device("cpu")) <= free
    assert settings.human_bytes(90_868_140) == "90.9 MB"


def test_the_local_hub_shapes_its_link(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "blob.bin").write_bytes(bytes(2_000_000))
    shaped = LocalHub(tmp_path / "hub", bandwidth=10e6, rtt=0.02)
    try:
        shaped.add("posviz-test/blob", tmp_path / "files")
        assert shaped.delay(2_000_000) == pytest.approx(0.22) and shaped.delay(0) == pytest.approx(0.02)
        url = f"{shaped.url}/posviz-test/blob/resolve/main/blob.bin"
        start = time.perf_counter()
        assert len(urllib.request.urlopen(url).read()) == 2_000_000
        assert time.perf_counter() - start >= 0.18  # a lower bound: a slow machine only adds to it
        with shaped.shaped(None, 0.0):
            assert shaped.delay(2_000_000) == 0.0
        assert (shaped.bandwidth, shaped.rtt) == (10e6, 0.02)
    finally:
        shaped.close()
