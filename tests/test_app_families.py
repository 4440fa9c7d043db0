"""Every family of the issue "any Hub model" in the app: the Model page and the Position similarity
page on its tiny random checkpoint, run headless with AppTest, their figures' numbers checked against
the model's encodings (themselves checked against the model's own modules in tests/test_families_*.py)."""

from __future__ import annotations

import numpy as np
import pytest

from posviz.analysis.similarity import block_mean
from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from posviz.views import positions
from posviz.views.limits import MAX_CELLS
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page, title_text

FAMILIES = ["modernbert", "gemma3_text", "gemma3", "smollm3", "llama4_text", "cohere2", "gpt_oss", "qwen2_vl",
            "deepseek_v3", "vit", "deit", "dinov2", "clip", "siglip", "wav2vec2", "hubert", "wavlm", "whisper",
            "longformer", "big_bird", "led", "xlnet", "deberta", "layoutlm", "reformer", "ctrl", "xglm", "gpt_neo",
            "gpt_bigcode", "codegen", "openai-gpt", "biogpt", "mamba", "mamba2"]


def _open(tiny_path, family: str, page: str, **state):
    at = open_page(page, query_params={"model": str(tiny_path(family))}, **state)
    assert_clean(at, page)
    return at


@pytest.mark.parametrize("family", FAMILIES)
def test_model_page_shows_each_components_signature(family, tiny_path, tiny_lm):
    lm = tiny_lm(family)
    at = _open(tiny_path, family, "model")
    assert f"**Positional scheme:** {lm.scheme_label}" in [m.value for m in at.markdown]
    captions = [c.value for c in at.main.caption]
    assert all(encoding.describe() in captions for encoding in lm.encodings)
    signatures = [s for s in (encoding.signature() for encoding in lm.encodings) if s is not None]
    shown = [f for f in figures(at) if not title_text(f).startswith("Positional scheme of each layer")]
    assert len(shown) == len(signatures)  # one figure per component with a signature, in their order
    for signature, fig in zip(signatures, shown):
        assert title_text(fig).startswith(signature.title.split("<br>")[0])
        for trace in fig["data"]:
            np.testing.assert_allclose(arr(trace["y"]), signature.series[trace["name"]], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_similarity_page_shows_each_components_matrix(family, tiny_path, tiny_lm):
    lm = tiny_lm(family)
    for encoding in lm.encodings:
        state = {"component": encoding.component} if len(lm.encodings) > 1 else {}
        if encoding.has_bias:
            state["bias_head"] = 0  # one head, at full size
        at = _open(tiny_path, family, "similarity", **state)
        if not (encoding.has_vectors or encoding.has_bias):
            (info,) = at.info
            assert encoding.describe() in info.value and not at.get("plotly_chart")
            continue
        m = positions.matrix(encoding, "dot", *positions.default_range(encoding))
        heat = next(f for f in figures(at) if f["data"][0]["type"] == "heatmap")
        expected, _ = block_mean(m.values[0] if m.per_head else m.values, MAX_CELLS)  # as the figure sends it
        np.testing.assert_allclose(arr(heat["data"][0]["z"]), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family, says", [("mamba", "it has no attention layers"), ("rwkv", "no attention layers"),
                                          ("longformer", "sliding window of keys"), ("led", "sliding window"),
                                          ("reformer", "locality-sensitive hashing"), ("funnel", "pools the sequence")])
def test_attention_pages_say_why_they_cannot_read_it(family, says, tiny_path):
    for page, what in (("attention", "Attention patterns"), ("properties", "Identical-word attention")):
        at = _open(tiny_path, family, page)
        message = at.info[-1].value
        assert message.startswith(f"{what} cannot be shown for") and says in message, message


def test_convbert_attention_is_its_attending_heads(tiny_path, tiny_lm, reference):
    """ConvBERT attends with num_attention_heads / head_ratio heads (the others are convolutions)."""
    import torch

    lm = tiny_lm("convbert")
    model, tokenizer = reference("convbert")
    assert lm.num_heads == lm.config.num_attention_heads // lm.config.head_ratio
    at = _open(tiny_path, "convbert", "attention", layer=0, head=lm.num_heads - 1)
    heat = next(f for f in figures(at) if f["data"][0]["type"] == "heatmap")
    inputs = tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR, return_tensors="pt")  # the page's default input
    with torch.no_grad():
        own = model(**inputs, output_attentions=True).attentions[0][0, lm.num_heads - 1].numpy()
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), own, rtol=1e-5, atol=1e-6)
