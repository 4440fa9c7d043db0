"""The ``posviz`` command (also ``python -m posviz``): one function adds each command's parser, one runs it.

``posviz app [streamlit options]`` starts the Streamlit app; ``posviz export --model ID --sentence TEXT --out DIR``
(and ``--layer``, ``--head``, ``--q``, ``--range FIRST LAST``, ``--present``, ``--no-images``; ``--help`` says
each) writes the standard figures, each with its JSON sidecar; ``posviz export --from SIDECAR.json [--out DIR]
[--all]`` makes a figure again from its sidecar; ``posviz compare --models A B C …`` puts many models side by side
(:mod:`posviz.model_table`); ``posviz coverage [--out docs/coverage.md]`` writes the coverage table
(:mod:`posviz.coverage`). ``posviz --version`` prints the version.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import posviz


def _parser() -> argparse.ArgumentParser:
    """The parser of every command: each ``_add_<command>`` adds one and sets its ``run`` function."""
    parser = argparse.ArgumentParser(prog="posviz", description="See how transformer models encode word order.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {posviz.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_app, _add_export, _add_compare, _add_coverage):
        add(commands)
    return parser


def _add_app(commands) -> None:
    app = commands.add_parser(
        "app", help="start the Streamlit app (any further options go to streamlit run)",
        usage="%(prog)s [-h] [streamlit run option ...]",
        description="Start the Streamlit app with its own settings, from any folder. Any further options go to "
                    "`streamlit run` (e.g. posviz app --server.port 8502 --server.address 0.0.0.0; "
                    "`streamlit run --help` lists them).")
    app.set_defaults(run=app_command, passes_on=True)


def _add_export(commands) -> None:
    export = commands.add_parser(
        "export", help="write the standard figures and arrays of a model and a sentence, for slides",
        description="Write the standard figures (position similarity, position q against all, PCA projection, "
                    "input representation norms, attention of one head and every head of its layer) as offline "
                    "HTML, PNG and SVG, and their arrays as NPZ and CSV (a header row and the labels), each figure with "
                    "a JSON sidecar (model, revision or commit, versions, settings). Every file name starts with the "
                    "model's short name, e.g. all-MiniLM-L6-v2-position-similarity.csv. With --from SIDECAR.json: "
                    "the figure of that sidecar made again (--all: its whole set); a sidecar of posviz compare: "
                    "every model of it compared again (--all: the table and both figures).")
    export.add_argument("--model", default=None, metavar="ID",
                        help="Hugging Face Hub id or local folder (default: the bundled all-MiniLM-L6-v2)")
    export.add_argument("--sentence", default=None, metavar="TEXT",
                        help='the sentence for the input and attention figures (default: "The cat chased the dog")')
    export.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="folder to write into (created); required, except with --from (default: the current "
                             "folder)")
    export.add_argument("--from", dest="sidecar", type=Path, default=None, metavar="SIDECAR",
                        help="make the figure of this sidecar (the .json beside an exported or downloaded figure) "
                             "again, from its model, revision and settings")
    export.add_argument("--all", dest="whole_set", action="store_true",
                        help="with --from: the whole standard set the sidecar's figure belongs to (a comparison's: "
                             "its table and both figures)")
    export.add_argument("--revision", default=None, metavar="R", help="branch, tag or commit of a Hub model")
    _add_device_and_images(export)
    export.add_argument("--layer", type=int, default=None, metavar="L",
                        help="the attention figures' layer, 0-based (default 0; an encoder-decoder model's encoder)")
    export.add_argument("--head", type=int, default=None, metavar="H",
                        help="the attention figure's head, 0-based (default 0)")
    export.add_argument("--q", type=int, default=None, metavar="Q",
                        help='the position of "position q against all", 0-based (default 128, or the last position '
                             "of a model with fewer: the command says which)")
    export.add_argument("--range", type=int, nargs=2, default=None, metavar=("FIRST", "LAST"),
                        help="first and last position of the position similarity, inclusive "
                             "(default: the first 2048)")
    export.add_argument("--present", action="store_true",
                        help="figures for a projector (large fonts, thick lines), as the app's presentation mode; "
                             "their files end in -present")
    export.set_defaults(run=export_command)


def _add_device_and_images(command) -> None:
    """The options of a command that loads models and writes figures: ``--device`` and ``--no-images``."""
    command.add_argument("--device", default="auto", metavar="D", help="auto (default), cpu, cuda, mps …")
    command.add_argument("--no-images", action="store_true",
                         help="HTML, NPZ and CSV only (PNG and SVG need Chrome or Chromium)")


def _add_coverage(commands) -> None:
    coverage = commands.add_parser(
        "coverage", help="write the coverage table: every model type of the installed transformers -> its scheme(s)",
        description="For every model type of the installed transformers, make its default config and build its model "
                    "on the meta device; write a Markdown table of model type, scheme(s) (from the family table, "
                    "else found by structure), what posviz shows, and how it was verified or why the type could not "
                    "be built. The tiny-config tests are read from the tests/support of the checkout posviz runs from.")
    coverage.add_argument("--out", type=Path, default=None, metavar="FILE",
                          help="the Markdown file to write (default: docs/coverage.md of the checkout)")
    coverage.add_argument("--timeout", type=float, default=None, metavar="S",
                          help="seconds one model type may take to build (default 60)")
    coverage.set_defaults(run=coverage_command)


def _add_compare(commands) -> None:
    compare = commands.add_parser(
        "compare", help="compare up to 8 models side by side: one table, their position similarity and profiles",
        description="Load each model's positions only (config.json and the positional tensors), in parallel, and "
                    "print one row per model and per reference (the sinusoid of the first model's width, a random "
                    "matrix): scheme, positions, width, Wang et al.'s three properties of the position similarity, "
                    "Wang & Chen's absolute and relative probes (the paper's protocol: least squares, 5 folds, 512 "
                    "pairs) and the statistics of BERT's 128 boundary. With --out, write the table as CSV and its "
                    "figures (each model's position similarity side by side; position q against all, every model "
                    "on one chart) as HTML, PNG, SVG and NPZ, each file with a JSON sidecar that names every model "
                    "(Hub commit, folder hash or bundled package version) and the settings: posviz export --from "
                    "it makes the comparison again.")
    compare.add_argument("--models", nargs="+", required=True, metavar="ID",
                         help="1 to 8 Hub ids or local folders (all-MiniLM-L6-v2 or \"all-MiniLM-L6-v2 (bundled)\": "
                              "the bundled model)")
    compare.add_argument("--q", type=int, default=None, metavar="Q",
                         help='the position of "position q against all", 0-based (default 128, or the last position '
                              "every model has)")
    compare.add_argument("--metric", choices=("cosine", "dot"), default="cosine",
                         help="the position similarity the properties and figures read (default cosine)")
    compare.add_argument("--seed", type=int, default=0, metavar="S",
                         help="seeds the probes' folds and pairs and the random reference (default 0)")
    compare.add_argument("--out", type=Path, default=None, metavar="DIR",
                         help="folder to write the table's CSV and the figures into (created); none: print only")
    compare.add_argument("--revision", default=None, metavar="R", help="branch, tag or commit of every Hub model")
    _add_device_and_images(compare)
    compare.set_defaults(run=compare_command)


def _fail(message: str) -> int:
    print(f"posviz: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _note(text: str) -> None:
    print(f"posviz: note: {' '.join(text.split())}", file=sys.stderr)


def export_command(args: argparse.Namespace) -> int:
    """``posviz export``: load the model, write the standard set (:mod:`posviz.standard_set`).

    Notes (the q used where the model has fewer positions than asked for by default) go to stderr as
    ``posviz: note: ...``; the files written to stdout, one path a line.

    Returns
    -------
    int
        0 on success; 2 with a one-line message on stderr for an empty sentence, no ``--out`` or one
        that is a file, no browser for images, a model that cannot be loaded, an unusable device, a
        ``--layer``, ``--head``, ``--q`` or ``--range`` the model does not have, or a failed write;
        with ``--from``: also a sidecar that cannot be read or checked (:func:`posviz.sidecar.read`),
        whose model cannot be had as it was (:func:`posviz.sidecar.load_model`; for a comparison's
        sidecar, any of its models: :func:`posviz.comparison_set.regenerated`), or given with options
        the sidecar sets. A sidecar written with other versions (posviz, libraries) or on another
        device is made again with a note.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from posviz import standard_set
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one progress bar: ours
    hf_logging.set_verbosity_error()
    start = time.perf_counter()
    if args.sidecar is not None:
        return _export_from(args, start)
    if args.whole_set:
        return _fail("--all goes with --from SIDECAR.json: the whole set of that sidecar's figure.")
    if args.out is None:
        return _fail("--out is required: give the folder to write into.")
    sentence = standard_set.DEFAULT_SENTENCE if args.sentence is None else args.sentence
    if not sentence.strip():
        return _fail("--sentence is empty; give a sentence for the input and attention figures.")
    if args.out.exists() and not args.out.is_dir():
        return _fail(f"--out {args.out} is a file; give a folder (it is created where missing).")
    settings = {"layer": args.layer or 0, "head": args.head or 0, "q": args.q,
                "range": tuple(args.range) if args.range else None}
    try:
        standard_set.check_settings(**settings)  # before a model is loaded
    except ValueError as exc:
        return _fail(str(exc))
    failed = _no_browser(args)
    if failed:
        return failed
    try:
        lm = posviz.load_model(args.model, revision=args.revision, device=args.device)
    except posviz.ModelLoadError as exc:
        return _fail(str(exc))
    except RuntimeError as exc:  # an unusable --device
        return _fail(f"Cannot use device {args.device!r} ({exc}).")
    return _write(args, lm.name, start, lambda progress: standard_set.export_standard_set(
        lm, sentence, args.out, progress=progress, images=not args.no_images, present=args.present, notes=_note,
        **settings), detail=str(lm.device))


def _no_browser(args: argparse.Namespace) -> int:
    """2 with the fix where images are asked for and there is no browser; else 0."""
    from posviz import export

    if not args.no_images:
        try:
            export.require_browser()
        except export.ExportError as exc:
            return _fail(f"{exc} Or pass --no-images for HTML, NPZ and CSV only.")
    return 0


def _export_from(args: argparse.Namespace, start: float) -> int:
    """``export --from SIDECAR``: the sidecar's figure (``--all``: its set) made again into ``--out``
    (default: the current folder), its model loaded as the sidecar names it (:mod:`posviz.sidecar`); for a
    comparison's sidecar, every model of it (:func:`_comparison_from`)."""
    from posviz import sidecar, standard_set

    given = [flag for flag, value in (("--model", args.model), ("--sentence", args.sentence),
                                      ("--revision", args.revision), ("--layer", args.layer), ("--head", args.head),
                                      ("--q", args.q), ("--range", args.range), ("--present", args.present or None))
             if value is not None]
    if given:
        return _fail(f"--from takes the model and the settings from the sidecar; leave out {', '.join(given)}.")
    args.out = Path(".") if args.out is None else args.out
    if args.out.exists() and not args.out.is_dir():
        return _fail(f"--out {args.out} is a file; give a folder (it is created where missing).")
    try:
        found = sidecar.read(args.sidecar)
    except sidecar.SidecarError as exc:
        return _fail(str(exc))
    failed = _no_browser(args)
    if failed:
        return failed
    if isinstance(found, sidecar.ComparisonSidecar):
        return _comparison_from(args, found, start)
    try:
        lm, notes = sidecar.load_model(found, device=args.device)
    except sidecar.SidecarError as exc:
        return _fail(str(exc))
    except RuntimeError as exc:  # an unusable --device
        return _fail(f"Cannot use device {args.device!r} ({exc}).")
    for text in notes:
        _note(text)
    try:
        views = standard_set.regenerated(lm, found, whole_set=args.whole_set)
    except (ValueError, TypeError) as exc:  # TypeError: a setting of the wrong type in a hand-edited sidecar
        return _fail(f"{args.sidecar}: {exc}")
    return _write(args, lm.name, start, lambda progress: standard_set.write_exports(
        lm, views, args.out, progress=progress, images=not args.no_images, notes=_note), detail=str(lm.device))


def _comparison_from(args: argparse.Namespace, found, start: float) -> int:
    """``export --from`` a comparison's sidecar: every model of it loaded as it was, compared again
    (:func:`posviz.comparison_set.regenerated`, each model's progress on stderr), its file (``--all``: the table
    and both figures) written."""
    from posviz import comparison_set, sidecar

    try:
        table, views, notes = comparison_set.regenerated(found, device=args.device, whole_set=args.whole_set,
                                                      progress=_model_step)
    except sidecar.SidecarError as exc:
        return _fail(str(exc))
    except ValueError as exc:
        return _fail(f"{args.sidecar}: {exc}")
    except RuntimeError as exc:  # an unusable --device
        return _fail(f"Cannot use device {args.device!r} ({exc}).")
    for text in notes:
        _note(text)
    return _write(args, f"{len(found.models)} models", start, lambda progress: comparison_set.write_comparison(
        table, views, args.out, progress=progress, images=not args.no_images))


class _Bar:
    """``progress(path, done, total)`` as one progress bar on stderr, made at the first file written (a message
    before it, a note or an error, stands alone); a context manager that closes it."""

    def __init__(self, description: str) -> None:
        self.description, self.bar = description, None

    def __enter__(self) -> "_Bar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def __call__(self, path: Path, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(desc=self.description, total=total, unit="file", file=sys.stderr, dynamic_ncols=True)
        self.bar.set_postfix_str(path.name, refresh=False)
        self.bar.update(done - self.bar.n)


def _write(args: argparse.Namespace, what: str, start: float, write, detail: str = "") -> int:
    """Run ``write(progress)`` with one progress bar on stderr; then the files, one a line, on stdout.
    ``what``: the model (or the number of models) the bar and the closing line name, ``detail`` the device."""
    from posviz import export

    try:
        with _Bar(f"Exporting {what}") as bar:
            files = write(bar)
    except (export.ExportError, ValueError, OSError) as exc:
        return _fail(str(exc))
    where = f", {detail}" if detail else ""
    print(f"Wrote {len(files)} files to {args.out} in {time.perf_counter() - start:.1f} s ({what}{where}).",
          file=sys.stderr)
    for path in files:
        print(path)
    return 0


def coverage_command(args: argparse.Namespace) -> int:
    """``posviz coverage``: :func:`posviz.coverage.coverage_rows` over every model type, written with
    :func:`posviz.coverage.write_table`; progress on stderr, then the counts in one sentence and the time taken.

    The "how verified" column names the tiny-config tests of the checkout posviz runs from
    (:func:`posviz.coverage.checkout`); posviz installed from a wheel has none: the command then
    needs ``--out`` and says that column cannot name tests.

    Returns
    -------
    int
        0 on success; 2 with a one-line message on stderr for no ``--out`` outside a checkout, an
        ``--out`` that is a folder, a ``--timeout`` that is not positive, or a failed write.
    """
    from tqdm import tqdm

    from posviz import coverage

    root = coverage.checkout()
    if root is None and args.out is None:
        return _fail(f"posviz runs from {Path(posviz.__file__).parent}, not from its repository, so there is no "
                     "docs/coverage.md to update; run it in a checkout (pip install -e .), or give --out FILE.")
    if root is None:
        _note("not in a checkout of posviz (no tests/support beside it): the \"how verified\" column says "
              f"\"{coverage.NO_TESTS}\" instead of naming the tiny-config tests.")
    out = args.out if args.out is not None else root / coverage.DEFAULT_OUT
    timeout = coverage.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if out.is_dir():
        return _fail(f"--out {out} is a folder; give the Markdown file to write.")
    if timeout <= 0:
        return _fail(f"--timeout {timeout:g} is not a positive number of seconds.")
    start = time.perf_counter()
    bar = tqdm(desc="Model types", unit="type", file=sys.stderr, dynamic_ncols=True)

    def progress(model_type: str, done: int, total: int) -> None:
        bar.total = total
        bar.set_postfix_str(model_type, refresh=False)
        bar.update(done - bar.n)

    rows = coverage.coverage_rows(timeout=timeout, progress=progress)
    bar.update(len(rows) - bar.n)
    bar.close()
    try:
        coverage.write_table(rows, out)
    except OSError as exc:
        return _fail(f"Cannot write {out}: {exc}")
    print(f"Wrote {out}: {len(rows)} model types in {time.perf_counter() - start:.1f} s. {coverage.summary(rows)}",
          file=sys.stderr)
    return 0


def compare_command(args: argparse.Namespace) -> int:
    """``posviz compare``: :func:`posviz.model_table.compare_models` of the models named, the table
    printed to stdout (:meth:`~posviz.model_table.ModelTable.text`, then how it was computed), each model's
    progress on stderr as ``posviz: [i/n] <model>: <state>``; with ``--out``, the table and its figures
    written there with their sidecars (:func:`posviz.comparison_set.write_model_table`), one progress bar on stderr.

    A model that fails to load gets a row with the reason (and its progress line says it); the others are
    compared all the same.

    Returns
    -------
    int
        0 on success, also where some models failed to load; 2 with a one-line message on stderr for no model
        or more than 8, a negative ``--q``, an ``--out`` that is a file, no browser for images, a ``--q`` the
        models do not share, or a failed write.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from posviz import comparison_set, export, model_table
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    start = time.perf_counter()
    try:
        keys = model_table.model_keys(args.models, device=args.device, revision=args.revision)
    except ValueError as exc:
        return _fail(str(exc))
    if args.q is not None and args.q < 0:
        return _fail(f"--q {args.q} does not exist: positions count from 0.")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        return _fail(f"--out {args.out} is a file; give a folder (it is created where missing).")
    if args.out is not None and not args.no_images:
        try:
            export.require_browser()
        except export.ExportError as exc:
            return _fail(f"{exc} Or pass --no-images for HTML, NPZ and CSV only.")

    table = model_table.compare_models(keys, metric=args.metric, seed=args.seed, progress=_model_step)
    print(table.text())
    print(f"\n{table.caption}")
    if args.out is None:
        return 0
    try:
        with _Bar(f"Writing {model_table.FILE_PREFIX}") as bar:
            files = comparison_set.write_model_table(table, args.out, q=args.q, images=not args.no_images,
                                                     progress=bar)
    except (export.ExportError, ValueError, OSError) as exc:
        return _fail(str(exc))
    print(f"Wrote {len(files)} files to {args.out} in {time.perf_counter() - start:.1f} s: "
          f"{', '.join(path.name for path in files)}.", file=sys.stderr)
    return 0


def _model_step(step) -> None:
    """One step of one model of a comparison (:class:`posviz.model_table.Progress`) as a line on stderr."""
    detail = f" ({step.detail})" if step.detail else ""
    print(f"posviz: [{step.index + 1}/{step.total}] {step.name}: {step.state}{detail}", file=sys.stderr)


def app_command(args: argparse.Namespace) -> int:
    """``posviz app``: Streamlit's own ``streamlit run`` on the app's entry script
    (:func:`posviz.app.entry.run`), with the options that follow ``app`` (``args.passed_on``).

    Returns
    -------
    int
        Streamlit's exit status (0 once the server stops; 2 with Streamlit's message for an option
        ``streamlit run`` does not know); 2 with a one-line message where the entry script is missing.
    """
    from posviz.app import entry

    try:
        return entry.run(args.passed_on)
    except FileNotFoundError as exc:
        return _fail(str(exc))


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run the command; returns the exit code.

    Options after a command that passes them on (``app``) go to it as ``args.passed_on``; any other
    command refuses them, as argparse does (exit 2).
    """
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "passes_on", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.passed_on = rest
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
