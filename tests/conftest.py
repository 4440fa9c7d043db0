"""The test session's environment and its shared fixtures.

Environment, set when this file is imported, before huggingface_hub is (it reads both once): every
Hub request goes to a local Hub on 127.0.0.1 (:mod:`tests.support.local_hub`; tests publish
repositories on it), and the Hugging Face cache and posviz's own cache folder are folders of the
session's own. The folders are removed when the session ends, the Hub stopped first.

Fixtures: tiny, randomly initialised models of each family (:mod:`tests.support.tiny_models`) are
built once per session in a temporary folder (``tiny_path``), loaded once through
``posviz.load_model(str(path))`` (``tiny_lm``) and once, independently of posviz, with plain
transformers (``reference``: the ground truth, run with :mod:`tests.support.reference`). The
bundled model is loaded once for the whole session (``bundled_lm``, ``bundled_reference``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from tests.support.local_hub import LocalHub

LOCAL_HUB = LocalHub(Path(tempfile.mkdtemp(prefix="posviz-local-hub-")))
HF_HOME = Path(tempfile.mkdtemp(prefix="posviz-hf-home-"))
CACHE_DIR = Path(tempfile.mkdtemp(prefix="posviz-cache-"))
os.environ["HF_ENDPOINT"] = LOCAL_HUB.url
os.environ["HF_HOME"] = str(HF_HOME)
os.environ["POSVIZ_CACHE_DIR"] = str(CACHE_DIR)  # the app's stored first chart (posviz.app.first_paint)
for _offline in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.pop(_offline, None)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _remove_session_folders() -> None:
    """Stop the local Hub, then remove its folder and the session's caches (idempotent)."""
    LOCAL_HUB.close()
    for folder in (LOCAL_HUB.root, HF_HOME, CACHE_DIR):
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_remove_session_folders)  # also when the session never starts (a usage error)


def pytest_collection_modifyitems(items) -> None:
    """The image's tests (marker ``docker``) last: CI builds the image in the background while the
    others run (``.ci/run``); the image test then waits for that build and reuses it."""
    items.sort(key=lambda item: item.get_closest_marker("docker") is not None)


def pytest_unconfigure(config) -> None:
    _remove_session_folders()


import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

from tests.support.tiny_models import build_tiny, bundled_path  # noqa: E402

transformers.logging.set_verbosity_error()
torch.set_num_threads(2)


@pytest.fixture
def local_hub():
    """The session's local Hub (``HF_ENDPOINT``), its counters zeroed and no repository gated."""
    LOCAL_HUB.reset()
    LOCAL_HUB.gated.clear()
    LOCAL_HUB.forbidden.clear()
    return LOCAL_HUB


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    """tiny_path(family) -> folder holding a tiny random model + tokenizer of that family."""
    cache: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in cache:
            folder = tmp_path_factory.mktemp(f"tiny-{family}")
            cache[family] = build_tiny(family, folder)
        return cache[family]

    return get


@pytest.fixture(scope="session")
def tiny_lm(tiny_path):
    """tiny_lm(family) -> posviz.load_model(<tiny folder>) (cached)."""
    import posviz

    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = posviz.load_model(str(tiny_path(family)))
        return cache[family]

    return get


@pytest.fixture(scope="session")
def reference(tiny_path):
    """reference(family) -> (model, tokenizer) loaded with plain transformers, independently of
    posviz, in eval mode with eager attention. The ground truth for the comparisons; shared by the
    session, so a test that changes the model works on a copy (``copy.deepcopy``)."""
    cache = {}

    def get(family: str):
        if family not in cache:
            path = tiny_path(family)
            model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
            tok = AutoTokenizer.from_pretrained(path)
            cache[family] = (model, tok)
        return cache[family]

    return get


@pytest.fixture(scope="session")
def bundled_lm():
    """``posviz.load_model()``, the bundled all-MiniLM-L6-v2, loaded once for the session."""
    import posviz

    return posviz.load_model()


@pytest.fixture(scope="session")
def bundled_reference():
    """The bundled model and tokenizer loaded with plain transformers (eager attention)."""
    path = bundled_path()
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(path)
    return model, tok
