// SPDX-License-Identifier: GPL-2.0
/*
 * atk_waiters: a tenant's waiting charges are bounded by its cgroup's
 * waiters_max.  The attacker (uid 65534, /atk-st-a, max 10M, already at its
 * max) starts 100 waiting charges of 1M, one thread and one holder each:
 * with the default waiters_max (64), 64 wait and 36 fail with EAGAIN at
 * once; killing the attacker leaves no waiter and nothing charged.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-awa"
#define CA	"/atk-wa-a"
#define M	SC_MIB

/* ---- the attacker's waiters --------------------------------------------- */

struct waiter {
	int fd;
	uint64_t id;
	long rc;
};

static int *n_eagain, *n_other, *n_started;

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	__atomic_add_fetch(n_started, 1, __ATOMIC_SEQ_CST);
	w->rc = sc_charge_wait(w->fd, w->id, M, 120ULL * 1000000000, NULL);
	if (w->rc == -EAGAIN)
		__atomic_add_fetch(n_eagain, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_add_fetch(n_other, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* The attacker: fills its max, then n threads wait; then sleeps. */
static int attacker(void *arg)
{
	int n = (int)(uintptr_t)arg, fd, efd, i;
	struct waiter *w = calloc(n, sizeof(*w));
	pthread_attr_t at;
	pthread_t th;
	uint64_t fill;

	tn_tenant(CA);
	fd = sc_open();
	if (fd < 0)
		FAIL("attacker: open: %s", sc_errname(-fd));
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, KEY, efd, 0, &fill));
	CHECK_OK(sc_charge(fd, fill, 10 * M, NULL));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (i = 0; i < n; i++) {
		w[i].fd = fd;
		CHECK_OK(sc_register(fd, KEY, efd, 0, &w[i].id));
		if (pthread_create(&th, &at, wait_thread, &w[i]))
			FAIL("pthread_create %d: %s", i, sc_errname(errno));
	}
	for (;;)
		pause();
	return 0;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	CHECK_EQ(sc_wait(pid), 128 + SIGKILL);
}

int main(int argc, char **argv)
{
	uint64_t *shm;
	pid_t pa;

	sc_init(argc, argv);
	tn_devnode_admin();
	shm = sc_shared(4096);
	n_eagain = (int *)shm;
	n_other = (int *)shm + 1;
	n_started = (int *)shm + 2;
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CA));
	CHECK_OK(sc_set_budget(KEY, CA " max=10M"));

	/* 1. default waiters_max */
	pa = sc_spawn(attacker, (void *)(uintptr_t)100);
	WAIT_U64(sc_dev_path(KEY, "used"), 10 * M);
	{
		uint64_t end = sc_now_ms() + 20000;

		/* until every charge waits or has returned */
		while (sc_now_ms() < end &&
		       (*n_started < 100 || DEV_U64(KEY, "waiters") +
			*n_eagain + *n_other < 100))
			usleep(10000);
		usleep(100 * 1000);
	}
	sc_log("100 waiting charges, default limits: %d EAGAIN, %d "
	       "other returns, waiters %llu", *n_eagain, *n_other,
	       (unsigned long long)DEV_U64(KEY, "waiters"));
	if (*n_eagain != 36 || DEV_U64(KEY, "waiters") != 64)
		FAIL("100 waiting charges with the default waiters_max (64): "
		     "%d EAGAIN (expected 36), %llu waiting (expected 64)",
		     *n_eagain, (unsigned long long)DEV_U64(KEY, "waiters"));
	CHECK_EQ(*n_other, 0);
	stop(pa);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 0);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);

	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CA));
	PASS();
}
