"""Gallery: the built-in lecture, each view one click away (as a page, or full screen as a slide)."""

import streamlit as st

from posviz.app import slides
from posviz.app.lectures import read
from posviz.app.navigation import current_model
from posviz.app.widgets import link_params

current_model()
lecture = read("gallery")
st.title("Gallery")
st.markdown(f"**{lecture.title}**: ready-made views, offline (the bundled model, and models posviz ships the "
            "configuration of). Each opens its page with its settings in the URL, so it can be bookmarked or put "
            "on a slide; **as a slide** opens it full screen, where ← / → (or a clicker) step through the lecture "
            "and Esc leaves.")
st.button("Present the lecture", icon=":material/slideshow:", type="primary", on_click=slides.present,
          args=(lecture, 0))

for row in range(0, len(lecture.slides), 2):
    for column, (step, slide) in zip(st.columns(2, gap="large"), list(enumerate(lecture.slides))[row:row + 2]):
        with column.container(border=True, height="stretch"):  # the cards of a row, one height
            st.page_link(f"pages/{slide.page}.py", label=f"**{slide.title}**", icon=":material/play_circle:",
                         query_params=link_params(slide.params))
            st.caption(slide.caption)
            st.page_link(f"pages/{slide.page}.py", label="as a slide", icon=":material/slideshow:",
                         query_params=link_params({**slide.params, "lecture": lecture.name, "step": str(step)}))
