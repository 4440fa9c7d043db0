"""Tiny random models of types posviz finds by structure (tests/test_detection.py, tests/test_coverage.py).

Their model types are taken out of the family table in the tests that use them (another engineer
may register one), so that structural detection is what is tested. Not part of
:data:`tests.support.tiny_models.GROUPS`: the coverage table's "tiny-config test" names registered
types only.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    AutoModel,
    AutoTokenizer,
    Data2VecTextConfig,
    ErnieConfig,
    FalconMambaConfig,
    HeliumConfig,
)

from tests.support.tiny_models import VOCAB, bundled_path, randomize_small_params

CONFIGS = {
    # a learned table, offset 0
    "ernie": lambda: ErnieConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                 intermediate_size=64, max_position_embeddings=64, type_vocab_size=2, pad_token_id=0),
    # a learned table whose positions start at padding_idx + 1 = 2 (RoBERTa's rule)
    "data2vec-text": lambda: Data2VecTextConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1,
                                                num_attention_heads=4, intermediate_size=64,
                                                max_position_embeddings=66, type_vocab_size=1,
                                                pad_token_id=1, bos_token_id=0, eos_token_id=2),
    # a rotary module (head_dim 8: 4 frequencies), base 500
    "helium": lambda: HeliumConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=128,
                                   rope_parameters={"rope_type": "default", "rope_theta": 500.0},
                                   pad_token_id=0, bos_token_id=101, eos_token_id=102),
    # no positional module at all
    "falcon_mamba": lambda: FalconMambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=4, num_hidden_layers=1,
                                              intermediate_size=64, pad_token_id=0, bos_token_id=101,
                                              eos_token_id=102),
}


def build(name: str, folder: Path) -> Path:
    """Save a tiny random model of ``name`` (a key of :data:`CONFIGS`; seeded, small parameters
    randomized) and a copy of the bundled WordPiece tokenizer in ``folder``."""
    torch.manual_seed(0)
    model = AutoModel.from_config(CONFIGS[name]())
    randomize_small_params(model, torch.Generator().manual_seed(1))
    model.eval().save_pretrained(folder)
    AutoTokenizer.from_pretrained(bundled_path(), model_input_names=["input_ids", "attention_mask"]
                                  ).save_pretrained(folder)
    return folder
