"""Model page: what is loaded, and the signature of its positional scheme."""

import streamlit as st

from posviz import settings
from posviz.app.downloads import show
from posviz.app.notices import explain
from posviz.app.navigation import current_model
from posviz.recipes import recipe
from posviz.views import positions

key, lm = current_model()

st.title("Model")
st.markdown(f"**{lm.name}**" + (f" @ `{lm.revision}`" if lm.revision else ""))
facts = [
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
with st.container(horizontal=True, gap="medium"):  # wraps where the page is narrow: no value is cut
    for label, value in facts:
        st.metric(label, value, width="content")
if lm.positions_only:
    st.caption("Positions only: config.json and the positional tensors were read, nothing else; the other "
               "weights were never downloaded.")
st.markdown(f"**Positional scheme:** {lm.scheme_label}")
if lm.detection is not None:
    st.info(f"posviz's family table does not list the model type `{lm.model_type}`. {lm.detection.sentence()}",
            icon=":material/search:")
if lm.layer_strip:
    st.subheader("Layer by layer")
    show(positions.layer_strip(lm.layer_strip), recipe=recipe("layer-strip"))

for encoding in lm.encodings:
    if encoding.component:
        st.subheader(encoding.component[:1].upper() + encoding.component[1:])  # "1-D positions" stays so
    explain(encoding)
    view = positions.signature(encoding)
    if view is not None:
        show(view, recipe=recipe("signature", component=encoding.component))
