"""Model page: what is loaded, and the signature of its positional scheme."""

import numpy as np
import streamlit as st

from posviz import app_state, figures, settings

key = app_state.current_model()
lm = app_state.loaded_model(key)
encodings = app_state.position_encodings(key)

st.title("Model")
st.markdown(f"**{lm.name}**" + (f" @ `{lm.revision}`" if lm.revision else ""))
cfg = lm.config.get_text_config()
facts = [
    ("Family", lm.family),
    ("Max tokens", f"{lm.max_tokens:,}"),
    ("Width", str(cfg.hidden_size)),
    ("Layers", str(lm.num_layers)),
    ("Heads", str(lm.num_heads)),
    ("Parameters", f"{lm.num_parameters / 1e6:,.1f} M"),
    ("Device", str(lm.device)),
    ("Dtype", str(lm.dtype).removeprefix("torch.")),
    ("Load time", f"{lm.load_seconds:.2f} s"),
    ("Weights in memory", settings.human_bytes(lm.weight_bytes)),
]
for row in (facts[:5], facts[5:]):
    for column, (label, value) in zip(st.columns(5), row):
        column.metric(label, value)
if lm.positions_only:
    st.caption("Positions only: config.json and the positional tensors were read, nothing else; the other "
               "weights were never downloaded.")
st.markdown(f"**Positional scheme:** {lm.scheme_label}")


def signature(encoding) -> None:
    """One figure that characterises the component at a glance."""
    if encoding.scheme in ("learned_absolute", "sinusoidal"):
        norms = np.linalg.norm(encoding.matrix, axis=1)
        app_state.show(figures.line_figure({"‖position embedding‖": norms}, "Length of each position embedding",
                                           "position p", "L2 norm"), arrays={"norm": norms})
        if encoding.scheme == "learned_absolute" and lm.layout.segment:
            st.caption("BERT-style models were pre-trained on 128-token inputs for 90 % of the steps, then "
                       "on 512: look for a change near position 128.")
    elif encoding.scheme == "rotary":
        theta = encoding.frequencies
        app_state.show(figures.line_figure(
            {"θ_i": theta}, f"Rotation frequency of each dimension pair ({encoding.rotary_dim} rotated dims)",
            "pair i", "radians per position", markers=True, log_y=True), arrays={"theta": theta})
        st.caption(f"Fastest pair turns {theta[0]:.3g} rad per position; the slowest {theta[-1]:.3g} "
                   f"(a full turn every {2 * np.pi / theta[-1]:,.0f} positions).")
    elif encoding.kind == "bias" and encoding.scheme == "alibi":
        app_state.show(figures.line_figure({"slope": encoding.slopes}, "ALiBi slope of each head", "head",
                                           "slope", markers=True, log_y=True), arrays={"slope": encoding.slopes})
    elif encoding.kind == "bias":
        offsets = np.arange(-160, 161)
        values = encoding.by_offset(offsets)
        app_state.show(figures.line_figure(
            {f"head {h}": values[h] for h in range(values.shape[0])},
            f"Relative bias by offset ({encoding.component or 'self-attention'})", "key − query offset", "bias",
            x=offsets), arrays={"bias": values, "offsets": offsets})
    elif encoding.scheme == "relative_embeddings":
        norms = np.linalg.norm(encoding.vectors(np.arange(encoding.num_positions)).cpu().numpy(), axis=1)
        app_state.show(figures.line_figure({"‖relative embedding‖": norms}, "Length of each relative embedding",
                                           "relative position bucket", "L2 norm", x=encoding.first_label + np.arange(len(norms))),
                       arrays={"norm": norms, "buckets": encoding.first_label + np.arange(len(norms))})


for encoding in encodings:
    if encoding.component:
        st.subheader(encoding.component.capitalize())
    app_state.explain(encoding)
    signature(encoding)
