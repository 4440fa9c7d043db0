"""Figures inline in Jupyter and VS Code with no network: ``import posviz.notebook``.

Importing this module (or calling :func:`setup`) makes plotly display each figure as two outputs
in one, and a notebook front end picks the one it reads:

- ``application/vnd.plotly.v1+json`` (plotly's ``plotly_mimetype`` renderer): drawn by JupyterLab
  and Notebook 7 with the ``jupyterlab-plotly`` extension that plotly's wheel installs, and by VS
  Code's own notebook renderer; both carry plotly.js, nothing is fetched.
- ``text/html`` (:class:`OfflineNotebookRenderer`): for the classic notebook and nbconvert's HTML;
  plotly.js is embedded once, in the first figure's output cell, and every figure after it uses
  that copy.

plotly's own ``notebook`` renderer embeds plotly.js the same way but loads MathJax from a CDN in
every figure (plotly 7.1: ``include_mathjax="cdn"`` in ``HtmlRenderer.to_mimebundle``), and its
``notebook_connected`` loads plotly.js from cdn.plot.ly: hence a renderer of posviz's own. posviz's
figures use no LaTeX, so they need no MathJax.

Every view of :mod:`posviz.views` returns a :class:`~posviz.views.view.View` that a notebook
displays as its figure, so the last line of a cell can be the view function's call.
"""

from __future__ import annotations

import plotly.io as pio
from plotly.io.base_renderers import NotebookRenderer

#: The name :func:`setup` registers :class:`OfflineNotebookRenderer` under in ``plotly.io.renderers``.
NAME = "posviz_notebook"
#: plotly's default renderer after :func:`setup`: both outputs in every figure's cell.
RENDERERS = f"plotly_mimetype+{NAME}"


class OfflineNotebookRenderer(NotebookRenderer):
    """plotly's ``notebook`` renderer (plotly.js embedded once, when the renderer is activated: the
    first figure shown after :func:`setup`) whose figures load no MathJax from a CDN.

    mime type: ``text/html``.
    """

    def to_mimebundle(self, fig_dict: dict) -> dict:
        """The figure as an HTML ``<div>`` and the script that draws it with the embedded plotly.js.

        Parameters
        ----------
        fig_dict : dict
            The figure as plotly's dictionary (``fig.to_dict()``).

        Returns
        -------
        dict
            ``{"text/html": html}``; the HTML holds no ``<script src=…>`` and no plotly.js.
        """
        html = pio.to_html(fig_dict, config=self.config, include_plotlyjs=False, include_mathjax=False,
                           full_html=False, default_width="100%", default_height=525, validate=False)
        return {"text/html": html}


def setup() -> None:
    """Make plotly's default renderer :data:`RENDERERS`: figures inline, with no network.

    Calling it again embeds plotly.js again with the next figure (a notebook whose earlier outputs
    were cleared still gets its copy).
    """
    pio.renderers[NAME] = OfflineNotebookRenderer()
    pio.renderers.default = RENDERERS


setup()
