"""posviz.load_model: what it returns, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

import posviz
from tests.support.tiny_models import ALL, FAMILIES, build_tiny, bundled_path

_MODEL_TYPE = {"opt-proj": "opt"}
_HEADS = {"xlm-roberta": 2}


def test_bundled_model_facts(bundled_lm):
    lm = bundled_lm
    assert isinstance(lm, posviz.LoadedModel)
    assert isinstance(lm.name, str) and lm.name
    assert lm.scheme == "learned_absolute"
    assert (lm.num_layers, lm.num_heads) == (6, 12)
    assert lm.max_tokens == 512 and isinstance(lm.max_tokens, int)
    assert lm.device == torch.device("cpu")
    assert type(lm.model).__name__ == "BertModel"
    assert lm.model.training is False
    assert all(not m.training for m in lm.model.modules())
    assert lm.model.config._attn_implementation == "eager"
    assert lm.config.model_type == "bert"
    assert lm.tokenizer("hello world")["input_ids"][0] == 101


def test_bundled_family_is_model_type(bundled_lm):
    assert isinstance(bundled_lm.model_type, str), type(bundled_lm.model_type)
    assert bundled_lm.model_type == "bert"


def test_bundled_weights_are_the_checkpoint(bundled_lm, bundled_reference):
    model, _ = bundled_reference
    mine = bundled_lm.model.state_dict()
    for k, v in model.state_dict().items():
        assert k in mine, k
        torch.testing.assert_close(mine[k].float(), v.float(), rtol=0, atol=0)


def test_explicit_cpu_device(tiny_path):
    lm = posviz.load_model(str(tiny_path("bert")), device="cpu")
    assert lm.device == torch.device("cpu")
    assert next(lm.model.parameters()).device.type == "cpu"


@pytest.mark.parametrize("family", ALL)
def test_tiny_model_facts(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, _ = reference(family)
    lm = tiny_lm(family)
    assert lm.scheme == spec.scheme
    assert lm.num_layers == 2
    assert lm.num_heads == _HEADS.get(family, 4)
    assert isinstance(lm.max_tokens, int) and lm.max_tokens > 0
    if spec.max_tokens is not None:
        # the position table is the limit (the copied tokenizer says 512)
        assert lm.max_tokens == spec.max_tokens
    assert type(lm.model).__name__ == type(model).__name__
    assert lm.model.training is False
    assert lm.model.config._attn_implementation == "eager"
    assert isinstance(lm.device, torch.device)
    mine = lm.model.state_dict()
    for k, v in model.state_dict().items():
        torch.testing.assert_close(mine[k].float(), v.float(), rtol=0, atol=0)


@pytest.mark.parametrize("family", ALL)
def test_family_is_model_type(family, tiny_lm, reference):
    model, _ = reference(family)
    lm = tiny_lm(family)
    assert isinstance(lm.model_type, str), type(lm.model_type)
    assert lm.model_type == _MODEL_TYPE.get(family, family) == model.config.model_type


def test_task_head_checkpoint_gives_base_model(tmp_path):
    torch.manual_seed(0)
    m = BertForMaskedLM(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64, max_position_embeddings=48))
    m.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(bundled_path()).save_pretrained(tmp_path)
    lm = posviz.load_model(str(tmp_path))
    assert type(lm.model).__name__ == "BertModel"
    assert lm.max_tokens == 48
    pe = lm.encodings[0]
    np.testing.assert_array_equal(pe.matrix, m.bert.embeddings.position_embeddings.weight.detach().numpy())


# ----------------------------------------------------------------------------- errors


def _assert_helpful(err: Exception, name: str):
    msg = str(err)
    assert name in msg, msg
    assert len(msg) > len(name) + 20, msg  # says more than the name


def test_nonexistent_folder():
    name = "/nonexistent/folder"
    with pytest.raises(posviz.ModelLoadError) as info:
        posviz.load_model(name)
    _assert_helpful(info.value, name)


def test_folder_with_only_readme(tmp_path):
    (tmp_path / "README.md").write_text("# not a model\n")
    with pytest.raises(posviz.ModelLoadError) as info:
        posviz.load_model(str(tmp_path))
    _assert_helpful(info.value, str(tmp_path))


def test_unknown_hub_id():
    name = "posviz-no-such-org/no-such-model-xyz"
    with pytest.raises(posviz.ModelLoadError) as info:
        posviz.load_model(name)
    _assert_helpful(info.value, name)


def test_model_without_tokenizer(tmp_path):
    # transformers 5 will happily build an empty BertTokenizer here: posviz must notice.
    build_tiny("bert", tmp_path, with_tokenizer=False)
    with pytest.raises(posviz.ModelLoadError) as info:
        posviz.load_model(str(tmp_path))
    assert "tokenizer" in str(info.value).lower(), str(info.value)
