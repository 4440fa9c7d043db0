"""posviz: the Streamlit app. Run with `streamlit run app.py`."""

import streamlit as st

from posviz import app_state

st.set_page_config(page_title="posviz · position embeddings", page_icon=":material/straighten:", layout="wide")

PAGES = [
    st.Page("pages/model.py", title="Model", icon=":material/info:", default=True),
    st.Page("pages/similarity.py", title="Position similarity", icon=":material/grid_on:", url_path="similarity"),
    st.Page("pages/projection.py", title="Projection", icon=":material/scatter_plot:", url_path="projection"),
    st.Page("pages/input.py", title="Input representation", icon=":material/functions:", url_path="input"),
    st.Page("pages/attention.py", title="Attention", icon=":material/visibility:", url_path="attention"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
]

page = st.navigation(PAGES)
app_state.warm_up()
st.session_state["model_key"] = app_state.sidebar()
try:
    page.run()
except Exception as exc:  # the last net: a message and a way forward, never a traceback
    app_state.page_failed(exc)
