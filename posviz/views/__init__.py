"""The views of posviz: pure functions of a model's arrays and a view's settings, each returning a
:class:`~posviz.views.view.View` (a plotly figure, the arrays behind it, its title and caption).

The app's pages, the export command and notebooks call the same functions: a view looks the same
wherever it is drawn. One module per part of the product: :mod:`~posviz.views.positions`
(signature, position similarity, q against all, vectors, rotary bands, projection),
:mod:`~posviz.views.compare`, :mod:`~posviz.views.input`, :mod:`~posviz.views.attention`,
:mod:`~posviz.views.probes`, :mod:`~posviz.views.properties`, :mod:`~posviz.views.word_order`;
:mod:`~posviz.views.figures` holds the plotly builders and :mod:`~posviz.views.limits` how much a
view computes and sends.
"""

from posviz.views.view import View

__all__ = ["View"]
