"""The views layer and the app's contracts: one figure wherever a view is drawn, one list of URL
parameters, no Streamlit below the app package.

* The export command's standard set (``posviz.standard_set``) and the pages, both at their default
  settings, send the same figure JSON for every view of the set.
* Every widget bound to the URL takes a name listed for its page in ``posviz/app/urls.py``; every
  choice offers exactly the values listed; the README's table is that list.
* Importing every library module (all but ``posviz.app``) imports no Streamlit.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from posviz.app.urls import EVERY_PAGE, PARAMS, markdown_table
from posviz.standard_set import standard_set
from tests.support.apptest import ROOT, apptest_like_browser, assert_clean, figures, open_page  # noqa: F401

SENTENCE = "The cat chased the dog"

# export stem -> (page, URL parameters, index of the figure on that page): the page's defaults, and the
# sentence of the export (no second sentence)
ON_PAGES = {
    "position-similarity": ("similarity", {}, 0),
    "profile-q128": ("similarity", {}, 1),
    "projection-pca": ("projection", {"method": "PCA"}, 0),
    "input-norms": ("input", {"text": SENTENCE, "text_pair": ""}, 0),
    "attention-layer0-head0": ("attention", {"text": SENTENCE, "text_pair": ""}, 0),
    "attention-layer0-heads": ("attention", {"text": SENTENCE, "text_pair": ""}, 2),
    "attention-by-offset": ("attention", {"text": SENTENCE, "text_pair": ""}, 3),
}


@pytest.fixture(scope="module")
def exported(bundled_lm) -> dict[str, dict]:
    """The standard set's figures as the JSON plotly sends (``Figure.to_json``), by stem."""
    return {view.stem: json.loads(view.figure.to_json()) for view in standard_set(bundled_lm, SENTENCE)
            if view.figure is not None}


def test_the_standard_set_is_what_the_pages_show(exported):
    assert set(exported) == set(ON_PAGES)
    for stem, (page, params, index) in ON_PAGES.items():
        at = open_page(page, params)
        assert_clean(at, page)
        shown = figures(at)[index]
        assert shown["data"] == exported[stem]["data"], stem
        assert shown["layout"] == exported[stem]["layout"], stem


# ---------------------------------------------------------------- the URL contract

#: Functions of posviz.app.widgets that bind a widget, and the position of the parameter's name.
BINDERS = {"url": 0, "text_field": 2, "index_slider": 3, "clip_state": 0, "on_by_default": 0}


def _calls(path):
    """Every call in a file's source, with the name of what it calls."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            yield node, node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _bound_names(path) -> list[tuple[str, int]]:
    """(name, line) of every query parameter a file binds through the binders of
    ``posviz.app.widgets``, from its source."""
    found = []
    for node, called in _calls(path):
        if called in BINDERS and len(node.args) > BINDERS[called]:
            arg = node.args[BINDERS[called]]
            assert isinstance(arg, ast.Constant), f"{path.name}:{node.lineno}: {called}() with a computed name"
            found.append((arg.value, node.lineno))
    return found


def test_only_url_binds_a_widget():
    for path in [*(ROOT / "pages").glob("*.py"), *(ROOT / "posviz" / "app").glob("*.py")]:
        for node, called in _calls(path):
            if any(k.arg == "bind" for k in node.keywords):
                assert (path.name, called) == ("widgets.py", "url") or path.name == "widgets.py", \
                    f"{path.name}:{node.lineno}: bind= outside posviz.app.widgets.url"
    source = (ROOT / "posviz" / "app" / "widgets.py").read_text()
    assert source.count('"bind": "query-params"') == 1 and "bind=" not in source


def test_every_page_binds_only_its_listed_parameters():
    pages = sorted((ROOT / "pages").glob("*.py"))
    assert {p.stem for p in pages} == set(EVERY_PAGE)
    for path in pages:
        for name, line in _bound_names(path):
            assert name in PARAMS, f"pages/{path.name}:{line}: {name!r} is not in posviz/app/urls.py"
            assert path.stem in PARAMS[name].pages, f"pages/{path.name}:{line}: {name!r} is not listed for it"
    sidebar = {name for name, _ in _bound_names(ROOT / "posviz" / "app" / "sidebar.py")}
    assert sidebar == {name for name, p in PARAMS.items() if p.pages == EVERY_PAGE and p.widget}
    for path in (ROOT / "posviz" / "app").glob("*.py"):
        if path.name != "widgets.py":  # where the binders pass their callers' names on
            for name, line in _bound_names(path):
                assert name in PARAMS, f"posviz/app/{path.name}:{line}: {name!r}"


def test_url_refuses_names_off_the_list():
    from posviz.app.widgets import url

    assert url("metric") == {"key": "metric", "bind": "query-params"}
    with pytest.raises(KeyError, match="wo_text"):
        url("wo_text")


@pytest.mark.parametrize("page, family, params", [
    ("similarity", None, {}), ("projection", None, {"method": "PCA"}), ("compare", None, {}),
    ("attention", "t5", {}), ("probes", None, {}), ("word_order", None, {}), ("properties", None, {}),
])
def test_choices_offer_the_listed_values(page, family, params, tiny_path):
    """Each choice of a page (for T5's attention: the stack) offers the contract's values as its options."""
    at = open_page(page, {**params, **({"model": str(tiny_path(family))} if family else {})})
    assert_clean(at, page)
    checked = 0
    for widget in [*at.radio, *at.selectbox]:
        param = PARAMS.get(widget.key)
        if param is not None and param.values:
            assert [str(o) for o in widget.options] == list(param.values), widget.key
            checked += 1
    assert checked, "no choice of the contract on the page"


def test_the_readme_lists_every_parameter():
    table = markdown_table()
    assert table.count("\n") == len(PARAMS) + 2 and all(f"| `{name}` |" in table for name in PARAMS)
    assert table in (ROOT / "README.md").read_text()


# ---------------------------------------------------------------- the layers


def test_the_library_imports_no_streamlit():
    code = ("import importlib, pkgutil, sys, posviz\n"
            "names = [m.name for m in pkgutil.walk_packages(posviz.__path__, 'posviz.')\n"
            "         if not m.name.startswith('posviz.app') and m.name != 'posviz.__main__']\n"
            "for name in names: importlib.import_module(name)\n"
            "print(len(names), 'streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    count, imported = out.stdout.split()
    assert int(count) > 30 and imported == "False"


def test_the_readme_lists_every_view():
    """Every view id a lecture can name is in the README's table of views, under its page."""
    import importlib
    import re

    modules = [importlib.import_module(f"posviz.views.{m}") for m in
               ("attention", "attention_offsets", "compare", "input", "patch_grid", "positions", "probes",
                "properties", "word_order")]
    ids = {f.view_id for m in modules for f in vars(m).values() if isinstance(getattr(f, "view_id", None), str)}
    ids |= {"compare-model", "compare-reference"}  # compare.side_by_side: two views
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (`[a-z-]+`(?:, `[a-z-]+`)*) \|$", readme, re.M))
    listed = {view for cell in rows.values() for view in re.findall(r"`([a-z-]+)`", cell)}
    assert listed == ids
    assert set(rows) == set(EVERY_PAGE) - {"gallery"}
