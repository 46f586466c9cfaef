# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""An unmodified Python program for tests/preload/py.sh: it knows nothing
of nxquota.  With 'torch' (tests/preload/faketorch on PYTHONPATH) its
memory is cached as PyTorch's; 'notorch' modes allocate through ctypes
without importing torch.

    pyapp.py fill MIB           torch: MIB 1 MiB segments, stop at the first
                                refusal: "fill N"; wait for a line on stdin
    pyapp.py notorch-fill MIB   the same without torch
    pyapp.py borrow MIB SLEEP   torch: MIB 1 MiB segments, their tensors gone
                                (cached); "ready", then time.sleep(SLEEP) (one
                                C call: no bytecode boundary), then poll stdin
                                every 20 ms; at the line: "calls=[times]
                                freed=B reserved=R at=T"
"""
import ctypes
import select
import sys
import time

mode = sys.argv[1]
if mode.startswith("notorch"):
    drv = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()     # as the runtime does first: device 0's context current
    drv.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    if drv.cuInit(0) or drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) or \
            drv.cuCtxSetCurrent(ctx):
        sys.exit("pyapp: cannot bring up device 0's context")
    drv.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    n = 0
    p = ctypes.c_uint64()
    while n < int(sys.argv[2]) and drv.cuMemAlloc_v2(ctypes.byref(p), 1 << 20) == 0:
        n += 1
    print(f"fill {n}", flush=True)
    sys.stdin.readline()
    sys.exit(0)

import torch  # noqa: E402

cuda = torch.cuda
if mode == "fill":
    held = []
    try:
        for _ in range(int(sys.argv[2])):
            held.append(cuda.malloc(1 << 20))
    except cuda.OutOfMemoryError:
        pass
    print(f"fill {len(held)}", flush=True)
    sys.stdin.readline()
elif mode == "borrow":
    held = [cuda.malloc(1 << 20) for _ in range(int(sys.argv[2]))]
    for p in held:
        cuda.free(p)
    del held
    print(f"ready reserved={cuda.memory_reserved()} at={time.monotonic():.3f}", flush=True)
    time.sleep(float(sys.argv[3]))
    woke = time.monotonic()
    while not select.select([sys.stdin], [], [], 0.02)[0]:
        pass
    sys.stdin.readline()
    calls = ",".join(f"{t:.3f}" for t in cuda.empty_cache_calls)
    print(f"calls=[{calls}] freed={cuda.freed_bytes} reserved={cuda.memory_reserved()} "
          f"woke={woke:.3f}", flush=True)
