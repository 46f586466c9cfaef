# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A ticket opened on a holder right after it answered the previous one
must be read (found by the serving benchmark's recall probe; the cause
was nxquotad's signal thread, fixed in daemon/signal.c).

On the fake driver with nxquotad: a borrower B (no min) fills a capacity
of 128 MiB and drops it all (idle, still charged); G (min 64 MiB, waiting
up to 5 s) asks for 64 MiB in --piece pieces, so that B gets one RECALL
ticket per piece in quick succession.  Seen at 7905685 with 16 MiB
pieces: B read and answered tickets 145 and 146, nxquotad opened 147 on
it, and B never read it; G timed out after 5 s.  The signal thread kept
B's eventfd marked "queued" until its write for 146 returned, and B had
been woken, had drained the eventfd and answered before then: the signal
for 147 was skipped.  Before the fix, 3 runs of 300 rounds failed at
rounds 36, 194 and 9; after it, 5 runs of 300 rounds all passed
(nxqd_test_ticket_during_write holds the window open deterministically).
make -C bench/serve check runs 200 rounds.

    NXQ_FAKE_CUDA=1 LD_LIBRARY_PATH=tests/fakecuda \\
        python3 bench/serve/repro_lost_ticket.py [--rounds 80] [--piece-mib 16]

Root and cgroup2.  Exit 1 (and the authority's view of the holders) when
a round times out, 0 when every round was granted."""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve  # noqa: E402

MiB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--piece-mib", type=int, default=16)
    a = ap.parse_args()
    root = serve.cgroot()
    if os.geteuid() != 0 or root is None:
        print("skipped: needs root and cgroup2")
        return 0
    nxqd = serve.pick(TOP + "/build/nxquotad-demo/nxquotad", TOP + "/build/demo-gpu-bin/nxquotad")
    ctl = serve.pick(TOP + "/tools/nxquotactl", TOP + "/build/demo-gpu-bin/nxquotactl")
    w = subprocess.run([TOP + "/bench/gpu_tenant", "--probe"], capture_output=True,
                       text=True).stdout.split()
    key, total, nbytes = w[1], int(w[3]), 64 * MiB
    auth = serve.Authority(nxqd, ctl, root)
    ps = {}
    rc = 0
    try:
        auth.ctl("devices", "register", key, total)
        auth.ctl("devices", "capacity", key, 2 * nbytes)
        for n in ("g", "b"):
            os.makedirs(root + "/nxqlost-" + n, exist_ok=True)
        auth.ctl("set", "/nxqlost-g", key, "max=%d" % (2 * nbytes), "min=%d" % nbytes)
        auth.ctl("set", "/nxqlost-b", key, "max=%d" % (2 * nbytes))
        for n, extra in (("g", {"NXQ_TORCH_GROW_TIMEOUT_MS": "5000"}), ("b", {})):
            env = dict(os.environ, NXQ_TORCH_CONTEXT="managed",
                       NXQUOTA_SOCKET=auth.env["NXQUOTA_SOCKET"], **extra)
            ps[n] = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "server.py"), "--probe", "--tenant", n,
                 "--engine", "mock", "--alloc", "nxq", "--cgroup", "/nxqlost-" + n,
                 "--probe-piece", str(a.piece_mib * MiB)],
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            ps[n].stdout.readline()

        def ask(n, cmd):
            ps[n].stdin.write(cmd + "\n")
            ps[n].stdin.flush()
            return ps[n].stdout.readline().strip()
        for i in range(a.rounds):
            ask("b", "fill %d" % (8 * MiB))
            ask("b", "free")
            ask("b", "events")
            g = ask("g", "grow %d" % nbytes)
            if " oom " in " " + g + " ":
                print("round %d: G was not granted: %s" % (i, g[:300]))
                print("B's events:", ask("b", "events")[:1500])
                print(auth.ctl("status"))
                rc = 1
                break
            ask("g", "free")
            ask("g", "release")
            ask("b", "release")
        else:
            print("every round of %d granted (%d MiB pieces)" % (a.rounds, a.piece_mib))
    finally:
        for p in ps.values():
            p.kill()
            p.wait()
        auth.stop()
        for n in ("g", "b"):
            try:
                os.rmdir(root + "/nxqlost-" + n)
            except OSError:
                pass
    return rc


if __name__ == "__main__":
    sys.exit(main())
