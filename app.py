"""posviz: the Streamlit app. Run with `streamlit run app.py`."""

import streamlit as st

from posviz import app_state

st.set_page_config(page_title="posviz · position embeddings", page_icon="📐", layout="wide")

PAGES = [
    st.Page("pages/model.py", title="Model", icon="🧩", default=True),
    st.Page("pages/similarity.py", title="Position similarity", icon="🟨", url_path="similarity"),
    st.Page("pages/projection.py", title="Projection", icon="🌀", url_path="projection"),
    st.Page("pages/input.py", title="Input representation", icon="➕", url_path="input"),
    st.Page("pages/attention.py", title="Attention", icon="👁️", url_path="attention"),
]

page = st.navigation(PAGES)
app_state.warm_up()
st.session_state["model_key"] = app_state.sidebar()
page.run()
