"""Tiny random configs of vision towers (ViT, DeiT, DINOv2, CLIP, SigLIP).

Every image tower: 32 × 32 pixels in patches of 8, so a 4 × 4 grid of patches; width 32, one layer,
two heads. CLIP's and SigLIP's text towers read the bundled WordPiece vocabulary (the tokenizer
:func:`tests.support.tiny_models.build_tiny` saves beside them).
"""

from __future__ import annotations

from transformers import (
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
