"""Model page: what is loaded, and its positional scheme at a glance."""

import numpy as np
import streamlit as st

from posviz import app_state, figures

key = app_state.current_model()
lm = app_state.loaded_model(key)
table = app_state.position_table(key)

st.title("Model")
st.markdown(f"**{lm.name}**" + (f" @ `{lm.revision}`" if lm.revision else ""))
cfg = lm.config.get_text_config()
facts = [
    ("Family", lm.family),
    ("Positions", f"{lm.max_tokens:,}"),
    ("Width", str(table.width if table else cfg.hidden_size)),
    ("Layers", str(lm.num_layers)),
    ("Heads", str(lm.num_heads)),
    ("Parameters", f"{lm.num_parameters / 1e6:,.1f} M"),
    ("Device", str(lm.device)),
    ("Dtype", str(lm.dtype).removeprefix("torch.")),
    ("Load time", f"{lm.load_seconds:.2f} s"),
]
for row in (facts[:5], facts[5:]):
    for column, (label, value) in zip(st.columns(5), row):
        column.metric(label, value)
st.markdown(f"**Positional scheme:** {lm.scheme_label}"
            + (f" · table `{table.source}`, {table.num_positions + table.offset} rows, offset {table.offset} "
               f"(row p + {table.offset} is added at position p)" if table else ""))

if table is None:
    st.info(f"{lm.name} uses {lm.scheme_label}: it has no learned table of position vectors, so the "
            "Position similarity, Projection and Input representation pages have nothing to show for it. "
            "The Attention page works.", icon=":material/info:")
else:
    norms = np.linalg.norm(table.matrix, axis=1)
    app_state.show(figures.line_figure(
        {"‖position embedding‖": norms}, "Length of each position embedding", "position p", "L2 norm"))
    st.caption("Row p is the vector the model adds to the token at 0-based position p. "
               "BERT-style models were pre-trained on 128-token inputs for 90 % of the steps, then on 512: "
               "look for a change near position 128.")
