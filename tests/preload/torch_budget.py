# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Unmodified PyTorch under libnxquota-preload.so (tests/preload/gpu.sh runs it).

    torch_budget.py oom BLOCK_MIB      allocate BLOCK_MIB tensors until
                                       torch.cuda.OutOfMemoryError; print
                                       "oom blocks=N reserved=R", wait for a
                                       line on stdin
    torch_budget.py retry BUDGET_MIB   fill 3/4 of the budget with 256 MiB
                                       tensors, drop all but one (PyTorch
                                       keeps them cached, still charged),
                                       then one tensor of half the budget:
                                       it fits only once PyTorch has freed
                                       its cache and retried
    torch_budget.py borrow MIB         (PYTORCH_CUDA_ALLOC_CONF=
                                       backend:cudaMallocAsync) allocate
                                       MIB in 256 MiB tensors, drop them:
                                       the stream-ordered pool keeps them
                                       reserved; "borrow ready", wait stdin
    torch_budget.py borrowpoll MIB     (the native allocator) the same, then
                                       poll stdin every 20 ms (as a server
                                       between requests: the main thread
                                       runs bytecode); at the line print
                                       "reserved=R"
    torch_budget.py take MIB           allocate MIB in 256 MiB tensors:
                                       "take ok" or "take oom after N"
    torch_budget.py train STEPS        a small MLP's training steps:
                                       "train seconds=S"
Nothing here knows about nxquota: that is the point.
"""
import select
import sys
import time

import torch

MiB = 1 << 20


def block(mib):
    return torch.empty(mib * MiB, dtype=torch.uint8, device="cuda")


def main():
    mode, arg = sys.argv[1], int(sys.argv[2])
    torch.cuda.init()
    if mode == "oom":
        held = []
        try:
            while True:
                held.append(block(arg))
        except torch.cuda.OutOfMemoryError:
            pass
        print(f"oom blocks={len(held)} reserved={torch.cuda.memory_reserved()}", flush=True)
        sys.stdin.readline()
    elif mode == "retry":
        held = [block(256) for _ in range(arg * 3 // 4 // 256)]
        del held[1:]
        before = torch.cuda.memory_reserved()
        big = block(arg // 2)
        print(f"retry ok reserved_before={before} reserved_after={torch.cuda.memory_reserved()}"
              f" big={big.numel()}", flush=True)
    elif mode == "borrow":
        held = [block(256) for _ in range(arg // 256)]
        del held
        print(f"borrow ready reserved={torch.cuda.memory_reserved()}", flush=True)
        sys.stdin.readline()
    elif mode == "borrowpoll":
        held = [block(256) for _ in range(arg // 256)]
        del held
        print(f"borrow ready reserved={torch.cuda.memory_reserved()}", flush=True)
        while not select.select([sys.stdin], [], [], 0.02)[0]:
            pass
        sys.stdin.readline()
        print(f"reserved={torch.cuda.memory_reserved()}", flush=True)
    elif mode == "take":
        held = []
        try:
            for _ in range(arg // 256):
                held.append(block(256))
            print("take ok", flush=True)
        except torch.cuda.OutOfMemoryError:
            print(f"take oom after {len(held)}", flush=True)
    elif mode == "train":
        model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                    torch.nn.Linear(4096, 4096)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        x = torch.randn(512, 4096, device="cuda")
        for _ in range(10):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(arg):
            opt.zero_grad()
            y = model(x + torch.randn_like(x))	# fresh activations each step
            y.square().mean().backward()
            opt.step()
        torch.cuda.synchronize()
        print(f"train seconds={time.perf_counter() - t:.3f}", flush=True)
    else:
        sys.exit(f"torch_budget.py: unknown mode {mode}")


if __name__ == "__main__":
    main()
