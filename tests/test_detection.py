"""Structural detection (posviz/detection.py): what it finds in model types the family table does not list.

Tiny random checkpoints (tests/support/tiny_detect.py) of ERNIE (a learned table), data2vec-text (a
learned table whose positions start at padding_idx + 1), Helium (a rotary module) and Falcon-Mamba
(nothing positional), their types taken out of the family table: found paths, shapes and confidence;
the values posviz then reads against the model's own forward pass and modules (loaded with plain
transformers) and the RoPE formula; the Model page's sentence and figure. Small hand-made modules
check the rules one by one (a bare parameter, a module per layer, nothing found), and two configs that
cannot be built say why.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer, BertConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

import posviz
from posviz import detection, families
from posviz.detection import Detection, detect, detect_config, family_for
from posviz.positions.learned import LearnedTableSpec
from posviz.positions.rotary import RotarySpec
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page
from tests.support.tiny_detect import CONFIGS, build
from tests.support.tiny_models import SENTENCE


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """tiny(name) -> the folder of a tiny random model of tests/support/tiny_detect.py (built once)."""
    cache = {}

    def get(name: str) -> str:
        if name not in cache:
            cache[name] = str(build(name, tmp_path_factory.mktemp(f"detect-{name}")))
        return cache[name]

    return get


@pytest.fixture(autouse=True)
def unlisted(monkeypatch):
    """The tiny types taken out of the family table (where another engineer registered one)."""
    for name in CONFIGS:
        monkeypatch.delitem(families.FAMILIES, name, raising=False)


def reference(path: str):
    return AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def added_positions(path: str, module_path: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The vectors the position module outputs in the model's own forward pass of :data:`SENTENCE`
    ([tokens, width]), and the input ids."""
    model, tok = reference(path), AutoTokenizer.from_pretrained(path)
    batch = tok(SENTENCE, return_tensors="pt")
    seen = []
    handle = model.get_submodule(module_path).register_forward_hook(lambda m, i, out: seen.append(out))
    with torch.no_grad():
        model(**batch)
    handle.remove()
    return seen[0][0], batch["input_ids"][0]


# ---------------------------------------------------------------- learned tables


@pytest.mark.parametrize("name, offset", [("ernie", None), ("data2vec-text", 2)])
def test_learned_table_found_and_read(tiny, name, offset):
    lm = posviz.load_model(tiny(name))
    d = lm.detection
    assert isinstance(d, Detection) and d.error is None
    (found,) = d.findings
    assert (found.kind, found.path, found.class_name, found.shape, found.confidence, found.shown) == (
        "learned table", "embeddings.position_embeddings", "Embedding", (CONFIGS[name]().max_position_embeddings, 32),
        "certain", True)
    assert found.offset == offset
    (spec,) = lm.family.positions
    assert isinstance(spec, LearnedTableSpec) and spec.path == found.path
    (enc,) = lm.encodings
    weight = reference(tiny(name)).embeddings.position_embeddings.weight.detach()
    skip = offset or 0
    np.testing.assert_array_equal(enc.matrix, weight[skip:].numpy())  # rows = the model's weights, offset removed
    # and row p is what the model's forward pass adds at position p (the offset is right)
    added, _ = added_positions(tiny(name), "embeddings.position_embeddings")
    np.testing.assert_allclose(enc.matrix[: len(added)], added.numpy(), rtol=1e-6, atol=1e-7)
    sentence = d.sentence()
    assert "certain" in sentence and "`embeddings.position_embeddings`" in sentence
    assert ("0 is assumed" in sentence) is (offset is None)
    assert ("the offset 2 is inferred" in sentence) is (offset == 2)


def test_learned_table_positions_only(tiny):
    """A positions-only load reads the detected table alone, with the same values."""
    full = posviz.load_model(tiny("ernie")).encodings[0].matrix
    lm = posviz.load_model(tiny("ernie"), positions_only=True)
    assert lm.detection is not None and lm.positions_only
    np.testing.assert_array_equal(lm.encodings[0].matrix, full)


# ---------------------------------------------------------------- rotary


def test_rotary_module_found_and_read(tiny):
    lm = posviz.load_model(tiny("helium"))
    (found,) = lm.detection.findings
    assert (found.kind, found.path, found.class_name, found.shape, found.confidence, found.shown) == (
        "rotary", "rotary_emb", "HeliumRotaryEmbedding", (4,), "certain", True)
    (spec,) = lm.family.positions
    assert isinstance(spec, RotarySpec) and spec.path == "rotary_emb" and spec.style == "undetermined"
    (enc,) = lm.encodings
    assert isinstance(enc, posviz.RotaryEncoding)
    # the formula: θ_i = b^(-2i/d), b = 500, d = head_dim 8
    np.testing.assert_allclose(enc.frequencies, 500.0 ** (-np.arange(0, 8, 2) / 8), rtol=1e-6)
    # the model's own module, loaded independently: cos and sin of every position
    positions = np.arange(10)
    cos, sin = reference(tiny("helium")).rotary_emb(torch.zeros(1), torch.as_tensor(positions)[None])
    expected = torch.cat([cos[0, :, :4], sin[0, :, :4]], dim=-1)
    np.testing.assert_allclose(enc.vectors(positions).numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    assert "could not tell from the structure" in enc.describe()
    assert "whether every layer applies `rotary_emb`" in lm.detection.sentence()


# ---------------------------------------------------------------- nothing found


def test_nothing_found(tiny):
    lm = posviz.load_model(tiny("falcon_mamba"))
    assert lm.detection.findings == () and lm.detection.error is None
    assert lm.scheme == "unknown" and lm.family == families.Family()
    assert "no positional encoding" in lm.detection.sentence()
    assert "a form posviz cannot recognise" in lm.detection.sentence()


# ---------------------------------------------------------------- the rules, on hand-made modules


class _Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.inv_freq = nn.Buffer(torch.ones(4))


class _Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = _Rotary()
        self.proj = nn.Linear(4, 4)


def test_rules_on_handmade_modules():
    nothing = detect(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    assert nothing.findings == () and nothing.family() is None

    class WithParameter(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos_embedding = nn.Parameter(torch.zeros(1, 10, 4))
            self.char_position_embeddings = nn.Embedding(10, 4)

    found = detect(WithParameter())
    assert [(f.path, f.confidence, f.shown) for f in found.findings] == [
        ("pos_embedding", "likely", False), ("char_position_embeddings", "guess", False)]
    assert found.family() is None  # neither is sure enough to show

    layers = nn.ModuleDict({"layers": nn.ModuleList(_Layer() for _ in range(3))})
    (rotary,) = detect(layers).findings
    assert (rotary.kind, rotary.count, rotary.path, rotary.pattern) == ("rotary", 3, "layers.0.rotary",
                                                                        "layers.*.rotary")
    assert rotary.confidence == "likely" and not rotary.shown  # it does not return (cos, sin) when called


def test_components_named_by_path():
    class TwoTowers(nn.Module):
        def __init__(self):
            super().__init__()
            self.text = nn.ModuleDict({"position_embeddings": nn.Embedding(8, 4)})
            self.vision = nn.ModuleDict({"position_embeddings": nn.Embedding(5, 4)})

    family = detect(TwoTowers()).family()
    assert [(s.component, s.path) for s in family.positions] == [("text", "text.position_embeddings"),
                                                                 ("vision", "vision.position_embeddings")]


# ---------------------------------------------------------------- building, and the table's own types


@pytest.mark.parametrize("model_type, reason", [
    ("autoformer", "The `prediction_length` config needs to be specified"),
    ("aimv2_text_model", "no AutoModel class for Aimv2TextConfig"),
])
def test_build_failure_says_why(model_type, reason):
    d = detect_config(CONFIG_MAPPING[model_type]())
    assert d.findings == () and reason in d.error
    assert d.sentence().startswith("posviz could not build this model on the meta device")
    with pytest.raises(detection.BuildError, match=reason.split("`")[0]):
        detection.meta_model(CONFIG_MAPPING[model_type]())


def test_listed_types_keep_their_entry():
    config = BertConfig()
    family, found = family_for(config)
    assert found is None and family is families.family_of(config)


# ---------------------------------------------------------------- the Model page


def test_model_page_shows_detection(tiny):
    path = tiny("ernie")
    at = open_page("model", query_params={"model": path})
    assert_clean(at, "model")
    lm = posviz.load_model(path)
    (info,) = [i.value for i in at.main.info if "posviz found by structure" in i.value]
    assert info == f"posviz's family table does not list the model type `ernie`. {lm.detection.sentence()}"
    (fig,) = figures(at)
    weight = reference(path).embeddings.position_embeddings.weight.detach().numpy()
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), np.linalg.norm(weight, axis=1), rtol=1e-5)

    at = open_page("model", query_params={"model": tiny("helium")})
    assert_clean(at, "model")
    assert any("a rotary module (RoPE) at `rotary_emb`" in i.value for i in at.main.info)
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), 500.0 ** (-np.arange(0, 8, 2) / 8), rtol=1e-6)
