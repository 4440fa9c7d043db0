"""What the app says about a model in words: the model page's head (its title, the model's name, its
facts in a row of metrics and its scheme) and a scheme's formula and description.

Drawn by the pages (``pages/model.py``, :func:`posviz.app.notices.explain`) and, before torch is
imported, by a fresh server's first paint (:mod:`posviz.app.first_paint`) from what an earlier
start kept on disk, so that the page that follows draws its chart where the first paint drew it.
Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from posviz.loading import LoadedModel

#: The facts that belong to one start of a server, not to the model: a first paint, drawn from an
#: earlier start's facts, shows :data:`PENDING` for them until the page has its own.
OF_THE_START = ("Device", "Load time")
PENDING = "…"


def facts(lm: LoadedModel) -> list[tuple[str, str]]:
    """The model page's ten facts about ``lm``, each (label, value as shown): model type, max
    tokens, width, layers, heads, parameters (millions), device, dtype, load time (seconds) and the
    weights' memory."""
    from posviz import settings

    return [
        ("Model type", lm.model_type),
        ("Max tokens", f"{lm.max_tokens:,}"),
        ("Width", str(lm.config.get_text_config().hidden_size)),
        ("Layers", str(lm.num_layers)),
        ("Heads", str(lm.num_heads) if lm.num_heads else "none"),
        ("Parameters", f"{lm.num_parameters / 1e6:,.1f} M"),
        ("Device", str(lm.device)),
        ("Dtype", str(lm.dtype).removeprefix("torch.")),
        ("Load time", f"{lm.load_seconds:.2f} s"),
        ("Weights in memory", settings.human_bytes(lm.weight_bytes)),
    ]


def kept(lm: LoadedModel) -> list[tuple[str, str]]:
    """:func:`facts` of ``lm`` as a later start may show them: those of :data:`OF_THE_START` as
    :data:`PENDING`."""
    return [(label, PENDING if label in OF_THE_START else value) for label, value in facts(lm)]


def header(name: str, shown: list[tuple[str, str]], scheme: str) -> None:
    """Draw the page's title ("Model"), ``name`` under it (markdown: the model's name in bold, its
    revision), ``shown`` (label, value) as metrics in one row that wraps where the page is narrow
    (no value is cut), and the line that names the positional scheme (``scheme``, the model's
    :attr:`~posviz.loading.LoadedModel.scheme_label`)."""
    st.title("Model")
    st.markdown(name)
    with st.container(horizontal=True, gap="medium"):
        for label, value in shown:
            st.metric(label, value, width="content")
    st.markdown(f"**Positional scheme:** {scheme}")


def component_title(component: str) -> str:
    """The subheader of one component of a model's positions (``"1-D positions"`` stays so, a first
    letter is capitalised and nothing else changes: ``"text tower"`` → ``"Text tower"``)."""
    return component[:1].upper() + component[1:]


def scheme_text(formula: str | None, description: str) -> None:
    """Draw a positional scheme's formula (LaTeX, where it has one) and its description with its
    sources (:meth:`posviz.positions.PositionEncoding.describe`) in small type."""
    if formula:
        st.latex(formula)
    st.caption(description)
