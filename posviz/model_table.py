"""Many models side by side: one row per model, with the sinusoid and a random matrix as references.

Each row holds a model's scheme, positions and width, Wang et al.'s three properties of its position
similarity (:mod:`posviz.analysis.properties`), Wang & Chen's two probes with the paper's protocol
(:mod:`posviz.analysis.probes`: least squares for the absolute probe, 5 folds, 512 pairs) and the
statistics of BERT's 128 boundary (:mod:`posviz.analysis.boundary`). The models load positions only
(:func:`posviz.load_model`: ``config.json`` and the positional tensors) through a
:class:`~posviz.store.ModelStore`, each in a thread of its own, while the others compute.
``python -m posviz compare`` (:mod:`posviz.cli`) and the Compare page (``against=models``) show it;
:func:`figure_views` are its figures (:mod:`posviz.views.compare`); :mod:`posviz.comparison_set` writes the
table as CSV and its figures, each with a sidecar that names every model as it was loaded.
"""

from __future__ import annotations

import io
import os
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np

from posviz import sidecar
from posviz.analysis.boundary import BOUNDARY, boundary_statistics
from posviz.analysis.probes import absolute_position_probe, relative_order_probe
from posviz.analysis.properties import position_properties
from posviz.analysis.similarity import PositionMatrix, similarity
from posviz.comparison_recipe import MAX_MODELS
from posviz.loading import BUNDLED_NAME, ModelLoadError, short_name
from posviz.positions import PositionEncoding
from posviz.store import ModelKey, ModelStore, key_for
from posviz.views import compare
from posviz.views.limits import PROFILE_Q
from posviz.views.probes import probe_matrix, source_names
from posviz.views.view import View

#: What a model's row goes through, in this order: waiting for a thread, loading (behind the store's
#: one load at a time), computing its cells, then done or error.
STATES = ("queued", "loading", "computing", "done", "error")
#: The paper's protocol (Wang & Chen, EMNLP 2020): folds of both probes, pairs of the relative probe,
#: and the absolute probe's regression (least squares).
FOLDS, PAIRS, REGRESSION = 5, 512, "linear"
#: The file names' first part (:func:`posviz.comparison_set.write_model_table`).
FILE_PREFIX = "models"


class Progress(NamedTuple):
    """One step of one model (:func:`compare_models`'s ``progress``).

    Attributes
    ----------
    index : int
        The model's place in the list asked for (0-based).
    total : int
        Models asked for.
    name : str
        The model, as asked for (:func:`key_name`).
    state : str
        One of :data:`STATES`.
    detail : str
        For ``"error"``, the one-line reason; else empty.
    """

    index: int
    total: int
    name: str
    state: str
    detail: str = ""


@dataclass
class ModelRow:
    """One row of the table: a model, or a reference.

    Cells a model does not have (a scheme without a vector per position: ALiBi, a relative bias, none;
    a model that failed to load; a table too short for the boundary) are None, and :attr:`note` says why.

    Attributes
    ----------
    model : str
        The model's name (a Hub id, a folder, :data:`posviz.BUNDLED_NAME`) or the reference's.
    scheme : str
        Its positional schemes in words (:attr:`posviz.LoadedModel.scheme_label`); ``"fixed sinusoid"`` and
        ``"random Gaussian"`` for the references; empty where the model did not load.
    positions : int or None
        Positions the model takes (:attr:`posviz.LoadedModel.max_tokens`); a reference's rows.
    width : int or None
        Columns of the vectors scored (:attr:`posviz.positions.PositionEncoding.reference_width`: the
        rotated dimensions of a rotary model); the hidden size where there are none.
    rows : int or None
        Positions 0 … rows − 1 scored (at most :data:`posviz.views.limits.MAX_PROBED`).
    monotonicity, translation_invariance, symmetry : float or None
        :func:`posviz.analysis.properties.monotonicity` (Spearman's ρ), ``translation_invariance`` (η²),
        ``symmetry`` (S) of the position similarity over the scored rows; unitless.
    absolute_mae : float or None
        :func:`posviz.analysis.probes.absolute_position_probe` (least squares): MAE in positions.
    relative_error : float or None
        :func:`posviz.analysis.probes.relative_order_probe`: error rate, 0 to 1 (0.5 is chance).
    edge_norm_ratio, next_cosine_before, next_cosine_after : float or None
        :func:`posviz.analysis.boundary.boundary_statistics` at position 128, where more than 129 rows are scored.
    note : str
        Why cells are empty, the one-line reason a model failed to load, or what was scored where it is
        not plain position embeddings (the first of several components: T5's encoder bias, MPNet's absolute
        table; a rotary model's rotation features; the first 2 048 positions of a longer context); else empty.
    reference : bool
        The sinusoid or the random matrix.
    failed : bool
        The model did not load.
    pinned : dict or None
        What pins the loaded model down (:func:`posviz.sidecar.describe_model`: its Hub commit, folder hash or
        bundled package version), for the comparison's sidecars; None for a reference or a model that did not
        load.
    device : str
        The device its tensors were on; empty for a reference or a model that did not load.
    """

    model: str
    scheme: str = ""
    positions: int | None = None
    width: int | None = None
    rows: int | None = None
    monotonicity: float | None = None
    translation_invariance: float | None = None
    symmetry: float | None = None
    absolute_mae: float | None = None
    relative_error: float | None = None
    edge_norm_ratio: float | None = None
    next_cosine_before: float | None = None
    next_cosine_after: float | None = None
    note: str = ""
    reference: bool = False
    failed: bool = False
    pinned: dict | None = None
    device: str = ""


#: The table's columns: the :class:`ModelRow` attribute -> its header (with its unit) in the CSV, the
#: printed table and the page.
COLUMNS = {
    "model": "model", "scheme": "scheme", "positions": "positions", "width": "width", "rows": "rows scored",
    "monotonicity": "monotonicity ρ", "translation_invariance": "translation invariance η²",
    "symmetry": "symmetry S", "absolute_mae": "absolute probe MAE (positions)",
    "relative_error": "relative probe error rate",
    "edge_norm_ratio": f"‖P[{BOUNDARY - 1}]‖ ÷ median ‖P‖",
    "next_cosine_before": f"cos(P[p], P[p+1]), p < {BOUNDARY - 1}",
    "next_cosine_after": f"cos(P[p], P[p+1]), p ≥ {BOUNDARY}",
    "note": "note",
}
#: Columns of whole numbers.
INTEGER_COLUMNS = ("positions", "width", "rows")


@dataclass
class ModelTable:
    """What :func:`compare_models` found: the rows, and the position similarity of each that has one.

    Attributes
    ----------
    rows : list of ModelRow
        The models in the order asked for, then the references (where a model has position vectors).
    matrices : dict of str to PositionMatrix
        Model or reference name -> its position similarity over the positions every one of them has,
        0 … n − 1 (n the fewest scored rows): float32 [n, n] each, for the figures side by side.
    metric : {"dot", "cosine"}
    seed : int
        Seeds the probes' folds and pairs, and the random reference.
    folds, pairs : int
    """

    rows: list[ModelRow]
    matrices: dict[str, PositionMatrix] = field(default_factory=dict)
    metric: str = "cosine"
    seed: int = 0
    folds: int = FOLDS
    pairs: int = PAIRS

    @property
    def names(self) -> list[str]:
        """The names of :attr:`matrices`, in the order of the rows."""
        return list(self.matrices)

    @property
    def failed(self) -> list[ModelRow]:
        """The rows of models that did not load."""
        return [row for row in self.rows if row.failed]

    @property
    def caption(self) -> str:
        """How every number was computed, in a few sentences (the page's caption, the CSV's comment lines)."""
        phi = "cosine" if self.metric == "cosine" else "dot product"
        return (f"Scores over positions 0 … rows − 1 of each model's vectors (at most 2 048), φ = {phi}. Properties: "
                "Wang et al. (ICLR 2021) as posviz scores them: Spearman's ρ of offset against mean φ (−1 = "
                "monotone), the share of φ's variance the offset explains (η², 1 = translation invariant), one "
                "minus the relative asymmetry (S; 1 for any φ of vectors). Probes: Wang & Chen (EMNLP 2020), the "
                f"paper's protocol: absolute position by least squares, MAE of the rounded held-out prediction, "
                f"{self.folds}-fold KFold over the shuffled rows; relative order of {self.pairs} random pairs by "
                f"logistic regression, error rate, {self.folds}-fold StratifiedKFold; seed {self.seed}. References: "
                "the interleaved sinusoid of the first model's width (every layout gives the same numbers: its "
                f"columns permuted) and a standard normal matrix of its shape, seed {self.seed}. Boundary: BERT was "
                f"pre-trained on {BOUNDARY} tokens for 90 % of its steps, then on 512: the length of row "
                f"{BOUNDARY - 1} against the median row, and the cosine of consecutive rows before and after "
                f"{BOUNDARY} (where more than {BOUNDARY + 1} rows are scored).")

    def frame(self):
        """The table as a pandas DataFrame: one row per :attr:`rows`, the headers of :data:`COLUMNS`; whole
        numbers as pandas' nullable ``Int64``, empty cells as missing values."""
        import pandas as pd  # here: importing posviz stays light

        frame = pd.DataFrame([{header: getattr(row, name) for name, header in COLUMNS.items()} for row in self.rows],
                             columns=list(COLUMNS.values()))
        for name in INTEGER_COLUMNS:
            frame[COLUMNS[name]] = frame[COLUMNS[name]].astype("Int64")
        for name in set(COLUMNS) - set(INTEGER_COLUMNS) - {"model", "scheme", "note"}:
            frame[COLUMNS[name]] = frame[COLUMNS[name]].astype("float64")
        return frame

    def csv(self) -> str:
        """The table as CSV: the :attr:`caption` as ``#`` comment lines, a header row, one line per row.

        Numbers are written as float64 ``repr`` (the value back exactly), empty cells as nothing; it loads
        with ``pandas.read_csv(path, comment="#")``.
        """
        buf = io.StringIO()
        buf.write(f"# posviz model table. {self.caption}\n")
        self.frame().to_csv(buf, index=False, lineterminator="\n")
        return buf.getvalue()

    def text(self) -> str:
        """The table as aligned plain text for a terminal: scores to 4 decimals, empty cells blank, and the
        notes under it, one line per row that has one (``<model>: <note>``)."""
        import pandas as pd

        def cell(value) -> str:
            if isinstance(value, float):
                return f"{value:.4f}" if np.isfinite(value) else ""
            return "" if value is None or value is pd.NA else str(value)

        shown = self.frame().drop(columns=COLUMNS["note"]).astype(object).map(cell)
        notes = [f"{row.model}: {row.note}" for row in self.rows if row.note]
        return "\n".join([shown.to_string(index=False), *(["", "Notes:"] + notes if notes else [])])


def key_name(key: ModelKey) -> str:
    """The name a key's model is shown by before it loads: the Hub id or folder, or :data:`posviz.BUNDLED_NAME`."""
    return key.name or BUNDLED_NAME


def model_keys(names: Sequence[str | None], device: str = "auto", revision: str | None = None,
               first: ModelKey | None = None) -> list[ModelKey]:
    """The positions-only keys of the models named, in order, each model once (:func:`posviz.store.key_for`).

    Parameters
    ----------
    names : sequence of str or None
        Hub ids, local folders, a name of :data:`posviz.loading.CONFIG_ONLY`, or the bundled model: None, its
        name (:data:`posviz.BUNDLED_NAME`) or its short name ``all-MiniLM-L6-v2`` (where no folder has that
        name); blank names are left out.
    device : str
    revision : str or None
        The revision of every Hub model (None: each one's default branch).
    first : ModelKey, optional
        A key put first as it is (the app's sidebar model, loaded in full); a name of the same model and
        revision is left out.

    Returns
    -------
    list of ModelKey

    Raises
    ------
    ValueError
        For no model, or more than :data:`~posviz.comparison_recipe.MAX_MODELS` different ones (``first`` included).
    """
    bundled = short_name(BUNDLED_NAME)
    keys = [first] if first is not None else []
    seen = {(k.name, k.revision) for k in keys}
    for name in names:
        if name is not None and not name.strip():
            continue
        alias = name is not None and name.strip() == bundled and not os.path.isdir(name)
        key = key_for(None if alias else name, revision, device, positions_only=True)
        if (key.name, key.revision) not in seen:
            seen.add((key.name, key.revision))
            keys.append(key)
    check_count(len(keys))
    return keys


def check_count(count: int) -> None:
    """Refuse a table of no model or of more than :data:`~posviz.comparison_recipe.MAX_MODELS`.

    Raises
    ------
    ValueError
        In one sentence, with what to do.
    """
    if count == 0:
        raise ValueError("Give at least one model to compare (a Hub id, a local folder or the bundled model).")
    if count > MAX_MODELS:
        raise ValueError(f"{count} models: at most {MAX_MODELS} are compared side by side; "
                         f"leave out {count - MAX_MODELS}.")


def _reason(lm, encoding: PositionEncoding) -> str:
    """Why a model's row has no table-only cells."""
    if encoding.has_bias:
        return (f"{lm.scheme_label}: a bias per head on the attention scores, no vector per position, so no position "
                "similarity, properties or probes")
    return f"{lm.scheme_label}: no vector per position, so no position similarity, properties or probes"


def _score(row: ModelRow, vectors: np.ndarray, table: ModelTable) -> np.ndarray:
    """Fill the cells of ``row`` from ``vectors`` [n, width]; the position similarity [n, n], float32."""
    n, row.width = vectors.shape
    row.rows = n
    matrix = similarity(vectors, table.metric)
    found = position_properties(matrix)
    row.monotonicity, row.translation_invariance, row.symmetry = (
        found.monotonicity, found.translation_invariance, found.symmetry)
    row.absolute_mae = absolute_position_probe(vectors, folds=table.folds, seed=table.seed,
                                               regression=REGRESSION).score
    row.relative_error = relative_order_probe(vectors, pairs=table.pairs, folds=table.folds, seed=table.seed).score
    if n > BOUNDARY + 1:
        edge = boundary_statistics(vectors)
        row.edge_norm_ratio, row.next_cosine_before, row.next_cosine_after = (
            edge.edge_norm_ratio, edge.next_cosine_before, edge.next_cosine_after)
    return matrix


def _model_row(store: ModelStore, key: ModelKey, table: ModelTable, step: Callable[[str, str], None]
               ) -> tuple[ModelRow, PositionEncoding | None, np.ndarray | None]:
    """Load one model and score it: its row, its first positional component where it has vectors, and
    their position similarity."""
    row = ModelRow(key_name(key))
    step("loading", "")
    try:
        lm = store.get(key)
    except ModelLoadError as exc:
        row.failed, row.note = True, " ".join(str(exc).split())
        step("error", row.note)
        return row, None, None
    step("computing", "")
    encoding = lm.encodings[0]
    row.model, row.scheme, row.positions = lm.name, lm.scheme_label, lm.max_tokens
    row.pinned, row.device = sidecar.describe_model(lm), str(lm.device)
    notes = [f"its first component, {encoding.component}"] if encoding.component else []
    matrix = None
    if not encoding.has_vectors:
        row.width = int(lm.config.get_text_config().hidden_size)
        notes.append(_reason(lm, encoding))
    else:
        try:
            matrix = _score(row, probe_matrix(encoding, "model", table.seed), table)
        except ValueError as exc:  # too few rows for the folds
            notes.append(f"not scored: {exc}")
        else:
            if encoding.vector_name != "position embeddings":
                notes.append(encoding.vector_name)
            if row.rows < encoding.num_positions:
                notes.append(f"the first {row.rows} of {encoding.num_positions} positions")
    row.note = "; ".join(notes)
    step("done", "")
    return row, (encoding if matrix is not None else None), matrix


def _references(encoding: PositionEncoding, name: str, table: ModelTable) -> list[tuple[ModelRow, np.ndarray]]:
    """The sinusoid and the random matrix of ``encoding``'s probed shape (:func:`posviz.views.probes.probe_matrix`),
    scored as a model is."""
    names = source_names(name, encoding, table.seed)
    found = []
    for source, scheme in (("sinusoid", "fixed sinusoid"), ("random", "random Gaussian")):
        vectors = probe_matrix(encoding, source, table.seed)
        row = ModelRow(names[source], scheme=scheme, positions=vectors.shape[0], reference=True)
        found.append((row, _score(row, vectors, table)))
    return found


def compare_models(keys: Sequence[ModelKey], *, store: ModelStore | None = None, metric: str = "cosine",
                   seed: int = 0, progress: Callable[[Progress], None] | None = None,
                   workers: int | None = None) -> ModelTable:
    """Load up to :data:`~posviz.comparison_recipe.MAX_MODELS` models and score each, with the sinusoid and a
    random matrix as references.

    Every model is loaded through ``store`` (positions only for keys made by :func:`model_keys`) and scored
    in a thread of its own: its first positional component's vectors (rows 0 … n − 1, the rows the Probes
    page reads, :func:`posviz.views.probes.probe_matrix`) give the position similarity (``metric``), Wang
    et al.'s three properties of it (:func:`posviz.analysis.properties.position_properties`), Wang & Chen's
    absolute probe (least squares) and relative probe (:data:`PAIRS` pairs), :data:`FOLDS` folds each,
    and, beyond 129 rows, the 128-boundary statistics (:func:`posviz.analysis.boundary.boundary_statistics`).
    The references take the shape of the first model that has vectors: the interleaved sinusoid of its
    width and a standard normal matrix drawn with ``seed``. A model without a vector per position gets a row
    with its scheme and why its cells are empty; a model that fails to load, a row with the reason; the
    others are scored all the same.

    Parameters
    ----------
    keys : sequence of ModelKey
        1 to :data:`~posviz.comparison_recipe.MAX_MODELS` models (:func:`model_keys`; the app passes the
        sidebar's own key first).
    store : ModelStore, optional
        Where models are loaded and kept (its loads run one at a time: transformers' loading is not
        thread-safe); a new one by default.
    metric : {"dot", "cosine"}
        φ, the position similarity the properties and the figures read.
    seed : int
        Seeds the probes' shuffles, folds and pairs, and the random reference.
    progress : callable, optional
        Called with a :class:`Progress` at each step of each model (``"queued"`` for all first), always
        from the calling thread, so it may draw on a page or a terminal.
    workers : int, optional
        Threads; by default one per model, at most the CPUs.

    Returns
    -------
    ModelTable

    Raises
    ------
    ValueError
        For no key, more than :data:`~posviz.comparison_recipe.MAX_MODELS`, or an unknown metric.
    """
    from threadpoolctl import threadpool_limits

    keys = list(keys)
    check_count(len(keys))
    if metric not in ("dot", "cosine"):
        raise ValueError(f"metric must be 'dot' or 'cosine', not {metric!r}")
    store = store if store is not None else ModelStore()
    table = ModelTable([], metric=metric, seed=seed)
    report = progress or (lambda _event: None)
    events: queue.Queue[Progress] = queue.Queue()
    total = len(keys)
    for index, key in enumerate(keys):
        report(Progress(index, total, key_name(key), "queued"))

    def run(index: int, key: ModelKey):
        return _model_row(store, key, table,
                          lambda state, detail: events.put(Progress(index, total, key_name(key), state, detail)))

    # One BLAS thread per fit, set once around all threads (threadpoolctl's limits are process-wide: each
    # probe's own limit, entered and left by threads in any order, would otherwise restore the wrong one).
    with threadpool_limits(limits=1, user_api="blas"), \
            ThreadPoolExecutor(max_workers=workers or min(total, os.cpu_count() or 1)) as pool:
        futures = [pool.submit(run, index, key) for index, key in enumerate(keys)]
        while not (all(f.done() for f in futures) and events.empty()):
            try:
                report(events.get(timeout=0.05))
            except queue.Empty:
                continue
        found = [f.result() for f in futures]
        scored = [(row, matrix) for row, _, matrix in found if matrix is not None]
        first = next(((row, encoding) for row, encoding, _ in found if encoding is not None), None)
        references = _references(first[1], first[0].model, table) if first else []
    table.rows = [row for row, _, _ in found] + [row for row, _ in references]
    shown = scored + references
    if shown:
        n = min(matrix.shape[0] for _, matrix in shown)
        label = "cosine" if metric == "cosine" else "dot product"
        table.matrices = {row.model: PositionMatrix(np.ascontiguousarray(matrix[:n, :n]), np.arange(n), 1, n - 1, label)
                          for row, matrix in shown}
    return table


def profile_q(table: ModelTable, q: int | None = None) -> int:
    """The position of the table's "q against all" profiles.

    Parameters
    ----------
    q : int or None
        None: 128, or the last position every model has where they have fewer.

    Raises
    ------
    ValueError
        For a ``q`` beyond the positions every model has, or a table without position vectors.
    """
    if not table.matrices:
        raise ValueError("No model of the table has position vectors: there is no profile to draw.")
    n = next(iter(table.matrices.values())).values.shape[0]
    q = min(PROFILE_Q, n - 1) if q is None else q
    if not 0 <= q < n:
        raise ValueError(f"q = {q} does not exist: the models share positions 0 to {n - 1}.")
    return q


def figure_views(table: ModelTable, q: int | None = None) -> dict[str, View]:
    """The table's two figures by file stem: the position similarity of each model and reference side by
    side (``similarity``, :func:`posviz.views.compare.model_grid`) and their "q against all" profiles on
    one chart (``profiles-q<q>``, :func:`posviz.views.compare.profiles`); none where no model has position
    vectors.

    Parameters
    ----------
    q : int or None
        As for :func:`profile_q`.

    Raises
    ------
    ValueError
        For a ``q`` beyond the positions every model has.
    """
    if not table.matrices:
        return {}
    q = profile_q(table, q)
    matrices, names = list(table.matrices.values()), table.names
    return {"similarity": compare.model_grid(matrices, names, table.metric),
            f"profiles-q{q}": compare.profiles(matrices, names, table.metric, q)}
