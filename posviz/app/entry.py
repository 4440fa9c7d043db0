"""Where the app's entry script is, and Streamlit's ``streamlit run`` on it, for ``posviz app`` (:mod:`posviz.cli`).

The entry script (``app.py``), its ``pages/`` and its ``.streamlit/config.toml`` live at the
repository root, where ``streamlit run app.py`` finds them. A wheel carries the same files as
``posviz/_app/`` (pyproject.toml's ``force-include``): one copy in the repository, placed where
an installed package can reach it. Streamlit reads the ``.streamlit/config.toml`` beside the
entry script whatever the working folder, so the app runs with its settings from anywhere.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
#: The entry script in an installed wheel.
PACKAGED = _PACKAGE / "_app" / "app.py"
#: The entry script of the checkout posviz runs from (a source tree, an editable install).
CHECKOUT = _PACKAGE.parent / "app.py"


def script() -> Path:
    """The app's entry script: the one the wheel installed, else the checkout's.

    Returns
    -------
    Path
        :data:`PACKAGED` where it exists, else :data:`CHECKOUT`.

    Raises
    ------
    FileNotFoundError
        Where neither exists (a copy of the ``posviz`` folder without the app), naming both.
    """
    for path in (PACKAGED, CHECKOUT):
        if path.is_file():
            return path
    raise FileNotFoundError(f"The app's entry script is missing: neither {PACKAGED} nor {CHECKOUT} exists; "
                            "reinstall posviz (pip install posviz) or run from its repository.")


def run(options: list[str]) -> int:
    """Streamlit's own ``streamlit run`` on :func:`script` with ``options`` (``--server.port 8502`` …).

    Returns
    -------
    int
        Streamlit's exit status: 0 once the server stops; 2 with Streamlit's message for an option
        ``streamlit run`` does not know.

    Raises
    ------
    FileNotFoundError
        As :func:`script`.
    """
    path = script()
    from streamlit.web import cli as streamlit_cli

    try:
        streamlit_cli.main(["run", str(path), *options], prog_name="streamlit")
    except SystemExit as exc:  # click ends every run so
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return 0
