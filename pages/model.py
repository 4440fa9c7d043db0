"""Model page: what is loaded, and its positional scheme at a glance."""

import numpy as np
import streamlit as st

from posviz import app_state, figures

key = st.session_state["model_key"]
lm = app_state.loaded_model(key)
table = app_state.position_table(key)

st.title("Model")
st.markdown(f"**{lm.name}**" + (f" @ `{lm.revision}`" if lm.revision else ""))
cfg = lm.config.get_text_config()
summary = {
    "family": lm.model_type,
    "positional scheme": lm.scheme_label,
    "positions": f"{table.num_positions} (table rows {table.num_positions + table.offset}, offset {table.offset})"
    if table else str(lm.max_tokens),
    "width": str(table.width if table else cfg.hidden_size),
    "layers": str(lm.num_layers),
    "heads": str(lm.num_heads),
    "parameters": f"{lm.num_parameters:,}",
    "device": str(lm.device),
    "dtype": str(lm.dtype).removeprefix("torch."),
    "load time": f"{lm.load_seconds:.2f} s",
}
if table:
    summary["position table"] = f"`{table.source}`"
st.table({"": list(summary), "value": list(summary.values())}, hide_index=True)

if table is None:
    st.info(f"{lm.name} uses {lm.scheme_label}: it has no learned table of position vectors, so the "
            "Position similarity, Projection and Input representation pages have nothing to show for it. "
            "The Attention page works.", icon="ℹ️")
else:
    norms = np.linalg.norm(table.matrix, axis=1)
    app_state.show(figures.line_figure(
        {"‖position embedding‖": norms}, "Length of each position embedding", "position p", "L2 norm"))
    st.caption("Row p is the vector the model adds to the token at 0-based position p. "
               "BERT-style models were pre-trained on 128-token inputs for 90 % of the steps, then on 512: "
               "look for a change near position 128.")
