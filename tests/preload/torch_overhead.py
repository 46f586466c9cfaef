# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Two server-shaped PyTorch workloads, timed in windows (tests/preload/
gpu-s4.sh's "servers" part runs this with and without the shim, rotated).

    torch_overhead.py [--windows 5] [--steps 30] [--gen-windows 5]

  decoder   training steps of the variable-shape GPT-like decoder of
            integrations/pytorch/tests/torch_worker.py (batch and sequence
            length drawn per step from a seeded generator; the caching
            allocator keeps splitting and growing): --steps steps per
            window, one synchronisation at each window's end
  generate  Hugging Face generate() with a random-weight Llama-shaped
            model (8 layers, d 1024, GQA 16/4 heads, vocab 32000, bf16),
            greedy, 64 new tokens, prompt batch and length varying per
            call (8x96, 4x200, 16x48): one window is the three calls

Prints, one line each (figures per window, the median over windows):
  decoder steps/s=R
  generate tokens/s=R
  shim trips=N charges=...   (the shim's trips to the authority during the
                              timed windows, when the shim is loaded)
With --serve, each workload is warmed up and then runs one window
whenever bench/lockstep.py asks (gpu-s4.sh's servers part starts a bare
and a shim process of it, or two of each, and they take turns): window K
is the same steps, or the same generate() calls, in every process.
Nothing here knows about nxquota beyond reading the shim's counter.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integrations", "pytorch", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))


def trips():
    try:
        f = ctypes.CDLL(None).nxquota_preload_authority_trips
    except (AttributeError, OSError):
        return None
    f.restype = ctypes.c_uint64
    return f()


def decoder(a):
    from torch_worker import DECODERS, make_decoder
    import torch.nn.functional as F

    cfg = DECODERS["decoder"]
    total = a.warmup + a.windows * a.steps
    model, opt, xs = make_decoder(cfg, 1234, total + 1)
    model.train()

    def step(i):
        x = xs[i]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()

    def window(k):
        t = time.perf_counter()
        for i in range(a.warmup + k * a.steps, a.warmup + (k + 1) * a.steps):
            step(i)
        torch.cuda.synchronize()
        return a.steps / (time.perf_counter() - t)

    return timed(a, "decoder", window, a.windows)


def generate(a):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816,
                      num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4,
                      max_position_embeddings=1024)
    torch.manual_seed(7)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    g = torch.Generator(device="cuda").manual_seed(8)
    shapes = [(8, 96), (4, 200), (16, 48)]
    new = 64

    def window():
        toks = 0
        for b, n in shapes:
            ids = torch.randint(cfg.vocab_size, (b, n), device="cuda", generator=g)
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False, pad_token_id=0)
            toks += b * (out.shape[1] - n)
        return toks

    def timed_window(k):
        t = time.perf_counter()
        n = window()
        torch.cuda.synchronize()
        return n / (time.perf_counter() - t)

    with torch.no_grad():
        window()	# warm-up
        torch.cuda.synchronize()
        return timed(a, "generate", timed_window, a.gen_windows)


def timed(a, name, window, n):
    """n windows in a row (their median rate), or, with --serve, windows
    when bench/lockstep.py asks; and the shim's trips to the authority
    during them."""
    t0 = trips()
    if a.serve:
        import lockstep
        lockstep.serve(name, window, lambda: {"trips": "-" if t0 is None else trips() - t0})
        return None, None
    rates = [window(k) for k in range(n)]
    t1 = trips()
    return statistics.median(rates), (None if t0 is None else t1 - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--gen-windows", type=int, default=5)
    ap.add_argument("--workloads", default="decoder,generate")
    ap.add_argument("--serve", action="store_true",
                    help="windows when bench/lockstep.py asks (--windows/--gen-windows at most)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    tr = []
    if a.serve:
        for w in a.workloads.split(","):
            {"decoder": decoder, "generate": generate}[w](a)
        import lockstep
        lockstep.done()
        return
    for w in a.workloads.split(","):
        if w == "decoder":
            r, n = decoder(a)
            print(f"decoder steps/s={r:.3f}", flush=True)
        elif w == "generate":
            r, n = generate(a)
            print(f"generate tokens/s={r:.1f}", flush=True)
        else:
            sys.exit(f"torch_overhead.py: unknown workload {w}")
        tr.append(f"{w}={'-' if n is None else n}")
    print(f"shim trips {' '.join(tr)} reserved_mib={torch.cuda.max_memory_reserved() >> 20}",
          flush=True)


if __name__ == "__main__":
    main()
