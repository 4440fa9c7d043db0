"""The chart code a first visit needs, asked for with the page itself: an HTTP ``Link`` header on
the app's HTML page that tells the browser to fetch and compile Streamlit's plotly chart module
(``rel=modulepreload``) while it loads the rest of the frontend.

Streamlit's frontend loads the code of each kind of element when the first element of that kind
arrives, so a page's first chart waits for the script run, then for the plotly module (about 4.7 MB
of JavaScript) to be fetched and compiled. Every posviz page draws a plotly chart; asked for with
the HTML, that module is fetched and compiled by the time the chart arrives, and only runs then
(about 0.1-0.25 s sooner to a first visit's chart on 2 cores: docs/performance.md).
The modules are the frontend build's own files (``static/js/PlotlyChart.<hash>.js``
of the installed Streamlit), found once at start; where a Streamlit build has none of that name,
nothing is added and the page loads as before.
"""

from __future__ import annotations

import glob
import os

#: The frontend modules preloaded, by file name before their content hash: plotly charts, and the
#: formulas' renderer (KaTeX), which the model page and the scheme notes draw.
MODULES = ("PlotlyChart", "rehype-katex")


def module_paths(static_dir: str | None = None) -> list[str]:
    """The paths of :data:`MODULES` in Streamlit's frontend build, relative to the page's URL
    (``./static/js/PlotlyChart.D9Z0_fxz.js`` …); those the build does not have are left out.

    Parameters
    ----------
    static_dir : str, optional
        The frontend build's folder; default the installed Streamlit's
        (``streamlit.file_util.get_static_dir()``).

    Returns
    -------
    list of str
        At most one path per module, in the order of :data:`MODULES` (the first by name where a
        build had several); nothing is raised for a missing folder.
    """
    if static_dir is None:
        from streamlit import file_util

        static_dir = file_util.get_static_dir()
    found = []
    for name in MODULES:
        matches = sorted(glob.glob(os.path.join(static_dir, "static", "js", f"{name}.*.js")))
        if matches:
            found.append(f"./static/js/{os.path.basename(matches[0])}")
    return found


def link_header(paths: list[str]) -> str:
    """The ``Link`` header that preloads ``paths`` as JavaScript modules (RFC 8288; the same fetch
    as the page's own ``<link rel="modulepreload" crossorigin>`` tags)."""
    return ", ".join(f"<{path}>; rel=modulepreload; crossorigin" for path in paths)


class Preload:
    """ASGI middleware (for ``st.App(middleware=...)``): adds :func:`link_header` of
    :func:`module_paths` to every HTML response (the app's page, at any page's URL); other
    responses, websockets and the lifespan pass through untouched.

    Parameters
    ----------
    app : ASGI application
        The app Streamlit builds.
    paths : list of str, optional
        Default :func:`module_paths` (found once, here).
    """

    def __init__(self, app, paths: list[str] | None = None) -> None:
        self.app = app
        self.header = link_header(module_paths() if paths is None else paths).encode("latin-1")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not self.header:
            await self.app(scope, receive, send)
            return

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                    message = {**message, "headers": [*headers, (b"link", self.header)]}
            await send(message)

        await self.app(scope, receive, sending)
