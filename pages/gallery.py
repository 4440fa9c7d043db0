"""Gallery: the built-in lecture, each view one click away (as a page, or full screen as a slide)."""

from pathlib import Path

import streamlit as st

from posviz.app import slides
from posviz.app.lectures import LectureError, parse, read
from posviz.app.navigation import current_model
from posviz.app.widgets import link_params


def own_lecture() -> None:
    """A lecture file of one's own (TOML or JSON, README "Teaching"), and a button to present it."""
    upload = st.file_uploader("Your own lecture (TOML or JSON)", type=["toml", "json"], key="lecture_file",
                              help="An ordered list of views to present full screen, stepped with ← / → "
                                   "(README, Teaching); this page's file is an example.")
    if upload is None:
        return
    try:
        mine = parse(upload.getvalue().decode("utf-8"), Path(upload.name).stem,
                     "json" if upload.name.lower().endswith(".json") else "toml")
    except (LectureError, UnicodeDecodeError) as exc:
        st.error(f"{upload.name}: {exc}", icon=":material/slideshow:")
        return
    count = len(mine.slides)
    st.button(f"Present “{mine.title}” ({count} slide{'' if count == 1 else 's'})", icon=":material/slideshow:",
              on_click=slides.present, args=(mine, 0), type="primary")


current_model()
lecture = read("gallery")
st.title("Gallery")
st.markdown(f"**{lecture.title}**: ready-made views, offline (the bundled model, and models posviz ships the "
            "configuration of). Each opens its page with its settings in the URL, so it can be bookmarked or put "
            "on a slide; **as a slide** opens it full screen, where ← / → (or a clicker) step through the lecture "
            "and Esc leaves.")
st.button("Present the lecture", icon=":material/slideshow:", type="primary", on_click=slides.present,
          args=(lecture, 0))
own_lecture()

for row in range(0, len(lecture.slides), 2):
    for column, (step, slide) in zip(st.columns(2, gap="large"), list(enumerate(lecture.slides))[row:row + 2]):
        with column.container(border=True, height="stretch"):  # the cards of a row, one height
            st.page_link(f"pages/{slide.page}.py", label=f"**{slide.title}**", icon=":material/play_circle:",
                         query_params=link_params(slide.params))
            st.caption(slide.caption)
            st.page_link(f"pages/{slide.page}.py", label="as a slide", icon=":material/slideshow:",
                         query_params=link_params({**slide.params, "lecture": lecture.name, "step": str(step)}))
