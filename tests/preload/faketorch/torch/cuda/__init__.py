# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A fake torch.cuda for tests/preload/py.sh: a caching allocator in the
manner of PyTorch's native one, over the fake CUDA driver (libcuda.so.1 on
LD_LIBRARY_PATH: tests/fakecuda), device 0's primary context made current
as torch's lazy init does.  Segments come from cuMemAlloc_v2
(through ctypes, hence through the shim's dlsym and wrapper); a freed
tensor's segment stays cached; empty_cache() gives the cached segments back
with cuMemFree_v2, the shim sees those frees.  Loading it loads
libc10_cuda.so (FAKE_C10: tests/preload/fakec10/libc10_cuda.so), as
importing the real torch loads PyTorch's CUDA allocator."""
import ctypes
import os
import time

ctypes.CDLL(os.environ["FAKE_C10"], mode=ctypes.RTLD_GLOBAL)
_drv = ctypes.CDLL("libcuda.so.1")
_ctx = ctypes.c_void_p()
_drv.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
if _drv.cuInit(0) or _drv.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), 0) or \
        _drv.cuCtxSetCurrent(_ctx):
    raise RuntimeError("cannot bring up device 0's context")
_alloc = _drv.cuMemAlloc_v2
_alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
_free = _drv.cuMemFree_v2
_free.argtypes = [ctypes.c_uint64]

_cache = []		# (ptr, size): segments of no tensor
_live = {}		# ptr -> size
empty_cache_calls = []	# time.monotonic() of each call (the tests read it)
freed_bytes = 0
capturing = False


class OutOfMemoryError(RuntimeError):
    pass


def malloc(size):
    """A segment: from the cache if one fits exactly, else from the driver."""
    for i, (p, n) in enumerate(_cache):
        if n == size:
            del _cache[i]
            _live[p] = n
            return p
    p = ctypes.c_uint64()
    r = _alloc(ctypes.byref(p), size)
    if r:
        raise OutOfMemoryError(f"cuMemAlloc_v2: {r}")
    _live[p.value] = size
    return p.value


def free(p):
    """A tensor gone: its segment is cached, not given back."""
    _cache.append((p, _live.pop(p)))


def memory_reserved():
    return sum(_live.values()) + sum(n for _, n in _cache)


def is_current_stream_capturing():
    return capturing


def empty_cache():
    global freed_bytes
    empty_cache_calls.append(time.monotonic())
    while _cache:
        p, n = _cache.pop()
        r = _free(p)
        if r:
            raise RuntimeError(f"cuMemFree_v2: {r}")
        freed_bytes += n
