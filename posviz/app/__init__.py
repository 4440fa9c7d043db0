"""The Streamlit app: the only package that imports Streamlit.

``app.py`` calls :func:`posviz.app.navigation.main`; each page of ``pages/`` starts with
:func:`posviz.app.sidebar.current_model`, draws its widgets (:mod:`~posviz.app.widgets`, bound to
the URL contract of :mod:`~posviz.app.urls`), gets its arrays from :mod:`~posviz.app.caches` and
draws each view of :mod:`posviz.views` with :func:`posviz.app.downloads.show`. Notices that stop a
page with a way forward are in :mod:`~posviz.app.notices`, presentation mode in
:mod:`~posviz.app.presentation`, the startup's warm-up in :mod:`~posviz.app.warmup`
and what runs and the warm-up wait for from each other in :mod:`~posviz.app.gates`.
"""
