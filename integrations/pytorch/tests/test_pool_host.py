# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The pool route's Python side without a GPU or PyTorch (make check-host).

nxquota_torch runs against a stand-in for the few torch calls the route
makes (FakeTorch below), which models what PyTorch 2.11's caching
allocator does with pools and enforces what would crash or leak there:
  * a MemPool is never destroyed (its destructor under an active routing
    trips "captures_underway.empty()" and aborts the process);
  * a device is never without a routing between install and exit (an
    allocation meanwhile would go to PyTorch's default pool, uncharged);
  * a pool's use count never goes below 0, and a retired pool reaches 0
    (freeable: emptyCache returns its cached segments);
  * emptyCache comes after the retirement.
The C library is the real one (build/libnxq_torch.so, host backend): a
release goes through nxq_torch_release(), the release hook and a ctypes
callback, from the caller's thread and from a thread the C library starts
(as a pressure ticket would).  Prints one line per check and
"N passed, N failed"; exit 1 if any failed.
"""
import contextlib
import ctypes
import gc
import os
import subprocess
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, TOP)
passed = failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
    print(("ok   " if cond else "FAIL ") + msg)
    sys.stdout.flush()


class FakeTorch(types.ModuleType):
    """torch.cuda.MemPool, the pool calls of torch._C, CUDAPluggableAllocator."""

    def __init__(self, ndev=2):
        super().__init__("torch")
        self.ndev = ndev
        self.log = []               # (call, device, pool id)
        self.violations = []
        self.use = {}               # pool id -> use count
        self.routing = []           # [device, pool id], in order (first match wins)
        self.destroyed = []
        self.swapped = False
        self.raise_in_begin = False
        self.next_id = 1
        self.cur = 0
        fake = self

        class MemPool:
            def __init__(self, allocator=None):
                self.id = (0, fake.next_id)
                self.device = fake.cur
                fake.next_id += 1
                fake.use[self.id] = 1
                self.allocator = allocator
                fake.log.append(("MemPool", self.device, self.id))

            def __del__(self):
                fake.destroyed.append(self.id)

        class Alloc:
            def __init__(self, path, entry, free):
                self.path, self.entry, self.free = path, entry, free

            def allocator(self):
                return ("allocator", self.entry)

        def device(d):
            @contextlib.contextmanager
            def cm():
                old, fake.cur = fake.cur, d
                try:
                    yield
                finally:
                    fake.cur = old
            return cm()

        def change_current_allocator(a):
            fake.swapped = True

        self.cuda = types.SimpleNamespace(
            is_initialized=lambda: False, device_count=lambda: fake.ndev, device=device,
            MemPool=MemPool,
            memory=types.SimpleNamespace(CUDAPluggableAllocator=Alloc,
                                         change_current_allocator=change_current_allocator))

        def begin(d, pid):
            if fake.raise_in_begin:
                raise RuntimeError("injected failure")
            fake.log.append(("begin", d, pid))
            fake.use[pid] += 1
            fake.routing.append([d, pid])

        def end(d, pid):
            fake.log.append(("end", d, pid))
            fake.routing.remove([d, pid])
            if not any(r[0] == d for r in fake.routing):
                fake.violations.append("device %d without routing after end %r" % (d, pid))

        def release(d, pid):
            fake.log.append(("releasePool", d, pid))
            fake.use[pid] -= 1
            if fake.use[pid] < 0:
                fake.violations.append("use count of %r below 0" % (pid,))

        def empty():
            fake.log.append(("emptyCache", -1, None))

        self._C = types.SimpleNamespace(_cuda_beginAllocateToPool=begin,
                                        _cuda_endAllocateToPool=end,
                                        _cuda_releasePool=release, _cuda_emptyCache=empty)


def main_pool():
    fake = FakeTorch()
    sys.modules["torch"] = fake
    os.environ.update(NXQ_TORCH_BACKEND="host", NXQ_TORCH_CONTEXT="unmanaged")
    os.environ.pop("NXQ_TORCH_ROUTE", None)
    import nxquota_torch as nt

    try:
        nt.install(route="bogus")
        check(False, "install(route='bogus') refused")
    except ValueError as e:
        check("bogus" in str(e), "install(route='bogus') refused: %s" % e)
    nt.install(route="pool")
    check(nt.route() == "pool" and not fake.swapped
          and "route=pool" in nt.config() and os.environ.get("NXQ_TORCH_ROUTE") == "pool",
          "pool route: caching allocator not swapped, C library configured "
          "(%s)" % nt.config().split(" (")[0])
    live0 = nt.pool_info()["live"]
    check(sorted(live0) == [0, 1] and all(fake.use[p] == 2 for p in live0.values())
          and [r[1] for r in fake.routing] == [live0[0], live0[1]],
          "one pool per device, routed for every thread (use count 2 each)")

    lib = nt._state["lib"]
    lib.nxq_torch_malloc.restype = ctypes.c_void_p
    lib.nxq_torch_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    check(lib.nxq_torch_malloc(1 << 20, 0, None) is not None, "an arena on device 0 (host)")

    main_tid = threading.get_ident()
    seen = []
    orig = nt._state["pools"].rotate

    def spy(device=None):
        seen.append((threading.get_ident(), device))
        return orig(device)
    nt._state["pools"].rotate = spy

    n0 = len(fake.log)
    nt.release()
    info = nt.pool_info()
    new_ids = info["live"]
    calls = fake.log[n0:]
    names = [c[0] for c in calls]
    check(info["rotations"] == 2 and info["retired"] == 2 and seen == [(main_tid, None)]
          and all(new_ids[d] != live0[d] for d in (0, 1)),
          "release(): both devices' pools retired, new ones routed, on the caller's thread")
    order_ok = True
    for d in (0, 1):
        b = calls.index(("begin", d, new_ids[d]))
        e = calls.index(("end", d, live0[d]))
        r = [i for i, c in enumerate(calls) if c == ("releasePool", d, live0[d])]
        order_ok &= b < e and len(r) == 2 and all(i > e for i in r)
    check(order_ok and names[-1] == "emptyCache" and names.count("emptyCache") == 1,
          "order per device: new routing begins, old ends, two references dropped; then one "
          "emptyCache")
    check(all(fake.use[live0[d]] == 0 for d in (0, 1)) and all(fake.use[new_ids[d]] == 2
                                                            for d in (0, 1)),
          "retired pools reach use count 0 (freeable), new ones hold 2")
    s = nt.stats(0)
    check(s["hook_calls"] == 1 and s["hook_errors"] == 0 and s["route"] == 1,
          "C library counted one hook call, no error")

    # As a ticket: from a thread the C library starts (ctypes takes the GIL there).
    seen.clear()
    nt.release(8 << 20, device=1, foreign_thread=True)
    info2 = nt.pool_info()
    check(len(seen) == 1 and seen[0][0] != main_tid and seen[0][1] == 1
          and info2["rotations"] == 3 and info2["live"][0] == new_ids[0]
          and info2["live"][1] != new_ids[1],
          "release from a C thread: the hook ran there, only device 1's pool retired")

    # Concurrent releases from Python and C threads: serialised, never a device
    # without routing, counts add up.
    def hammer(k):
        for i in range(20):
            nt.release(foreign_thread=(i + k) % 2 == 1)
    ts = [threading.Thread(target=hammer, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    info3 = nt.pool_info()
    s = nt.stats(0)
    check(info3["rotations"] == 3 + 60 * 2 and info3["retired"] == info3["rotations"]
          and s["hook_calls"] == 2 + 60 and s["hook_errors"] == 0
          and sorted(r[0] for r in fake.routing) == [0, 1],
          "60 releases from 3 threads, half from C threads: %d rotations, one routing per "
          "device left" % info3["rotations"])

    # An exception inside the hook does not cross into C: counted, release goes on.
    fake.raise_in_begin = True
    r = nt.release()
    fake.raise_in_begin = False
    s = nt.stats(0)
    check(r >= 0 and s["hook_errors"] == 1 and nt.pool_info()["hook_errors"] == 1
          and sorted(r[0] for r in fake.routing) == [0, 1],
          "an exception in the hook: -EIO counted (hook_errors 1), release returned %d, "
          "routing intact" % r)

    gc.collect()
    check(not fake.destroyed, "no MemPool destroyed (%d retired kept alive)"
          % nt.pool_info()["retired"])
    check(not fake.violations, "no device without routing, no use count below 0%s"
          % ("" if not fake.violations else ": " + "; ".join(fake.violations[:3])))


def main_tensor():
    fake = FakeTorch(ndev=1)
    sys.modules["torch"] = fake
    os.environ.update(NXQ_TORCH_BACKEND="host", NXQ_TORCH_CONTEXT="unmanaged")
    os.environ.pop("NXQ_TORCH_ROUTE", None)
    import nxquota_torch as nt
    nt.install()
    ok = (nt.route() == nt.DEFAULT_ROUTE == "tensor" and fake.swapped and nt.pool_info() is None
          and not fake.routing and "route=tensor" in nt.config())
    print("tensor-ok" if ok else "tensor-bad %r" % ((nt.route(), fake.swapped, fake.routing),))
    # the program's release hook on this route: called on every release,
    # from this thread and from a C thread (as a ticket), ticket() None
    # outside a ticket, an exception counted, no events unmanaged
    lib = nt._state["lib"]
    lib.nxq_torch_malloc.restype = ctypes.c_void_p
    lib.nxq_torch_malloc(1 << 20, 0, None)          # an arena, for stats()
    calls = []
    nt.set_release_hook(lambda d, n: calls.append((d, n, nt.ticket())))
    nt.release()
    nt.release(nbytes=4096, device=0, foreign_thread=True)

    def bad(d, n):
        raise RuntimeError("a program's hook failing")
    nt.set_release_hook(bad)
    nt.release()
    nt.set_release_hook(None)
    nt.release()
    st = nt.stats(0)
    ok = (calls == [(-1, (1 << 64) - 1, None), (0, 4096, None)] and st["hook_calls"] == 4
          and st["hook_errors"] == 1 and nt.events() == [])
    print("hook-ok" if ok else "hook-bad %r" % ((calls, st["hook_calls"], st["hook_errors"]),))


def main_expandable():
    sys.modules["torch"] = FakeTorch(ndev=1)
    os.environ.update(NXQ_TORCH_BACKEND="host", NXQ_TORCH_CONTEXT="unmanaged",
                      PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:64, expandable_segments:True")
    os.environ.pop("NXQ_TORCH_ROUTE", None)
    import nxquota_torch as nt
    try:
        nt.install(route="pool")
        print("expandable-bad: installed")
    except ValueError as e:
        ok = ("expandable_segments" in str(e) and nt.route() is None
              and not sys.modules["torch"].routing)
        print("expandable-ok" if ok else "expandable-bad %s" % e)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "tensor":
        main_tensor()
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "expandable":
        main_expandable()
        return 0
    if not os.path.exists(os.path.join(TOP, "build", "libnxq_torch.so")):
        print("FAIL build/libnxq_torch.so is not built")
        return 1
    p = subprocess.run([sys.executable, __file__, "tensor"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    out = p.stdout.decode(errors="replace")
    check(p.returncode == 0 and "tensor-ok" in out,
          "default route (tensor): the caching allocator is swapped, no pool, no hook%s"
          % ("" if "tensor-ok" in out else ": " + out[-300:]))
    check(p.returncode == 0 and "hook-ok" in out,
          "tensor route: set_release_hook()'s function called on every release, from a C "
          "thread too, ticket() None outside a ticket, an exception counted, no events%s"
          % ("" if "hook-ok" in out else ": " + out[-300:]))
    p = subprocess.run([sys.executable, __file__, "expandable"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    out = p.stdout.decode(errors="replace")
    check(p.returncode == 0 and "expandable-ok" in out,
          "pool route with PYTORCH_CUDA_ALLOC_CONF=...expandable_segments:True: refused "
          "before anything is set up%s" % ("" if "expandable-ok" in out else ": " + out[-300:]))
    main_pool()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
