"""Tiny random configs of vision towers (ViT, DeiT, DINOv2, CLIP, SigLIP).

Every image tower: 32 × 32 pixels in patches of 8, so a 4 × 4 grid of patches; width 32, one layer,
two heads. CLIP's and SigLIP's text towers read the bundled WordPiece vocabulary (the tokenizer
:func:`tests.support.tiny_models.build_tiny` saves beside them).
"""

from __future__ import annotations

import numpy as np
import pytest
from transformers import (
    AutoModel,
    CLIPConfig,
    CLIPTextConfig,
    CLIPVisionConfig,
    DeiTConfig,
    Dinov2Config,
    SiglipConfig,
    SiglipTextConfig,
    SiglipVisionConfig,
    ViTConfig,
)

from tests.support.tiny_models import VOCAB, Family

#: The image tower's shape shared by every tiny config: 32 × 32 pixels, patches of 8 (a 4 × 4 grid).
IMAGE = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=1,
             num_attention_heads=2, intermediate_size=64)
GRID = (4, 4)
#: The text towers' tables: CLIP's 77 positions and SigLIP's 64, as the released models have.
CLIP_TEXT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=77, pad_token_id=0, bos_token_id=101, eos_token_id=102)
SIGLIP_TEXT = dict(CLIP_TEXT, max_position_embeddings=64)


def _vit():
    return ViTConfig(**IMAGE)


def _deit():
    return DeiTConfig(**IMAGE)


def _dinov2():
    return Dinov2Config(**IMAGE)


def _clip():
    return CLIPConfig(text_config=CLIPTextConfig(**CLIP_TEXT).to_dict(),
                      vision_config=CLIPVisionConfig(**IMAGE).to_dict(), projection_dim=16)


def _siglip():
    return SiglipConfig(text_config=SiglipTextConfig(**SIGLIP_TEXT).to_dict(),
                        vision_config=SiglipVisionConfig(**IMAGE).to_dict())


def _clip_vision():
    return CLIPVisionConfig(**IMAGE)


def _clip_text():
    return CLIPTextConfig(**CLIP_TEXT)


def _siglip_vision():
    return SiglipVisionConfig(**IMAGE)


FAMILIES: dict[str, Family] = {
    "vit": Family("vit", _vit, "learned_absolute", tokenizer=False),
    "deit": Family("deit", _deit, "learned_absolute", tokenizer=False),
    "dinov2": Family("dinov2", _dinov2, "learned_absolute", tokenizer=False),
    "clip": Family("clip", _clip, "learned_absolute"),
    "siglip": Family("siglip", _siglip, "learned_absolute"),
    "clip_vision_model": Family("clip_vision_model", _clip_vision, "learned_absolute", tokenizer=False),
    "clip_text_model": Family("clip_text_model", _clip_text, "learned_absolute",
                              position_module="embeddings.position_embedding", max_tokens=77),
    "siglip_vision_model": Family("siglip_vision_model", _siglip_vision, "learned_absolute", tokenizer=False),
}


# ---------------------------------------------------------------- the ground truth of the tests

#: family -> (path of its image tower below the base model, "" for the base model itself; tokens before the patches)
IMAGE_TOWERS = {
    "vit": ("", ("CLS",)),
    "deit": ("", ("CLS", "distillation")),
    "dinov2": ("", ("CLS",)),
    "clip_vision_model": ("", ("CLS",)),
    "siglip_vision_model": ("", ()),
    "clip": ("vision_model", ("CLS",)),
    "siglip": ("vision_model", ()),
}
#: family -> (its text tower below the base model, "" for the base model itself; rows of its table)
TEXT_TOWERS = {"clip": ("text_model", 77), "siglip": ("text_model", 64), "clip_text_model": ("", 77)}


def tower(model, path: str):
    """The submodule at ``path`` ("" : the model itself)."""
    return model.get_submodule(path) if path else model


def stored_image_table(model, family: str) -> np.ndarray:
    """The image tower's position table as the model holds it, float64 [tokens, width]: the ``nn.Parameter``
    [1, tokens, width] of ViT, DeiT and DINOv2 without its batch axis, or CLIP's and SigLIP's ``nn.Embedding`` weight."""
    emb = tower(model, IMAGE_TOWERS[family][0]).embeddings
    table = emb.position_embeddings[0] if hasattr(emb, "position_embeddings") else emb.position_embedding.weight
    return table.detach().double().numpy()


@pytest.fixture(scope="session")
def own(tiny_path):
    """own(family) -> the tiny base model loaded with plain transformers (eval, eager), independently of posviz;
    no tokenizer needed (the conftest's ``reference`` loads one)."""
    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = AutoModel.from_pretrained(tiny_path(family), attn_implementation="eager").eval().base_model
        return cache[family]

    return get
