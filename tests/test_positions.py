"""posviz.position_embeddings and the position-vs-position analyses.

Ground truth is the model's own forward pass: a hook on the model's position module
records the vectors it really adds, which posviz's matrix must reproduce row for row.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer, BertConfig

import posviz
from tests.support import sinusoid
from tests.support.reference import Capture, random_ids, run_model
from tests.support.tiny_models import FAMILIES, LEARNED, NOT_LEARNED, bundled_path


def _hooked_positions(model, spec, n: int) -> np.ndarray:
    ids = random_ids(n)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with Capture(model) as cap:
        cap.output_of(spec.position_module)
        run_model(model, batch, encoder_decoder=spec.encoder_decoder)
    return cap.outputs[spec.position_module][0].float().numpy()


# ----------------------------------------------------------------------------- tiny models


@pytest.mark.parametrize("family", LEARNED)
def test_matrix_is_what_the_model_adds(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, _ = reference(family)
    table = model.get_submodule(spec.position_module).weight.detach().numpy()

    pe = tiny_lm(family).encodings[0]

    assert pe.scheme == "learned_absolute"
    assert pe.offset == spec.offset
    assert pe.source == spec.position_module
    assert isinstance(pe.matrix, np.ndarray) and pe.matrix.dtype == np.float32
    assert pe.matrix.shape == (table.shape[0] - spec.offset, table.shape[1])
    assert pe.matrix.shape[0] == spec.max_tokens

    # Feed the longest input the model takes: every row of posviz's matrix is checked against
    # the vector the model's own position module produced at that position.
    hooked = _hooked_positions(model, spec, pe.matrix.shape[0])
    assert hooked.shape == pe.matrix.shape
    np.testing.assert_array_equal(pe.matrix, hooked)


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta", "opt", "opt-proj", "bart"])
def test_offset_two_rows_skipped(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, _ = reference(family)
    table = model.get_submodule(spec.position_module).weight.detach().numpy()
    pe = tiny_lm(family).encodings[0]
    assert pe.offset == 2
    for p in range(pe.matrix.shape[0]):
        np.testing.assert_array_equal(pe.matrix[p], table[p + 2])
    # the skipped rows really are different vectors (so the test above can fail)
    assert not np.allclose(pe.matrix[0], table[0])
    assert not np.allclose(pe.matrix[0], table[1])


@pytest.mark.parametrize("family", ["albert", "electra"])
def test_factorized_width_is_embedding_size(family, tiny_lm):
    lm = tiny_lm(family)
    pe = lm.encodings[0]
    assert pe.matrix.shape[1] == lm.config.embedding_size == 16
    assert lm.config.hidden_size == 32


_SCHEME_WORDS = {"rotary": r"rotary|rope", "alibi": r"alibi", "relative_bias": r"relative[ _-]?(position[ _-]?)?bias"}
_SCHEME_CLASS = {"rotary": "RotaryEncoding", "alibi": "AlibiBias", "relative_bias": "RelativeBias"}


@pytest.mark.parametrize("family", NOT_LEARNED)
def test_no_table_gives_the_schemes_encoding(family, tiny_lm):
    """Without a position table, position_embeddings returns the scheme's own encoding (no
    exception any more): llama -> RotaryEncoding, bloom -> AlibiBias, t5 -> RelativeBias."""
    spec = FAMILIES[family]
    lm = tiny_lm(family)
    assert lm.scheme == spec.scheme
    assert not hasattr(posviz, "NoPositionTable")
    enc = lm.encodings[0]
    assert type(enc) is getattr(posviz, _SCHEME_CLASS[spec.scheme])
    assert isinstance(enc, posviz.PositionEncoding)
    assert enc.scheme == spec.scheme
    assert re.search(_SCHEME_WORDS[spec.scheme], enc.describe(), re.IGNORECASE), enc.describe()


def test_bf16_checkpoint_gives_float32(tmp_path):
    """5.x loads checkpoints in their saved dtype; the matrix must still be float32 numpy."""
    torch.manual_seed(0)
    model = AutoModel.from_config(BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=40))
    model.to(torch.bfloat16).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(bundled_path()).save_pretrained(tmp_path)
    saved = model.embeddings.position_embeddings.weight.detach().float().numpy()

    lm = posviz.load_model(str(tmp_path))
    pe = lm.encodings[0]
    assert pe.matrix.dtype == np.float32
    np.testing.assert_array_equal(pe.matrix, saved)
    emb = posviz.input_representation(lm, "a short sentence")
    assert emb.sum.dtype == np.float32 and np.isfinite(emb.sum).all()
    att = posviz.attention(lm, "a short sentence")
    assert np.isfinite(att.patterns).all()
    np.testing.assert_allclose(att.patterns.sum(-1), 1.0, atol=1e-2)


# ----------------------------------------------------------------------------- bundled model


@pytest.fixture(scope="module")
def bundled_pe(bundled_lm):
    return bundled_lm.encodings[0]


def test_bundled_matrix_is_what_the_model_adds(bundled_pe, bundled_reference):
    model, _ = bundled_reference
    assert bundled_pe.matrix.shape == (512, 384)
    assert bundled_pe.offset == 0
    assert bundled_pe.source == "embeddings.position_embeddings"
    hooked = _hooked_positions(model, FAMILIES["bert"], 512)
    np.testing.assert_array_equal(bundled_pe.matrix, hooked)


def test_bundled_known_norms(bundled_pe):
    norms = np.linalg.norm(bundled_pe.matrix.astype(np.float64), axis=1)
    # row 0: about 2.4, far above the rest (about 0.4-0.5)
    assert 2.2 < norms[0] < 2.6
    assert 0.35 < np.median(norms[1:]) < 0.55
    assert norms[0] > 2 * norms[1:].max()
    # row 127, last position of the 128-token pre-training phase: about 0.69 against ~0.41-0.48
    assert 0.6 < norms[127] < 0.8
    assert norms[127] > 1.3 * norms[115:127].max()
    assert norms[127] > 1.3 * norms[128:140].max()


def test_bundled_similarity_dot_and_cosine(bundled_pe):
    m = bundled_pe.matrix
    m64 = m.astype(np.float64)
    dot = np.asarray(posviz.similarity(m, metric="dot"))
    assert dot.shape == (512, 512)
    np.testing.assert_allclose(np.diag(dot), (m64 ** 2).sum(1), rtol=1e-5)
    np.testing.assert_allclose(dot, m64 @ m64.T, rtol=1e-4, atol=1e-5)
    # default metric is the dot product
    np.testing.assert_allclose(np.asarray(posviz.similarity(m)), dot, atol=1e-6)

    cos = np.asarray(posviz.similarity(m, metric="cosine"))
    unit = m64 / np.linalg.norm(m64, axis=1, keepdims=True)
    np.testing.assert_allclose(np.diag(cos), 1.0, atol=1e-5)
    np.testing.assert_allclose(cos, unit @ unit.T, atol=1e-5)
    assert cos.max() <= 1 + 1e-5 and cos.min() >= -1 - 1e-5
    # the known feature: mean cosine to the next row ~0.87 below 128, ~0.85 above
    nxt = np.diag(cos, 1)
    assert 0.82 < nxt[:127].mean() < 0.9
    assert 0.8 < nxt[128:].mean() < 0.88


@pytest.mark.parametrize("q", [0, 127, 300])
def test_bundled_row_profile(bundled_pe, q):
    m64 = bundled_pe.matrix.astype(np.float64)
    g = m64 @ m64.T
    sim = posviz.similarity(bundled_pe.matrix, metric="dot")
    prof = np.asarray(posviz.row_profile(sim, q, normalize="max"))
    assert prof.shape == (512,)
    np.testing.assert_allclose(prof, g[q] / g[q].max(), atol=1e-5)
    assert prof.max() == pytest.approx(1.0, abs=1e-6)
    raw = np.asarray(posviz.row_profile(sim, q, normalize=None))
    np.testing.assert_allclose(raw, g[q], rtol=1e-4, atol=1e-5)


def test_bundled_project_pca_matches_sklearn(bundled_pe):
    from sklearn.decomposition import PCA

    m = bundled_pe.matrix
    got = np.asarray(posviz.project(m, method="pca", n_components=2))
    assert got.shape == (512, 2)
    want = PCA(n_components=2).fit_transform(m.astype(np.float64))
    for k in range(2):  # principal axes are defined up to sign
        sign = np.sign(np.dot(got[:, k], want[:, k]))
        assert sign != 0
        np.testing.assert_allclose(sign * got[:, k], want[:, k], atol=1e-3)
    got3 = np.asarray(posviz.project(m, method="pca", n_components=3))
    assert got3.shape == (512, 3)


def test_project_umap_shape_and_determinism(bundled_pe):
    m = bundled_pe.matrix[:200]
    a = np.asarray(posviz.project(m, method="umap", n_components=2, seed=0))
    b = np.asarray(posviz.project(m, method="umap", n_components=2, seed=0))
    assert a.shape == (200, 2)
    assert np.isfinite(a).all()
    assert a.std(axis=0).min() > 0  # not collapsed to a point
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- the sinusoid


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_similarity_and_row_profile_of_the_sinusoid(dtype):
    """posviz.similarity and row_profile on the sinusoid computed from its formula (512 x 768, in
    float64 and float32) give the formula's own Gram matrix and profile (tests/support/sinusoid.py;
    its reference values are asserted in tests/test_schemes.py)."""
    pe64 = sinusoid.vaswani(512, 768)
    want = pe64 @ pe64.T
    g = np.asarray(posviz.similarity(pe64.astype(dtype), metric="dot"))
    assert g.shape == (512, 512)
    np.testing.assert_allclose(g, want, atol=1e-2)
    # every diagonal is the offset curve sum_k cos(k w_k), at every start position
    i, j = np.triu_indices(512)
    np.testing.assert_allclose(g[i, j], sinusoid.offset_curve(512, 768)[j - i], atol=1e-2)

    r = np.asarray(posviz.row_profile(g, 128, normalize="max"))
    np.testing.assert_allclose(r, want[128] / want[128].max(), atol=5e-5)
    assert r[128] == pytest.approx(1.0)
    assert int(np.argmin(r)) == int(np.argmin(want[128]))

    cos = np.asarray(posviz.similarity(pe64.astype(dtype), metric="cosine"))
    unit = pe64 / np.linalg.norm(pe64, axis=1, keepdims=True)
    np.testing.assert_allclose(cos, unit @ unit.T, atol=1e-5)


def test_row_profile_divides_by_row_max_not_diagonal():
    s = np.array([[1.0, 4.0, 2.0], [4.0, 2.0, 8.0], [2.0, 8.0, 3.0]])
    np.testing.assert_allclose(posviz.row_profile(s, 0, normalize="max"), [0.25, 1.0, 0.5])
    np.testing.assert_allclose(posviz.row_profile(s, 1, normalize="max"), [0.5, 0.25, 1.0])
    np.testing.assert_allclose(posviz.row_profile(s, 2, normalize=None), [2.0, 8.0, 3.0])
