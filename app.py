"""posviz: the Streamlit app. Run with `streamlit run app.py`."""

from pathlib import Path

import streamlit as st

from posviz import app_state

ICON = Path(__file__).parent / "assets" / "favicon.png"  # local: no icon fetched from a font CDN
st.set_page_config(page_title="posviz · position embeddings", page_icon=str(ICON), layout="wide")

PAGES = [
    st.Page("pages/model.py", title="Model", icon=":material/info:", default=True),
    st.Page("pages/gallery.py", title="Gallery", icon=":material/photo_library:", url_path="gallery"),
    st.Page("pages/similarity.py", title="Position similarity", icon=":material/grid_on:", url_path="similarity"),
    st.Page("pages/projection.py", title="Projection", icon=":material/scatter_plot:", url_path="projection"),
    st.Page("pages/input.py", title="Input representation", icon=":material/functions:", url_path="input"),
    st.Page("pages/attention.py", title="Attention", icon=":material/visibility:", url_path="attention"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
    st.Page("pages/probes.py", title="Probes", icon=":material/science:", url_path="probes"),
    st.Page("pages/word_order.py", title="Word order", icon=":material/swap_horiz:", url_path="word_order"),
    st.Page("pages/properties.py", title="Properties", icon=":material/rule:", url_path="properties"),
]

page = st.navigation(PAGES)
app_state.warm_up()
st.session_state["model_key"] = app_state.sidebar()
try:
    page.run()
except Exception as exc:  # the last net: a message and a way forward, never a traceback
    app_state.page_failed(exc)
