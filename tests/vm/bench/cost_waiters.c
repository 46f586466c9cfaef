// SPDX-License-Identifier: GPL-2.0
/*
 * cost_waiters: a neighbour's charge+uncharge pair with 1,000 waiters of
 * an attacker queued, against the same pair on an empty queue (same
 * boot): issue 10's target is at most 3x.
 *
 * The attacker (uid 65534, /cb-w, max 10M, at its max; root raised its
 * waiters_max and holders_max) has 1000 threads, each waiting for 1M on a
 * holder of its own; the neighbour (uid 65534, /cb-n, CPU 0) times 1M
 * pairs, before the waiters come and then, one in turn with each, on
 * this device and on a second device with no waiters: the target is
 * taken from the interleaved pair, the before/after ratio is printed as
 * well.  NXQ_BENCH_WAITERS changes the 1000.
 */
#include "cost.h"

#define KEY	"t-cbw"
#define KEY0	"t-cbw0"	/* no waiters: the quiet ledger */
#define CN	"/cb-n"
#define CW	"/cb-w"

struct waiter {
	int fd;
	uint64_t id;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	sc_charge_wait(w->fd, w->id, CB_M, 600ULL * 1000000000, NULL);
	return NULL;
}

static int attacker(void *arg)
{
	int n = (int)(uintptr_t)arg, fd, efd, i;
	struct waiter *w = calloc(n, sizeof(*w));
	pthread_attr_t at;
	pthread_t th;
	uint64_t fill;

	CHECK_OK(sc_cg_enter(CW));
	tn_drop(1, 0);
	cb_pin(1);
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &fill));
	CHECK_OK(sc_charge(fd, fill, 10 * CB_M, NULL));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (i = 0; i < n; i++) {
		w[i].fd = fd;
		CHECK_OK(sc_register(fd, KEY, efd, 0, &w[i].id));
		if (pthread_create(&th, &at, wait_thread, &w[i]))
			FAIL("pthread_create %d", i);
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	int n = (int)tn_knob("NXQ_BENCH_WAITERS", 1000);
	struct cb_stat empty, queued, quiet;
	uint64_t last = 0;
	struct cb_nb nb;
	char lim[128];
	pid_t pa;

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
	snprintf(lim, sizeof(lim), CW " waiters_max=%d holders_max=%d "
		 "wait_max_ms=900000", n + 10, n + 10);
	cb_limits(KEY, lim);
	cb_nb_start2(&nb, CN, KEY, KEY0, 0);
	cb_nb_measure(&nb, 2);
	empty = cb_nb_measure(&nb, 2);

	pa = sc_spawn(attacker, (void *)(uintptr_t)n);
	if (sc_wait_u64(sc_dev_path(KEY, "waiters"), n, 60000, &last) < 0)
		sc_log("NOTE: only %llu waiters queued after 60 s",
		       (unsigned long long)last);
	sc_log("BENCH cost_waiters waiters=%llu",
	       (unsigned long long)DEV_U64(KEY, "waiters"));
	cb_nb_measure_op(&nb, 4, &queued, &quiet);
	cb_print("cost_waiters", "pair-empty-queue-before", empty);
	cb_print("cost_waiters", "pair-empty-queue-interleaved", quiet);
	snprintf(lim, sizeof(lim), "pair-%llu-waiters",
		 (unsigned long long)DEV_U64(KEY, "waiters"));
	cb_print("cost_waiters", lim, queued);
	cb_ratio("cost_waiters", "queued/empty", queued, quiet, "<= 3");
	cb_ratio("cost_waiters", "queued/empty-before", queued, empty, "-");
	kill(pa, SIGKILL);
	CHECK_EQ(sc_wait(pa), 128 + SIGKILL);
	cb_nb_stop(&nb);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 0);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_EQ(DEV_U64(KEY0, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY0));
	CHECK_OK(sc_cg_remove(CN));
	CHECK_OK(sc_cg_remove(CW));
	PASS();
}
