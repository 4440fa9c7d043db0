"""The app with Hub-scale models: positions only, the size guard, hosted mode and the model cache.

AppTest runs the app (tests/support/apptest.py); models come from local folders, and in one test
from the session's local Hub on 127.0.0.1.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import posviz
from posviz import store as model_store
from posviz.app import caches
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page
from tests.support.tiny_models import bundled_path


@pytest.fixture(autouse=True)
def empty_store():
    """A new process-wide model store: models that other tests loaded would skip the size guard."""
    caches.model_store.clear()
    yield
    caches.model_store.clear()


def _info(at) -> str:
    return " ".join(i.value for i in at.main.info)


@pytest.mark.parametrize("page, what", [("input", "through the embedding layer"),
                                        ("attention", "through every attention layer"),
                                        ("word_order", "through the whole model, twice")])
def test_positions_only_pages_that_need_weights_say_so(page, what):
    at = open_page(page, {"positions_only": "true"})
    assert_clean(at, page)
    assert f"This view runs sentences {what}, which needs the model's full weights" in _info(at)
    assert not at.get("plotly_chart")
    at.button[0].click().run()  # "Load the full model"
    assert at.sidebar.toggle(key="positions_only").value is False
    assert_clean(at, page)
    assert at.get("plotly_chart")


def test_positions_only_position_pages_show_the_model_numbers(local_hub, bundled_lm):
    repo = local_hub.add("posviz-test/minilm-app", bundled_path())
    at = open_page("similarity", {"model": repo, "positions_only": "true", "metric": "cosine"})
    assert_clean(at, "similarity")
    assert not at.sidebar.error
    assert "positions only" in " ".join(c.value for c in at.sidebar.caption)
    matrix = bundled_lm.encodings[0].matrix
    heatmap = arr(figures(at)[0]["data"][0]["z"])
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    np.testing.assert_allclose(heatmap, (unit @ unit.T)[:heatmap.shape[0], :heatmap.shape[1]], atol=1e-5)
    assert not [r for r in local_hub.requests if r.endswith("/model.safetensors")]  # ranges only


def test_too_large_model_offers_positions_only(tiny_path, monkeypatch):
    monkeypatch.setenv("POSVIZ_MAX_MODEL_BYTES", "1kB")
    folder = str(tiny_path("gpt2"))
    at = open_page("model", {"model": folder})
    errors = " ".join(e.value for e in at.sidebar.error)
    assert "of weights, more than this machine can load (1 kB" in errors
    assert "Showing **all-MiniLM-L6-v2 (bundled)**" in " ".join(c.value for c in at.sidebar.caption)
    at.sidebar.button[0].click().run()  # "Show its positions only"
    assert not at.sidebar.error
    assert at.sidebar.toggle(key="positions_only").value is True
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Model type"] == "gpt2" and metrics["Max tokens"] == "96"  # the tiny GPT-2 n_positions
    assert at.sidebar.selectbox(key="model").value == folder  # what the user typed is kept


def test_model_without_a_tokenizer_offers_positions_only(tmp_path):
    """A text model saved without tokenizer files cannot run sentences; the sidebar says so and its
    button loads its positions alone: the model page shows its own position table."""
    from tests.support.tiny_models import build_tiny

    folder = str(build_tiny("gpt2", tmp_path / "bare", with_tokenizer=False))
    at = open_page("model", {"model": folder})
    errors = " ".join(e.value for e in at.sidebar.error)
    assert "has no tokenizer files" in errors and "positions can still be read without one" in errors
    at.sidebar.button[0].click().run()  # "Show its positions only"
    assert_clean(at, "model")
    assert at.sidebar.toggle(key="positions_only").value is True
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Model type"] == "gpt2" and metrics["Max tokens"] == "96"
    table = posviz.load_model(folder, positions_only=True).encodings[0].vectors(np.arange(96)).numpy()
    norms = arr(figures(at)[0]["data"][0]["y"])
    np.testing.assert_allclose(norms, np.linalg.norm(table, axis=1), rtol=1e-5)


def test_hosted_mode_refuses_folders_and_caps_text(tiny_path, monkeypatch):
    monkeypatch.setenv("POSVIZ_HOSTED", "1")
    long_text = "word " * 500
    at = open_page("input", {"model": str(tiny_path("bert")), "text": long_text, "text_pair": ""})
    assert "does not open files or folders on its server" in " ".join(e.value for e in at.sidebar.error)
    assert "Hosted demo" in " ".join(c.value for c in at.sidebar.caption)
    assert_clean(at, "input")
    assert at.text_input(key="text").value == long_text  # the field keeps all that was typed
    assert "2,500 characters, more than this app takes (2,000); the first 2,000 are used" in \
        " ".join(w.value for w in at.main.warning)
    norms = arr(figures(at)[0]["data"][0]["y"])
    assert len(norms) == 402  # the first 2 000 characters: 400 words, [CLS] and [SEP]


def test_store_keeps_count_and_bytes_bounded_and_frees_memory(tiny_path, tiny_lm, monkeypatch):
    families = ("bert", "gpt2", "llama")
    keys = [model_store.key_for(str(tiny_path(f))) for f in families]
    sizes = [tiny_lm(f).weight_bytes for f in families]
    store = model_store.ModelStore()
    assert sizes[2] < sizes[0]
    store.budget = sizes[0] + sizes[1]  # room for the first two
    first = weakref.ref(store.get(keys[0]))
    store.get(keys[1])
    assert list(store.loaded()) == keys[:2]
    store.get(keys[2])  # the least recently used go until it fits
    assert list(store.loaded()) == keys[1:]
    assert sum(store.loaded().values()) <= store.budget
    gc.collect()
    assert first() is None  # the dropped model's tensors were given back
    monkeypatch.setattr(model_store, "MAX_MODELS", 1)
    store.budget = 10**12
    store.get(keys[0])
    assert list(store.loaded()) == [keys[0]]
    assert store.get(keys[0]).encodings is store.get(keys[0]).encodings  # read once, kept with the model



def test_store_takes_back_a_dropped_model_a_run_still_holds_instead_of_loading_a_second_copy(tiny_path, monkeypatch):
    keys = [model_store.key_for(str(tiny_path(f))) for f in ("bert", "gpt2")]
    loads = []
    real_load = model_store.load_model
    monkeypatch.setattr(model_store, "load_model", lambda name, **kw: loads.append(name) or real_load(name, **kw))
    store = model_store.ModelStore(budget=1)  # room for one model only: each load drops the other
    held = store.get(keys[0])  # as a run in flight holds its model
    store.get(keys[1])
    assert list(store.loaded()) == keys[1:]
    assert store.get(keys[0]) is held  # the same object, not a second copy
    assert loads == [keys[0].name, keys[1].name]
    assert list(store.loaded()) == keys[:1]  # back in the store, the other dropped in turn
    gc.collect()
    store.get(keys[1])  # gpt2 was let go by every run meanwhile: loaded again
    assert loads == [keys[0].name, keys[1].name, keys[1].name]

def test_truncation_notice_counts_the_dropped_tokens(bundled_lm):
    text = "word " * 600
    at = open_page("input", {"text": text, "text_pair": "A short one"})
    assert_clean(at, "input")
    dropped = posviz.input_representation(bundled_lm, text, "A short one").truncated
    assert dropped == 600 + 3 + 3 - 512  # words, 'a short one', [CLS] and two [SEP]
    assert (f"The input is longer than the model's 512 positions: {dropped} tokens were dropped, from the end of "
            "the longer sentence first") in " ".join(w.value for w in at.main.warning)
    assert "shorten the text to see its end, or pick a model with more positions" in " ".join(
        w.value for w in at.main.warning)
