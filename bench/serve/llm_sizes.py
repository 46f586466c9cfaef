# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The serving benchmark's model shapes and their sizes, without PyTorch
(serve.py sizes the load from them; llm.py builds the models)."""

SHAPES = {
    # Llama-2-7B's layer (d 4096, 32 heads, no GQA, ff 11008), 8 of them:
    # 1.6 G parameters (3.2 GB in bf16), 128 KiB of KV per token
    "llama-8l": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=8,
                     num_attention_heads=32, num_key_value_heads=32, vocab_size=32000),
    # half of that: 4 layers, 64 KiB per token
    "llama-4l": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=4,
                     num_attention_heads=32, num_key_value_heads=32, vocab_size=32000),
    # for a smoke test
    "llama-tiny": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, vocab_size=1024),
}


def kv_bytes_per_token(shape, dtype_bytes=2):
    s = SHAPES[shape]
    d = s["hidden_size"] // s["num_attention_heads"]
    return s["num_hidden_layers"] * 2 * s["num_key_value_heads"] * d * dtype_bytes


def params(shape):
    """LlamaForCausalLM's parameter count (untied embeddings)."""
    s = SHAPES[shape]
    d, ff, L, v = s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"], s["vocab_size"]
    kvd = d // s["num_attention_heads"] * s["num_key_value_heads"]
    per_layer = 2 * d * d + 2 * d * kvd + 3 * d * ff + 2 * d
    return 2 * v * d + L * per_layer + d


def sizes(shape, dtype_bytes=2):
    """(KV bytes per token, weight bytes)."""
    return kv_bytes_per_token(shape, dtype_bytes), params(shape) * dtype_bytes
