# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Is torch.cuda.empty_cache() from the shim's tickets safe?  (tests/preload/
gpu-s4.sh runs it twice: alone, and while another process's allocations
send tickets that make the shim run empty_cache() in this main thread
hundreds of times.)  Nothing here knows about nxquota.

    torch_stress.py STEPS INFLATE_MIB

Each step, in the main thread: a CPU-made batch copied to the GPU and read
back (bitwise equal), an int64 scratch tensor of a size that varies by step
filled and summed (exact), a training step of a small MLP (deterministic
algorithms), its loss read; every second step an INFLATE_MIB uint8 blob
allocated, filled, checked at every MiB and dropped (PyTorch caches it: the
memory tickets ask back; refused while the other process holds its share:
counted, not an error).  At the end: "stress ok steps=N hash=H inflated=I
refused=R seconds=S", H a SHA-256 of every loss and parameter (bitwise),
or "stress FAIL ..." at the first wrong value.
"""
import hashlib
import struct
import sys
import time

import torch

steps, inflate = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(1)
h = hashlib.sha256()
inflated = refused = 0
MiB = 1 << 20
t0 = time.perf_counter()


def fail(msg):
    print(f"stress FAIL step={i}: {msg}", flush=True)
    sys.exit(1)


for i in range(steps):
    xc = torch.randn(256, 1024, generator=gen)
    x = xc.cuda()
    if not torch.equal(x.cpu(), xc):
        fail("the batch read back differs")
    n = (1 << 18) + (i % 13) * 4099
    sc = torch.full((n,), i, dtype=torch.int64, device="cuda")
    if sc.sum().item() != i * n:
        fail("scratch sum")
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    h.update(struct.pack("<d", loss.item()))	# a float32, exactly
    del sc, x
    if inflate and i % 2 == 0:
        try:
            blob = torch.empty(inflate * MiB, dtype=torch.uint8, device="cuda")
            blob.fill_(i % 251)
            if not bool((blob[::MiB] == i % 251).all()):
                fail("inflate blob contents")
            del blob
            inflated += 1
        except torch.cuda.OutOfMemoryError:
            refused += 1
for p in model.parameters():	# their bits, position-weighted (int64 wraps alike everywhere)
    w = p.detach().contiguous().view(torch.int32).flatten().long()
    idx = torch.arange(1, w.numel() + 1, device=w.device, dtype=torch.int64)
    h.update(str(int((w * idx).sum().item())).encode())
print(f"stress ok steps={steps} hash={h.hexdigest()[:32]} inflated={inflated} "
      f"refused={refused} seconds={time.perf_counter() - t0:.1f}", flush=True)
