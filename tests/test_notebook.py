"""docs/notebook.ipynb run headless with a real kernel (nbclient, ipykernel): its figures display with no
network (plotly.js embedded once, no script fetched) and show the library's numbers; the README's three
lines of notebook use run."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from plotly.offline import get_plotlyjs

import posviz
from posviz.views import positions
from tests.support.apptest import arr

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
#: The README's three lines of notebook use (README, "Notebooks").
README_LINES = ('import posviz, posviz.notebook  # figures inline, no network\n'
                'from posviz.views import positions\n'
                'positions.position_similarity(positions.matrix(posviz.load_model().encodings[0], "dot", 0, 511))')


def _run(nb, tmp_path: Path, monkeypatch) -> nbformat.NotebookNode:
    """Execute ``nb`` in a fresh python3 kernel started in ``tmp_path`` (outside the repository),
    posviz imported from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def _outputs(nb) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _figures(nb) -> list[dict]:
    """The plotly figures of the notebook's outputs, in order (the JSON JupyterLab and VS Code draw)."""
    return [out["data"][PLOTLY_JSON] for out in _outputs(nb) if PLOTLY_JSON in out.get("data", {})]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _run(nbformat.read(NOTEBOOK, as_version=4), tmp_path_factory.mktemp("notebook"), monkeypatch)


def test_the_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert len(code) == 4
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_plotly_js_is_embedded_once_and_nothing_is_fetched(executed):
    html = [out["data"]["text/html"] for out in _outputs(executed) if "text/html" in out.get("data", {})]
    plotly_js = get_plotlyjs()
    assert sum(h.count(plotly_js) for h in html) == 1
    assert len(_figures(executed)) == 3 == len(html) - 1  # each figure as JSON and HTML; plotly.js on its own
    for h in html:
        own = h.replace(plotly_js, "")  # plotly.js names URLs it never fetches here (map tiles, topojson)
        assert not re.search(r"<script[^>]*\bsrc\s*=", own), own[:300]
        assert "https://" not in own and "http://" not in own and "cdn.plot.ly" not in own


def test_the_figures_show_the_librarys_numbers(executed, bundled_lm):
    similarity, profile, head = _figures(executed)
    m = positions.matrix(bundled_lm.encodings[0], "dot", 0, 511)
    expected = posviz.similarity(bundled_lm.encodings[0].matrix[:512], metric="dot")
    np.testing.assert_allclose(arr(similarity["data"][0]["z"]), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(profile["data"][0]["y"]), posviz.row_profile(expected, 128), rtol=1e-5, atol=1e-6)
    assert np.array_equal(arr(profile["data"][0]["x"]), m.labels)
    att = posviz.attention(bundled_lm, "The cat chased the dog")
    np.testing.assert_allclose(arr(head["data"][0]["z"]), att.patterns[0, 0], rtol=1e-5, atol=1e-6)
    assert list(head["layout"]["xaxis"]["ticktext"]) == att.tokens == list(head["layout"]["yaxis"]["ticktext"])


def test_the_readmes_three_lines_show_the_similarity(tmp_path, monkeypatch, bundled_lm):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(README_LINES)])
    (figure,) = _figures(_run(nb, tmp_path, monkeypatch))
    expected = posviz.similarity(bundled_lm.encodings[0].matrix[:512], metric="dot")
    np.testing.assert_allclose(arr(figure["data"][0]["z"]), expected, rtol=1e-5, atol=1e-6)
