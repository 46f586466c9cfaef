// SPDX-License-Identifier: GPL-2.0
/*
 * cost_waiters: a neighbour's charge+uncharge pair while an attacker keeps
 * waiters queued on the same device, against the same pair on a second
 * device with no waiters, one of each in turn (issue 10's and issue 22's
 * target: at most 3x).
 *
 * The attacker (uid 65534, /cb-w, max 10M, at its max; root raised its
 * waiters_max and holders_max) has N threads waiting for 1M each, in one
 * of these shapes:
 *   sleep    a holder per waiter, each waiting 600 s (they sleep)
 *   onehold  all N waiting on one holder
 *   churn    a holder per waiter, each waiting 1 ms and again, in a loop
 *            (every wait enqueues, times out and leaves)
 *   refuse   as sleep, and one more thread charging 1M without waiting,
 *            refused, in a loop (each refusal meets the queue)
 *   grant    a holder per waiter; the cgroup has 1M free, so one is
 *            granted at a time, gives it back at once and waits again:
 *            a grant every few microseconds, each of which woke every
 *            sleeper of the device before issue 30 (wake_up_all() on
 *            the device's queue; now only the granted waiter is woken)
 * The neighbour (uid 65534, /cb-n, CPU 0; the attacker on CPU 1) times
 * 1M pairs on this device and on the quiet one, in turn.  N is 100, 300
 * and 1000 (NXQ_BENCH_WAITERS: one of them); NXQ_BENCH_SHAPE (0-4) runs
 * one shape.
 */
#include "cost.h"

#define KEY	"t-cbw"
#define KEY0	"t-cbw0"	/* no waiters: the quiet ledger */
#define CN	"/cb-n"
#define CW	"/cb-w"

enum { SH_SLEEP, SH_ONEHOLD, SH_CHURN, SH_REFUSE, SH_GRANT, SH_NR };
static const char *const shape_name[SH_NR] = {
	"sleep", "onehold", "churn", "refuse", "grant"
};

struct waiter {
	int fd, shape;
	uint64_t id;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	if (w->shape == SH_CHURN)
		for (;;)
			sc_charge_wait(w->fd, w->id, CB_M, 1000000, NULL);
	if (w->shape == SH_GRANT)
		for (;;)
			if (!sc_charge_wait(w->fd, w->id, CB_M,
					    600ULL * 1000000000, NULL))
				sc_uncharge(w->fd, w->id, CB_M, NULL);
	sc_charge_wait(w->fd, w->id, CB_M, 600ULL * 1000000000, NULL);
	return NULL;
}

static void *refuse_thread(void *arg)
{
	struct waiter *w = arg;

	for (;;)
		sc_charge(w->fd, w->id, CB_M, NULL);
	return NULL;
}

struct attack {
	int n, shape;
};

static int attacker(void *arg)
{
	struct attack *a = arg;
	struct waiter *w = calloc(a->n + 1, sizeof(*w));
	pthread_attr_t at;
	pthread_t th;
	uint64_t fill;
	int fd, efd, i;

	CHECK_OK(sc_cg_enter(CW));
	tn_drop(1, 0);
	cb_pin(1);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &fill));
	CHECK_OK(sc_charge(fd, fill, (a->shape == SH_GRANT ? 9 : 10) * CB_M,
			   NULL));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (i = 0; i <= a->n; i++) {
		w[i].fd = fd;
		w[i].shape = a->shape;
		if (a->shape == SH_ONEHOLD)
			w[i].id = fill;
		else
			CHECK_OK(sc_register(fd, KEY, efd, 0, &w[i].id));
		if (i < a->n) {
			if (pthread_create(&th, &at, wait_thread, &w[i]))
				FAIL("pthread_create %d", i);
		} else if (a->shape == SH_REFUSE) {
			if (pthread_create(&th, &at, refuse_thread, &w[i]))
				FAIL("pthread_create refuse");
		}
	}
	for (;;)
		pause();
}

static void one(struct cb_nb *nb, int shape, int n)
{
	struct attack a = { .n = n, .shape = shape };
	struct cb_stat queued, quiet;
	uint64_t last = 0, waits, t0;
	char what[64];
	pid_t pa;

	pa = sc_spawn(attacker, &a);
	/* grant: all but the one granted at times, so n - 1 */
	if (sc_wait_u64(sc_dev_path(KEY, "waiters"), n - (shape == SH_GRANT),
			shape == SH_CHURN ? 5000 : 60000, &last) < 0)
		sc_log("NOTE: %s: %llu waiters queued, not %d", shape_name[shape],
		       (unsigned long long)last, n);
	waits = DEV_U64(KEY, "waits");
	t0 = sc_now_us();
	cb_nb_measure_op(nb, 4, &queued, &quiet);
	if (shape == SH_GRANT)	/* how hard the queue was worked meanwhile */
		sc_log("BENCH cost_waiters what=grant-%d waits_per_s=%llu queued=%llu",
		       n, (unsigned long long)((DEV_U64(KEY, "waits") - waits) *
					       1000000 / (sc_now_us() - t0 + 1)),
		       (unsigned long long)DEV_U64(KEY, "waiters"));
	snprintf(what, sizeof(what), "%s-%d", shape_name[shape], n);
	cb_print("cost_waiters", what, queued);
	snprintf(what, sizeof(what), "%s-%d/empty", shape_name[shape], n);
	cb_ratio("cost_waiters", what, queued, quiet, "<= 3");
	kill(pa, SIGKILL);
	CHECK_EQ(sc_wait(pa), 128 + SIGKILL);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 0);
	WAIT_U64(sc_dev_path(KEY, "holders"), 1);	/* the neighbour's */
}

int main(int argc, char **argv)
{
	static const int counts[] = { 100, 300, 1000 };
	int want_n = (int)tn_knob("NXQ_BENCH_WAITERS", 0);
	int want_s = (int)tn_knob("NXQ_BENCH_SHAPE", SH_NR);
	struct cb_stat empty, quiet;
	struct cb_nb nb;
	char lim[128];
	int s, i;

	sc_init(argc, argv);
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_dev_register(KEY0, "1G"));
	TN_DEV_OPEN(KEY0);
	CHECK_OK(sc_cg_create(CN));
	CHECK_OK(sc_cg_create(CW));
	CHECK_OK(sc_set_budget(KEY, CN " max=1G"));
	CHECK_OK(sc_set_budget(KEY0, CN " max=1G"));
	CHECK_OK(sc_set_budget(KEY, CW " max=10M"));
	snprintf(lim, sizeof(lim), CW " waiters_max=1010 holders_max=1020 "
		 "wait_max_ms=900000");
	cb_limits(KEY, lim);
	cb_nb_start2(&nb, CN, KEY, KEY0, 0);
	cb_nb_measure(&nb, 2);
	cb_nb_measure_op(&nb, 4, &empty, &quiet);
	cb_print("cost_waiters", "pair-empty-queue", empty);
	cb_ratio("cost_waiters", "empty/quiet", empty, quiet, "1");

	for (s = 0; s < SH_NR; s++) {
		if (want_s < SH_NR && s != want_s)
			continue;
		for (i = 0; i < (int)(sizeof(counts) / sizeof(counts[0])); i++)
			if (!want_n || counts[i] == want_n)
				one(&nb, s, counts[i]);
	}
	cb_nb_stop(&nb);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_EQ(DEV_U64(KEY0, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY0));
	CHECK_OK(sc_cg_remove(CN));
	CHECK_OK(sc_cg_remove(CW));
	PASS();
}
