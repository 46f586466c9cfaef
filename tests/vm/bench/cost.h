/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cost.h - shared by the cost_* figures (tests/vm/bench/): the charge +
 * uncharge pair and the null ioctl, timed one by one in the calling
 * process, medians over many samples.  Each cost_* program prints
 *   BENCH cost_NAME what=... n=... median_ns=... p10_ns=... p90_ns=...
 *         p99_ns=... max_ns=... mean_ns=...
 *   BENCH cost_NAME ratio ...=X (target <= T); means xM, p99 xP
 * The ratio is of medians (issue 10's targets); the means and p99 show
 * stalls that hit only some pairs (a lock held for long, now and then).
 * A measure stops after 3000 samples or 20 s, whichever comes first.
 * Figures, not tests: a program fails only if what it measures does not
 * work at all; the ratios are read by a person (issue 10's targets are
 * printed next to them).
 */
#ifndef NXQ_TESTS_VM_BENCH_COST_H
#define NXQ_TESTS_VM_BENCH_COST_H

#include "scen.h"
#include "scenarios/tenant.h"

#define CB_M	SC_MIB

static SC_UNUSED void cb_pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) < 0)
		FAIL("sched_setaffinity(%d): %s", cpu, sc_errname(errno));
}

struct cb_stat {
	uint64_t median, p10, p90, p99, max, mean;
	int n;
};

static SC_UNUSED struct cb_stat cb_stats(uint64_t *v, int n)
{
	struct cb_stat s;
	uint64_t sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof(*v), tn_cmp_u64);
	s.n = n;
	s.mean = n ? sum / n : 0;
	s.p99 = v[(n - 1) * 99 / 100];
	s.max = v[n - 1];
	s.median = v[n / 2];
	s.p10 = v[(n - 1) / 10];
	s.p90 = v[(n - 1) * 9 / 10];
	return s;
}

static SC_UNUSED void cb_print(const char *prog, const char *what,
			       struct cb_stat s)
{
	sc_log("BENCH %s what=%s n=%d median_ns=%llu p10_ns=%llu p90_ns=%llu "
	       "p99_ns=%llu max_ns=%llu mean_ns=%llu", prog, what, s.n,
	       (unsigned long long)s.median, (unsigned long long)s.p10,
	       (unsigned long long)s.p90, (unsigned long long)s.p99,
	       (unsigned long long)s.max, (unsigned long long)s.mean);
}

/* One null ioctl (NXQ_IOC_VERSION), timed around the ioctl() alone. */
static SC_UNUSED uint64_t cb_null1(int fd)
{
	struct nxq_version ver;
	uint64_t t0, t;

	memset(&ver, 0, sizeof(ver));
	ver.size = sizeof(ver);
	t0 = sc_now_ns();
	if (ioctl(fd, NXQ_IOC_VERSION, &ver) < 0)
		FAIL("NXQ_IOC_VERSION: %s", sc_errname(errno));
	t = sc_now_ns() - t0;
	return t;
}

/* n null ioctls, or fewer if max_ms runs out. */
static SC_UNUSED struct cb_stat cb_null(int fd, int n, int max_ms)
{
	uint64_t *v = calloc(n, sizeof(*v)), end = sc_now_ms() + max_ms;
	int i;

	CHECK(v);
	for (i = 0; i < n && (i < 5 || sc_now_ms() < end); i++)
		v[i] = cb_null1(fd);
	{
		struct cb_stat s = cb_stats(v, i);

		free(v);
		return s;
	}
}

/*
 * One charge+uncharge pair of bytes on holder id, timed around the two
 * ioctl()s alone, as cb_null() times its ioctl(): the arguments are
 * filled in before the clock starts.  Returns its ns.
 */
static SC_UNUSED uint64_t cb_pair1(int fd, uint64_t id, uint64_t bytes, int i)
{
	struct nxq_charge c, u;
	uint64_t t0, t;
	int rc, ru;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.holder_id = id;
	c.bytes = bytes;
	u = c;
	t0 = sc_now_ns();
	rc = ioctl(fd, NXQ_IOC_CHARGE, &c);
	ru = ioctl(fd, NXQ_IOC_UNCHARGE, &u);
	t = sc_now_ns() - t0;
	if (rc < 0 || ru < 0)
		FAIL("pair %d: %s: %s", i, rc < 0 ? "charge" : "uncharge",
		     sc_errname(errno));
	return t;
}

/* n charge+uncharge pairs of bytes on holder id, or fewer in max_ms. */
static SC_UNUSED struct cb_stat cb_pairs(int fd, uint64_t id, uint64_t bytes,
					 int n, int max_ms)
{
	uint64_t *v = calloc(n, sizeof(*v)), end = sc_now_ms() + max_ms;
	int i;

	CHECK(v);
	for (i = 0; i < n && (i < 5 || sc_now_ms() < end); i++)
		v[i] = cb_pair1(fd, id, bytes, i);
	{
		struct cb_stat s = cb_stats(v, i);

		free(v);
		return s;
	}
}

/*
 * n null ioctls and n pairs, alternately: one of each in turn, so that
 * a slow spell of the host (TCG on a shared machine) falls on both
 * series alike and their ratio is side by side.
 */
static SC_UNUSED void cb_null_pairs(int fd, uint64_t id, uint64_t bytes,
				    int n, int max_ms, struct cb_stat *nul,
				    struct cb_stat *pair)
{
	uint64_t *v = calloc(n, sizeof(*v)), *w = calloc(n, sizeof(*w));
	uint64_t end = sc_now_ms() + max_ms;
	int i;

	CHECK(v && w);
	for (i = 0; i < n && (i < 5 || sc_now_ms() < end); i++) {
		v[i] = cb_null1(fd);
		w[i] = cb_pair1(fd, id, bytes, i);
	}
	*nul = cb_stats(v, i);
	*pair = cb_stats(w, i);
	free(v);
	free(w);
}

/*
 * n pairs on holder a and n on holder b (of another device), one of
 * each in turn: the same process, the same moment, two ledgers.
 */
static SC_UNUSED void cb_pairs_ab(int fd, uint64_t a, uint64_t b,
				  uint64_t bytes, int n, int max_ms,
				  struct cb_stat *sa, struct cb_stat *sb)
{
	uint64_t *v = calloc(n, sizeof(*v)), *w = calloc(n, sizeof(*w));
	uint64_t end = sc_now_ms() + max_ms;
	int i;

	CHECK(v && w);
	for (i = 0; i < n && (i < 5 || sc_now_ms() < end); i++) {
		v[i] = cb_pair1(fd, a, bytes, i);
		w[i] = cb_pair1(fd, b, bytes, i);
	}
	*sa = cb_stats(v, i);
	*sb = cb_stats(w, i);
	free(v);
	free(w);
}

static SC_UNUSED int cb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static SC_UNUSED void cb_ratio(const char *prog, const char *what,
			       struct cb_stat a, struct cb_stat b,
			       const char *target)
{
	sc_log("BENCH %s ratio %s=%.2f (medians %llu/%llu ns; target %s); "
	       "means x%.2f, p99 x%.2f", prog, what,
	       (double)a.median / (b.median ? b.median : 1),
	       (unsigned long long)a.median, (unsigned long long)b.median,
	       target, (double)a.mean / (b.mean ? b.mean : 1),
	       (double)a.p99 / (b.p99 ? b.p99 : 1));
}

/* Try a limit line; on refusal only say so (figures go on). */
static SC_UNUSED void cb_limits(const char *key, const char *spec)
{
	int rc = sc_write(sc_dev_path(key, "set_budget"), spec);

	if (rc)
		sc_log("NOTE: set_budget \"%s\": %s", spec, sc_errname(-rc));
}

/* The neighbour: a process of its own in cg, pinned to cpu, with a
 * holder (and an eventfd); it times the null ioctl and the pair when
 * asked over a pipe and sends the stats back. */
struct cb_nb {
	pid_t pid;
	int cmd, rep;
};

static SC_UNUSED void cb_nb_start2(struct cb_nb *nb, const char *cg,
				   const char *key, const char *key2, int cpu)
{
	int c[2], r[2];

	CHECK(pipe(c) == 0 && pipe(r) == 0);
	nb->pid = sc_fork();
	if (nb->pid == 0) {
		uint64_t id = 0, id2 = 0, op;
		int fd, efd;

		close(c[1]);
		close(r[0]);
		CHECK_OK(sc_cg_enter(cg));
		tn_drop(1, 0);
		cb_pin(cpu);
		fd = sc_open();
		CHECK_OK(fd);
		efd = sc_eventfd();
		CHECK_OK(sc_register(fd, key, efd, 0, &id));
		if (key2)
			CHECK_OK(sc_register(fd, key2, efd, 0, &id2));
		for (;;) {
			struct cb_stat s;

			if (sc_recv(c[0], &op, -1) < 0)
				_exit(0);
			if (op == 0)
				_exit(0);
			if (op == 3 || op == 4) {
				struct cb_stat two[2];

				if (op == 3)
					cb_null_pairs(fd, id, CB_M, 6000,
						      30000, &two[0],
						      &two[1]);
				else
					cb_pairs_ab(fd, id, id2, CB_M, 6000,
						    30000, &two[0], &two[1]);
				if (write(r[1], two, sizeof(two)) !=
				    sizeof(two))
					_exit(1);
				continue;
			}
			if (op == 1)
				s = cb_null(fd, 3000, 20000);
			else
				s = cb_pairs(fd, id, CB_M, 3000, 20000);
			if (write(r[1], &s, sizeof(s)) != sizeof(s))
				_exit(1);
		}
	}
	close(c[0]);
	close(r[1]);
	nb->cmd = c[1];
	nb->rep = r[0];
}

static SC_UNUSED void cb_nb_start(struct cb_nb *nb, const char *cg,
				  const char *key, int cpu)
{
	cb_nb_start2(nb, cg, key, NULL, cpu);
}

/* op 1: null ioctls, 2: pairs. */
static SC_UNUSED struct cb_stat cb_nb_measure(struct cb_nb *nb, int op)
{
	struct cb_stat s;
	struct pollfd p = { .fd = nb->rep, .events = POLLIN };

	CHECK_OK(sc_send(nb->cmd, op));
	if (poll(&p, 1, 60000) != 1 || read(nb->rep, &s, sizeof(s)) !=
	    sizeof(s))
		FAIL("no figures from the neighbour");
	return s;
}

/*
 * Two series, interleaved: op 3, the null ioctl and the pair; op 4
 * (cb_nb_start2()), the pair on key and the pair on key2.
 */
static SC_UNUSED void cb_nb_measure_op(struct cb_nb *nb, int op,
				       struct cb_stat *x, struct cb_stat *y)
{
	struct cb_stat two[2];
	struct pollfd p = { .fd = nb->rep, .events = POLLIN };

	CHECK_OK(sc_send(nb->cmd, op));
	if (poll(&p, 1, 60000) != 1 || read(nb->rep, two, sizeof(two)) !=
	    sizeof(two))
		FAIL("no figures from the neighbour");
	*x = two[0];
	*y = two[1];
}

static SC_UNUSED void cb_nb_measure2(struct cb_nb *nb, struct cb_stat *nul,
				     struct cb_stat *pair)
{
	cb_nb_measure_op(nb, 3, nul, pair);
}

static SC_UNUSED void cb_nb_stop(struct cb_nb *nb)
{
	CHECK_OK(sc_send(nb->cmd, 0));
	CHECK_CHILD_OK(nb->pid);
	close(nb->cmd);
	close(nb->rep);
}

#endif /* NXQ_TESTS_VM_BENCH_COST_H */
