"""The numpy sentence encoder on tiny random models of each family it reads (BERT, RoBERTa, MPNet)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from app.discovery.encoder import BertEncoder, ModelLoadError, _relative_buckets

HIDDEN, HEADS, LAYERS, FFN, POSITIONS = 8, 2, 2, 16, 16
WORDS = ["[PAD]", "<pad>", "[CLS]", "[SEP]", "[UNK]", "storm", "warnings", "create", "folder", "cancel", "meeting"]


def _tokenizer(directory: Path) -> None:
    vocab = {word: number for number, word in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tokenizer.save(str(directory / "tokenizer.json"))


def make_model(directory: Path, model_type: str, weights: dict[str, np.ndarray[Any, Any]] | None = None) -> Path:
    """A random model of `model_type` in the Hugging Face layout; `weights` replace tensors by name."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    mpnet = model_type == "mpnet"
    tensors = {
        "embeddings.word_embeddings.weight": w(len(WORDS), HIDDEN),
        "embeddings.position_embeddings.weight": w(POSITIONS, HIDDEN),
        "embeddings.LayerNorm.weight": np.ones(HIDDEN, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(HIDDEN, np.float32),
    }
    if mpnet:
        tensors["encoder.relative_attention_bias.weight"] = w(32, HEADS)
    else:
        tensors["embeddings.token_type_embeddings.weight"] = w(2, HIDDEN)
    for number in range(LAYERS):
        attention = f"encoder.layer.{number}.attention."
        names = (
            {"q": "attn.q", "k": "attn.k", "v": "attn.v", "o": "attn.o", "norm": "LayerNorm"}
            if mpnet
            else {
                "q": "self.query",
                "k": "self.key",
                "v": "self.value",
                "o": "output.dense",
                "norm": "output.LayerNorm",
            }
        )
        for part in ("q", "k", "v", "o"):
            tensors[f"{attention}{names[part]}.weight"] = w(HIDDEN, HIDDEN)
            tensors[f"{attention}{names[part]}.bias"] = w(HIDDEN)
        layer = f"encoder.layer.{number}."
        tensors.update(
            {
                f"{attention}{names['norm']}.weight": np.ones(HIDDEN, np.float32),
                f"{attention}{names['norm']}.bias": np.zeros(HIDDEN, np.float32),
                f"{layer}intermediate.dense.weight": w(FFN, HIDDEN),
                f"{layer}intermediate.dense.bias": w(FFN),
                f"{layer}output.dense.weight": w(HIDDEN, FFN),
                f"{layer}output.dense.bias": w(HIDDEN),
                f"{layer}output.LayerNorm.weight": np.ones(HIDDEN, np.float32),
                f"{layer}output.LayerNorm.bias": np.zeros(HIDDEN, np.float32),
            }
        )
    tensors.update(weights or {})
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"))
    config = {
        "model_type": model_type,
        "hidden_act": "gelu",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "pad_token_id": 0 if model_type == "bert" else 1,
    }
    (directory / "config.json").write_text(json.dumps(config))
    _tokenizer(directory)
    return directory


TEXTS = ["storm warnings", "create folder", "cancel meeting storm"]


@pytest.mark.parametrize("model_type", ["bert", "roberta", "mpnet"])
def test_each_family_loads_and_gives_unit_vectors(tmp_path: Path, model_type: str) -> None:
    encoder = BertEncoder(make_model(tmp_path, model_type))
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (3, HIDDEN)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(encoder.encode(TEXTS[:1]), vectors[:1], atol=1e-5)  # batching and padding change nothing


@pytest.mark.parametrize("model_type", ["bert", "roberta", "mpnet"])
def test_texts_packed_in_one_row_read_as_each_alone(tmp_path: Path, model_type: str) -> None:
    """Several queries of one call share a row, each attending only to itself, from its own positions."""
    encoder = BertEncoder(make_model(tmp_path, model_type))
    alone = np.stack([encoder.encode([text])[0] for text in TEXTS])
    assert np.allclose(encoder.encode(TEXTS, pack=64), alone, atol=1e-5)
    assert np.allclose(encoder.encode(TEXTS, pack=6), alone, atol=1e-5), "a row full: the next text starts another"


def test_roberta_style_models_number_positions_from_the_padding_id_plus_one(tmp_path: Path) -> None:
    """RoBERTa and MPNet never use the position rows up to the padding id: text at position 0 reads row 2."""
    for model_type in ("roberta", "mpnet"):
        base = make_model(tmp_path / f"{model_type}-a", model_type)
        changed = load_file(str(base / "model.safetensors"))["embeddings.position_embeddings.weight"].copy()
        changed[:2] = np.random.default_rng(1).standard_normal((2, HIDDEN))
        other = make_model(tmp_path / f"{model_type}-b", model_type, {"embeddings.position_embeddings.weight": changed})
        assert np.allclose(BertEncoder(base).encode(TEXTS), BertEncoder(other).encode(TEXTS), atol=1e-6)
        moved = changed.copy()
        moved[2] = np.random.default_rng(2).standard_normal(HIDDEN)
        third = make_model(tmp_path / f"{model_type}-c", model_type, {"embeddings.position_embeddings.weight": moved})
        assert not np.allclose(BertEncoder(base).encode(TEXTS), BertEncoder(third).encode(TEXTS), atol=1e-3)


def test_mpnet_relative_position_buckets() -> None:
    """MPNet's buckets (32): exact up to 8 positions each way, logarithmic to 128, keys after the query in 16-31."""
    buckets = _relative_buckets(300, 32)
    query = 150
    expected = {0: 0, -1: 1, -7: 7, -8: 8, -20: 10, -127: 15, -150: 15, 1: 17, 7: 23, 20: 26, 149: 31}
    assert {offset: int(buckets[query, query + offset]) for offset in expected} == expected


def test_mpnet_attention_depends_on_relative_position(tmp_path: Path) -> None:
    """The relative-position bias is read: another bias table gives other vectors."""
    base = make_model(tmp_path / "a", "mpnet")
    other = make_model(
        tmp_path / "b", "mpnet", {"encoder.relative_attention_bias.weight": np.full((32, HEADS), 3.0, np.float32)}
    )
    flat = make_model(
        tmp_path / "c", "mpnet", {"encoder.relative_attention_bias.weight": np.zeros((32, HEADS), np.float32)}
    )
    # a bias that is the same for every distance changes nothing after the softmax; a varying one does
    assert np.allclose(BertEncoder(other).encode(TEXTS), BertEncoder(flat).encode(TEXTS), atol=1e-5)
    assert not np.allclose(BertEncoder(base).encode(TEXTS), BertEncoder(flat).encode(TEXTS), atol=1e-3)


def test_an_unknown_family_is_refused(tmp_path: Path) -> None:
    directory = make_model(tmp_path, "bert")
    (directory / "config.json").write_text(json.dumps({"model_type": "gpt2", "num_attention_heads": 2}))
    with pytest.raises(ModelLoadError, match="unsupported model type"):
        BertEncoder(directory)
