"""The URL contract: every query parameter the app reads, once.

A widget bound to the URL (``bind="query-params"``) takes its key from this list through
:func:`posviz.app.widgets.url`, which refuses any other name; a test checks that every page binds
only names listed here for it, and that a choice widget offers exactly the values listed. The same
name means the same thing on every page that reads it, with the same values (``metric`` is ``dot``
or ``cosine`` everywhere), so a link can be shared from any page. Streamlit writes a choice widget's
option *label* to the URL, so bound choices carry no ``format_func``: their labels are the values
(explanations go in captions). Streamlit drops a parameter from the URL while its widget holds the
default.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Every page, for the sidebar's parameters.
EVERY_PAGE = ("model", "gallery", "similarity", "projection", "input", "attention", "compare", "probes",
              "word_order", "properties")
_POSITION_PAGES = ("similarity", "projection", "compare", "probes", "properties")


#: The sentences a link may give, each held by a text field (:func:`posviz.app.widgets.text_field`).
SENTENCES = ("text", "text_pair", "target")


@dataclass(frozen=True)
class Param:
    """One query parameter.

    Attributes
    ----------
    name : str
        The parameter (and the widget's key).
    type : str
        Its values, in words ("text", "integer", "true or false", "one of the values" …).
    pages : tuple of str
        The pages that read it (the stems of ``pages/*.py``).
    default : str
        Its value when the URL leaves it out, in words.
    meaning : str
        What it sets.
    values : tuple of str
        For a choice, every value it takes (the options of its widget); empty otherwise.
    widget : bool
        Whether a widget holds it (False: slide mode's, which the app reads and writes itself).
    """

    name: str
    type: str
    pages: tuple[str, ...]
    default: str
    meaning: str
    values: tuple[str, ...] = ()
    widget: bool = True

    @property
    def written(self) -> str:
        """Its values as the README's table writes them."""
        return " \\| ".join(self.values) if self.values else self.type


PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("model", "text", EVERY_PAGE, "the bundled model", "Hub id or local folder of the model shown"),
    Param("revision", "text", EVERY_PAGE, "the default branch", "branch, tag or commit of a Hub model"),
    Param("device", "auto, cpu, cuda or mps (those this machine has)", EVERY_PAGE, "auto", "where the model runs"),
    Param("positions_only", "true or false", EVERY_PAGE, "false", "read the positional tensors only, not the weights"),
    Param("present", "true or false", EVERY_PAGE, "false", "presentation mode: large fonts for a projector"),
    Param("slide", "view ids, comma-separated", EVERY_PAGE, "none: the page as usual",
          "slide mode: those views of the page full screen (README, Teaching)", widget=False),
    Param("lecture", "a built-in lecture (gallery), or a lecture file's path (not hosted)", EVERY_PAGE,
          "none", "slide mode: the lecture stepped through", widget=False),
    Param("step", "integer", EVERY_PAGE, "0", "the lecture's slide (0-based)", widget=False),
    Param("component", "text", _POSITION_PAGES, "the first",
          "the positional component shown, by name, where a model has several (MPNet: absolute table, relative bias; "
          "T5: encoder, decoder)"),
    Param("metric", "choice", ("similarity", "compare", "properties"), "dot (cosine on Compare)",
          "similarity of position vectors: dot product (the rotary kernel) or cosine", ("dot", "cosine")),
    Param("range", "two integers, as range=FIRST&range=LAST", ("similarity", "compare", "projection"),
          "the first 2 048 positions (Projection: every position)", "first and last position (row) shown"),
    Param("q", "integer", ("similarity", "compare"), "128 (or the last position every model has)",
          'the position of "position q against all"'),
    Param("bias_head", "all, or a head (integer)", ("similarity",), "all", "the head of a per-head bias"),
    Param("normalize", "true or false", ("similarity",), "false", "divide by the largest value"),
    Param("clip", "true or false", ("similarity", "attention"), "true",
          "colours from the 1st to the 99th percentile (attention: from 0 to the layer's 99th percentile)"),
    Param("method", "choice", ("projection",), "UMAP", "projection method", ("UMAP", "PCA")),
    Param("dims", "choice", ("projection",), "2", "dimensions of the projection", ("2", "3")),
    Param("boundaries", "comma-separated integers", ("projection",), "128 (where the model has more positions)",
          "positions where a new colour starts"),
    Param("path", "true or false", ("projection",), "false", "draw the path through consecutive positions"),
    Param("colour", "choice", ("projection",), "range",
          "what the points are coloured by, for a table whose rows are a grid of image patches (ViT, CLIP's vision "
          "tower)", ("range", "grid row", "grid column")),
    Param("text", "text", ("input", "attention", "probes", "word_order"), "The cat chased the dog",
          "the sentence (segment A)"),
    Param("text_pair", "text", ("input", "attention"), "The dog chased the cat",
          "the second sentence (segment B), empty for none"),
    Param("part", "token, segment, position, sum or after LayerNorm (the parts the model has)", ("input",), "token",
          "the part of the input representation whose vectors are shown"),
    Param("target", "text", ("attention",), "empty: the source sentence",
          "the decoder's sentence of an encoder-decoder model"),
    Param("stack", "choice", ("attention",), "encoder", "the attention stack of an encoder-decoder model",
          ("encoder", "decoder", "cross")),
    Param("layer", "integer", ("attention",), "0", "the layer (0-based)"),
    Param("head", "integer", ("attention",), "0", "the head (0-based)"),
    Param("hide_special", "true or false", ("attention",), "false",
          "drop the special tokens and renormalise each row"),
    Param("limit", "integer", ("attention",), "the model's limit", "read at most this many tokens of the input"),
    Param("generate", "integer", ("attention",), "0", "tokens a decoder model adds to the sentence (greedy), shown "
          "with it"),
    Param("blocks", "choice", ("attention",), "mean",
          "how a long input's cells are summarised: the mean or the maximum of each block", ("mean", "max")),
    Param("zoom_q", "two integers, as zoom_q=FIRST&zoom_q=LAST", ("attention",), "the first 32 tokens",
          "the query rows of the zoomed window (token indices)"),
    Param("zoom_k", "two integers, as zoom_k=FIRST&zoom_k=LAST", ("attention",), "the first 32 tokens",
          "the key columns of the zoomed window (token indices)"),
    Param("offsets_over", "choice", ("attention",), "input",
          "attention by offset of this input, or averaged over windows of the probes' text", ("input", "corpus")),
    Param("max_offset", "integer", ("attention",), "64", "offsets shown each side of 0 in attention by offset"),
    Param("against", "choice", ("compare",), "sinusoid",
          "what the model is compared with: the sinusoid, one other model, or several (a table)",
          ("sinusoid", "model", "models")),
    Param("layout", "choice", ("compare",), "interleaved", "the sinusoid's column layout",
          ("interleaved", "halves", "t2t")),
    Param("other", "text", ("compare",), "empty", "Hub id or local folder of the other model"),
    Param("models", "text, one model a line", ("compare",), "empty",
          "Hub ids or local folders of the other models (up to 7) compared with the model in one table"),
    Param("seed", "integer", ("probes", "word_order"), "0", "the random seed (probe folds and pairs; the shuffle)"),
    Param("pairs", "integer", ("probes",), "512", "pairs drawn for the relative-order probe"),
    Param("regression", "choice", ("probes",), "ridge", "the absolute probe's regression (linear: least squares, the "
          "paper's)", ("linear", "ridge")),
    Param("probe_text", "choice", ("probes",), "prose", "the text of the layer probe", ("prose", "sentence")),
    Param("permutation", "choice", ("word_order",), "swap", "how the words are permuted",
          ("reverse", "swap", "shuffle", "custom")),
    Param("swap_i", "integer (a word's index)", ("word_order",), "1", "the first word swapped"),
    Param("swap_j", "integer (a word's index)", ("word_order",), "the last word", "the second word swapped"),
    Param("order", "word indices separated by spaces", ("word_order",), "empty", "a custom order of the words"),
    Param("without_positions", "true or false", ("word_order",), "false", "take the positional information out"),
    Param("stage", "choice", ("word_order",), "output", "the stage whose vectors are shown",
          ("input", "first", "output")),
    Param("count", "integer", ("properties",), "512 (or every position)", "positions 0 … N − 1 of the properties"),
    Param("length", "integer", ("properties",), "64", "word tokens per identical-word input"),
    Param("words", "integer", ("properties",), "16", "words the identical-word attention is averaged over"),
    Param("keep_special", "true or false", ("properties",), "false", "keep the special tokens in the attention"),
)}


def markdown_table() -> str:
    """The contract as the README's table ("URL parameters"): one row per parameter.

    ``python -c "from posviz.app.urls import markdown_table; print(markdown_table())"`` prints it.
    """
    def row(p: Param) -> str:
        pages = "every page (sidebar)" if p.pages == EVERY_PAGE else ", ".join(p.pages)
        return f"| `{p.name}` | {p.written} | {pages} | {p.default} | {p.meaning} |"

    head = "| parameter | values | pages | default | what it sets |\n|---|---|---|---|---|\n"
    return head + "\n".join(row(p) for p in PARAMS.values()) + "\n"


def _as_url(value) -> list[str]:
    """A widget's value as Streamlit writes it to the URL: a list of strings."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in _as_url(v)]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return [str(value)]


def settable(name: str, given: str | list[str]) -> tuple[bool, object]:
    """Whether the URL value ``given`` of parameter ``name`` can be set as its widget's value
    directly (``st.session_state``), and that value: a text, a switch's bool, one of a choice's
    values. Numbers and ranges are left to the URL (their widgets clip them to the model, and
    Streamlit refuses a value out of bounds).

    Examples
    --------
    >>> settable("model", "gpt2"), settable("path", "true"), settable("metric", "cosine")
    ((True, 'gpt2'), (True, True), (True, 'cosine'))
    >>> settable("metric", "banana"), settable("layer", "3"), settable("range", ["0", "127"])
    ((False, None), (False, None), (False, None))
    """
    param = PARAMS[name]
    if isinstance(given, list):
        return False, None
    if param.type == "text":
        return True, given
    if param.type == "true or false" and given in ("true", "false"):
        return True, given == "true"
    if param.values and given in param.values and not given.isdigit():
        return True, given
    return False, None


def unusable(linked: dict[str, list[str]], state, page: str) -> list[tuple[str, str, str]]:
    """The values of a link that a page could not use, and what it used instead.

    Parameters
    ----------
    linked : dict of str to list of str
        The URL's query parameters as the run began, before any widget corrected them.
    state : mapping
        The widgets' values after the run (``st.session_state``).
    page : str
        The page's stem (``"similarity"``).

    Returns
    -------
    list of (name, given, used)
        For each parameter of the contract that the page reads: its value in the link and the one
        used (``used`` empty where the page had no widget for it, e.g. ``stack`` for a model with
        one stack). Text parameters are always usable, and slide mode's (no widget) say their own
        notices: neither is listed.

    Examples
    --------
    >>> unusable({"layer": ["99"], "metric": ["cosine"]}, {"layer": 0, "metric": "cosine"}, "attention")
    [('layer', '99', '0')]
    """
    found = []
    for name, given in linked.items():
        param = PARAMS.get(name)
        if param is None or page not in param.pages or param.type == "text" or not param.widget:
            continue
        if name not in state:
            found.append((name, ",".join(given), ""))
        elif _as_url(state[name]) != list(given):
            found.append((name, ",".join(given), ",".join(_as_url(state[name]))))
    return found


def carried(linked: dict[str, list[str]], state) -> dict[str, str]:
    """The sentences of a link that no field took in this run (the page has none for them), to be
    kept for the page that has.

    Parameters
    ----------
    linked : dict of str to list of str
        The URL's query parameters as the run began.
    state : mapping
        The session's values after the run (``st.session_state``).

    Returns
    -------
    dict of str to str
        Each parameter of :data:`SENTENCES` in ``linked`` and not in ``state``, with its (last) value.

    Examples
    --------
    >>> carried({"text": ["Ducks swim"], "q": ["3"]}, {"q": 3})
    {'text': 'Ducks swim'}
    >>> carried({"text": ["Ducks swim"]}, {"text": "Geese fly"})
    {}
    """
    return {name: linked[name][-1] for name in SENTENCES if name in linked and name not in state}
