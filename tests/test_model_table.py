"""Many models side by side (posviz.model_table, python -m posviz compare): every cell against the library
function it comes from, computed here; the figures; the CLI; bad input."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

import posviz
from posviz import model_table as mt
from posviz.analysis.boundary import boundary_statistics
from posviz.analysis.probes import absolute_position_probe, relative_order_probe
from posviz.analysis.properties import position_properties
from posviz.analysis.similarity import row_profile, similarity
from posviz.cli import main
from posviz.store import ModelStore

MISSING = "./no/such/folder"
#: The models of the table: the bundled learned table (512 × 384), a tiny GPT-2 table (96 × 32), a tiny
#: Llama (rotary: rotation features, 128 positions, head dim 8), a tiny BLOOM (ALiBi: no vector), a folder
#: that does not exist.
FAMILIES = ("gpt2", "llama", "bloom")


def model_names(tiny_path) -> list[str | None]:
    return [None, *(str(tiny_path(f)) for f in FAMILIES), MISSING]


@pytest.fixture(scope="module")
def compared(tiny_path):
    """The table of :func:`model_names` (cosine, seed 0) and each step reported, computed once for the module."""
    steps = []
    table = mt.compare_models(mt.model_keys(model_names(tiny_path)), store=ModelStore(), progress=steps.append)
    return table, steps


def expected_cells(vectors: np.ndarray) -> dict:
    """Each score of a row, straight from the library functions, with the paper's protocol."""
    found = position_properties(similarity(vectors, "cosine"))
    cells = {"rows": vectors.shape[0], "width": vectors.shape[1], "monotonicity": found.monotonicity,
             "translation_invariance": found.translation_invariance, "symmetry": found.symmetry,
             "absolute_mae": absolute_position_probe(vectors, folds=5, seed=0, regression="linear").score,
             "relative_error": relative_order_probe(vectors, pairs=512, folds=5, seed=0).score}
    if vectors.shape[0] > 129:
        edge = boundary_statistics(vectors, 128)
        cells |= {"edge_norm_ratio": edge.edge_norm_ratio, "next_cosine_before": edge.next_cosine_before,
                  "next_cosine_after": edge.next_cosine_after}
    else:
        cells |= dict.fromkeys(("edge_norm_ratio", "next_cosine_before", "next_cosine_after"))
    return cells


def assert_row(row: mt.ModelRow, want: dict) -> None:
    for name, value in want.items():
        got = getattr(row, name)
        if value is None or isinstance(value, int):
            assert got == value, name
        else:
            assert got == pytest.approx(value, rel=1e-9, abs=1e-12), name


def test_each_model_row_is_the_library_functions_of_its_vectors(compared, bundled_lm, tiny_lm):
    table, _ = compared
    rows = table.rows
    assert [r.model for r in rows[:5]] == [posviz.BUNDLED_NAME, *(str(tiny_lm(f).name) for f in FAMILIES), MISSING]
    bundled = bundled_lm.encodings[0].matrix  # the full load's table: the positions-only one is the same
    assert rows[0].scheme == "learned absolute position embeddings" and rows[0].positions == 512 and rows[0].note == ""
    assert_row(rows[0], expected_cells(bundled))
    gpt2 = tiny_lm("gpt2").encodings[0].matrix
    assert (rows[1].scheme, rows[1].positions) == ("learned absolute position embeddings", 96)
    assert_row(rows[1], expected_cells(gpt2))  # 96 rows: no 128 boundary
    rotary = tiny_lm("llama").encodings[0]
    features = rotary.vectors(np.arange(128)).numpy()
    assert (rows[2].scheme, rows[2].positions, rows[2].note) == ("rotary position embedding (RoPE)", 128, "rotation features [cos pθ, sin pθ]")
    assert_row(rows[2], expected_cells(features))
    assert rows[2].width == 8 and rows[2].translation_invariance == pytest.approx(1.0, abs=1e-6)


def test_a_scheme_without_vectors_and_a_missing_folder_get_rows_that_say_why(compared, tiny_lm):
    table, _ = compared
    bloom, missing = table.rows[3:5]
    assert (bloom.scheme, bloom.positions, bloom.width, bloom.failed) == ("ALiBi (attention with linear biases)", tiny_lm("bloom").max_tokens, 32, False)
    assert "a bias per head on the attention scores, no vector per position" in bloom.note
    scores = ("rows", "monotonicity", "translation_invariance", "symmetry", "absolute_mae", "relative_error",
              "edge_norm_ratio", "next_cosine_before", "next_cosine_after")
    assert all(getattr(bloom, name) is None for name in scores)
    assert missing.failed and missing.note == ("No folder './no/such/folder'. Give an existing folder with "
                                               "config.json, or a Hub id.")
    assert missing.scheme == "" and all(getattr(missing, name) is None for name in ("positions", "width", *scores))
    assert table.failed == [missing]


def test_references_are_the_sinusoid_and_a_seeded_random_matrix_of_the_first_table(compared):
    table, _ = compared
    sinusoid, random = table.rows[5:]
    assert (sinusoid.model, sinusoid.scheme, sinusoid.reference) == ("sinusoid, width 384 (interleaved)", "fixed sinusoid", True)
    assert_row(sinusoid, {"positions": 512, **expected_cells(posviz.sinusoidal(512, 384))})
    assert sinusoid.edge_norm_ratio == pytest.approx(1.0) and sinusoid.translation_invariance == pytest.approx(1.0)
    assert (random.model, random.scheme) == ("random Gaussian, seed 0", "random Gaussian")
    noise = np.random.default_rng(0).standard_normal((512, 384)).astype(np.float32)
    assert_row(random, {"positions": 512, **expected_cells(noise)})


def test_the_128_boundary_of_the_bundled_table(bundled_lm):
    """Computed with numpy here: row 127 is ~1.44 times the median length; consecutive rows ~0.863 / ~0.848."""
    table = bundled_lm.encodings[0].matrix.astype(np.float64)
    found = boundary_statistics(table)
    norms = np.linalg.norm(table, axis=1)
    unit = table / norms[:, None]
    following = np.sum(unit[:-1] * unit[1:], axis=1)
    assert found.edge_norm_ratio == pytest.approx(norms[127] / np.median(norms))
    assert found.next_cosine_before == pytest.approx(following[:127].mean())
    assert found.next_cosine_after == pytest.approx(following[128:].mean())
    assert 1.3 < found.edge_norm_ratio < 1.6 and found.next_cosine_before > found.next_cosine_after
    with pytest.raises(ValueError, match="at least 130"):
        boundary_statistics(table[:129])


def test_progress_per_model_and_the_figures(compared, tiny_lm):
    table, steps = compared
    assert [s.state for s in steps[:5]] == ["queued"] * 5
    for index in range(5):
        states = [s.state for s in steps if s.index == index]
        assert states[0] == "queued" and states[1] == "loading"
        assert states[-1] == ("error" if index == 4 else "done") and states.count(states[-1]) == 1
    assert next(s for s in steps if s.state == "error").detail == table.rows[4].note
    # the figures: every table with vectors and both references over the positions all share (96, GPT-2's)
    names = [table.rows[i].model for i in (0, 1, 2, 5, 6)]
    assert table.names == names
    views = mt.figure_views(table)
    assert list(views) == ["similarity", "profiles-q95"]  # q = 128 does not exist in 96 positions: the last
    grid, profiles = views.values()
    assert grid.id == "compare-models" and profiles.id == "compare-profiles"
    assert grid.arrays["similarity"].shape == (5, 96, 96) and list(grid.arrays["models"]) == names
    vectors = [table.matrices[name] for name in names]
    for found, m in zip(grid.arrays["similarity"], vectors):
        np.testing.assert_array_equal(found, m.values)
    gpt2 = tiny_lm("gpt2").encodings[0].matrix[:96]
    np.testing.assert_allclose(table.matrices[names[1]].values, similarity(gpt2, "cosine"), atol=1e-6)
    zmin, zmax = grid.figure.layout.coloraxis.cmin, grid.figure.layout.coloraxis.cmax
    stack = grid.arrays["similarity"]
    assert (zmin, zmax) == pytest.approx(tuple(np.nanpercentile(stack, [1, 99])))  # one scale for all
    assert [t.name for t in profiles.figure.data] == names
    for line, m in zip(profiles.arrays["profiles"], vectors):
        np.testing.assert_allclose(line, row_profile(m.values, 95), rtol=1e-6)
    with pytest.raises(ValueError, match="q = 96 does not exist: the models share positions 0 to 95"):
        mt.figure_views(table, 96)


def read_csv(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    header, *rows = list(csv.reader(lines))
    return header, rows


def test_csv_has_a_header_and_the_protocol(compared):
    table, _ = compared
    text = table.csv()
    first = text.splitlines()[0]
    assert first.startswith("# posviz model table.") and "seed 0" in first and "5-fold" in first
    assert "512 random pairs" in first and "least squares" in first
    header, rows = read_csv(text)
    assert header == list(mt.COLUMNS.values())
    assert [r[0] for r in rows] == [r.model for r in table.rows]
    column = header.index("absolute probe MAE (positions)")
    assert [float(r[column]) if r[column] else None for r in rows] == [r.absolute_mae for r in table.rows]
    assert rows[3][header.index("rows scored")] == "" and rows[0][header.index("positions")] == "512"
    loaded = pd.read_csv(io.StringIO(text), comment="#")
    assert loaded["monotonicity ρ"].tolist()[:3] == [r.monotonicity for r in table.rows[:3]]


def test_model_keys_refuse_more_than_eight_and_keep_each_model_once():
    assert mt.model_keys(["all-MiniLM-L6-v2", None, posviz.BUNDLED_NAME, " gpt2 ", "gpt2", ""]) == [
        mt.key_for(None, positions_only=True), mt.key_for("gpt2", positions_only=True)]
    names = [f"org/model-{i}" for i in range(9)]
    with pytest.raises(ValueError, match="9 models: at most 8 are compared side by side; leave out 1"):
        mt.model_keys(names)
    with pytest.raises(ValueError, match="9 models"):
        mt.compare_models(mt.model_keys(names[:8]) + [mt.key_for("org/extra")])
    with pytest.raises(ValueError, match="at least one model"):
        mt.model_keys(["", "  "])


def cli_csv(out) -> dict[str, list[str]]:
    header, rows = read_csv((out / "models-table.csv").read_text(encoding="utf-8"))
    return {row[0]: row for row in rows} | {"": header}


def test_cli_prints_the_table_and_writes_csv_and_figures(compared, tiny_path, tmp_path, capsys):
    table, _ = compared
    names = [posviz.BUNDLED_NAME if n is None else n for n in model_names(tiny_path)]
    assert main(["compare", "--models", *names, "--out", str(tmp_path), "--no-images"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["model", "scheme", "positions"]
    bundled = next(line for line in lines if line.strip().startswith(posviz.BUNDLED_NAME))
    cells = bundled.split("learned absolute position embeddings")[1].split()
    assert cells[:5] == ["512", "384", "512", f"{table.rows[0].monotonicity:.4f}",
                         f"{table.rows[0].translation_invariance:.4f}"]
    assert f"{MISSING}: No folder '{MISSING}'." in out and "seed 0" in out
    assert f"posviz: [5/5] {MISSING}: error (No folder" in err and "posviz: [1/5] all-MiniLM-L6-v2 (bundled): done" in err
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["models-profiles-q95.csv", "models-profiles-q95.html", "models-profiles-q95.json",
                       "models-profiles-q95.npz", "models-similarity.html", "models-similarity.json",
                       "models-similarity.npz", "models-table.csv", "models-table.json"]
    found = cli_csv(tmp_path)
    header = found.pop("")
    assert list(found) == [r.model for r in table.rows]
    for row in table.rows:  # the CLI's values are the library's
        for name, title in mt.COLUMNS.items():
            value, cell = getattr(row, name), found[row.model][header.index(title)]
            assert cell == ("" if value is None else str(value)), (row.model, title)
    npz = np.load(tmp_path / "models-similarity.npz")
    np.testing.assert_array_equal(npz["similarity"][0], table.matrices[posviz.BUNDLED_NAME].values)


@pytest.mark.parametrize("args, message", [
    ([f"org/model-{i}" for i in range(9)], "posviz: error: 9 models: at most 8 are compared side by side"),
    (["gpt2", "--q", "-1"], "posviz: error: --q -1 does not exist"),
])
def test_cli_refuses_bad_input_in_one_line(args, message, capsys):
    assert main(["compare", "--models", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(message) and err.count("\n") == 1


def test_hosted_mode_refuses_local_folders_in_their_row(tiny_path, monkeypatch):
    monkeypatch.setenv("POSVIZ_HOSTED", "1")
    table = mt.compare_models(mt.model_keys([str(tiny_path("gpt2")), "BLOOM 560M (config only)"]))
    folder, bloom = table.rows
    assert folder.failed and "this hosted demo does not open files or folders" in folder.note
    assert (bloom.failed, bloom.scheme) == (False, "ALiBi (attention with linear biases)") and table.matrices == {}
    assert len(table.rows) == 2  # no model with vectors: no references
