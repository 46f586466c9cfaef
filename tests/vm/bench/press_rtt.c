// SPDX-License-Identifier: GPL-2.0
/*
 * press_rtt: the pressure round trip next to a pipe ping-pong, measured in
 * the same VM boot between the same two processes.  A figure, not a test:
 * it fails only if the round trip does not work at all.
 *
 *   tests/vm/run.sh --bench [--kernel KVER]      (every program in tests/vm/bench/)
 *   inside the VM: /scen/press_rtt [ROUNDS]      (default 400)
 *
 * Two processes: W (the waiter, cgroup /nxq-bench-w) and H (the holder,
 * /nxq-bench-h, with an eventfd), on a 64M device that H fills.  Holders
 * belong to the process that registers them (ABI 2), so H registers its
 * own and W asks H, over the pipe, to uncharge or refill it.
 *
 *  (a) pressure round trip, timed in W around one ioctl: W's charge of 1M
 *      with NXQ_CHARGE_WAIT is refused, queued, a ticket opened on H and
 *      H's eventfd signalled; H, blocked in read(2) on its eventfd, wakes,
 *      NXQ_IOC_TICKET_READ, NXQ_IOC_TICKET_ANSWER releasing the 1M; the
 *      answer grants W's charge and wakes W.  (Untimed: W uncharges, H
 *      charges the 1M back.)
 *  (b) pipe ping-pong, timed in W: write 1 byte to H, H (blocked in
 *      read(2) on the pipe) writes 1 byte back, W reads it.
 *  (c) for scale: one NXQ_IOC_CHARGE that fits at once, timed alone.
 *
 * Before each timed round W sleeps 200 us so that H is surely asleep in
 * its read(2): both round trips include one wake-up of each process.
 * Rounds alternate in blocks of 50 between (a) and (b).  Two placements:
 * "split" (W on CPU 0, H on CPU 1) and "same" (both on CPU 0).  Output,
 * one line per placement and measure:
 *   BENCH press_rtt cpus=split what=pressure n=400 median_us=... p10_us=... p90_us=...
 *   BENCH press_rtt cpus=split ratio pressure/pipe=... (medians)
 * QEMU TCG slows everything down; the ratio is the figure.
 */
#include "scen.h"

#define KEY	"t-bench"
#define CW	"/nxq-bench-w"
#define CH	"/nxq-bench-h"
#define X	SC_MIB
#define BLOCK	50

static int p2h[2], h2p[2];
static int efd, hfd;
static uint64_t hid;

enum {
	CMD_PIPE = 'P', CMD_PRESS = 'T', CMD_EXIT = 'Q',
	CMD_UNCHARGE = 'U', CMD_CHARGE = 'C',	/* X, then reply "k" */
};

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) < 0)
		FAIL("sched_setaffinity(%d): %s", cpu, sc_errname(errno));
}

static void xread(int fd, void *b, size_t n)
{
	if (read(fd, b, n) != (ssize_t)n)
		FAIL("read: %s", sc_errname(errno));
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		FAIL("write: %s", sc_errname(errno));
}

/*
 * H: registers its holder, fills the device, then obeys blocks of rounds
 * (cpu is sent first) and single uncharge/charge commands.
 */
static int holder(void *arg)
{
	struct nxq_ticket t;
	uint64_t v;
	char c, b;
	int i, n, cpu;

	(void)arg;
	close(p2h[1]);
	close(h2p[0]);
	hfd = sc_open();
	CHECK_OK(hfd);
	efd = eventfd(0, EFD_CLOEXEC);	/* blocking: H sleeps in read(2) */
	CHECK(efd >= 0);
	CHECK_OK(sc_register(hfd, KEY, efd, 0, &hid));
	CHECK_OK(sc_charge(hfd, hid, 64 * SC_MIB, NULL));
	xwrite(h2p[1], "k", 1);
	for (;;) {
		xread(p2h[0], &c, 1);
		if (c == CMD_EXIT) {
			CHECK_OK(sc_close(hfd));
			close(efd);
			return 0;
		}
		if (c == CMD_UNCHARGE || c == CMD_CHARGE) {
			CHECK_OK(c == CMD_CHARGE ? sc_charge(hfd, hid, X, NULL) :
				 sc_uncharge(hfd, hid, X, NULL));
			xwrite(h2p[1], "k", 1);
			continue;
		}
		xread(p2h[0], &n, sizeof(n));
		xread(p2h[0], &cpu, sizeof(cpu));
		pin(cpu);
		xwrite(h2p[1], "k", 1);
		for (i = 0; i < n; i++) {
			if (c == CMD_PIPE) {
				xread(p2h[0], &b, 1);
				xwrite(h2p[1], &b, 1);
				continue;
			}
			/* Pressure: the ticket, the answer, then refill. */
			xread(efd, &v, sizeof(v));
			CHECK_OK(sc_ticket_read(hfd, hid, &t));
			CHECK_EQ(t.bytes, X);
			CHECK_OK(sc_ticket_answer(hfd, hid, t.generation,
						  t.bytes, NULL));
			xread(p2h[0], &b, 1);
			CHECK_OK(sc_charge(hfd, hid, X, NULL));
			xwrite(h2p[1], "k", 1);
		}
	}
}

/* Ask H to uncharge or charge X, and wait until it has. */
static void h_cmd(char cmd)
{
	char b;

	xwrite(p2h[1], &cmd, 1);
	xread(h2p[0], &b, 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, int n, int p)
{
	return v[(int64_t)(n - 1) * p / 100];
}

static double report(const char *cpus, const char *what, uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	sc_log("BENCH press_rtt cpus=%s what=%s n=%d median_us=%.1f "
	       "p10_us=%.1f p90_us=%.1f", cpus, what, n,
	       pct(v, n, 50) / 1e3, pct(v, n, 10) / 1e3, pct(v, n, 90) / 1e3);
	return pct(v, n, 50) / 1e3;
}

static void run(const char *cpus, int cpu_w, int cpu_h, int rounds, int wfd,
		uint64_t wid)
{
	uint64_t *pp = calloc(rounds, sizeof(uint64_t));
	uint64_t *pr = calloc(rounds, sizeof(uint64_t));
	uint64_t *ch = calloc(rounds, sizeof(uint64_t));
	uint64_t t0, c = 0;
	int done = 0, i, k, n;
	double mp, mr, mc;
	char cmd, b;

	CHECK(pp && pr && ch);
	pin(cpu_w);
	while (done < rounds) {
		n = rounds - done < BLOCK ? rounds - done : BLOCK;
		for (k = 0; k < 2; k++) {
			cmd = k ? CMD_PRESS : CMD_PIPE;
			xwrite(p2h[1], &cmd, 1);
			xwrite(p2h[1], &n, sizeof(n));
			xwrite(p2h[1], &cpu_h, sizeof(cpu_h));
			xread(h2p[0], &b, 1);
			for (i = 0; i < n; i++) {
				usleep(200);
				if (!k) {
					t0 = sc_now_ns();
					xwrite(p2h[1], "p", 1);
					xread(h2p[0], &b, 1);
					pp[done + i] = sc_now_ns() - t0;
					continue;
				}
				t0 = sc_now_ns();
				CHECK_OK(sc_charge_wait(wfd, wid, X,
							10ULL * 1000000000,
							&c));
				pr[done + i] = sc_now_ns() - t0;
				CHECK_EQ(c, X);
				CHECK_OK(sc_uncharge(wfd, wid, X, NULL));
				xwrite(p2h[1], "r", 1);
				xread(h2p[0], &b, 1);
			}
		}
		done += n;
	}
	/* (c) a charge that fits, for scale (the device has 1M free now). */
	h_cmd(CMD_UNCHARGE);
	for (i = 0; i < rounds; i++) {
		t0 = sc_now_ns();
		CHECK_OK(sc_charge(wfd, wid, X, NULL));
		ch[i] = sc_now_ns() - t0;
		CHECK_OK(sc_uncharge(wfd, wid, X, NULL));
	}
	mp = report(cpus, "pipe", pp, rounds);
	mr = report(cpus, "pressure", pr, rounds);
	mc = report(cpus, "charge-fits", ch, rounds);
	sc_log("BENCH press_rtt cpus=%s ratio pressure/pipe=%.2f "
	       "charge-fits/pipe=%.2f (medians)", cpus, mr / mp, mc / mp);
	free(pp);
	free(pr);
	free(ch);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 400;
	uint64_t wid = 0;
	char cmd = CMD_EXIT, b;
	pid_t pid;
	int wfd, wefd;

	sc_init(argc, argv);
	if (rounds < 10)
		FAIL("usage: press_rtt [ROUNDS >= 10]");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP("needs 2 CPUs");
	CHECK_OK(sc_dev_register_open(KEY, "64M"));
	CHECK_OK(sc_cg_create(CW));
	CHECK_OK(sc_cg_create(CH));
	CHECK(pipe(p2h) == 0 && pipe(h2p) == 0);

	/* H, in CH, registers its own holder and fills the device. */
	CHECK_OK(sc_cg_enter(CH));
	pid = sc_spawn(holder, NULL);
	close(p2h[0]);
	close(h2p[1]);
	xread(h2p[0], &b, 1);
	CHECK_EQ(DEV_U64(KEY, "used"), 64 * SC_MIB);

	/* W borrows (no guarantee), so its holder must be askable. */
	CHECK_OK(sc_cg_enter(CW));
	wfd = sc_open();
	CHECK_OK(wfd);
	wefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(wefd >= 0);
	CHECK_OK(sc_register(wfd, KEY, wefd, 0, &wid));
	CHECK_OK(sc_cg_enter("/"));

	run("split", 0, 1, rounds, wfd, wid);
	h_cmd(CMD_CHARGE);	/* full again */
	run("same", 0, 0, rounds, wfd, wid);

	xwrite(p2h[1], &cmd, 1);
	CHECK_CHILD_OK(pid);
	sc_log("BENCH press_rtt tickets=%" PRIu64 " bytes_released=%" PRIu64
	       " waits=%" PRIu64 " timeouts=%" PRIu64,
	       DEV_U64(KEY, "tickets"), DEV_U64(KEY, "bytes_released"),
	       DEV_U64(KEY, "waits"), DEV_U64(KEY, "timeouts"));
	CHECK_EQ(DEV_U64(KEY, "timeouts"), 0);
	CHECK_OK(sc_close(wfd));
	close(wefd);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CW));
	CHECK_OK(sc_cg_remove(CH));
	PASS();
}
