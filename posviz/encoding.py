"""Turn a sentence (and an optional second one) into the model's input, truncated to fit."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from posviz.loading import LoadedModel
from posviz.schemes import resolve


@dataclass
class EncodedInput:
    """A tokenized input of one sequence, on the model's device.

    Attributes
    ----------
    tokens : list of str
        The tokens as the tokenizer writes them, special tokens included.
    model_inputs : dict of str to torch.Tensor
        Keyword arguments for the model's forward, each [1, num_tokens].
    truncated : int
        Tokens dropped so the input fits :attr:`LoadedModel.max_tokens`.
    """

    tokens: list[str]
    model_inputs: dict[str, torch.Tensor]
    truncated: int


def encode(lm: LoadedModel, text: str, text_pair: str | None = None) -> EncodedInput:
    """Tokenize ``text`` (segment A) and ``text_pair`` (segment B), truncated to the model's length.

    Segment ids are passed to the model only where its family has a segment table, so a model
    that would reuse another table for them (GPT-2 feeds ``token_type_ids`` through ``wte``) is
    not given them; and only where the table has a row for each id (RoBERTa's has one row:
    its own tokenizer sends none, a BERT tokenizer would send 1 for segment B), so the model
    falls back to its default, segment 0 everywhere.

    Raises
    ------
    ValueError
        When ``text`` is empty or only whitespace.
    """
    if not text or not text.strip():
        raise ValueError("Type a sentence to see its tokens.")
    pair = text_pair if text_pair and text_pair.strip() else None
    tok = lm.tokenizer
    full = tok(text, pair, truncation=False, verbose=False)["input_ids"]
    enc = tok(text, pair, truncation=True, max_length=lm.max_tokens, return_tensors="pt")
    keep = ["input_ids", "attention_mask"]
    segment_table = resolve(lm.model, lm.layout.segment) if lm.layout.segment else None
    if segment_table is not None and "token_type_ids" in enc and enc["token_type_ids"].max() < segment_table.num_embeddings:
        keep.append("token_type_ids")
    model_inputs = {k: enc[k].to(lm.device) for k in keep if k in enc}
    ids = enc["input_ids"][0].tolist()
    return EncodedInput(
        tokens=tok.convert_ids_to_tokens(ids),
        model_inputs=model_inputs,
        truncated=len(full) - len(ids),
    )
