"""The coverage table (docs/coverage.md, posviz/coverage.py) against the family table, without rebuilding 800 models.

The document must be what the command writes from its own rows (counts included), name every
registered model type with the registry's scheme(s) evaluated on the default config, call a type
"tiny-config test" exactly where the test-suite builds one, and, for one row of each status, hold
what the command computes now. The command itself runs on a few types.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from posviz import cli, coverage, families
from posviz.coverage import STATUSES, coverage_row, read_table, registry_schemes

DOC = Path(__file__).resolve().parents[1] / coverage.DEFAULT_OUT
REGENERATE = "regenerate it: python -m posviz coverage"


@pytest.fixture(scope="module")
def text() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rows(text) -> dict[str, coverage.Row]:
    return read_table(text)


def test_document_is_what_the_command_writes(text, rows):
    """Counts, header and rows: the document round-trips through the command's own writer."""
    assert coverage.markdown(list(rows.values())) == text, f"docs/coverage.md was edited by hand; {REGENERATE}"
    assert sum(coverage.counts(list(rows.values()))[s] for s in STATUSES) == len(rows)


def test_every_registered_type_has_its_schemes(rows):
    for model_type, entry in families.FAMILIES.items():
        assert model_type in rows, f"{model_type} is in the family table, not in docs/coverage.md; {REGENERATE}"
        row = rows[model_type]
        family = entry(CONFIG_MAPPING[model_type]()) if callable(entry) else entry
        assert (row.status, row.schemes) == ("registered", registry_schemes(family)), (
            f"{model_type}: the document says {row.status}, {row.schemes!r}; {REGENERATE}")
    extra = sorted(t for t, r in rows.items() if r.status == "registered" and t not in families.FAMILIES)
    assert not extra, f"registered in docs/coverage.md, not in the family table: {extra}; {REGENERATE}"


def test_every_installed_type_has_a_row(rows):
    missing = sorted(set(CONFIG_MAPPING.keys()) - set(rows))
    assert not missing, f"model types of the installed transformers without a row: {missing[:10]}; {REGENERATE}"


def test_tiny_config_tests_are_named_where_they_exist(rows):
    tested = coverage.tested_model_types()
    assert tested is not None and "bert" in tested  # the repository's tests are importable here
    for model_type in families.FAMILIES:
        says = rows[model_type].verified.startswith("tiny-config test")
        assert says is (model_type in tested), f"{model_type}: {rows[model_type].verified!r}; {REGENERATE}"


def test_one_row_of_each_status_is_current(rows):
    """The command's per-type function, run for real, gives the document's row (first type of each status)."""
    tested = coverage.tested_model_types()
    for status in STATUSES:
        model_type = next(t for t, r in rows.items() if r.status == status)
        assert coverage_row(model_type, tested) == rows[model_type], REGENERATE


def test_rows_of_each_kind(monkeypatch):
    tested = coverage.tested_model_types()
    bert = coverage_row("bert", tested)
    assert (bert.status, bert.schemes) == ("registered", "learned_absolute")
    assert bert.verified == "tiny-config test (`bert`); modules found on meta device"

    monkeypatch.delitem(families.FAMILIES, "helium", raising=False)
    helium = coverage_row("helium", tested)
    assert (helium.status, helium.schemes, helium.verified) == ("detected", "rotary (certain)", coverage.BY_STRUCTURE)
    assert helium.shows == "rotary position embedding (RoPE) (`rotary_emb`) (found by structure)"

    monkeypatch.delitem(families.FAMILIES, "falcon_mamba", raising=False)
    assert coverage_row("falcon_mamba", tested).status == "none found"

    autoformer = coverage_row("autoformer", tested)
    assert autoformer.status == "could not build"
    assert autoformer.verified.startswith("default config cannot build a model: ValueError: The `prediction_length`")
    assert coverage_row("aimv2_text_model", tested).verified == "no AutoModel class for Aimv2TextConfig"


def test_time_limit_is_a_reason():
    row = coverage_row("llama", None, timeout=1e-6)
    assert row.status == "registered" and row.verified.endswith("took longer than 1e-06 s to build on the meta device")


def test_command_writes_the_table(tmp_path, monkeypatch, capsys):
    types = ["bert", "autoformer", "helium"]  # registered, cannot be built, found by structure
    monkeypatch.setattr(coverage, "model_types", lambda: types)
    out = tmp_path / "coverage.md"
    assert cli.main(["coverage", "--out", str(out)]) == 0
    written = read_table(out.read_text(encoding="utf-8"))
    assert [r.status for r in written.values()] == ["registered", "could not build", "detected"]
    assert "Of the 3 model types of the installed transformers, 1 are in posviz's family table" in capsys.readouterr().err
    assert cli.main(["coverage", "--out", str(tmp_path)]) == 2
    assert cli.main(["coverage", "--out", str(out), "--timeout", "0"]) == 2
    assert "is not a positive number" in capsys.readouterr().err
