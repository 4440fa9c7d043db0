"""The ``posviz`` command (also ``python -m posviz``): one function adds each command's parser, one runs it.

``posviz app [streamlit options]`` starts the Streamlit app; ``posviz export --model ID --sentence TEXT --out DIR``
(and ``--layer``, ``--head``, ``--q``, ``--range FIRST LAST``, ``--present``, ``--no-images``; ``--help`` says
each) writes the standard figures; ``posviz coverage [--out docs/coverage.md]`` the coverage table
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
    for add in (_add_app, _add_export, _add_coverage):
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
                    "HTML, PNG and SVG, and their arrays as NPZ and CSV (a header row and the labels). Every file "
                    "name starts with the model's short name, e.g. all-MiniLM-L6-v2-position-similarity.csv.")
    export.add_argument("--model", default=None, metavar="ID",
                        help="Hugging Face Hub id or local folder (default: the bundled all-MiniLM-L6-v2)")
    export.add_argument("--sentence", default=None, metavar="TEXT",
                        help='the sentence for the input and attention figures (default: "The cat chased the dog")')
    export.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write into (created)")
    export.add_argument("--revision", default=None, metavar="R", help="branch, tag or commit of a Hub model")
    export.add_argument("--device", default="auto", metavar="D", help="auto (default), cpu, cuda, mps …")
    export.add_argument("--no-images", action="store_true",
                        help="HTML, NPZ and CSV only (PNG and SVG need Chrome or Chromium)")
    export.add_argument("--layer", type=int, default=0, metavar="L",
                        help="the attention figures' layer, 0-based (default 0; an encoder-decoder model's encoder)")
    export.add_argument("--head", type=int, default=0, metavar="H",
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
        0 on success; 2 with a one-line message on stderr for an empty sentence, an ``--out`` that
        is a file, no browser for images, a model that cannot be loaded, an unusable device, a
        ``--layer``, ``--head``, ``--q`` or ``--range`` the model does not have, or a failed write.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from tqdm import tqdm

    from posviz import export, standard_set
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one progress bar: ours
    hf_logging.set_verbosity_error()
    start = time.perf_counter()
    sentence = standard_set.DEFAULT_SENTENCE if args.sentence is None else args.sentence
    if not sentence.strip():
        return _fail("--sentence is empty; give a sentence for the input and attention figures.")
    if args.out.exists() and not args.out.is_dir():
        return _fail(f"--out {args.out} is a file; give a folder (it is created where missing).")
    settings = {"layer": args.layer, "head": args.head, "q": args.q,
                "range": tuple(args.range) if args.range else None}
    try:
        standard_set.check_settings(**settings)  # before a model is loaded
    except ValueError as exc:
        return _fail(str(exc))
    if not args.no_images:
        try:
            export.require_browser()
        except export.ExportError as exc:
            return _fail(f"{exc} Or pass --no-images for HTML, NPZ and CSV only.")
    try:
        lm = posviz.load_model(args.model, revision=args.revision, device=args.device)
    except posviz.ModelLoadError as exc:
        return _fail(str(exc))
    except RuntimeError as exc:  # an unusable --device
        return _fail(f"Cannot use device {args.device!r} ({exc}).")
    bar = None  # made at the first file written: a message before it (a note, an error) stands alone

    def progress(path: Path, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(desc=f"Exporting {lm.name}", total=total, unit="file", file=sys.stderr, dynamic_ncols=True)
        bar.set_postfix_str(path.name, refresh=False)
        bar.update(done - bar.n)

    try:
        files = standard_set.export_standard_set(lm, sentence, args.out, progress=progress, images=not args.no_images,
                                                 present=args.present, notes=_note, **settings)
    except (export.ExportError, ValueError, OSError) as exc:
        if bar is not None:
            bar.close()
        return _fail(str(exc))
    if bar is not None:
        bar.close()
    print(f"Wrote {len(files)} files to {args.out} in {time.perf_counter() - start:.1f} s "
          f"({lm.name}, {lm.device}).", file=sys.stderr)
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


def app_command(args: argparse.Namespace) -> int:
    """``posviz app``: Streamlit's own ``streamlit run`` on the app's entry script
    (:func:`posviz.app.entry.script`), with the options that follow ``app`` (``args.passed_on``).

    Returns
    -------
    int
        Streamlit's exit status (0 once the server stops; 2 with Streamlit's message for an option
        ``streamlit run`` does not know); 2 with a one-line message where the entry script is missing.
    """
    from posviz.app.entry import script

    try:
        path = script()
    except FileNotFoundError as exc:
        return _fail(str(exc))
    from streamlit.web import cli as streamlit_cli

    try:
        streamlit_cli.main(["run", str(path), *args.passed_on], prog_name="streamlit")
    except SystemExit as exc:  # click ends every run so
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return 0


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
