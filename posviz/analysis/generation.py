"""Greedy continuation of a sentence by a decoder model, for the attention over prompt and generation.

posviz loads the base model (``model.base_model``), without its language-modelling head. The head is
the input embedding matrix where the config ties them (``tie_word_embeddings``: GPT-2, SmolLM2, Llama
3.2 1B …), else the checkpoint's ``lm_head.weight`` (and ``lm_head.bias`` where it has one), read by
itself from the safetensors file (:class:`posviz.hub.Checkpoint`). Each step appends the token of the
largest logit (greedy decoding, as ``generate(do_sample=False)``); the model's key-value cache (its
``cache`` argument and output, transformers 5) carries the earlier tokens. A final logit soft-capping or scaling (Gemma 2, Cohere) changes no argmax.
"""

from __future__ import annotations

import torch

from posviz import hub
from posviz.analysis.attention_reading import read_attention
from posviz.loading import BUNDLED_NAME, LoadedModel, bundled_model_path
from posviz.tokenization import encode

#: Most tokens :func:`greedy_continuation` adds.
MOST_GENERATED = 64


def is_causal(lm: LoadedModel) -> bool:
    """Whether ``lm`` is a decoder-only model: not an encoder-decoder, and its attention on a short
    input puts no weight on a later token (read from its own attention)."""
    if lm.config.is_encoder_decoder or lm.positions_only:
        return False
    patterns = read_attention(lm, "one two three four", layers=[0], offsets=False,
                              check_budget=False).layer(0).patterns
    return bool((torch.triu(torch.from_numpy(patterns), 1) == 0).all())


def _head(lm: LoadedModel) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The language-modelling head: weight [vocab, width] and bias [vocab] or None.

    Raises
    ------
    hub.CheckpointError
        When the head is not tied and the checkpoint holds no readable ``lm_head.weight``.
    """
    if getattr(lm.config.get_text_config(), "tie_word_embeddings", False):
        return lm.model.get_input_embeddings().weight, None
    path = bundled_model_path() if lm.name == BUNDLED_NAME else lm.name
    checkpoint = hub.Checkpoint(path, lm.revision, None if hub.is_local(path) else hub.weight_files(path, lm.revision))
    weight = checkpoint.find("lm_head.weight")
    if weight is None:
        raise hub.CheckpointError("its checkpoint has no lm_head.weight and its head is not tied to the embeddings")
    bias = checkpoint.find("lm_head.bias")
    return (checkpoint.tensor(weight).to(lm.device, lm.dtype),
            checkpoint.tensor(bias).to(lm.device, lm.dtype) if bias else None)


def greedy_continuation(lm: LoadedModel, text: str, tokens: int, *, text_pair: str | None = None,
                        limit: int | None = None) -> list[int]:
    """The ids of ``tokens`` tokens a decoder model appends to ``text`` by greedy decoding.

    Parameters
    ----------
    lm : LoadedModel
        A decoder-only model (:func:`is_causal`).
    text, text_pair : str
        The prompt (a second sentence joined by the tokenizer), tokenized as
        :func:`posviz.tokenization.encode` does it (``limit``: at most that many tokens).
    tokens : int
        How many to add, 1 … :data:`MOST_GENERATED`, fewer where the model's positions end first.

    Returns
    -------
    list of int
        The new token ids, in order.

    Raises
    ------
    ValueError
        When ``text`` is empty, ``tokens`` is out of range, or ``lm`` is an encoder-decoder model.
    hub.CheckpointError
        When the model's head cannot be read (:func:`_head`).
    """
    if lm.config.is_encoder_decoder:
        raise ValueError("Generation here is for decoder-only models; this is an encoder-decoder model.")
    if not 1 <= tokens <= MOST_GENERATED:
        raise ValueError(f"Generate 1 … {MOST_GENERATED} tokens, not {tokens}.")
    inputs = dict(encode(lm, text, text_pair, limit=limit).model_inputs)
    tokens = min(tokens, lm.max_tokens - inputs["input_ids"].shape[1])
    weight, bias = _head(lm)
    new, past = [], None
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    with torch.no_grad():
        for _ in range(tokens):
            out = lm.model(input_ids=ids, attention_mask=mask, cache=past, use_cache=True)
            logits = out.last_hidden_state[0, -1] @ weight.T
            if bias is not None:
                logits = logits + bias
            token = int(logits.argmax())
            new.append(token)
            past = out.cache
            ids = torch.tensor([[token]], device=lm.device)
            mask = torch.cat([mask, torch.ones((1, 1), dtype=mask.dtype, device=mask.device)], dim=1)
    return new
