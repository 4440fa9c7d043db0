"""AppTest of the Compare page: the model beside the sinusoid of its width, or beside another model."""

import numpy as np
import pandas as pd
import pytest

import posviz
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page


def heatmap_z(fig: dict) -> np.ndarray:
    return arr(fig["data"][0]["z"])


def test_bundled_beside_the_sinusoid_of_its_width(bundled_lm):
    at = open_page("compare")
    assert_clean(at, "compare")
    mine, theirs, profiles = figures(at)
    table = bundled_lm.encodings[0].matrix
    np.testing.assert_allclose(heatmap_z(mine), posviz.similarity(table, "cosine"), atol=1e-5)
    np.testing.assert_allclose(heatmap_z(theirs), posviz.similarity(posviz.sinusoidal(512, 384), "cosine"), atol=1e-5)
    # one colour scale for both
    assert mine["data"][0]["zmin"] == theirs["data"][0]["zmin"] and mine["data"][0]["zmax"] == theirs["data"][0]["zmax"]
    assert theirs["layout"]["title"]["subtitle"]["text"].startswith("sinusoid, width 384 (interleaved)")
    assert [t["name"] for t in profiles["data"]] == ["all-MiniLM-L6-v2 (bundled)", "sinusoid, width 384 (interleaved)"]


def test_rotary_kernel_equals_the_halves_sinusoid_of_its_rotated_width(tiny_path):
    """Default RoPE (base 10 000, no scaling): K(m, n) is the Gram matrix of the sinusoid of width rotary_dim."""
    at = open_page("compare", query_params={"model": str(tiny_path("llama"))}, metric="dot", layout="halves")
    assert_clean(at, "compare")
    mine, theirs, _ = figures(at)
    np.testing.assert_allclose(heatmap_z(mine), heatmap_z(theirs), atol=1e-3)


def test_beside_another_model_and_a_bad_one(tiny_path, tiny_lm):
    gpt2 = str(tiny_path("gpt2"))
    at = open_page("compare", against="model", other=gpt2)
    assert_clean(at, "compare")
    mine, theirs, _ = figures(at)
    n = min(512, tiny_lm("gpt2").max_tokens)
    other = tiny_lm("gpt2").encodings[0].matrix
    np.testing.assert_allclose(heatmap_z(theirs), posviz.similarity(other[:n], "cosine"), atol=1e-5)
    assert heatmap_z(mine).shape == (n, n)

    at = open_page("compare", against="model", other="./no/such/folder")
    assert not at.exception
    assert any("./no/such/folder" in e.value for e in at.error)


@pytest.mark.parametrize("family", ["bloom"])
def test_bias_schemes_say_there_is_nothing_to_compare(family, tiny_path):
    at = open_page("compare", query_params={"model": str(tiny_path(family))})
    assert not at.exception and not figures(at)
    assert any("bias" in i.value for i in at.info)


def test_the_bundled_model_by_its_name_beside_a_local_model(tiny_path, bundled_lm):
    """The bundled preset's name typed into the other-model box means the bundled model."""
    at = open_page("compare", query_params={"model": str(tiny_path("gpt2"))}, against="model",
                   other=posviz.BUNDLED_NAME)
    assert_clean(at, "compare")
    _, theirs, _ = figures(at)
    table = bundled_lm.encodings[0].matrix
    n = heatmap_z(theirs).shape[0]
    np.testing.assert_allclose(heatmap_z(theirs), posviz.similarity(table[:n], "cosine"), atol=1e-5)


# ---------------------------------------------------------------- many models (against=models)

MANY = ("gpt2", "llama", "bloom")


def test_many_models_table_and_figures_are_the_librarys(tiny_path):
    """The sidebar's bundled model first, then the models listed; the same numbers as posviz.model_table."""
    from posviz import model_table as mt
    from posviz.store import ModelStore

    listed = [str(tiny_path(f)) for f in MANY] + ["./no/such/folder"]
    at = open_page("compare", against="models", models="\n".join(listed))
    assert not at.exception and not at.main.error
    table = mt.compare_models(mt.model_keys([None, *listed]), store=ModelStore())
    shown = at.dataframe[0].value
    expected = table.frame()
    assert list(shown.columns) == ["model", "scheme", "note", *(c for c in expected.columns
                                                               if c not in ("model", "scheme", "note"))]
    for header in expected.columns:  # numbers to 4 decimals (whole numbers as they are), an empty cell where none
        want = [("" if pd.isna(v) else v if isinstance(v, str) else f"{v:.4f}" if isinstance(v, float) else str(v))
                for v in expected[header]]
        assert list(shown[header]) == want, header
    lines = [m.value for m in at.markdown if "**" in m.value]
    assert lines[0] == ":material/check_circle: **all-MiniLM-L6-v2 (bundled)**: done"
    assert lines[4].startswith(":material/error: **./no/such/folder**: error: No folder './no/such/folder'.")
    grid, profiles = figures(at)
    names = table.names
    assert [a["text"] for a in grid["layout"]["annotations"][:len(names)]] == [  # tile titles: no folder paths
        "all-MiniLM-L6-v2", *(tiny_path(f).name for f in MANY[:2]), "sinusoid, width<br>384 (interleaved)",
        "random Gaussian,<br>seed 0"]
    assert "all-MiniLM" not in grid["layout"]["title"]["subtitle"].get("text", "")  # the tiles name the models
    for trace, name in zip(grid["data"], names):
        np.testing.assert_allclose(arr(trace["z"]), table.matrices[name].values, atol=1e-6)
    assert [t["name"] for t in profiles["data"]] == names
    assert at.number_input(key="q").value == 95  # 128 is beyond GPT-2's 96 positions: the last shared one
    for trace, name in zip(profiles["data"], names):
        np.testing.assert_allclose(arr(trace["y"]), posviz.row_profile(table.matrices[name].values, 95), rtol=1e-5)


def test_many_models_refuses_more_than_eight_and_keeps_the_list():
    listed = "\n".join(f"org/model-{i}" for i in range(8))
    at = open_page("compare", against="models", models=listed)
    assert not at.exception and not figures(at) and not at.dataframe
    assert [e.value for e in at.main.error] == [
        "9 models: at most 8 are compared side by side; leave out 1. The sidebar's model counts as one."]
    assert at.text_area(key="models").value == listed


@pytest.mark.parametrize("view, kind", [("compare-models", "heatmap"), ("compare-profiles", "scatter")])
def test_many_models_as_a_slide(view, kind, tiny_path):
    """Slide mode draws the chosen view of the models mode (the page ends its run without st.stop): the
    bundled model, the tiny GPT-2 and both references, one heatmap or one line each."""
    at = open_page("compare", query_params={"slide": view, "against": "models", "models": str(tiny_path("gpt2"))})
    assert not at.exception and not at.main.error
    (slide,) = figures(at)
    assert slide["layout"]["meta"]["look"] == "slide"
    assert [trace["type"] for trace in slide["data"]] == [kind] * 4
