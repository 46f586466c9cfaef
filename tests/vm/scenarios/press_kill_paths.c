// SPDX-License-Identifier: GPL-2.0
/*
 * press_kill_paths: processes die, files close and the module is asked to
 * go while charges wait and tickets are open.
 *
 * Device of 100M; /nxq-pkill-a has min = 60M (waiters live there);
 * /nxq-pkill-b has max = 100M (so its node stays) and borrows.
 *  1. A victim SIGKILLed with its ticket open: B holds 90M and has been
 *     asked for 30M by a waiter of A; B is killed; its charge goes with
 *     its file and the waiter is granted.  Nothing counts as released or
 *     as a kill (the module did not kill it).
 *  2. A waiter SIGKILLed while it waits, with a second waiter queued
 *     behind it that the first one held up: the second is granted, the
 *     first leaves nothing (waiters 0, its holder gone, counters exact).
 *  3. Its holder unregistered by another thread of the waiting process:
 *     the wait ends with ENOENT.
 *  4. rmmod while a charge waits: refused, the waiter unharmed (granted
 *     when room comes); once every file is closed rmmod works (and the
 *     module is loaded again for the next scenarios).
 */
#include "scen.h"

#include <pthread.h>
#include <sys/syscall.h>

#define KEY	"t-pkill"
#define A	"/nxq-pkill-a"
#define B	"/nxq-pkill-b"
#define M	SC_MIB
#define TMO	(20ULL * 1000000000)

static uint64_t a, b;

static void ledger(int line, uint64_t ca, uint64_t cb, uint64_t ha,
		   uint64_t hb)
{
	uint64_t v[6] = {
		NODE_U64(KEY, a, "current"), NODE_U64(KEY, b, "current"),
		DEV_U64(KEY, "used"), NODE_U64(KEY, a, "holders"),
		NODE_U64(KEY, b, "holders"), DEV_U64(KEY, "holders"),
	};

	if (v[0] != ca || v[1] != cb || v[2] != ca + cb || v[3] != ha ||
	    v[4] != hb || v[5] != ha + hb)
		FAIL("(line %d) A %llu B %llu used %llu, holders A %llu B "
		     "%llu dev %llu; expected A %llu B %llu, holders %llu %llu",
		     line, (unsigned long long)v[0], (unsigned long long)v[1],
		     (unsigned long long)v[2], (unsigned long long)v[3],
		     (unsigned long long)v[4], (unsigned long long)v[5],
		     (unsigned long long)ca, (unsigned long long)cb,
		     (unsigned long long)ha, (unsigned long long)hb);
}
#define LEDGER(ca, cb, ha, hb) ledger(__LINE__, ca, cb, ha, hb)

static int loaded(void)
{
	char buf[16384];
	int n = sc_read("/proc/modules", buf, sizeof(buf));

	if (n < 0)
		FAIL("read /proc/modules: %s", sc_errname(-n));
	return !strncmp(buf, "nxquota ", 8) || strstr(buf, "\nnxquota ");
}

static long rmmod(void)
{
	return syscall(SYS_delete_module, "nxquota", O_NONBLOCK) < 0 ?
		-errno : 0;
}

static long insmod(void)
{
	const char *ko = getenv("NXQ_KO") ? getenv("NXQ_KO") :
		"/lib/nxquota.ko";
	int f = open(ko, O_RDONLY | O_CLOEXEC);
	long rc;

	if (f < 0)
		return -errno;
	rc = syscall(SYS_finit_module, f, "", 0) < 0 ? -errno : 0;
	close(f);
	return rc;
}

/* 3: a waiter whose other thread unregisters its holder. */
static int unreg_fd;
static uint64_t unreg_id;

static void *unreg_thread(void *arg)
{
	long rc;

	(void)arg;
	if (sc_wait_u64(sc_dev_path(KEY, "waiters"), 1, 10000, NULL) < 0)
		return (void *)(long)-ETIMEDOUT;
	usleep(20000);
	rc = sc_unregister(unreg_fd, unreg_id);
	return (void *)rc;
}

static int unreg_waiter(void *arg)
{
	pthread_t th;
	void *ret;
	long rc;

	(void)arg;
	CHECK_OK(sc_cg_enter(A));
	unreg_fd = sc_open();
	CHECK_OK(unreg_fd);
	CHECK_OK(sc_register(unreg_fd, KEY, SC_EFD, 0, &unreg_id));
	CHECK(pthread_create(&th, NULL, unreg_thread, NULL) == 0);
	rc = sc_charge_wait(unreg_fd, unreg_id, 10 * M, TMO, NULL);
	CHECK(pthread_join(th, &ret) == 0);
	CHECK_OK((long)ret);
	if (rc != -ENOENT)
		FAIL("a wait whose holder another thread unregistered: "
		     "expected ENOENT, got %s", sc_rcname(rc));
	CHECK_ERR(sc_charge(unreg_fd, unreg_id, 1, NULL), ENOENT);
	return 0;
}

/* rmmod while a charge waits: the module only (sc_module_only[]). */
FIXTURE(kill_paths) {};

FIXTURE_VARIANT(kill_paths) {};

FIXTURE_VARIANT_ADD(kill_paths, module) {};

FIXTURE_SETUP(kill_paths)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	a = CG_ID(A);
	b = CG_ID(B);
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
	CHECK_OK(sc_set_budget(KEY, B " max=100M"));
}

/*
 * The device is gone already: the test unregisters it before its last
 * step (rmmod with nothing open), as it did before; a test that fails
 * earlier leaves it to scen.h's cleanup.
 */
FIXTURE_TEARDOWN(kill_paths)
{
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
}

TEST_F(kill_paths, waiters_victims_and_rmmod)
{
	struct sc_peer pb, pb2, w1, wl, ws, wr;
	struct sc_rep r;
	pid_t pid;
	int st;
	long rc;

	/* 1. The victim dies with its ticket open. */
	sc_peer_start(&pb, "B", B, KEY, 0, 1);
	sc_peer_start(&w1, "W1", A, KEY, 0, 1);
	PEER_OK(&pb, SC_PEER_CHARGE, 90 * M, 0);
	PEER_SEND(&w1, SC_PEER_CHARGE, 40 * M, TMO);
	CHECK_EQ(PEER_CALL(&pb, SC_PEER_EFD, 10000, 0).rc, 1);
	r = PEER_OK(&pb, SC_PEER_TICKET, 0, 0);
	CHECK_EQ(r.v[1], 30 * M);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	st = sc_peer_kill(&pb);
	CHECK_EQ(st, 128 + SIGKILL);
	r = PEER_REPLY(&w1);
	if (r.rc)
		FAIL("waiter after its victim was SIGKILLed: expected a grant, "
		     "got %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 40 * M);
	LEDGER(40 * M, 0, 1, 0);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);
	CHECK_EQ(DEV_U64(KEY, "bytes_released"), 0);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
	CHECK_EQ(DEV_U64(KEY, "timeouts"), 0);

	/* 2. A waiter dies while it waits; the one behind it is served. */
	sc_peer_start(&pb2, "B2", B, KEY, 0, 1);
	PEER_OK(&pb2, SC_PEER_CHARGE, 60 * M, 0);
	LEDGER(40 * M, 60 * M, 1, 1);
	sc_peer_start(&wl, "WL", A, KEY, 0, 1);
	sc_peer_start(&ws, "WS", A, KEY, 0, 1);
	PEER_SEND(&wl, SC_PEER_CHARGE, 30 * M, TMO);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	PEER_SEND(&ws, SC_PEER_CHARGE, 5 * M, TMO);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 2);
	PEER_OK(&pb2, SC_PEER_UNCHARGE, 5 * M, 0);
	PEER_BLOCKED(&ws, 200);		/* the 5M are WL's, first in line */
	PEER_BLOCKED(&wl, 10);
	LEDGER(40 * M, 55 * M, 3, 1);
	st = sc_peer_kill(&wl);
	CHECK_EQ(st, 128 + SIGKILL);
	r = PEER_REPLY(&ws);
	if (r.rc)
		FAIL("the waiter behind a SIGKILLed one, its 5M free: expected "
		     "a grant, got %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 5 * M);
	LEDGER(45 * M, 55 * M, 2, 1);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);
	CHECK_EQ(DEV_U64(KEY, "waits"), 3);
	CHECK_EQ(DEV_U64(KEY, "timeouts"), 0);
	PEER_STOP(&ws);
	LEDGER(40 * M, 55 * M, 1, 1);

	/* 3. Another thread unregisters the waiting holder: ENOENT. */
	PEER_OK(&pb2, SC_PEER_CHARGE, 5 * M, 0);
	LEDGER(40 * M, 60 * M, 1, 1);
	pid = sc_spawn(unreg_waiter, NULL);
	CHECK_CHILD_OK(pid);
	LEDGER(40 * M, 60 * M, 1, 1);
	CHECK_EQ(DEV_U64(KEY, "waiters"), 0);

	/* 4. rmmod while a charge waits: refused; the waiter unharmed. */
	sc_peer_start(&wr, "WR", A, KEY, 0, 1);
	PEER_SEND(&wr, SC_PEER_CHARGE, 10 * M, TMO);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	rc = rmmod();
	if (rc != -EAGAIN && rc != -EBUSY)
		FAIL("rmmod with a waiting charge: expected EAGAIN or EBUSY (in "
		     "use), got %s", sc_rcname(rc));
	CHECK(loaded());
	CHECK(sc_exists(SC_DEVNODE));
	CHECK_EQ(DEV_U64(KEY, "waiters"), 1);
	PEER_BLOCKED(&wr, 100);
	PEER_OK(&pb2, SC_PEER_UNCHARGE, 10 * M, 0);
	r = PEER_REPLY(&wr);
	if (r.rc)
		FAIL("the waiter after a refused rmmod: expected a grant, got "
		     "%s", sc_rcname(r.rc));
	LEDGER(50 * M, 50 * M, 2, 1);

	PEER_STOP(&wr);
	PEER_STOP(&w1);
	PEER_STOP(&pb2);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_OK(sc_dev_unregister(KEY));

	/* Nobody has the device open now: rmmod works; load it again. */
	CHECK_OK(rmmod());
	CHECK(!loaded());
	CHECK(!sc_exists(SC_DEVNODE));
	CHECK_OK(insmod());
	CHECK(loaded());
}

TEST_HARNESS_MAIN
