# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""PyTorch on libnxquota arenas.

    import nxquota_torch
    nxquota_torch.install()          # before the first CUDA use
    ...                              # torch as usual
    nxquota_torch.stats()            # the arena and this integration's counters
    nxquota_torch.release()          # give idle device memory back now

Two routes (install(route=...), or NXQ_TORCH_ROUTE):

"tensor" (the default, DEFAULT_ROUTE: the faster of the two, and the
    smaller peak on variable shapes, in bench/RESULTS.rst):
    torch.cuda.memory.CUDAPluggableAllocator replaces the caching
    allocator; every tensor is an arena block.  torch.cuda.memory_allocated()
    and friends raise ("does not yet support getDeviceStats"); use stats().
"pool": PyTorch's caching allocator stays in
    front; a torch.cuda.MemPool whose allocator is libnxq_torch receives
    every allocation of every thread and stream of the process, so
    libnxquota charges and maps only the pool's segments.  A release (a
    pressure ticket on the library's thread, or release()) retires the
    pool: a fresh pool takes the routing, the retired one's cached
    segments go back through the allocator's free function, and what its
    live tensors still hold goes back as they are freed (each later
    release, and PyTorch's own out-of-memory retry, empties retired
    pools).  torch.cuda.memory_stats() and friends work.

install() must run before the first CUDA allocation.  Configuration is by
environment (NXQ_TORCH_*, described in nxq_torch.c and README.rst), read
when install() runs.  Bytes are charge, not residency: memory the process
holds outside the allocator (the CUDA context, cuBLAS/cuDNN handles) is in
no figure here.

Pool route, what it relies on and where it stops (torch 2.11):
 * Routing uses torch._C._cuda_beginAllocateToPool (every thread): the
   public torch.cuda.use_mem_pool routes only the calling thread, and
   autograd's backward runs on another one.  The routing stays active, so
   CUDA graph capture and use_mem_pool of the program's own would be routed
   to this pool too: not supported with this route.
 * PyTorch releases a pool's cached segments only once nothing refers to
   the pool (use count 0) -- torch.cuda.empty_cache() skips a live pool --
   and destroying a MemPool while any routing is active trips an internal
   assertion (synchronize_and_free_events: captures_underway.empty()),
   which aborts the process.  Hence retirement: the new pool's routing
   starts before the old one's ends (no allocation goes to PyTorch's
   default pool meanwhile), both references to the old pool are dropped
   (_cuda_releasePool), and torch._C._cuda_emptyCache() -- which, while a
   routing is active, releases freeable pools without synchronising --
   returns its free segments.  The retired MemPool object is kept alive
   for the life of the process (its destructor would drop a reference
   again and empty the cache under the routing).
 * Thread: any.  A ticket is answered on libnxquota's pressure thread,
   which enters Python through a ctypes callback (it takes the GIL) and
   serialises with release() through a lock; PyTorch's allocator calls
   are under its own per-device mutex.  Synchronisation: none needed on
   PyTorch's side; the segments are freed stream-ordered (nxq_free_async
   on the segment's stream) and libnxquota waits for that work before it
   unmaps.  A holder whose thread waits for a grant (NXQ_TORCH_GROW_TIMEOUT_MS)
   while it holds the GIL delays the answer until that wait ends.
 * Out of memory: the pool's entry point returns NULL and PyTorch raises
   torch.OutOfMemoryError itself, after its own retry (which empties
   retired pools); libnxquota's reason is in last_error().
"""
import atexit
import ctypes
import os
import threading

__all__ = ["install", "installed", "route", "pool_info", "stats", "release", "reset_peaks",
           "last_error", "config", "library_path", "set_release_hook", "events", "ticket",
           "EVENT_FIELDS", "DEFAULT_ROUTE", "ROUTES"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_state = {"lib": None, "path": None, "alloc": None, "entry": None, "route": None,
          "pools": None, "hook": None, "user_hook": None}

# One pressure event (events(), ticket()): nxq_torch.h, NXQ_TORCH_EVENT_WORDS.
EVENT_FIELDS = ("type", "t_ns", "generation", "bytes_wanted", "level", "reason", "released",
                "charged")
EVENT_TICKET, EVENT_ANSWER = 1, 2
LEVEL_NAMES = {0: "ASK", 1: "RECALL"}

ROUTES = ("tensor", "pool")
# The faster of the two on bench/bench_torch.py (bench/RESULTS.rst: both
# workloads, H200, torch 2.11).
DEFAULT_ROUTE = "tensor"

_HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p)

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
    lib.nxq_torch_set_release_hook.argtypes = [_HOOK, ctypes.c_void_p]
    lib.nxq_torch_set_release_hook.restype = ctypes.c_int
    lib.nxq_torch_release_from_thread.argtypes = [ctypes.c_int, ctypes.c_uint64]
    lib.nxq_torch_release_from_thread.restype = ctypes.c_int64
    lib.nxq_torch_events.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    lib.nxq_torch_events.restype = ctypes.c_int
    lib.nxq_torch_events_dropped.restype = ctypes.c_uint64
    lib.nxq_torch_ticket.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    lib.nxq_torch_ticket.restype = ctypes.c_int
    return lib


class _Pools:
    """The pool route's MemPools: one routed pool per device, and the retired
    ones.  Every change is made under self.lock; see the module's docstring
    for the order of the steps and why."""

    def __init__(self, torch, allocator):
        self.torch = torch
        self.allocator = allocator      # torch._C._cuda_CUDAAllocator
        self.lock = threading.Lock()
        self.live = {}                  # device -> MemPool receiving allocations
        self.retired = []               # pools retired by rotate()
        self.kept = []                  # every MemPool made: never destroyed
        self.rotations = 0
        self.errors = 0

    def _new(self, device):
        # Immortal from birth: even a pool that never got its routing (the
        # call failed) would, destroyed under another routing, abort the
        # process in ~MemPool.
        with self.torch.cuda.device(device):
            p = self.torch.cuda.MemPool(allocator=self.allocator)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(p))
        self.kept.append(p)
        return p

    def start(self, devices):
        C = self.torch._C
        with self.lock:
            for d in devices:
                p = self._new(d)
                C._cuda_beginAllocateToPool(d, p.id)
                self.live[d] = p

    def rotate(self, device=None):
        """Retire the routed pool of device (None: every device) and empty
        the cache of every retired pool.  Safe from any thread."""
        C = self.torch._C
        with self.lock:
            for d in (sorted(self.live) if device is None else [device]):
                old = self.live.get(d)
                if old is None:
                    continue
                new = self._new(d)
                C._cuda_beginAllocateToPool(d, new.id)   # before the old routing ends
                C._cuda_endAllocateToPool(d, old.id)
                self.live[d] = new
                C._cuda_releasePool(d, old.id)           # beginAllocateToPool's reference
                C._cuda_releasePool(d, old.id)           # the MemPool's own: now freeable
                self.retired.append(old)
                self.rotations += 1
            C._cuda_emptyCache()

    def hook(self, device, nbytes, user):
        # On libnxquota's thread (a ticket) or the caller's (release()).
        try:
            _call_user_hook(device, nbytes)
            self.rotate(None if device < 0 else device)
            return 0
        except Exception:           # never let an exception cross into C
            self.errors += 1
            return -5               # -EIO


def _call_user_hook(device, nbytes):
    fn = _state["user_hook"]
    if fn is not None:
        fn(device, nbytes)


def _tensor_hook(device, nbytes, user):
    try:
        _call_user_hook(device, nbytes)
        return 0
    except Exception:           # never let an exception cross into C
        return -5               # -EIO


def _route_of(route):
    r = route or os.environ.get("NXQ_TORCH_ROUTE") or DEFAULT_ROUTE
    if r not in ROUTES:
        raise ValueError("nxquota_torch: route %r: not one of %s" % (r, ", ".join(ROUTES)))
    return r


def install(path=None, oom=True, route=None):
    """Put libnxquota under PyTorch's CUDA allocations.  Must run before the
    first CUDA use.  route: "tensor" (DEFAULT_ROUTE) or "pool"; None takes
    $NXQ_TORCH_ROUTE, else the default (see the module's docstring).

    Tensor route: with oom (the default) and libnxq_torch_oom.so built, a
    refused allocation raises torch.OutOfMemoryError; with the plain C entry
    point PyTorch gets NULL, which it does not check.  Pool route: the plain
    entry point always (PyTorch checks what a pool's allocator returns, and
    retries after emptying retired pools before it raises).
    Returns the library path."""
    import torch

    if _state["lib"] is not None:
        return _state["path"]
    rt = _route_of(route)
    if torch.cuda.is_initialized():
        raise RuntimeError("nxquota_torch.install() must run before the first CUDA use "
                           "(PyTorch cannot swap an initialised allocator, and allocations "
                           "made before would not be charged)")
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").replace(" ", "")
    if rt == "pool" and "expandable_segments:true" in conf.lower():
        raise ValueError("nxquota_torch: the pool route cannot run with PYTORCH_CUDA_ALLOC_CONF="
                         "expandable_segments:True (PyTorch's MemPools do not support expandable "
                         "segments; its segments would not come from libnxquota): unset it or "
                         "use route='tensor'")
    os.environ["NXQ_TORCH_ROUTE"] = rt      # the C library reads its configuration
    path = os.path.abspath(path) if path else library_path(oom)
    lib = _bind(ctypes.CDLL(path))
    r = lib.nxq_torch_configure()
    if r < 0:
        raise OSError(-r, "nxq_torch: " + lib.nxq_torch_last_error().decode(errors="replace"))
    entry = "nxq_torch_malloc"
    if rt == "tensor" and oom and hasattr(lib, "nxq_torch_malloc_oom"):
        entry = "nxq_torch_malloc_oom"
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, entry, "nxq_torch_free")
    if rt == "tensor":
        torch.cuda.memory.change_current_allocator(alloc)
        pools = hook = None
        if _state["user_hook"] is not None:
            hook = _HOOK(_tensor_hook)
            lib.nxq_torch_set_release_hook(hook, None)
            atexit.register(lib.nxq_torch_set_release_hook, _HOOK(), None)
    else:
        pools = _Pools(torch, alloc.allocator())
        pools.start(range(torch.cuda.device_count()))
        hook = _HOOK(pools.hook)
        lib.nxq_torch_set_release_hook(hook, None)
        # Unregister before the interpreter goes: a ticket's callback must
        # not enter a finalising interpreter.  ctypes drops the GIL for the
        # call, so a callback in progress can finish.
        atexit.register(lib.nxq_torch_set_release_hook, _HOOK(), None)
    # PyTorch holds the function pointers; keep the library, the wrapper and
    # the hook alive for the life of the process.
    _state.update(lib=lib, path=path, alloc=alloc, entry=entry, route=rt, pools=pools,
                  hook=hook)
    return path


def set_release_hook(fn):
    """fn(device, nbytes), or None: called before every release -- a
    pressure ticket, on libnxquota's thread, or release() -- so that the
    program can free memory it holds (a server: preempt requests and drop
    their KV caches) before the arena gives back what is idle.  ticket(),
    from inside fn, says which ticket it is for (its level: RECALL, a
    guarantee called back, or ASK).  It runs with the GIL taken by ctypes;
    an exception is counted as a hook error and otherwise ignored.  Pool
    route: called before the pool is retired.  May be called before or
    after install()."""
    if fn is not None and not callable(fn):
        raise TypeError("set_release_hook: not callable: %r" % (fn,))
    _state["user_hook"] = fn
    lib = _state["lib"]
    if lib is not None and _state["route"] == "tensor" and fn is not None and _state["hook"] is None:
        hook = _HOOK(_tensor_hook)
        lib.nxq_torch_set_release_hook(hook, None)
        atexit.register(lib.nxq_torch_set_release_hook, _HOOK(), None)
        _state["hook"] = hook


def _event(w):
    d = dict(zip(EVENT_FIELDS, (int(x) for x in w)))
    d["type"] = {EVENT_TICKET: "ticket", EVENT_ANSWER: "answer"}.get(d["type"], d["type"])
    d["level"] = LEVEL_NAMES.get(d["level"], d["level"])
    return d


def events(max_events=4096):
    """The pressure events of a managed context since the last call, oldest
    first: dicts of EVENT_FIELDS (type "ticket" or "answer"; t_ns is
    CLOCK_MONOTONIC, time.monotonic_ns()'s clock)."""
    lib = _lib()
    n = len(EVENT_FIELDS)
    buf = (ctypes.c_uint64 * (n * max_events))()
    got = lib.nxq_torch_events(buf, max_events)
    if got < 0:
        raise OSError(-got, "nxq_torch_events")
    return [_event(buf[i * n:(i + 1) * n]) for i in range(got)]


def ticket():
    """Inside the release hook on a ticket: that ticket (a dict as events()
    gives); None on a thread that has read no ticket (release())."""
    buf = (ctypes.c_uint64 * len(EVENT_FIELDS))()
    if _lib().nxq_torch_ticket(buf) < 0:
        return None
    return _event(buf)


def installed():
    """The entry point in use ('nxq_torch_malloc_oom' or 'nxq_torch_malloc'), or None."""
    return _state["entry"]


def route():
    """The route in use ("pool" or "tensor"), or None before install()."""
    return _state["route"]


def pool_info():
    """Pool route: {"rotations", "retired", "hook_errors", "live": {device: pool id}};
    None for the tensor route."""
    p = _state.get("pools")
    if p is None:
        return None
    with p.lock:
        return {"rotations": p.rotations, "retired": len(p.retired), "hook_errors": p.errors,
                "live": {d: tuple(pl.id) for d, pl in p.live.items()}}


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


def release(nbytes=None, device=None, foreign_thread=False):
    """Give back up to nbytes (None: everything idle) on one device (None: all)
    -- what a pressure ticket does: pool route, the pool is retired and
    PyTorch's cached segments come back first; then pending stream-ordered
    frees are waited for and retained handles and idle granules unmapped.
    Memory in use is never touched.  foreign_thread: run it on a thread the
    C library starts, as libnxquota's pressure thread would (tests).
    Returns the bytes released."""
    lib = _lib()
    want = (1 << 64) - 1 if nbytes is None else int(nbytes)
    fn = lib.nxq_torch_release_from_thread if foreign_thread else lib.nxq_torch_release
    r = fn(-1 if device is None else int(device), want)
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
