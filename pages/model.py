"""Model page: what is loaded, and the signature of its positional scheme."""

import streamlit as st

from posviz.app import model_facts
from posviz.app.downloads import show
from posviz.app.notices import explain
from posviz.app.navigation import current_model
from posviz.recipes import recipe
from posviz.views import positions

key, lm = current_model()

model_facts.header(f"**{lm.name}**" + (f" @ `{lm.revision}`" if lm.revision else ""), model_facts.facts(lm),
                   lm.scheme_label)
if lm.positions_only:
    st.caption("Positions only: config.json and the positional tensors were read, nothing else; the other "
               "weights were never downloaded.")
if lm.detection is not None:
    st.info(f"posviz's family table does not list the model type `{lm.model_type}`. {lm.detection.sentence()}",
            icon=":material/search:")
if lm.layer_strip:
    st.subheader("Layer by layer")
    show(positions.layer_strip(lm.layer_strip), recipe=recipe("layer-strip"))

for encoding in lm.encodings:
    if encoding.component:
        st.subheader(model_facts.component_title(encoding.component))
    explain(encoding)
    view = positions.signature(encoding)
    if view is not None:
        show(view, recipe=recipe("signature", component=encoding.component))
