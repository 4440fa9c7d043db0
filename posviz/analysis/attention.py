"""Attention patterns of a sentence, per layer and head.

For an encoder-decoder model (T5, BART, Marian, ...) the full model runs once on a source
sentence and a target sentence, and three stacks come back: encoder self-attention, decoder
self-attention (causal) and cross attention (decoder queries, encoder keys).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import torch

from posviz.tokenization import check_text, encode
from posviz.loading import LoadedModel

#: The stacks of an encoder-decoder model, as :meth:`AttentionPatterns.stack` names them, in words.
STACKS = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
    "cross": "cross attention",
}
#: The tokens of the query rows and key columns of each stack.
SIDES = {"encoder": ("source", "source"), "decoder": ("target", "target"), "cross": ("target", "source")}


@dataclass
class AttentionPatterns:
    """The attention patterns of one input.

    For a model that is not an encoder-decoder, only ``tokens``, ``patterns`` and ``truncated``
    are set. For an encoder-decoder model these three describe the encoder (the source
    sentence) and the ``decoder_*`` / ``cross_patterns`` attributes the decoder.

    Attributes
    ----------
    tokens : list of str
        The (source) tokens, special tokens included.
    patterns : np.ndarray
        float32 [layers, heads, num_tokens, num_tokens]; ``patterns[l, h, i, j]`` is how much
        query token i attends to key token j in layer l, head h (each row sums to 1). The
        encoder's self-attention for an encoder-decoder model.
    truncated : int
        Tokens dropped so the (source) input fits the model.
    decoder_tokens : list of str or None
        The decoder's input tokens (the target sentence shifted right, see :func:`attention`);
        None when the model has no decoder.
    decoder_patterns : np.ndarray or None
        float32 [decoder_layers, decoder_heads, num_target, num_target]: the decoder's causal
        self-attention (zero above the diagonal, each row sums to 1).
    cross_patterns : np.ndarray or None
        float32 [decoder_layers, decoder_heads, num_target, num_tokens]: how much decoder
        (target) query i attends to encoder (source) key j; each row sums to 1.
    decoder_truncated : int
        Target tokens dropped so the decoder input fits the model (0 without a decoder).
    """

    tokens: list[str]
    patterns: np.ndarray
    truncated: int
    decoder_tokens: list[str] | None = None
    decoder_patterns: np.ndarray | None = None
    cross_patterns: np.ndarray | None = None
    decoder_truncated: int = 0

    @property
    def is_encoder_decoder(self) -> bool:
        """True when the decoder and cross stacks are set."""
        return self.decoder_patterns is not None

    def stack(self, name: str) -> tuple[np.ndarray, list[str], list[str]]:
        """One stack with the tokens of its query rows and key columns.

        Parameters
        ----------
        name : {"encoder", "decoder", "cross"}
            ``"encoder"`` is :attr:`patterns` (the only stack of a model without a decoder).

        Returns
        -------
        patterns : np.ndarray
            float32 [layers, heads, queries, keys].
        query_tokens, key_tokens : list of str
            Row and column labels: source/source, target/target or target/source.

        Raises
        ------
        ValueError
            When ``name`` is not one of :data:`STACKS`, or names a decoder stack of a model
            without a decoder.
        """
        if name not in STACKS:
            raise ValueError(f"Unknown attention stack {name!r}; expected one of {', '.join(STACKS)}.")
        if name == "encoder":
            return self.patterns, self.tokens, self.tokens
        if not self.is_encoder_decoder:
            raise ValueError(f"The {name} stack exists only for encoder-decoder models.")
        if name == "decoder":
            return self.decoder_patterns, self.decoder_tokens, self.decoder_tokens
        return self.cross_patterns, self.decoder_tokens, self.tokens


def _stack(attentions) -> np.ndarray:
    """Tuple of [1, heads, q, k] tensors (one per layer) -> float32 [layers, heads, q, k]."""
    return torch.stack([a[0] for a in attentions]).to(torch.float32).cpu().numpy()


def decoder_input(lm: LoadedModel, target: str) -> tuple[torch.Tensor, int]:
    """The decoder input ids for ``target``, as the model's own seq2seq training prepares them.

    The target is tokenized as labels (``tokenizer(text_target=target)`` where the tokenizer
    takes ``text_target``, which switches e.g. Marian to its target vocabulary; plain
    tokenization otherwise), truncated to :attr:`LoadedModel.max_tokens`, then shifted one
    token to the right: ``[decoder_start_token_id] + labels[:-1]``. This mirrors
    ``T5PreTrainedModel._shift_right`` and ``transformers.models.bart.modeling_bart.shift_tokens_right``
    (also Marian, Pegasus, M2M100); where ``config.decoder_start_token_id`` is None (or missing: a
    config built from transformers 5's ``T5Config()`` has no such attribute) it mirrors
    ``transformers.models.mbart.modeling_mbart.shift_tokens_right``, which starts with the last
    label (mBART's language code). So the decoder reads what it reads under teacher forcing
    while predicting each label; the last label (usually EOS) is not read.

    Parameters
    ----------
    lm : LoadedModel
        An encoder-decoder model.
    target : str
        The target sentence; must not be empty.

    Returns
    -------
    ids : torch.Tensor
        int64 [1, num_target] on the model's device.
    truncated : int
        Target tokens dropped to fit ``lm.max_tokens``.

    Raises
    ------
    ValueError
        When ``target`` is empty or holds a lone surrogate (:func:`posviz.tokenization.check_text`),
        or the config has neither ``decoder_start_token_id`` nor a label to start with.
    """
    if not target or not target.strip():
        raise ValueError("Type a target sentence for the decoder.")
    check_text(target, "target sentence")
    tok = lm.tokenizer
    if "text_target" in inspect.signature(tok.__call__).parameters:
        labels = tok(text_target=target, truncation=False, verbose=False)["input_ids"]
    else:
        labels = tok(target, truncation=False, verbose=False)["input_ids"]
    kept = list(labels[:lm.max_tokens])
    start = getattr(lm.config, "decoder_start_token_id", None)
    if start is None:
        pad = lm.config.pad_token_id
        real = [i for i in kept if i != pad]
        if not real:
            raise ValueError("The model's config has no decoder_start_token_id and the target has no tokens.")
        start = real[-1]
    ids = [int(start)] + kept[:-1]
    return torch.tensor([ids], dtype=torch.long, device=lm.device), len(labels) - len(kept)


def attention(lm: LoadedModel, text: str, text_pair: str | None = None, *,
              target: str | None = None) -> AttentionPatterns:
    """Attention patterns of ``text`` (and ``text_pair``), from the model's own forward pass.

    Uses ``output_attentions=True`` with the eager implementation (the model is loaded with
    ``attn_implementation="eager"``), i.e. the softmax weights each attention module returns
    (for BERT ``BertSelfAttention``, for T5 ``T5Attention``, for BART ``BartAttention``).
    Every layer is kept at once, float32 [layers, heads, n, n]: for long inputs use
    :func:`posviz.analysis.attention_reading.read_attention`, whose memory grows with n × a block.

    A model that is not an encoder-decoder runs on the tokens of ``text`` (+ ``text_pair``);
    ``target`` is ignored. An encoder-decoder model (``lm.config.is_encoder_decoder``) runs
    whole (``lm.model``, e.g. ``T5Model``, ``BartModel``) with ``input_ids`` from ``text``
    (+ ``text_pair``) and ``decoder_input_ids`` from ``target`` (:func:`decoder_input`), and its
    ``encoder_attentions``, ``decoder_attentions`` and ``cross_attentions`` are returned.

    Parameters
    ----------
    lm : LoadedModel
    text : str
        The (source) sentence.
    text_pair : str, optional
        A second sentence, joined by the tokenizer (segment B where the model has segments).
    target : str, optional
        Encoder-decoder models only: the target sentence the decoder reads. When None or empty,
        the source sentence ``text`` (without ``text_pair``) is used, i.e. the model
        reconstructs its input - also what ``BartModel`` itself does when given no decoder
        input.

    Returns
    -------
    AttentionPatterns
        Attention weights (probabilities, unitless; each row sums to 1).

    Raises
    ------
    ValueError
        When ``text`` is empty or only whitespace, or ``text``, ``text_pair`` or ``target`` is
        not valid Unicode text (a lone surrogate, :func:`posviz.tokenization.check_text`).
    """
    encoded = encode(lm, text, text_pair)
    if not lm.config.is_encoder_decoder:
        with torch.no_grad():
            out = lm.forward_module(**encoded.model_inputs, output_attentions=True)
        return AttentionPatterns(tokens=encoded.tokens, patterns=_stack(out.attentions), truncated=encoded.truncated)
    target = target if target and target.strip() else text
    decoder_ids, decoder_truncated = decoder_input(lm, target)
    with torch.no_grad():
        out = lm.model(**encoded.model_inputs, decoder_input_ids=decoder_ids, output_attentions=True,
                       use_cache=False)
    return AttentionPatterns(
        tokens=encoded.tokens,
        patterns=_stack(out.encoder_attentions),
        truncated=encoded.truncated,
        decoder_tokens=lm.tokenizer.convert_ids_to_tokens(decoder_ids[0].tolist()),
        decoder_patterns=_stack(out.decoder_attentions),
        cross_patterns=_stack(out.cross_attentions),
        decoder_truncated=decoder_truncated,
    )


def without_tokens(patterns: np.ndarray, keep: np.ndarray, keep_keys: np.ndarray | None = None) -> np.ndarray:
    """Drop query and key tokens where ``keep`` is False and renormalise each row to sum to 1.

    Parameters
    ----------
    patterns : np.ndarray
        [..., num_queries, num_keys] attention patterns.
    keep : np.ndarray
        bool [num_queries]: the query rows to keep (also the key columns when ``keep_keys`` is
        None, for self-attention).
    keep_keys : np.ndarray, optional
        bool [num_keys]: the key columns to keep, where keys are other tokens than queries
        (cross attention).

    Returns
    -------
    np.ndarray
        [..., kept queries, kept keys]; a row whose kept mass is 0 stays 0.
    """
    sub = patterns[..., keep, :][..., keep if keep_keys is None else keep_keys]
    mass = sub.sum(axis=-1, keepdims=True)
    return np.divide(sub, mass, out=np.zeros_like(sub), where=mass > 0)


def without_special(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], special: set[str]
                    ) -> tuple[np.ndarray, list[str], list[str], np.ndarray]:
    """Attention patterns without the special tokens ([CLS], [SEP], BOS …), rows renormalised
    (:func:`without_tokens`), with how much of each row was hidden.

    Parameters
    ----------
    patterns : np.ndarray
        [..., num_queries, num_keys].
    query_tokens, key_tokens : list of str
    special : set of str
        The tokenizer's special tokens (``tokenizer.all_special_tokens``).

    Returns
    -------
    patterns, query_tokens, key_tokens
        Unchanged where every query or every key is special (nothing would be left).
    hidden : np.ndarray
        float32 [..., kept queries]: the share of each kept row's weight that was on the dropped
        keys, before renormalising (0 where nothing was dropped). A row with ``hidden`` near 1
        is rescaled from almost nothing: a view must not show it as strong attention.
    """
    keep_rows = np.array([t not in special for t in query_tokens])
    keep_cols = np.array([t not in special for t in key_tokens])
    if not (keep_rows.any() and keep_cols.any()):
        return patterns, query_tokens, key_tokens, np.zeros(patterns.shape[:-1], dtype=np.float32)
    kept = patterns[..., keep_rows, :]
    hidden = 1 - kept[..., keep_cols].sum(axis=-1)
    return (without_tokens(patterns, keep_rows, keep_cols), [t for t, k in zip(query_tokens, keep_rows) if k],
            [t for t, k in zip(key_tokens, keep_cols) if k], np.clip(hidden, 0, 1).astype(np.float32))
