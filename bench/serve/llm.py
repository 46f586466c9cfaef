# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The serving benchmark's model: a Llama-shaped network from transformers
with random weights (LlamaConfig, no download), run by a small
continuous-batching engine whose KV cache is one tensor per request.

A request's KV cache, [layers, 2, kv_heads, tokens, head_dim] in the
model's dtype, is allocated when the request is admitted (its prompt and
its output, the reservation a server makes for max_tokens) and dropped
when it finishes: the cache grows as requests arrive and is given back as
they end, through whatever allocator the process runs (PyTorch's caching
allocator, nxquota's integration, or either under the shim).

Prefill runs one request at a time (causal SDPA over its prompt); a decode
step runs every running request at once: the projections and the MLP
batched, the attention per request over its own cache (a view, no copy).
The weights come from the transformers modules (q/k/v/o projections, the
MLP, the norms, the rotary embedding, apply_rotary_pos_emb); the forward
is written here because the engine owns the cache.
"""
import time

import torch
import torch.nn.functional as F

from llm_sizes import SHAPES, kv_bytes_per_token  # noqa: F401


class Llama:
    """The model on the current CUDA device, weights drawn from seed."""

    def __init__(self, shape, seed, max_pos=32768, dtype=torch.bfloat16):
        from transformers import LlamaConfig, LlamaForCausalLM
        from transformers.models.llama import modeling_llama
        self.rope = modeling_llama.apply_rotary_pos_emb
        s = SHAPES[shape]
        cfg = LlamaConfig(max_position_embeddings=max_pos, **s)
        torch.manual_seed(seed)
        old = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            with torch.device("cuda"):
                self.m = LlamaForCausalLM(cfg).eval()
        finally:
            torch.set_default_dtype(old)
        self.dtype = dtype
        self.L = s["num_hidden_layers"]
        self.H = s["num_attention_heads"]
        self.Hkv = s["num_key_value_heads"]
        self.D = s["hidden_size"] // self.H
        self.d = s["hidden_size"]
        self.vocab = s["vocab_size"]
        self.gqa = self.Hkv != self.H
        self.params = sum(p.numel() for p in self.m.parameters())

    def new_cache(self, tokens):
        """A request's KV cache for tokens positions: the allocation the
        benchmark is about."""
        return torch.empty((self.L, 2, self.Hkv, tokens, self.D), dtype=self.dtype,
                           device="cuda")

    def _qkv(self, a, x, B, T, cos, sin):
        q = a.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = a.k_proj(x).view(B, T, self.Hkv, self.D).transpose(1, 2)
        v = a.v_proj(x).view(B, T, self.Hkv, self.D).transpose(1, 2)
        q, k = self.rope(q, k, cos, sin)
        return q, k, v

    @torch.inference_mode()
    def prefill(self, ids, cache):
        """ids: a CPU LongTensor of the prompt; fills cache[:, :, :, :P];
        returns the first generated token (a CUDA tensor of one element)."""
        m = self.m.model
        P = ids.numel()
        h = m.embed_tokens(ids.view(1, P).cuda(non_blocking=True))
        pos = torch.arange(P, device="cuda").view(1, P)
        cos, sin = m.rotary_emb(h, pos)
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            x = layer.input_layernorm(h)
            q, k, v = self._qkv(a, x, 1, P, cos, sin)
            cache[i, 0, :, :P] = k[0]
            cache[i, 1, :, :P] = v[0]
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.gqa)
            h = h + a.o_proj(o.transpose(1, 2).reshape(1, P, self.d))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.m.lm_head(m.norm(h[:, -1:])).argmax(-1).view(1)

    @torch.inference_mode()
    def decode(self, toks, caches, lens):
        """One step for every running request: toks a CUDA LongTensor [R]
        (each request's last token), caches their caches, lens the
        positions the new tokens take.  Returns the next tokens [R]."""
        m = self.m.model
        R = len(caches)
        h = m.embed_tokens(toks.view(R, 1))
        pos = torch.tensor(lens, device="cuda").view(R, 1)
        cos, sin = m.rotary_emb(h, pos)
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            x = layer.input_layernorm(h)
            q, k, v = self._qkv(a, x, R, 1, cos, sin)
            kv = torch.stack((k, v), 1)             # [R, 2, Hkv, 1, D]
            outs = []
            for j in range(R):
                c, t = caches[j][i], lens[j]
                c[:, :, t] = kv[j, :, :, 0]
                outs.append(F.scaled_dot_product_attention(
                    q[j:j + 1], c[0, :, :t + 1].unsqueeze(0), c[1, :, :t + 1].unsqueeze(0),
                    enable_gqa=self.gqa))
            o = torch.cat(outs)                     # [R, H, 1, D]
            h = h + a.o_proj(o.transpose(1, 2).reshape(R, 1, self.d))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.m.lm_head(m.norm(h)).argmax(-1).view(R)


def selftest(shape="llama-tiny", seed=1):
    """The engine's attention against transformers' own forward: prefill
    and three decode steps of two requests, greedy tokens and the last
    hidden logits compared (used by the device probe)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    mdl = Llama(shape, seed, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(mdl.vocab, (n,), generator=g) for n in (7, 12)]
    ours = []
    caches = [mdl.new_cache(p.numel() + 4) for p in prompts]
    firsts = [mdl.prefill(p, c) for p, c in zip(prompts, caches)]
    toks = torch.cat(firsts)
    lens = [p.numel() for p in prompts]
    ours.append(toks.tolist())
    for _ in range(3):
        toks = mdl.decode(toks, caches, lens)
        lens = [t + 1 for t in lens]
        ours.append(toks.tolist())
    ref = []
    with torch.inference_mode():
        for p in prompts:
            out = mdl.m.generate(p.view(1, -1).cuda(), max_new_tokens=4, do_sample=False,
                                 pad_token_id=0)
            ref.append(out[0, p.numel():].tolist())
    ours_t = [list(x) for x in zip(*ours)]
    return ours_t == ref, ours_t, ref


def timing(shape, batch, prompt, steps=10):
    """Seconds for one prefill of prompt tokens and one decode step of
    batch requests at that length (the device probe)."""
    mdl = Llama(shape, 1)
    caches = [mdl.new_cache(prompt + steps + 1) for _ in range(batch)]
    ids = torch.randint(mdl.vocab, (prompt,))
    for c in caches[:2]:
        mdl.prefill(ids, c)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    first = mdl.prefill(ids, caches[0])
    torch.cuda.synchronize()
    tp = time.perf_counter() - t0
    toks = first.repeat(batch)
    lens = [prompt] * batch
    mdl.decode(toks, caches, lens)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(steps):
        toks = mdl.decode(toks, caches, [n + 1 + s for n in lens])
    torch.cuda.synchronize()
    return tp, (time.perf_counter() - t0) / steps, mdl.params
