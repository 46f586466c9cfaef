# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""PyTorch on libnxquota arenas.

    import nxquota_torch
    nxquota_torch.install()          # before the first CUDA use
    ...                              # torch as usual
    nxquota_torch.stats()            # the arena and this integration's counters
    nxquota_torch.release()          # give idle device memory back now

install() swaps PyTorch's CUDA caching allocator for libnxq_torch through
torch.cuda.memory.CUDAPluggableAllocator; PyTorch allows that only before
CUDA is initialised.  Configuration is by environment (NXQ_TORCH_*,
described in nxq_torch.c and README.rst), read when install() runs.

Bytes are charge, not residency: memory the process holds outside the
allocator (the CUDA context, cuBLAS/cuDNN handles) is in no figure here.
With the pluggable allocator PyTorch keeps no statistics of its own:
torch.cuda.memory_allocated() and friends raise; use stats().
"""
import ctypes
import os

__all__ = ["install", "installed", "stats", "release", "reset_peaks", "last_error",
           "config", "library_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_state = {"lib": None, "path": None, "alloc": None, "entry": None}

MAX_DEVICES = 64


def library_path(oom=True):
    """The shared library install() loads: $NXQ_TORCH_LIB, else build/ beside
    this file; libnxq_torch_oom.so (raises torch.OutOfMemoryError) when it was
    built and oom is true, else libnxq_torch.so."""
    env = os.environ.get("NXQ_TORCH_LIB")
    if env:
        return os.path.abspath(env)
    for name in (["libnxq_torch_oom.so"] if oom else []) + ["libnxq_torch.so"]:
        p = os.path.join(_HERE, "build", name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError("libnxq_torch.so is not built: run make -C " + _HERE)


def _bind(lib):
    lib.nxq_torch_configure.restype = ctypes.c_int
    lib.nxq_torch_stats.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    lib.nxq_torch_stats.restype = ctypes.c_int
    lib.nxq_torch_stat_name.argtypes = [ctypes.c_int]
    lib.nxq_torch_stat_name.restype = ctypes.c_char_p
    lib.nxq_torch_nstats.restype = ctypes.c_int
    lib.nxq_torch_reset_peaks.argtypes = [ctypes.c_int]
    lib.nxq_torch_release.argtypes = [ctypes.c_int, ctypes.c_uint64]
    lib.nxq_torch_release.restype = ctypes.c_int64
    lib.nxq_torch_last_error.restype = ctypes.c_char_p
    lib.nxq_torch_config.restype = ctypes.c_char_p
    return lib


def install(path=None, oom=True):
    """Make libnxquota PyTorch's CUDA allocator.  Must run before the first
    CUDA use (PyTorch refuses to swap an initialised allocator).  With oom
    (the default) and libnxq_torch_oom.so built, a refused allocation raises
    torch.OutOfMemoryError; with the plain C library PyTorch gets NULL, which
    it does not check.  Returns the library path."""
    import torch

    if _state["lib"] is not None:
        return _state["path"]
    if torch.cuda.is_initialized():
        raise RuntimeError("nxquota_torch.install() must run before the first CUDA use "
                           "(PyTorch cannot swap an initialised allocator)")
    path = os.path.abspath(path) if path else library_path(oom)
    lib = _bind(ctypes.CDLL(path))
    r = lib.nxq_torch_configure()
    if r < 0:
        raise OSError(-r, "nxq_torch: " + lib.nxq_torch_last_error().decode(errors="replace"))
    entry = "nxq_torch_malloc"
    if oom and hasattr(lib, "nxq_torch_malloc_oom"):
        entry = "nxq_torch_malloc_oom"
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, entry, "nxq_torch_free")
    torch.cuda.memory.change_current_allocator(alloc)
    # PyTorch holds the function pointers; keep the library and the wrapper
    # alive for the life of the process.
    _state.update(lib=lib, path=path, alloc=alloc, entry=entry)
    return path


def installed():
    """The entry point in use ('nxq_torch_malloc_oom' or 'nxq_torch_malloc'), or None."""
    return _state["entry"]


def _lib():
    if _state["lib"] is None:
        raise RuntimeError("nxquota_torch.install() has not run")
    return _state["lib"]


def stats(device=0):
    """A dict of the device's counters (nxq_torch.h lists them), or None if no
    allocation has been made on that device yet."""
    lib = _lib()
    n = lib.nxq_torch_nstats()
    buf = (ctypes.c_uint64 * n)()
    r = lib.nxq_torch_stats(int(device), buf, n)
    if r == -2:             # -ENOENT: no arena yet
        return None
    if r < 0:
        raise OSError(-r, "nxq_torch_stats: " + last_error())
    return {lib.nxq_torch_stat_name(i).decode(): int(buf[i]) for i in range(r)}


def release(nbytes=None, device=None):
    """Give back up to nbytes (None: everything idle) on one device (None: all):
    waits for pending stream-ordered frees, then unmaps retained handles and
    idle granules -- what a pressure ticket does.  Memory in use is never
    touched.  Returns the bytes released."""
    lib = _lib()
    want = (1 << 64) - 1 if nbytes is None else int(nbytes)
    r = lib.nxq_torch_release(-1 if device is None else int(device), want)
    if r < 0:
        raise OSError(-r, "nxq_torch_release: " + last_error())
    return r


def reset_peaks(device=0):
    """Restart the peak_* counters from the current values."""
    r = _lib().nxq_torch_reset_peaks(int(device))
    if r < 0 and r != -2:
        raise OSError(-r, "nxq_torch_reset_peaks")


def last_error():
    """The reason of the last failure in this process ('' if none)."""
    return _lib().nxq_torch_last_error().decode(errors="replace")


def config():
    """The effective configuration, as a string."""
    return _lib().nxq_torch_config().decode(errors="replace")
