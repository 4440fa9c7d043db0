"""The coverage table: every model type of the installed transformers -> its positional scheme(s) in posviz.

For each model type (``transformers.models.auto.configuration_auto.CONFIG_MAPPING``) its default
config is made and its model built on the meta device (:func:`posviz.detection.meta_model`:
shapes only, nothing allocated; the default config unchanged). A type in the family table
(:data:`posviz.families.FAMILIES`, its entry evaluated on the default config) gets the table's
scheme(s), and a check that their modules exist in that model; any other type gets structural
detection (:mod:`posviz.detection`); a type that cannot be built gets the precise reason.
:func:`write_table` writes the Markdown table (``docs/coverage.md``, by ``python -m posviz coverage``);
:func:`read_table` reads it back, for the test that the family table and the document agree.

Everything is derived at run time from :data:`~posviz.families.FAMILIES` and the installed
transformers; "tiny-config test" is derived from the tiny families of the test-suite
(``tests/support``), where the repository's tests can be imported.
"""

from __future__ import annotations

import importlib
import re
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from posviz.detection import CONFIDENCE, KINDS, BuildError, detect, meta_model
from posviz.families import FAMILIES, Family, family_of
from posviz.hooks import resolve
from posviz.positions.base import PositionSpec

#: Where the table is kept, relative to the repository root.
DEFAULT_OUT = Path("docs") / "coverage.md"
#: The status of a row, in the order the counts are given.
STATUSES = ("registered", "detected", "none found", "could not build")
#: Seconds one model type may take to build on the meta device (default of the command).
DEFAULT_TIMEOUT = 60.0
#: What the "how verified" cell says of a type found by structure.
BY_STRUCTURE = "structure on meta device"
_COLUMNS = ("model type", "status", "scheme(s)", "what posviz shows", "how verified")
#: What the "what posviz shows" cell adds where a detected type's components are shown.
_SHOWN = "(found by structure)"
#: The modules of tests/support that hold tiny families (``FAMILIES``, ``SCHEME_FAMILIES``, ``more_families()``).
_TINY = "tests.support.tiny_models"
#: The "how verified" cell of a registered type where the tests cannot be imported.
NO_TESTS = "family table (tests not found)"


@dataclass(frozen=True)
class Row:
    """One model type's row of the coverage table.

    Attributes
    ----------
    model_type : str
    status : str
        One of :data:`STATUSES`.
    schemes : str
        Registered: the scheme short names of the family table's entry, joined by " + "
        (:func:`registry_schemes`). Detected: each kind found and how sure. Otherwise "none
        found" or "—".
    shows : str
        What the app shows for the type, in words.
    verified : str
        How that was verified, or why the type could not be built.
    """

    model_type: str
    status: str
    schemes: str
    shows: str
    verified: str

    def markdown(self) -> str:
        """The row as one line of a Markdown table (``|`` escaped)."""
        cells = (f"`{self.model_type}`", self.status, self.schemes, self.shows, self.verified)
        return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def registry_schemes(family: Family) -> str:
    """The short names of a family's schemes, each once, in order, joined by " + " (``"learned_absolute + relative_bias"``)."""
    return " + ".join(dict.fromkeys(spec.scheme for spec in family.positions))


def _where(spec: PositionSpec) -> tuple[str, ...]:
    """The module paths (or builder function) a spec reads."""
    return spec.modules() or tuple(v for v in (getattr(spec, "path", None), getattr(spec, "source", None)) if v)


def _shows(family: Family) -> str:
    """Each component of a family in words, with where it is read."""
    parts = []
    for spec in family.positions:
        where = ", ".join(f"`{p}`" for p in _where(spec))
        parts.append((f"{spec.component}: " if spec.component else "") + spec.encoding.label
                     + (f" ({where})" if where else ""))
    return "; ".join(parts)


def tested_model_types() -> dict[str, list[str]] | None:
    """Model type -> the names of the test-suite's tiny families of that type (``tests/support``:
    ``FAMILIES``, ``SCHEME_FAMILIES`` and ``more_families()`` of ``tiny_models``), each family's
    type read from its config; None where the tests cannot be imported (posviz installed
    without its repository)."""
    try:
        tiny = importlib.import_module(_TINY)
    except ImportError:
        return None
    found: dict[str, list[str]] = {}
    for name, family in {**tiny.FAMILIES, **tiny.SCHEME_FAMILIES, **tiny.more_families()}.items():
        found.setdefault(family.make_config().model_type, []).append(name)
    return found


def checkout() -> Path | None:
    """The repository posviz runs from: the folder above the imported ``posviz`` package where it holds
    the tests' tiny families (``tests/support/tiny_models.py``); None for posviz installed from a wheel.

    The folder is on ``sys.path`` wherever posviz was imported from it (a source tree, an editable
    install), so :func:`tested_model_types` can import the tests.
    """
    root = Path(__file__).resolve().parents[1]
    return root if (root / Path(*_TINY.split("."))).with_suffix(".py").is_file() else None


def model_types() -> list[str]:
    """Every model type of the installed transformers and of the family table, sorted."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return sorted({*CONFIG_MAPPING.keys(), *FAMILIES})


class BuildTimeout(BaseException):
    """A model type took longer than its time limit to build (a BaseException, as KeyboardInterrupt is,
    so that no ``except Exception`` of the code it interrupts catches it)."""


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`BuildTimeout` in the block after ``seconds`` (a real-time alarm: main thread
    of a Unix process only; elsewhere, or for None, no limit)."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(_signum, _frame):
        raise BuildTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _build(config, timeout: float | None):
    """The meta-device model of a config, or the reason it cannot be built (a string)."""
    try:
        with _time_limit(timeout):
            return meta_model(config)
    except BuildTimeout:
        return f"took longer than {timeout:g} s to build on the meta device"
    except BuildError as exc:
        return (str(exc) if exc.reason in ("no AutoModel class", "missing package")
                else f"default config cannot build a model: {exc}")


def coverage_row(model_type: str, tested: dict[str, list[str]] | None, timeout: float | None = DEFAULT_TIMEOUT) -> Row:
    """The coverage row of one model type (see the module's docstring). Never raises.

    Parameters
    ----------
    model_type : str
        A key of ``CONFIG_MAPPING`` or of :data:`~posviz.families.FAMILIES`.
    tested : dict or None
        :func:`tested_model_types`.
    timeout : float or None
        Seconds the model may take to build (:data:`DEFAULT_TIMEOUT`).
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    registered = model_type in FAMILIES
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception as exc:  # noqa: BLE001  one type's failure is its row, never the command's
        reason = ("not a model type of the installed transformers" if isinstance(exc, KeyError)
                  else f"default config cannot be made: {type(exc).__name__}: {_first_line(exc)}")
        if registered and not callable(FAMILIES[model_type]):
            family = FAMILIES[model_type]
            return Row(model_type, "registered", registry_schemes(family), _shows(family), reason)
        return Row(model_type, "could not build", "—", "—", reason)
    model = _build(config, timeout)
    if registered:
        family = family_of(config)
        return Row(model_type, "registered", registry_schemes(family), _shows(family),
                   _registered_check(model_type, family, model, tested))
    if isinstance(model, str):
        return Row(model_type, "could not build", "—", "unknown scheme", model)
    found = detect(model, model_type)
    if not found.findings:
        return Row(model_type, "none found", "none found",
                   "unknown scheme: no positional module found (no positional encoding, or a form posviz cannot "
                   "recognise)", BY_STRUCTURE)
    best: dict[str, str] = {}  # kind -> the surest confidence of its findings
    for f in found.findings:
        best[f.kind] = min(best.get(f.kind, f.confidence), f.confidence, key=CONFIDENCE.index)
    schemes = "; ".join(f"{kind} ({confidence})" for kind, confidence in best.items())
    family = found.family()
    hidden = [f for f in found.findings if not f.shown]
    shows = f"{_shows(family)} {_SHOWN}" if family else "unknown scheme"
    if hidden:
        shows += "; not shown: " + ", ".join(f"{KINDS[f.kind]} (`{f.pattern}`)" for f in hidden)
    return Row(model_type, "detected", schemes, shows, BY_STRUCTURE)


def _registered_check(model_type: str, family: Family, model, tested: dict[str, list[str]] | None) -> str:
    """The "how verified" cell of a registered type: its tiny-config tests, and whether the
    table's modules exist in the default config's model."""
    if tested is None:
        how = NO_TESTS
    elif model_type in tested:
        how = "tiny-config test (" + ", ".join(f"`{n}`" for n in tested[model_type]) + ")"
    else:
        how = "family table only (no tiny-config test)"
    if isinstance(model, str):
        return f"{how}; {model}"
    missing = [path for path in family.modules() if resolve(model.base_model, path) is None]
    if missing:
        return f"{how}; not in the default config's model: " + ", ".join(f"`{p}`" for p in missing)
    return f"{how}; modules found on meta device" if family.modules() else how


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def coverage_rows(types: list[str] | None = None, *, timeout: float | None = DEFAULT_TIMEOUT,
                  progress: Callable[[str, int, int], None] | None = None) -> list[Row]:
    """:func:`coverage_row` of every type (default: :func:`model_types`), in order; ``progress(type, done, total)``
    is called before each."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    types = model_types() if types is None else types
    tested = tested_model_types()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for done, model_type in enumerate(types):
            if progress is not None:
                progress(model_type, done, len(types))
            rows.append(coverage_row(model_type, tested, timeout))
    return rows


def counts(rows: list[Row]) -> dict[str, int]:
    """Rows per status (:data:`STATUSES`), and two more: ``"tested"`` (registered with a tiny-config
    test) and ``"shown"`` (detected, and shown on the pages)."""
    found = {status: sum(r.status == status for r in rows) for status in STATUSES}
    found["tested"] = sum(r.verified.startswith("tiny-config test") for r in rows)
    found["shown"] = sum(r.status == "detected" and _SHOWN in r.shows for r in rows)
    return found


def summary(rows: list[Row]) -> str:
    """The counts in one sentence (for the README)."""
    n = counts(rows)
    return (f"Of the {len(rows)} model types of the installed transformers, {n['registered']} are in posviz's family "
            f"table ({n['tested']} of them with a tiny-config test), {n['detected']} more have positional modules "
            f"found by structure ({n['shown']} of them shown on the pages), {n['none found']} have none that posviz "
            f"recognises, and {n['could not build']} cannot be built from their default config.")


def markdown(rows: list[Row]) -> str:
    """The coverage document: a header with the counts, then one row per model type."""
    import torch
    import transformers

    n = counts(rows)
    lines = [
        f"# Coverage: the positional scheme of every model type of transformers {transformers.__version__}",
        "",
        "Generated by `python -m posviz coverage` (do not edit by hand; `tests/test_coverage.py` fails when "
        "the family table and this file disagree). For each model type of the installed transformers "
        f"{transformers.__version__} (torch {torch.__version__}), its default config is made and its model built "
        "on the meta device (shapes only, nothing allocated; the default config is not changed). A type in the "
        "family table (`posviz/families.py`) gets its entry, evaluated on the default config, and a check that "
        "the entry's modules exist in that model; any other type gets structural detection (`posviz/detection.py`: "
        "module names, classes, shapes, the modeling module's function names; how sure: certain, likely or guess).",
        "",
        f"- **registered** (in the family table): {n['registered']}, of which {n['tested']} with a tiny-config test",
        f"- **detected** by structure: {n['detected']}, of which {n['shown']} shown on the pages (a learned "
        "`nn.Embedding` table or a Llama-style rotary module); the others are named, not shown",
        f"- **none found** by structure (no positional encoding, or a form posviz cannot recognise): "
        f"{n['none found']}",
        f"- **could not build** from the default config on the meta device: {n['could not build']}",
        f"- total: {len(rows)}",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
        *(row.markdown() for row in rows),
        "",
    ]
    return "\n".join(lines)


def write_table(rows: list[Row], out: Path = DEFAULT_OUT) -> Path:
    """Write :func:`markdown` of ``rows`` to ``out`` (its folder created); returns ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(rows), encoding="utf-8")
    return out


def read_table(text: str) -> dict[str, Row]:
    """The rows of a coverage document (:func:`markdown`), by model type.

    Raises
    ------
    ValueError
        Where the document holds no coverage table.
    """
    header = "| " + " | ".join(_COLUMNS) + " |"
    lines = text.splitlines()
    if header not in lines:
        raise ValueError("no coverage table in this text (its header row is missing)")
    rows = {}
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        row = Row(cells[0].strip("`"), *cells[1:])
        rows[row.model_type] = row
    return rows
