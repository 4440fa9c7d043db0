"""posviz: the Streamlit app. Run with ``streamlit run app.py``.

Streamlit reads this file in two ways. ``streamlit run`` finds the ``st.App`` below and serves it
with uvicorn: its lifespan starts the warm-up (:mod:`posviz.app.warmup`) before the first
connection is served, and its middleware tells the warm-up of each request (its imports wait while a
browser loads the page) and names the chart code in the page's headers, for the browser to fetch
while it loads the rest (:mod:`posviz.app.preload`); the module is then imported
as ``app``. Each script run of a visitor executes it as ``__main__``: the navigation and the
chosen page (:func:`posviz.app.navigation.main`), once the warm-up has imported the pages'
modules (AppTest, which has no lifespan, starts the warm-up here); a visitor of the model page
waiting for that sees the chart an earlier start stored (:mod:`posviz.app.first_paint`) until the
page has been drawn.
"""

import streamlit as st

from posviz.app import first_paint, gates, warmup

if __name__ == "__main__":
    warmup.start()
    with gates.visiting(), first_paint.shown_while_starting() as starting:
        starting.wait()
        from posviz.app.navigation import main

        main(before_page=starting.make_way)
else:
    from starlette.middleware import Middleware

    from posviz.app.preload import Preload

    app = st.App("app.py", lifespan=warmup.lifespan, middleware=[Middleware(warmup.Requests), Middleware(Preload)])
