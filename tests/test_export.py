"""Export: ``python -m posviz export`` writes files that open, named after the model, and every chart
offers its downloads.

The command runs once per module, as a subprocess on the bundled model: every HTML file parses and
carries plotly.js inside (no CDN), every PNG decodes, every SVG is XML, every NPZ loads with the
right shapes and values, every CSV is a table with a header and labels that gives the arrays back.
PNG and SVG need Chrome or Chromium (kaleido 1.x); without one those checks are skipped, except
under CI (``CI=true``), where they fail. Its options (``--layer``, ``--head``, ``--q``, ``--range``,
``--present``), the q it says it used and its error paths are called in this process, through
``posviz.cli.main``, on a tiny model (64 positions, 2 layers, 4 heads).

The CSV layout of each kind of view (``posviz.export.csv_table``) is checked on the views
themselves; on the app side, AppTest keeps the download buttons' files as functions (built on
click); a MediaFileManager that remembers itself lets the tests click them, as the browser does.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from PIL import Image
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import app_test as app_test_module

import posviz
from posviz import export
from posviz.analysis.layer_probe import layer_position_probe
from posviz.analysis.probes import absolute_position_probe
from posviz.analysis.properties import position_properties
from posviz.analysis.word_order import compare_orders
from posviz.standard_set import Export, standard_set
from posviz.views import attention as attention_views
from posviz.views import compare, positions, probes, properties, word_order
from posviz.views import input as input_views
from posviz.views.style import for_presentation
from posviz.views.view import View, slug
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import ROOT, arr, assert_clean, download_buttons, figures, open_page

SENTENCE = "The cat chased the dog"
TOKENS = ["[CLS]", "the", "cat", "chased", "the", "dog", "[SEP]"]
SHORT = "all-MiniLM-L6-v2"  # the bundled model's short name: every file name starts with it
FIGURES = ["position-similarity", "profile-q128", "projection-pca", "input-norms", "attention-layer0-head0",
           "attention-layer0-heads", "attention-by-offset"]
#: Figures whose arrays have three axes ([heads, n, n]; [layers, heads, offsets]): NPZ only, no CSV.
NO_TABLE = ("attention-layer0-heads", "attention-by-offset")
BROWSER = export.find_browser()


def needs_browser() -> None:
    if BROWSER is None:
        reason = "no Chrome or Chromium for kaleido (apt-get install chromium, or set BROWSER_PATH)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """The real command line, ``python -m posviz ...``, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "posviz", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def read_table(text: str) -> tuple[list[str], list[str], np.ndarray]:
    """(header, first column, the numbers as float64 [rows, columns]) of a CSV, through ``csv.reader``."""
    rows = list(csv.reader(io.StringIO(text)))
    body = rows[1:]
    return rows[0], [row[0] for row in body], np.array([[float(v) for v in row[1:]] for row in body])


def read_numeric(text: str) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(column names, label column, the numbers [rows, columns]) of a CSV whose labels are numbers,
    through ``numpy.genfromtxt(..., delimiter=",", names=True)``."""
    table = np.genfromtxt(io.StringIO(text), delimiter=",", names=True)
    names = table.dtype.names
    return names, table[names[0]], np.stack([table[name] for name in names[1:]], axis=1)


@pytest.fixture(scope="module")
def views(bundled_lm) -> dict[str, Export]:
    return {view.stem: view for view in standard_set(bundled_lm, SENTENCE)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("export")
    result = run_cli("export", "--sentence", SENTENCE, "--out", str(out), *([] if BROWSER else ["--no-images"]))
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result


def path_of(exported, stem: str, ext: str) -> Path:
    return exported[0] / f"{SHORT}-{stem}.{ext}"


# ---------------------------------------------------------------- the command


def test_cli_writes_the_standard_set(exported):
    out, result = exported
    listed = [Path(line) for line in result.stdout.splitlines()]
    assert sorted(listed) == sorted(out.iterdir())
    names = {p.name for p in listed}
    assert all(name.startswith(f"{SHORT}-") for name in names), names
    for stem in FIGURES:
        assert {f"{SHORT}-{stem}.html", f"{SHORT}-{stem}.npz"} <= names, stem
        assert (f"{SHORT}-{stem}.csv" in names) == (stem not in NO_TABLE)
        assert f"{SHORT}-{stem}.json" in names, stem  # the sidecar (tests/test_sidecar.py)
        if BROWSER:
            assert {f"{SHORT}-{stem}.png", f"{SHORT}-{stem}.svg"} <= names, stem
    assert f"{SHORT}-attention-all-layers.npz" in names
    assert len(names) == (41 if BROWSER else 27)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "note:" not in result.stderr  # 512 positions: q = 128 exists
    assert "/41" in result.stderr or not BROWSER, "no progress bar"  # tqdm: done/total
    assert f"Wrote {len(listed)} files" in result.stderr


class _Scripts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources, self.inline, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in_script = True
            if dict(attrs).get("src"):
                self.sources.append(dict(attrs)["src"])
            self.inline.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline[-1] += data


@pytest.mark.parametrize("stem", FIGURES)
def test_html_parses_and_works_offline(exported, stem):
    text = path_of(exported, stem, "html").read_text(encoding="utf-8")
    parser = _Scripts()
    parser.feed(text)
    parser.close()
    assert text.lstrip().lower().startswith("<html") or text.lstrip().lower().startswith("<!doctype html")
    assert parser.sources == [], f"scripts from elsewhere: {parser.sources}"
    assert any("plotly.js v" in s and len(s) > 1_000_000 for s in parser.inline), "plotly.js is not inside the file"
    assert any("Plotly.newPlot" in s for s in parser.inline)
    assert "cdn.plot.ly" not in text.split("Plotly.newPlot")[-1]
    assert f'"filename": "{SHORT}-{stem}"' in text  # the camera button saves the PNG under the same name


@pytest.mark.parametrize("stem", FIGURES)
def test_png_decodes_at_twice_the_size(exported, views, stem):
    needs_browser()
    path = path_of(exported, stem, "png")
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        image.load()
        width, height = image.size
        assert image.format == "PNG"
    assert width >= 1600 and height >= 800  # layout pixels × 2: sharp on slides
    assert (width, height) == tuple(export.PNG_SCALE * s for s in export.image_size(views[stem].figure))


@pytest.mark.parametrize("stem", FIGURES)
def test_svg_is_xml(exported, stem):
    needs_browser()
    root = ET.parse(path_of(exported, stem, "svg")).getroot()
    assert root.tag.endswith("svg")
    assert len(list(root.iter())) > 20  # axes, titles, traces


def test_npz_shapes_and_values(exported, bundled_lm):
    table = bundled_lm.encodings[0].matrix
    with np.load(path_of(exported, "position-similarity", "npz")) as z:
        assert z["similarity"].shape == (512, 512)
        np.testing.assert_allclose(z["similarity"], table @ table.T, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(z["positions"], np.arange(512))
    with np.load(path_of(exported, "profile-q128", "npz")) as z:
        assert z["profile"].shape == (512,)
        assert z["profile"].max() == pytest.approx(1.0)
    with np.load(path_of(exported, "projection-pca", "npz")) as z:
        assert z["coords"].shape == (512, 2)
    with np.load(path_of(exported, "input-norms", "npz")) as z:
        assert z["tokens"].tolist() == TOKENS
        assert z["parts"].tolist() == ["token", "segment", "position", "sum", "after LayerNorm"]
        assert z["norms"].shape == (5, 7)
        np.testing.assert_allclose(z["norms"][2], np.linalg.norm(table[:7], axis=1), rtol=1e-5)
    att = posviz.attention(bundled_lm, SENTENCE)
    with np.load(path_of(exported, "attention-all-layers", "npz")) as z:
        assert z["attention"].shape == (6, 12, 7, 7)
        assert z["tokens"].tolist() == TOKENS
        np.testing.assert_allclose(z["attention"], att.patterns, atol=1e-6)
    with np.load(path_of(exported, "attention-layer0-heads", "npz")) as z:
        assert z["attention"].shape == (12, 7, 7)
        np.testing.assert_allclose(z["attention"], att.patterns[0], atol=1e-6)
    with np.load(path_of(exported, "attention-layer0-head0", "npz")) as z:
        assert z["attention"].shape == (7, 7)
        np.testing.assert_allclose(z["attention"].sum(axis=1), 1, atol=1e-5)
    with np.load(path_of(exported, "attention-by-offset", "npz")) as z:
        assert z["mean_weight"].shape == (6, 12, 13)
        np.testing.assert_array_equal(z["offsets"], np.arange(-6, 7))
        diagonals = [[np.diagonal(att.patterns[i, h], d).mean() for d in range(-6, 7)] for i in range(6) for h in range(12)]
        np.testing.assert_allclose(z["mean_weight"].reshape(72, 13), diagonals, atol=1e-6)


def test_csv_tables_give_the_arrays_back(exported, bundled_lm):
    """Each CSV of the set: its header, its label column, and the NPZ's numbers exactly (float32)."""
    def npz(stem):
        with np.load(path_of(exported, stem, "npz")) as z:
            return {name: z[name] for name in z.files}

    def text(stem):
        return path_of(exported, stem, "csv").read_text(encoding="utf-8")

    names, labels, values = read_numeric(text("position-similarity"))  # positions × positions
    z = npz("position-similarity")
    assert names == ("positions", *map(str, range(512)))
    np.testing.assert_array_equal(labels, np.arange(512))
    np.testing.assert_array_equal(values.astype(np.float32), z["similarity"])

    names, labels, values = read_numeric(text("profile-q128"))  # one series
    assert names == ("positions", "profile")
    np.testing.assert_array_equal(labels, np.arange(512))
    np.testing.assert_array_equal(values[:, 0].astype(np.float32), npz("profile-q128")["profile"])
    assert values[128, 0] == 1.0  # row 128 against itself, divided by the row's maximum

    names, labels, values = read_numeric(text("projection-pca"))  # vectors × dimensions
    assert names == ("positions", "coords_0", "coords_1")
    np.testing.assert_array_equal(values.astype(np.float32), npz("projection-pca")["coords"])

    header, labels, values = read_table(text("input-norms"))  # one series per part, a line per token
    z = npz("input-norms")
    assert header == ["tokens", "token", "segment", "position", "sum", "after LayerNorm"] and labels == TOKENS
    np.testing.assert_array_equal(values.astype(np.float32), z["norms"].T)
    np.testing.assert_allclose(values[:, 2], np.linalg.norm(bundled_lm.encodings[0].matrix[:7], axis=1), rtol=1e-5)

    header, labels, values = read_table(text("attention-layer0-head0"))  # queries × keys
    assert header == ["query_tokens", *TOKENS] and labels == TOKENS
    np.testing.assert_array_equal(values.astype(np.float32), npz("attention-layer0-head0")["attention"])
    np.testing.assert_allclose(values, posviz.attention(bundled_lm, SENTENCE).patterns[0, 0], atol=1e-6)


# The options, the q used, and the error paths call the command's ``main`` in this process (the happy
# path above runs the real command line): exit code 2 and one line on stderr, nothing on stdout, no
# folder made.


@pytest.fixture
def cli(capsys, monkeypatch):
    """cli(*args) -> (exit code, stdout, stderr) of ``posviz.cli.main(args)`` run here; the
    transformers progress-bar setting the command changes is restored afterwards."""
    from transformers.utils import logging as hf_logging

    from posviz import cli as posviz_cli

    monkeypatch.chdir(ROOT)  # relative paths as the command line has them
    bars = hf_logging.is_progress_bar_enabled()
    capsys.readouterr()

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()  # what came before (a tiny model being built) is not the command's
        code = posviz_cli.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    if bars:
        hf_logging.enable_progress_bar()


def gram(lm) -> np.ndarray:
    """P·Pᵀ of a learned table, in float64 (computed here, not by posviz)."""
    table = lm.encodings[0].matrix.astype(np.float64)
    return table @ table.T


def test_the_export_says_which_q_it_used(cli, tiny_path, tiny_lm, tmp_path):
    """64 positions: q = 128 does not exist; the command says it used 63, and the file says q63."""
    path, lm = tiny_path("bert"), tiny_lm("bert")
    short = lm.short_name
    assert short == path.name and lm.encodings[0].num_positions == 64
    code, out, err = cli("export", "--model", str(path), "--out", str(tmp_path / "out"), "--no-images")
    assert code == 0, err
    assert err.splitlines()[0] == f"posviz: note: q = 128 does not exist: {short} has 64 positions (0 to 63); " \
                                  "used q = 63."
    names = [Path(line).name for line in out.splitlines()]
    assert names == [f"{short}-{name}" for name in (
        "position-similarity.html", "position-similarity.npz", "position-similarity.csv",  # default range: no suffix
        "position-similarity.json",
        "profile-q63.html", "profile-q63.npz", "profile-q63.csv", "profile-q63.json",
        "projection-pca.html", "projection-pca.npz", "projection-pca.csv", "projection-pca.json",
        "input-norms.html", "input-norms.npz", "input-norms.csv", "input-norms.json",
        "attention-layer0-head0.html", "attention-layer0-head0.npz", "attention-layer0-head0.csv",
        "attention-layer0-head0.json",
        "attention-layer0-heads.html", "attention-layer0-heads.npz", "attention-layer0-heads.json",
        "attention-by-offset.html", "attention-by-offset.npz", "attention-by-offset.json",
        "attention-all-layers.npz")]
    g = gram(lm)
    names, labels, values = read_numeric((tmp_path / "out" / f"{short}-profile-q63.csv").read_text())
    assert names == ("positions", "profile")
    np.testing.assert_array_equal(labels, np.arange(64))
    np.testing.assert_allclose(values[:, 0], g[63] / g[63].max(), rtol=1e-5, atol=1e-6)
    names, labels, values = read_numeric((tmp_path / "out" / f"{short}-position-similarity.csv").read_text())
    assert names == ("positions", *map(str, range(64)))
    np.testing.assert_allclose(values, g, rtol=1e-5, atol=1e-5)


def test_the_options_choose_the_figures_and_name_the_files(cli, tiny_path, tiny_lm, tmp_path):
    path, lm = tiny_path("bert"), tiny_lm("bert")
    short, out_dir = lm.short_name, tmp_path / "out"
    code, out, err = cli("export", "--model", str(path), "--out", str(out_dir), "--no-images", "--layer", "1",
                         "--head", "3", "--q", "10", "--range", "5", "20", "--present")
    assert code == 0, err
    assert "note:" not in err
    names = [Path(line).name for line in out.splitlines()]
    assert names == [f"{short}-{name}" for name in (
        "position-similarity-range5-20-present.html", "position-similarity-range5-20.npz",
        "position-similarity-range5-20.csv", "position-similarity-range5-20-present.json",
        "profile-q10-present.html", "profile-q10.npz", "profile-q10.csv", "profile-q10-present.json",
        "projection-pca-present.html", "projection-pca.npz", "projection-pca.csv", "projection-pca-present.json",
        "input-norms-present.html", "input-norms.npz", "input-norms.csv", "input-norms-present.json",
        "attention-layer1-head3-present.html", "attention-layer1-head3.npz", "attention-layer1-head3.csv",
        "attention-layer1-head3-present.json",
        "attention-layer1-heads-present.html", "attention-layer1-heads.npz", "attention-layer1-heads-present.json",
        "attention-by-offset-present.html", "attention-by-offset.npz", "attention-by-offset-present.json",
        "attention-all-layers.npz")]
    g = gram(lm)
    names, labels, values = read_numeric((out_dir / f"{short}-position-similarity-range5-20.csv").read_text())
    assert names == ("positions", *map(str, range(5, 21)))
    np.testing.assert_array_equal(labels, np.arange(5, 21))
    np.testing.assert_allclose(values, g[5:21, 5:21], rtol=1e-5, atol=1e-5)
    _, labels, values = read_numeric((out_dir / f"{short}-profile-q10.csv").read_text())
    np.testing.assert_allclose(values[:, 0], g[10] / g[10].max(), rtol=1e-5, atol=1e-6)
    att = posviz.attention(lm, SENTENCE)
    header, labels, values = read_table((out_dir / f"{short}-attention-layer1-head3.csv").read_text())
    assert header == ["query_tokens", *att.tokens] and labels == att.tokens
    np.testing.assert_allclose(values, att.patterns[1, 3], atol=1e-6)
    with np.load(out_dir / f"{short}-attention-layer1-heads.npz") as z:
        np.testing.assert_allclose(z["attention"], att.patterns[1], atol=1e-6)
    page = (out_dir / f"{short}-attention-layer1-head3-present.html").read_text(encoding="utf-8")
    shown = for_presentation(attention_views.attention_head(att.patterns[1], att.tokens, att.tokens, layer=1,
                                                            head=3).figure)
    assert f'"font":{{"size":{shown.layout.font.size},"color":"black"}}' in page.replace(" ", "")
    assert "Layer 1, head 3" in page


def _same_figure(shown: dict, exported: View | Export, what: str) -> None:
    sent = json.loads(exported.figure.to_json())
    assert shown["data"] == sent["data"], what
    assert shown["layout"] == sent["layout"], what


def test_the_settings_give_the_pages_figures(tiny_path, tiny_lm):
    """With a layer, head, q, range and presentation mode, each figure is what the page shows with them."""
    path, lm = tiny_path("bert"), tiny_lm("bert")
    exported = {view.stem: view for view in standard_set(lm, SENTENCE, layer=1, head=3, q=10, range=(5, 20),
                                                         present=True)}
    at = open_page("similarity", {"model": str(path), "present": "true"})
    at.slider(key="range").set_value((5, 20)).run()
    at.number_input(key="q").set_value(10).run()
    assert_clean(at, "similarity")
    shown = figures(at)
    _same_figure(shown[0], exported["position-similarity-range5-20"], "similarity")
    _same_figure(shown[1], exported["profile-q10"], "profile")
    at = open_page("attention", {"model": str(path), "present": "true", "text": SENTENCE, "text_pair": "",
                                 "layer": "1", "head": "3"})
    assert_clean(at, "attention")
    shown = figures(at)
    _same_figure(shown[0], exported["attention-layer1-head3"], "head")
    _same_figure(shown[2], exported["attention-layer1-heads"], "every head")


@pytest.mark.parametrize("family, args, message", [
    ("bert", ("--layer", "2"), "layer 2 does not exist: {short} has 2 layers (0 to 1)."),
    ("t5", ("--layer", "2"), "layer 2 does not exist: {short} has 2 encoder layers (0 to 1)."),
    ("bert", ("--head", "4"), "head 4 does not exist: {short} has 4 heads per layer (0 to 3)."),
    ("bert", ("--q", "64"), "q = 64 does not exist: {short} has 64 positions (q from 0 to 63)."),
    ("bert", ("--range", "0", "64"), "range 0 64 does not fit: {short} has 64 positions (0 to 63)."),
    ("bert", ("--range", "9", "3"), "range 9 3 is not a range: give FIRST LAST with 0 <= FIRST <= LAST."),
    ("bert", ("--layer", "-1"), "layer -1 does not exist: layer counts from 0."),
    ("bert", ("--q", "-5"), "q = -5 does not exist: q counts from 0."),
])
def test_settings_the_model_does_not_have_are_one_line_and_exit_code_2(cli, tiny_path, tmp_path, family, args,
                                                                       message):
    path = tiny_path(family)
    code, out, err = cli("export", "--model", str(path), "--out", str(tmp_path / "out"), "--no-images", *args)
    assert code == 2 and out == ""
    assert err.splitlines() == ["posviz: error: " + message.format(short=path.name)]
    assert not (tmp_path / "out").exists()


def test_bad_model_is_one_line_and_exit_code_2(cli, tmp_path):
    code, out, err = cli("export", "--model", "./no/such/folder", "--out", str(tmp_path / "out"), "--no-images")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("posviz: error: No folder './no/such/folder'")
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_a_file_is_refused_in_one_line(cli, tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    code, out, err = cli("export", "--out", str(tmp_path / "taken"), "--no-images")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"posviz: error: --out {tmp_path / 'taken'} is a file; give a folder (it is "
                                        "created where missing)."]


def test_no_browser_names_the_fix(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chrome"))
    code, out, err = cli("export", "--out", str(tmp_path / "out"))
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("posviz: error: ")
    assert "BROWSER_PATH" in line and "apt-get install chromium" in line and "--no-images" in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the CSV of each kind of view


def test_csv_of_a_position_matrix_and_of_vectors(bundled_lm):
    encoding = bundled_lm.encodings[0]
    table = encoding.matrix
    view = positions.position_similarity(positions.matrix(encoding, "cosine", 10, 13))
    names, labels, values = read_numeric(export.csv_table(view.arrays))
    assert names == ("positions", "10", "11", "12", "13")
    np.testing.assert_array_equal(labels, [10, 11, 12, 13])
    np.testing.assert_array_equal(values.astype(np.float32), view.arrays["similarity"])
    unit = table[10:14] / np.linalg.norm(table[10:14], axis=1, keepdims=True)
    np.testing.assert_allclose(values, unit @ unit.T, atol=1e-5)

    # 384 positions × 384 dimensions: square, yet its columns are dimensions, not positions
    view = positions.vectors(encoding, 100, 483)
    names, labels, values = read_numeric(export.csv_table(view.arrays))
    assert names == ("positions", *(f"vectors_{j}" for j in range(384)))
    np.testing.assert_array_equal(labels, np.arange(100, 484))
    np.testing.assert_array_equal(values.astype(np.float32), table[100:484])


def test_csv_of_tokens_quotes_commas_and_quotes(bundled_lm):
    emb = posviz.input_representation(bundled_lm, 'He said "yes, no"')
    assert {",", '"'} <= set(emb.tokens)
    view = input_views.input_similarity(emb)
    text = export.csv_table(view.arrays)
    header, labels, values = read_table(text)
    assert header == ["tokens", *emb.tokens] and labels == emb.tokens
    np.testing.assert_array_equal(values.astype(np.float32), view.arrays["cosine"])
    assert '\n""""' in text and '\n","' in text  # the token " as """" (doubled, quoted), the token , quoted

    view = input_views.part_vectors(emb, "position")
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["tokens", *(f"vectors_{j}" for j in range(384))] and labels == emb.tokens
    np.testing.assert_array_equal(values.astype(np.float32), emb.parts["position"])


def test_csv_of_cross_attention_has_key_tokens_as_columns():
    patterns = np.random.default_rng(0).random((2, 2, 3)).astype(np.float32)
    view = attention_views.attention_head(patterns, ["a,b", 'say "q"'], ["x", "##y", ""], layer=0, head=1,
                                          stack="cross")
    text = export.csv_table(view.arrays)
    assert text.splitlines()[0] == "query_tokens,x,##y,"
    header, labels, values = read_table(text)
    assert header == ["query_tokens", "x", "##y", ""] and labels == ["a,b", 'say "q"']
    np.testing.assert_array_equal(values.astype(np.float32), patterns[1])
    grid = attention_views.attention_grid(patterns, ["a,b", "c"], ["x", "y", "z"], layer=0, stack="cross")
    assert not export.has_table(grid.arrays)  # [heads, queries, keys]: NPZ only
    with pytest.raises(ValueError, match=r"attention \[2, 2, 3\].*use NPZ"):
        export.csv_table(grid.arrays)


def test_csv_of_series_has_a_column_per_series(bundled_lm):
    encoding = bundled_lm.encodings[0]
    mine = positions.matrix(encoding, "dot", 0, 31)
    theirs = positions.matrix(posviz.positions.sinusoid.reference_sinusoid(32, 384, "interleaved"), "dot", 0, 31)
    names = ("all-MiniLM-L6-v2 (bundled)", "sinusoid, width 384 (interleaved)")
    view = compare.profiles((mine, theirs), names, "dot", 5)  # profiles [2, 32] named by models
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["positions", *names] and labels == [str(p) for p in range(32)]
    np.testing.assert_array_equal(values.astype(np.float32), view.arrays["profiles"].T)

    g = gram(bundled_lm)[:16, :16]
    mine, ref = position_properties(g), position_properties(g[::-1, ::-1].copy())
    for view, label, columns in [
        (properties.monotonicity_profile(mine, ref, ("m", "s")), "offset", ["model", "sinusoid"]),
        (properties.symmetry_profile(mine, ref, ("m", "s")), "signed_offset", ["model", "sinusoid"]),
        (properties.translation_bands(mine, ref, ("m", "s"), "P·Pᵀ"), "offset",
         ["model_mean", "model_low", "model_high", "sinusoid_mean", "sinusoid_low", "sinusoid_high"]),
    ]:
        names, labels, values = read_numeric(export.csv_table(view.arrays))
        assert names == (label, *columns)
        np.testing.assert_array_equal(labels, view.arrays[label])
        for j, column in enumerate(columns):
            np.testing.assert_array_equal(values[:, j], view.arrays[column])  # float64: every digit



def test_csv_of_word_order_and_probes(tiny_lm, bundled_lm):
    lm = tiny_lm("bert")
    order = [4, 1, 2, 3, 0]  # the first and the last word swapped
    kept, removed = compare_orders(lm, SENTENCE, order), compare_orders(lm, SENTENCE, order, without_positions=True)
    view = word_order.difference_bars(kept, removed)  # two series of a token each
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["tokens", "with positions", "without positions"] and labels == TOKENS
    np.testing.assert_array_equal(values, np.stack([kept.l2("output"), removed.l2("output")], axis=1))
    assert values[:, 1].max() < 1e-4 < values[:, 0].min()  # without positions the outputs match

    view = word_order.stage_vectors(kept, "output")  # three matrices of one shape, side by side
    width = view.arrays["original"].shape[1]
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["tokens", *(f"{name}_{j}" for name in ("original", "permuted_back", "difference")
                                  for j in range(width))]
    assert labels == TOKENS
    np.testing.assert_array_equal(values.astype(np.float32), np.concatenate(
        [view.arrays["original"], view.arrays["permuted_back"], view.arrays["difference"]], axis=1))

    table = bundled_lm.encodings[0].matrix[:64]
    found = {"model": absolute_position_probe(table), "random": absolute_position_probe(
        np.random.default_rng(0).standard_normal(table.shape))}
    names = {"model": "all-MiniLM-L6-v2 (bundled)", "random": "random Gaussian, seed 0"}
    view = probes.probe_predictions(found, names, "position")  # no labels: the index is the true position
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["index", *names.values()] and labels == [str(i) for i in range(64)]
    assert values.tolist() == np.stack([found["model"].predictions, found["random"].predictions], axis=1).tolist()

    result = layer_position_probe(lm, SENTENCE)
    view = probes.layer_probe(result, encoder_decoder=False, max_tokens=lm.max_tokens, hidden=32)
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["index", "mae_per_layer"] and labels == ["0", "1", "2"]  # layer 0 = the embedding output
    assert values[:, 0].tolist() == result.mae.tolist()  # float64, every digit


def test_csv_of_series_stacks_and_of_unlabelled_series(tiny_lm):
    rotary = tiny_lm("llama").encodings[0]
    view = positions.kernel_bands(rotary, 40)  # kernel [1 + bands, offsets]: a column per band
    names, labels, values = read_numeric(export.csv_table(view.arrays))
    bands = view.arrays["kernel"].shape[0]
    assert names == ("offsets", *(f"kernel_{i}" for i in range(bands)))
    np.testing.assert_array_equal(labels, np.arange(41))
    np.testing.assert_array_equal(values.astype(np.float32), view.arrays["kernel"].T)

    view = positions.signature(tiny_lm("t5").encodings[0])  # the bias [heads, offsets] by offset
    names, labels, values = read_numeric(export.csv_table(view.arrays))
    heads = view.arrays["bias"].shape[0]
    assert names == ("offsets", *(f"bias_{h}" for h in range(heads)))
    np.testing.assert_array_equal(labels, np.arange(-160, 161))
    np.testing.assert_array_equal(values.astype(np.float32), view.arrays["bias"].T)

    mae = np.array([0.1 + 0.2, 1 / 3, 12.0])  # float64: given back to the last digit, in as few as do it
    text = export.csv_table({"mae": mae})
    assert text == "index,mae\n0,0.30000000000000004\n1,0.3333333333333333\n2,12.0\n"


def test_csv_of_matrices_of_one_shape_side_by_side():
    rng = np.random.default_rng(1)
    original, permuted = rng.normal(size=(2, 3, 4)).astype(np.float32)
    arrays = {"original": original, "permuted_back": permuted, "difference": permuted - original,
              "tokens": np.array(["a", "b", "c"])}  # stage_vectors' arrays
    header, labels, values = read_table(export.csv_table(arrays))
    assert header == ["tokens", *(f"{name}_{j}" for name in ("original", "permuted_back", "difference")
                                  for j in range(4))]
    assert labels == ["a", "b", "c"]
    np.testing.assert_array_equal(values.astype(np.float32), np.concatenate([original, permuted, permuted - original],
                                                                            axis=1))


def test_csv_of_the_sink_grid_has_a_line_per_layer(tiny_lm):
    """The first- and previous-token shares: a line per layer, named by it, and a column per head of each."""
    from posviz.analysis import attention_reading as reading
    from posviz.views import attention_offsets as offset_views

    lm = tiny_lm("bert")
    profile = reading.read_attention(lm, "the cat sat on the mat").offsets
    view = offset_views.sink_grid(profile)
    layers, heads = profile.sink.shape
    header, labels, values = read_table(export.csv_table(view.arrays))
    assert header == ["layer", *(f"{name}_{h}" for name in ("first_token", "previous_token") for h in range(heads))]
    assert labels == [str(layer) for layer in range(layers)]
    np.testing.assert_array_equal(values, np.concatenate([profile.sink, profile.previous_share], axis=1))


def test_what_has_no_table():
    assert not export.has_table({})
    assert not export.has_table({"tokens": ["a", "b"]})  # labels alone
    assert not export.has_table({"attention": np.zeros((2, 3, 3), np.float32), "tokens": ["a", "b", "c"]})
    assert export.has_table({"profile": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match="use NPZ"):
        export.csv_table({"tokens": ["a"]})


def test_csv_and_npz_round_trip():
    a = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    a[1, 2] = np.nan
    names, labels, back = read_numeric(export.csv_table({"vectors": a, "positions": np.arange(5)}))
    np.testing.assert_array_equal(back.astype(np.float32), a)  # 9 digits: float32 exactly, NaN as nan
    with np.load(io.BytesIO(export.npz_bytes({"m": a, "tokens": ["a", "b"]}))) as z:  # no pickle needed
        np.testing.assert_array_equal(z["m"], a)
        assert z["tokens"].tolist() == ["a", "b"]


# ---------------------------------------------------------------- file names


def test_file_names_are_safe_and_start_with_the_model():
    assert export.safe_name("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    assert export.safe_name("Qwen2.5-0.5B_x") == "Qwen2.5-0.5B_x"
    assert export.safe_name("my model (v2)") == "my-model-v2"
    assert export.safe_name("../../etc/passwd") == "etc-passwd"
    assert export.safe_name("modèle été") == "modele-ete"
    assert export.safe_name("…") == ""
    assert export.file_stem("all-MiniLM-L6-v2", "profile-q128") == "all-MiniLM-L6-v2-profile-q128"
    assert export.file_stem("", "profile-q128") == "profile-q128"
    assert export.file_stem("", "") == "figure"
    view = Export("profile-q10", go.Figure(), {"profile": np.zeros(3, np.float32)}, model="tiny bert", present=True)
    assert [p.name for p in view.files(Path("out"))] == ["tiny-bert-profile-q10-present.html",
                                                        "tiny-bert-profile-q10-present.png",
                                                        "tiny-bert-profile-q10-present.svg",
                                                        "tiny-bert-profile-q10.npz", "tiny-bert-profile-q10.csv"]
    assert [p.name for p in view.files(Path("out"), images=False)][0] == "tiny-bert-profile-q10-present.html"


def test_slug():
    from posviz.views import figures as f

    fig = f.position_heatmap(np.eye(3), 0, "P·Pᵀ, positions 0–2", "P·Pᵀ")
    assert slug(fig.layout.title.text) == "ppt-positions-0-2"  # the subtitle (<sup>) is left out
    assert slug("<b></b>") == "figure"


# ---------------------------------------------------------------- the app's download buttons


@pytest.fixture
def media(monkeypatch):
    """The MediaFileManager of each AppTest run, kept so that a test can click a deferred download."""
    made: list[MediaFileManager] = []

    class Remembered(MediaFileManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(app_test_module, "MediaFileManager", Remembered)
    return made


def clicked(media: list[MediaFileManager], button):
    """What the browser receives when ``button`` is clicked (the deferred function runs now): the
    stored file, with ``.content`` and ``.filename``."""
    manager = media[-1]
    url = manager.execute_deferred(button.proto.deferred_file_id)
    return manager._storage.get_file(url.rsplit("/", 1)[-1])


def download(media: list[MediaFileManager], button) -> bytes:
    return clicked(media, button).content


def file_names(media: list[MediaFileManager], buttons) -> list[str]:
    """The file name of each button, as the browser saves it (without building the file)."""
    deferred = media[-1]._deferred_callables
    return [deferred[b.proto.deferred_file_id]["filename"] for b in buttons]


def button_rows(at) -> list[list]:
    """The download buttons of each chart (keys ``download-<view stem>-<kind>``), in page order."""
    rows: dict[str, list] = {}
    for button in download_buttons(at):
        rows.setdefault(button.key.rsplit("-", 1)[0], []).append(button)
    return list(rows.values())


def test_similarity_page_offers_downloads_of_its_matrix(media, monkeypatch):
    built = []
    for name in ("figure_html", "figure_image", "csv_table", "npz_bytes"):
        original = getattr(export, name)
        monkeypatch.setattr(export, name, lambda *a, _f=original, _n=name, **k: built.append(_n) or _f(*a, **k))
    at = open_page("similarity")
    assert_clean(at, "similarity")
    assert built == [], "a download was built before its button was clicked"
    rows = button_rows(at)
    assert len(rows) == len(figures(at)) == 3  # every chart has its row
    heatmap_buttons = rows[0]
    assert [b.proto.label for b in heatmap_buttons] == ["SVG", "HTML (offline)", "CSV", "NPZ", "JSON"]
    assert all(b.proto.deferred_file_id and not b.proto.url for b in heatmap_buttons)
    assert [b.proto.disabled for b in heatmap_buttons] == [BROWSER is None, False, False, False, False]
    stem = slug(figures(at)[0]["layout"]["title"]["text"])
    assert file_names(media, heatmap_buttons) == [f"{SHORT}-{stem}.{ext}"
                                                  for ext in ("svg", "html", "csv", "npz", "json")]
    assert stem.startswith("ppt-positions-0-511")
    for row in rows:
        assert all(name.startswith(f"{SHORT}-") for name in file_names(media, row))
    z = arr(figures(at)[0]["data"][0]["z"])
    assert z.shape == (512, 512)

    svg_button, html_button, csv_button, npz_button, _ = heatmap_buttons  # the sidecar: tests/test_sidecar.py
    names, labels, values = read_numeric(download(media, csv_button).decode("utf-8"))
    assert names == ("positions", *map(str, range(512)))
    np.testing.assert_array_equal(labels, np.arange(512))
    np.testing.assert_array_equal(values.astype(np.float32), z)
    with np.load(io.BytesIO(download(media, npz_button))) as npz:
        np.testing.assert_array_equal(npz["similarity"], z)
        np.testing.assert_array_equal(npz["positions"], np.arange(512))
    page = download(media, html_button).decode("utf-8")
    parser = _Scripts()
    parser.feed(page)
    assert parser.sources == [] and any("plotly.js v" in s for s in parser.inline)
    assert built == ["csv_table", "npz_bytes", "figure_html"]
    if BROWSER:
        root = ET.fromstring(download(media, svg_button))
        assert root.tag.endswith("svg")


def test_download_menus_make_their_buttons_only_when_opened(media):
    at = open_page("attention")
    assert_clean(at, "attention")
    menus = [menu for menu in at.get("popover") if menu.key.startswith("download-")]
    assert len(menus) == len(figures(at)) == 7  # one a chart
    assert [menu.proto.popover.label for menu in menus] == ["Download"] * 7
    assert menus[0].proto.popover.help == "SVG, HTML (offline), CSV, NPZ, JSON: the files of this chart."
    assert len(at.get("download_button")) == 0  # a rerun of the page makes none
    at.session_state[menus[0].key] = True  # a click on the head's menu
    at.run()
    assert [b.key for b in at.get("download_button")] == [f"{menus[0].key}-{kind}"
                                                          for kind in ("svg", "html", "csv", "npz", "json")]


def test_attention_page_csv_has_the_tokens_and_npz_every_head(media):
    at = open_page("attention")
    assert_clean(at, "attention")
    head, mean, grid = button_rows(at)[:3]  # then attention by offset
    shown = figures(at)
    assert [b.proto.label for b in head] == ["SVG", "HTML (offline)", "CSV", "NPZ", "JSON"]
    assert [b.proto.label for b in grid] == ["SVG", "HTML (offline)", "NPZ", "JSON"]  # [heads, n, n]: no CSV
    assert file_names(media, head)[2] == f"{SHORT}-{slug(shown[0]['layout']['title']['text'])}.csv"
    header, labels, values = read_table(download(media, head[2]).decode("utf-8"))
    with np.load(io.BytesIO(download(media, head[3]))) as npz:
        tokens = npz["query_tokens"].tolist()
    assert tokens[:7] == ["[CLS]", "the", "cat", "chased", "the", "dog", "[SEP]"]  # and the second sentence
    assert header == ["query_tokens", *tokens] and labels == tokens
    np.testing.assert_array_equal(values.astype(np.float32), arr(shown[0]["data"][0]["z"]))
    with np.load(io.BytesIO(download(media, grid[2]))) as npz:
        patterns = npz["attention"]
        n = len(npz["query_tokens"])
        assert patterns.shape == (12, n, n)
        for h, trace in enumerate(shown[2]["data"]):
            np.testing.assert_allclose(arr(trace["z"]), patterns[h], atol=1e-6)


def test_download_names_start_with_the_folders_name(media, tiny_path):
    path = tiny_path("bert")
    at = open_page("input", {"model": str(path), "text": SENTENCE, "text_pair": ""})
    assert_clean(at, "input")
    rows = button_rows(at)
    assert rows
    for row in rows:
        names = file_names(media, row)
        assert all(name.startswith(f"{path.name}-") for name in names), names
    norms = rows[0]
    assert [b.proto.label for b in norms] == ["SVG", "HTML (offline)", "CSV", "NPZ", "JSON"]
    header, labels, values = read_table(download(media, norms[2]).decode("utf-8"))
    assert header == ["tokens", "token", "segment", "position", "sum", "after LayerNorm"] and labels == TOKENS


def _charts_with_one_title():
    import numpy as np
    import plotly.graph_objects as go

    from posviz.app.downloads import show
    from posviz.views.view import View

    for i in range(3):
        show(View(go.Figure(go.Scatter(y=[1, 2, i]), layout={"title": "Same title"}), "Same title",
                  {"y": np.array([1, 2, i])}))
    show(View(go.Figure(), ""))
    show(View(go.Figure(), "Named"), model="My model (v2)")


def test_charts_sharing_a_title_get_their_own_buttons(media):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_charts_with_one_title, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    buttons = download_buttons(at)
    keys = [b.key for b in buttons]
    assert keys == [f"download-same-title{n}-{kind}" for n in ("", "-2", "-3") for kind in ("svg", "html", "csv", "npz")
                    ] + ["download-figure-svg", "download-figure-html",  # no arrays: no CSV, no NPZ
                         "download-named-svg", "download-named-html"]
    # outside a page run there is no current model: the names are the views' own; a given model leads
    assert file_names(media, buttons[:4]) == ["same-title.svg", "same-title.html", "same-title.csv", "same-title.npz"]
    assert file_names(media, buttons[-2:]) == ["My-model-v2-named.svg", "My-model-v2-named.html"]
    assert download(media, buttons[2]).decode() == "index,y\n0,1\n1,2\n2,0\n"  # integers as they are


def test_a_file_holds_room_for_the_title_above_the_subplots():
    """An exported figure of subplots keeps its title and the tiles' titles above the first row: the top
    margin holds the title's lines, the subtitle and the tile titles (its pad), which plotly.js's
    automargin does not make for such a figure drawn in a page of its own or as an image."""
    patterns = np.full((4, 3, 3), 1 / 3, dtype=np.float32)
    tokens = ["a", "b", "c"]
    fig = attention_views.attention_grid(patterns, tokens, tokens, layer=0).figure
    title, top = fig.layout.title, fig.layout.margin.t
    figure = export.framed(fig)
    lines = title.text.count("<br>") + 1
    assert figure["layout"]["margin"]["t"] >= title.pad.b + lines * title.font.size > fig.layout.margin.t
    assert fig.layout.margin.t == top  # the figure itself is left as it is
    assert f'"t":{figure["layout"]["margin"]["t"]}' in export.figure_html(fig).replace(" ", "")
