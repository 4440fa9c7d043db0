"""Probes of Wang & Chen (EMNLP 2020): how well a linear model reads position from vectors.

Y.-A. Wang and Y.-N. Chen, "What Do Position Embeddings Learn? An Empirical Study of Pre-Trained
Language Model Positional Encoding", EMNLP 2020, section 3:

- absolute position: fit a linear regression from a position vector to its position (row index),
  5-fold cross-validation over the shuffled rows, report the mean absolute error (MAE) of the
  rounded prediction, in positions;
- relative order: draw position pairs (i, j), i ≠ j, fit a logistic regression from the
  concatenation [PE_i ; PE_j] to "j comes after i", 5-fold cross-validation, report the error rate.

Their code drew 512 pairs without a seed; here the seed and the number of pairs are arguments,
and every fit is scikit-learn's (``LinearRegression``, ``LogisticRegression``,
``cross_val_predict`` with ``KFold`` / ``StratifiedKFold``). On the interleaved sinusoid of
512 × 768 the absolute probe gives MAE 0.0 and the relative probe an error rate of about 0.05.

:func:`layer_position_probe` applies the absolute probe to the hidden states of a text, one probe
per layer (the embedding output is layer 0): how readable the position of a token is as it goes
through the model. It works for every scheme, including those without a position vector (rotary,
ALiBi, relative bias), since it reads what the layers compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.linear_model import LinearRegression, LogisticRegression, RidgeCV
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict
from threadpoolctl import threadpool_limits

from posviz.encoding import encode
from posviz.loading import LoadedModel

__all__ = [
    "BUILTIN_TEXT", "REGRESSIONS", "LayerProbeResult", "ProbeResult", "absolute_position_probe", "hidden_states",
    "layer_position_probe", "middle_guess_mae", "relative_order_probe",
]

#: The opening chapter of Jane Austen's "Pride and Prejudice" (1813, public domain): about 1 100
#: WordPiece tokens, more than the 512 positions of BERT-sized models (truncated to fit).
BUILTIN_TEXT = """\
It is a truth universally acknowledged, that a single man in possession of a good fortune, must be \
in want of a wife.

However little known the feelings or views of such a man may be on his first entering a \
neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is \
considered the rightful property of some one or other of their daughters.

"My dear Mr. Bennet," said his lady to him one day, "have you heard that Netherfield Park is let at \
last?"

Mr. Bennet replied that he had not.

"But it is," returned she; "for Mrs. Long has just been here, and she told me all about it."

Mr. Bennet made no answer.

"Do you not want to know who has taken it?" cried his wife impatiently.

"You want to tell me, and I have no objection to hearing it."

This was invitation enough.

"Why, my dear, you must know, Mrs. Long says that Netherfield is taken by a young man of large \
fortune from the north of England; that he came down on Monday in a chaise and four to see the \
place, and was so much delighted with it, that he agreed with Mr. Morris immediately; that he is to \
take possession before Michaelmas, and some of his servants are to be in the house by the end of \
next week."

"What is his name?"

"Bingley."

"Is he married or single?"

"Oh! Single, my dear, to be sure! A single man of large fortune; four or five thousand a year. What \
a fine thing for our girls!"

"How so? How can it affect them?"

"My dear Mr. Bennet," replied his wife, "how can you be so tiresome! You must know that I am \
thinking of his marrying one of them."

"Is that his design in settling here?"

"Design! Nonsense, how can you talk so! But it is very likely that he may fall in love with one of \
them, and therefore you must visit him as soon as he comes."

"I see no occasion for that. You and the girls may go, or you may send them by themselves, which \
perhaps will be still better, for as you are as handsome as any of them, Mr. Bingley may like you \
the best of the party."

"My dear, you flatter me. I certainly have had my share of beauty, but I do not pretend to be \
anything extraordinary now. When a woman has five grown-up daughters, she ought to give over \
thinking of her own beauty."

"In such cases, a woman has not often much beauty to think of."

"But, my dear, you must indeed go and see Mr. Bingley when he comes into the neighbourhood."

"It is more than I engage for, I assure you."

"But consider your daughters. Only think what an establishment it would be for one of them. Sir \
William and Lady Lucas are determined to go, merely on that account, for in general, you know, \
they visit no newcomers. Indeed you must go, for it will be impossible for us to visit him if you \
do not."

"You are over-scrupulous, surely. I dare say Mr. Bingley will be very glad to see you; and I will \
send a few lines by you to assure him of my hearty consent to his marrying whichever he chooses of \
the girls; though I must throw in a good word for my little Lizzy."

"I desire you will do no such thing. Lizzy is not a bit better than the others; and I am sure she \
is not half so handsome as Jane, nor half so good-humoured as Lydia. But you are always giving her \
the preference."

"They have none of them much to recommend them," replied he; "they are all silly and ignorant like \
other girls; but Lizzy has something more of quickness than her sisters."

"Mr. Bennet, how can you abuse your own children in such a way? You take delight in vexing me. You \
have no compassion for my poor nerves."

"You mistake me, my dear. I have a high respect for your nerves. They are my old friends. I have \
heard you mention them with consideration these last twenty years at least."

"Ah, you do not know what I suffer."

"But I hope you will get over it, and live to see many young men of four thousand a year come into \
the neighbourhood."

"It will be no use to us, if twenty such should come, since you will not visit them."

"Depend upon it, my dear, that when there are twenty, I will visit them all."

Mr. Bennet was so odd a mixture of quick parts, sarcastic humour, reserve, and caprice, that the \
experience of three-and-twenty years had been insufficient to make his wife understand his \
character. Her mind was less difficult to develop. She was a woman of mean understanding, little \
information, and uncertain temper. When she was discontented, she fancied herself nervous. The \
business of her life was to get her daughters married; its solace was visiting and news.
"""


#: Regressions of the absolute probe: the paper's least squares, or ridge (an addition of posviz).
REGRESSIONS = ("linear", "ridge")
#: The penalties RidgeCV chooses from (by efficient leave-one-out on each training split).
RIDGE_ALPHAS = np.logspace(-3, 3, 7)


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe.

    Attributes
    ----------
    probe : {"absolute", "relative"}
    score : float
        Absolute probe: mean absolute error of the rounded prediction, in positions (0 = every
        position read back exactly). Relative probe: error rate, the fraction of held-out pairs
        whose order is predicted wrongly (0 to 1; 0.5 is chance).
    targets : np.ndarray
        Absolute: int64 [n], ``arange(n)`` (the position of each row). Relative: int64 [pairs],
        1 where j > i, else 0.
    predictions : np.ndarray
        Absolute: float64 [n], the cross-validated (held-out) prediction for position p at index
        p, before rounding. Relative: int64 [pairs], the held-out predicted label of each pair.
    pairs : np.ndarray or None
        Relative: int64 [pairs, 2], the (i, j) of each pair; None for the absolute probe.
    folds : int
    seed : int
    """

    probe: str
    score: float
    targets: np.ndarray
    predictions: np.ndarray
    pairs: np.ndarray | None
    folds: int
    seed: int

    @property
    def rounded(self) -> np.ndarray:
        """Absolute probe: the predictions rounded to whole positions, float64 [n]."""
        return np.rint(self.predictions)


@dataclass(frozen=True)
class LayerProbeResult:
    """The absolute probe on the hidden states of one text, one probe per layer.

    Attributes
    ----------
    tokens : list of str
        The tokens probed (special tokens included); token t is at position t.
    mae : np.ndarray
        float64 [layers + 1]: MAE of the rounded prediction (positions) for layer 0 (the
        embedding output) to the last layer.
    predictions : np.ndarray
        float64 [layers + 1, num_tokens]: the cross-validated prediction of each token's position.
    states : np.ndarray or None
        float32 [layers + 1, num_tokens, width]: the features probed, ``hidden_states`` of the
        model's own forward; None where the caller dropped them.
    truncated : int
        Tokens of the text dropped to fit the model.
    folds : int
    seed : int
    regression : str
    """

    tokens: list[str]
    mae: np.ndarray
    predictions: np.ndarray
    states: np.ndarray | None
    truncated: int
    folds: int
    seed: int
    regression: str = "linear"


def _matrix(vectors) -> np.ndarray:
    """Tensor or array-like [n, width] -> float64 numpy, checked."""
    x = np.asarray(torch.as_tensor(vectors).detach().to(torch.float64).cpu())
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D [positions, width] matrix, not of shape {x.shape}")
    return x


def _check_folds(folds: int, samples: int, what: str) -> None:
    if folds < 2:
        raise ValueError(f"folds must be at least 2, not {folds}")
    if samples < folds:
        raise ValueError(f"{folds}-fold cross-validation needs at least {folds} {what}, not {samples}")


def _single_threaded_blas():
    """These fits are small (at most a few thousand rows): one BLAS thread is faster than several,
    and multi-threaded OpenBLAS spins badly on a busy machine (10× slower on 2 loaded cores).
    Only numpy's and SciPy's BLAS are limited (torch's own pools are left alone), until the block ends."""
    return threadpool_limits(limits=1, user_api="blas")


def absolute_position_probe(vectors, folds: int = 5, seed: int = 0, regression: str = "linear") -> ProbeResult:
    """Absolute-position probe: how well a linear map reads each row's index (Wang & Chen, 2020).

    The rows are shuffled (``np.random.default_rng(seed)``), split by
    ``KFold(folds, shuffle=True, random_state=seed)``, and ``sklearn.linear_model.LinearRegression``
    (least squares with an intercept; the minimum-norm solution where there are more columns than
    training rows) is fitted from row to index on each training split; every row is predicted by the
    fit that did not see it (``cross_val_predict``).

    Parameters
    ----------
    vectors : array-like or torch.Tensor
        [n, width]; row p is the vector of position p (a position table, a sinusoid, hidden states).
    folds : int
        Folds of the cross-validation (the paper: 5).
    seed : int
        Seeds the shuffle and the folds.
    regression : {"linear", "ridge"}
        ``"linear"``: the paper's ``LinearRegression``. ``"ridge"`` (not in the paper):
        ``RidgeCV(alphas=RIDGE_ALPHAS)``, the L2 penalty chosen by leave-one-out on each training
        split. Least squares overfits where the width nears the training rows (hidden states of
        width 384 from 410 tokens: held-out MAEs worse than guessing the middle); ridge does not.

    Returns
    -------
    ProbeResult
        ``score``: MAE of the rounded held-out prediction, in positions; ``predictions``: float64 [n]
        in position order.

    Raises
    ------
    ValueError
        For vectors that are not 2-D, ``folds < 2``, fewer rows than folds, or an unknown regression.
    """
    if regression not in REGRESSIONS:
        raise ValueError(f"regression must be one of {REGRESSIONS}, not {regression!r}")
    x = _matrix(vectors)
    n = x.shape[0]
    _check_folds(folds, n, "positions")
    estimator = LinearRegression() if regression == "linear" else RidgeCV(alphas=RIDGE_ALPHAS)
    positions = np.arange(n, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(n)
    with _single_threaded_blas():
        held_out = cross_val_predict(estimator, x[order], positions[order],
                                     cv=KFold(folds, shuffle=True, random_state=seed))
    predictions = np.empty(n, dtype=np.float64)
    predictions[order] = held_out
    mae = float(np.abs(np.rint(predictions) - positions).mean())
    return ProbeResult("absolute", mae, positions, predictions, None, folds, seed)


def relative_order_probe(vectors, pairs: int = 512, folds: int = 5, seed: int = 0) -> ProbeResult:
    """Relative-order probe: does a linear classifier tell which of two positions comes first
    (Wang & Chen, 2020)?

    ``pairs`` pairs (i, j) are drawn independently and uniformly among ordered pairs with i ≠ j
    (``np.random.default_rng(seed)``); the features of a pair are ``[PE_i ; PE_j]`` (width × 2), the
    label is ``j > i``. ``sklearn.linear_model.LogisticRegression`` (L2, C = 1, lbfgs, up to 1000
    iterations) is cross-validated with ``StratifiedKFold(folds, shuffle=True, random_state=seed)``
    (every fold holds both labels) through ``cross_val_predict``.

    Parameters
    ----------
    vectors : array-like or torch.Tensor
        [n, width]; row p is the vector of position p.
    pairs : int
        Number of pairs (the paper's code: 512, without a seed).
    folds : int
    seed : int
        Seeds the pairs and the folds.

    Returns
    -------
    ProbeResult
        ``score``: error rate of the held-out predictions (0 to 1); ``pairs``: int64 [pairs, 2].

    Raises
    ------
    ValueError
        For vectors that are not 2-D or have fewer than 2 rows, ``folds < 2``, or too few pairs for
        every fold to hold each label (fewer than ``folds`` pairs of either order).
    """
    x = _matrix(vectors)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"the relative probe needs at least 2 positions, not {n}")
    _check_folds(folds, pairs, "pairs")
    rng = np.random.default_rng(seed)
    i = rng.integers(n, size=pairs)
    j = (i + rng.integers(1, n, size=pairs)) % n  # uniform over j != i
    labels = (j > i).astype(np.int64)
    fewest = int(min(labels.sum(), pairs - labels.sum()))
    if fewest < folds:
        raise ValueError(f"{pairs} pairs hold only {fewest} of one order: too few for {folds} folds; draw more pairs")
    features = np.concatenate([x[i], x[j]], axis=1)
    with _single_threaded_blas():
        predicted = cross_val_predict(LogisticRegression(max_iter=1000), features, labels,
                                      cv=StratifiedKFold(folds, shuffle=True, random_state=seed))
    error = float((predicted != labels).mean())
    return ProbeResult("relative", error, labels, predicted.astype(np.int64), np.stack([i, j], axis=1), folds, seed)


def middle_guess_mae(n: int) -> float:
    """MAE of always guessing the middle position ``round((n - 1) / 2)`` over positions 0 .. n-1
    (about n / 4): what a probe that learned nothing scores."""
    return float(np.abs(np.rint((n - 1) / 2) - np.arange(n)).mean())


def hidden_states(lm: LoadedModel, text: str) -> tuple[list[str], np.ndarray, int]:
    """The hidden states of every layer for ``text``, from the model's own forward.

    ``output_hidden_states=True`` on :attr:`LoadedModel.forward_module` (the encoder of an
    encoder-decoder model): entry 0 is the embedding output (BERT: after the embedding LayerNorm),
    entry l the output of layer l (the last one as the model returns it, e.g. after GPT-2's final
    LayerNorm).

    Returns
    -------
    tokens : list of str
    states : np.ndarray
        float32 [layers + 1, num_tokens, width].
    truncated : int
        Tokens dropped to fit :attr:`LoadedModel.max_tokens`.

    Raises
    ------
    ValueError
        When ``text`` is empty.
    """
    encoded = encode(lm, text)
    with torch.no_grad():
        out = lm.forward_module(**encoded.model_inputs, output_hidden_states=True)
    states = torch.stack([h[0] for h in out.hidden_states]).to(torch.float32).cpu().numpy()
    return encoded.tokens, states, encoded.truncated


def layer_position_probe(lm: LoadedModel, text: str | None = None, folds: int = 5, seed: int = 0,
                         regression: str = "linear") -> LayerProbeResult:
    """The absolute-position probe on each layer's hidden states of one text.

    The text is tokenized as the other views do (special tokens included, truncated to the
    model's length); token t is at position t. For each entry of :func:`hidden_states`, the
    :func:`absolute_position_probe` reads the tokens' positions from their vectors. A low MAE at
    layer l: position is linearly readable there. Unlike the table probes, this works for every
    positional scheme (rotary, ALiBi and relative bias add no vector at the input, so their layer
    0 holds no position, unless a causal mask lets later layers infer it).

    Parameters
    ----------
    lm : LoadedModel
    text : str, optional
        Defaults to :data:`BUILTIN_TEXT` (enough for 512 positions and more).
    folds, seed : int
    regression : {"linear", "ridge"}
        As :func:`absolute_position_probe`.

    Returns
    -------
    LayerProbeResult

    Raises
    ------
    ValueError
        For an empty text, or one of fewer tokens than folds.
    """
    tokens, states, truncated = hidden_states(lm, BUILTIN_TEXT if text is None else text)
    if len(tokens) < folds:
        raise ValueError(f"{len(tokens)} tokens are too few for {folds}-fold cross-validation: "
                         f"type a longer text (at least {folds} tokens; a few dozen for a meaningful probe)")
    probes = [absolute_position_probe(layer, folds=folds, seed=seed, regression=regression) for layer in states]
    return LayerProbeResult(tokens=tokens, mae=np.array([p.score for p in probes]),
                            predictions=np.stack([p.predictions for p in probes]), states=states,
                            truncated=truncated, folds=folds, seed=seed, regression=regression)
