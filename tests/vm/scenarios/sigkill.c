// SPDX-License-Identifier: GPL-2.0
/*
 * sigkill: 100 processes in five cgroups charge, uncharge, set reclaimable,
 * re-register and reopen in loops, while the parent SIGKILLs 60 of them at
 * random moments and starts new ones, five rounds.  After each round the survivors stop and
 * report what they hold (each checks it against NXQ_IOC_STATUS first);
 * every node's current and holders, and the device's used and holders,
 * must then equal exactly the survivors' sums.  When all are dead, every
 * counter is 0.
 *
 *   /nxq-kill          max=16M   (capacity 12M: the device binds first)
 *   /nxq-kill/g0..g2   max=4M
 *   /nxq-kill/g3       no max
 *   /nxq-kill/g3/sub   max=2M
 */
#include "scen.h"

#define KEY		"t-kill"
#define NWORKERS	100
#define NROUNDS		5
#define KILLS		60	/* per round */
#define MAXH		3	/* holders per worker */
#define NCG		6

static const char *const cgs[NCG] = {
	"/nxq-kill", "/nxq-kill/g0", "/nxq-kill/g1", "/nxq-kill/g2",
	"/nxq-kill/g3", "/nxq-kill/g3/sub",
};
static const int parent_of[NCG] = { -1, 0, 0, 0, 0, 4 };

enum { W_STARTING, W_RUNNING, W_REPORTED };

struct slot {
	int state;		/* W_*, written by the worker */
	int gen;		/* sh->gen when it reported */
	int cg;			/* index in cgs[] (1..5) */
	int nholders;
	uint64_t charge;	/* sum of its holders' charges at the report */
	uint64_t ops, denied;
};

struct shared {
	int stop;		/* 1: stop, report, wait for gen to change */
	int gen;		/* bumped by the parent to let workers go on */
	struct slot w[NWORKERS];
};

static struct shared *sh;

struct worker {
	int fd, n;
	uint64_t id[MAXH], charge[MAXH];
	uint64_t seed;
};

static void w_open(struct worker *w)
{
	int i;

	w->fd = sc_open();
	if (w->fd < 0)
		FAIL("open: %s", sc_errname(-w->fd));
	w->n = 1 + sc_rand(&w->seed) % MAXH;
	for (i = 0; i < w->n; i++) {
		CHECK_OK(sc_register(w->fd, KEY, SC_EFD, sc_rand(&w->seed) % 10,
				     &w->id[i]));
		w->charge[i] = 0;
	}
}

/* One random operation; every result is checked against the model. */
static void w_step(struct worker *w, struct slot *s)
{
	int i = sc_rand(&w->seed) % w->n, op = sc_rand(&w->seed) % 100;
	uint64_t bytes, c = 0;
	long rc;

	s->ops++;
	if (op < 45) {
		bytes = 1 + sc_rand(&w->seed) % (512 * SC_KIB);
		rc = sc_charge(w->fd, w->id[i], bytes, &c);
		if (rc == -EDQUOT || rc == -ENOSPC) {
			s->denied++;
			return;
		}
		CHECK_OK(rc);
		CHECK_EQ(c, w->charge[i] + bytes);
		w->charge[i] = c;
	} else if (op < 85) {
		if (!w->charge[i])
			return;
		bytes = 1 + sc_rand(&w->seed) % w->charge[i];
		CHECK_OK(sc_uncharge(w->fd, w->id[i], bytes, &c));
		CHECK_EQ(c, w->charge[i] - bytes);
		w->charge[i] = c;
	} else if (op < 90) {
		bytes = w->charge[i] ? sc_rand(&w->seed) % (w->charge[i] + 1) : 0;
		CHECK_OK(sc_set_reclaimable(w->fd, w->id[i], bytes));
	} else if (op < 95) {
		CHECK_OK(sc_unregister(w->fd, w->id[i]));
		CHECK_OK(sc_register(w->fd, KEY, SC_EFD, 0, &w->id[i]));
		w->charge[i] = 0;
	} else if (op < 99) {
		CHECK_EQ(HOLDER_CHARGE(w->fd, w->id[i]), w->charge[i]);
	} else {
		close(w->fd);
		w_open(w);
	}
}

static int worker(void *arg)
{
	int me = (int)(long)arg, i, gen;
	struct slot *s = &sh->w[me];
	struct worker w = { .seed = 0x9e3779b97f4a7c15ULL ^
				    ((uint64_t)getpid() << 20) ^ sc_now_ms() };
	uint64_t sum;

	if (sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ 0 }))
		FAIL("SCHED_OTHER: %s", sc_errname(errno));
	CHECK_OK(sc_cg_enter(cgs[s->cg]));
	w_open(&w);
	__atomic_store_n(&s->state, W_RUNNING, __ATOMIC_RELEASE);
	for (;;) {
		while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE))
			w_step(&w, s);
		gen = __atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE);
		for (sum = 0, i = 0; i < w.n; i++) {
			CHECK_EQ(HOLDER_CHARGE(w.fd, w.id[i]), w.charge[i]);
			sum += w.charge[i];
		}
		s->charge = sum;
		s->nholders = w.n;
		s->gen = gen;
		__atomic_store_n(&s->state, W_REPORTED, __ATOMIC_RELEASE);
		while (__atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE) == gen)
			usleep(1000);
		__atomic_store_n(&s->state, W_RUNNING, __ATOMIC_RELEASE);
	}
	return 0;
}

static pid_t pids[NWORKERS], dying[NWORKERS];
static uint64_t seed, t_start;

static void start(int i)
{
	sh->w[i] = (struct slot){ .state = W_STARTING, .cg = 1 + i % (NCG - 1) };
	pids[i] = sc_spawn(worker, (void *)(long)i);
}

/*
 * Wait until every live worker runs (st == W_RUNNING) or has reported for
 * the current generation (st == W_REPORTED).
 */
static void wait_all(int st, int round)
{
	uint64_t t0 = sc_now_ms();
	int i, ok, ws;

	do {
		for (ok = 1, i = 0; i < NWORKERS; i++) {
			if (!pids[i])
				continue;
			ws = __atomic_load_n(&sh->w[i].state, __ATOMIC_ACQUIRE);
			if (ws < st || (st == W_REPORTED && sh->w[i].gen != sh->gen))
				ok = 0;
			/* a worker that exits on its own has failed */
			if (pids[i] && waitpid(pids[i], NULL, WNOHANG) == pids[i])
				FAIL("worker %d (pid %d) exited by itself", i,
				     (int)pids[i]);
		}
		if (ok)
			break;
		usleep(10000);
	} while (sc_now_ms() - t0 < 30000);
	if (!ok)
		FAIL("workers did not reach state %d in round %d within 30s",
		     st, round);
}

/* SIGKILL worker i now; reap() collects it later. */
static void kill_one(int i)
{
	CHECK(kill(pids[i], SIGKILL) == 0);
	dying[i] = pids[i];
	pids[i] = 0;
}

/* Wait for the killed workers: each must have died of the SIGKILL. */
static void reap(void)
{
	int i, st;

	for (i = 0; i < NWORKERS; i++) {
		if (!dying[i])
			continue;
		st = sc_wait(dying[i]);
		if (st != 128 + SIGKILL)
			FAIL("worker %d: status %d, expected death by SIGKILL",
			     i, st);
		dying[i] = 0;
	}
}

/* Node and device counters must equal the survivors' reports exactly. */
static void verify(int round)
{
	uint64_t cur[NCG] = { 0 }, hold[NCG] = { 0 }, total = 0, holders = 0;
	int i, c;

	for (i = 0; i < NWORKERS; i++) {
		if (!pids[i])
			continue;
		hold[sh->w[i].cg] += sh->w[i].nholders;
		holders += sh->w[i].nholders;
		total += sh->w[i].charge;
		for (c = sh->w[i].cg; c >= 0; c = parent_of[c])
			cur[c] += sh->w[i].charge;
	}
	for (c = 0; c < NCG; c++) {
		uint64_t id = CG_ID(cgs[c]);
		uint64_t got = NODE_U64(KEY, id, "current");

		if (got != cur[c])
			FAIL("round %d: %s current %" PRIu64 ", survivors hold %"
			     PRIu64, round, cgs[c], got, cur[c]);
		CHECK_EQ(NODE_U64(KEY, id, "holders"), hold[c]);
	}
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), total);
	CHECK_EQ(DEV_U64(KEY, "used"), total);
	CHECK_EQ(DEV_U64(KEY, "holders"), holders);
	sc_log("round %d: %d killed; the survivors hold %" PRIu64 " bytes in %"
	       PRIu64 " holders; counters agree (%" PRIu64 " ms)", round, KILLS,
	       total, holders, sc_now_ms() - t_start);
}

/* Holders killed at random are the ledger's to release: both authorities. */
FIXTURE(sigkill) {};

FIXTURE_VARIANT(sigkill) {};

FIXTURE_VARIANT_ADD(sigkill, module) {};

FIXTURE_VARIANT_ADD(sigkill, daemon) {};

FIXTURE_SETUP(sigkill)
{
	int c;

	/*
	 * The killer must run at the moments it picks, not when 100 busy
	 * workers let it: real-time priority (the workers drop it at fork).
	 */
	if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 }))
		FAIL("SCHED_FIFO: %s", sc_errname(errno));
	t_start = sc_now_ms();
	seed = 0x5eed ^ t_start;
	sh = sc_shared(sizeof(*sh));
	CHECK_OK(sc_dev_register_open(KEY, "12M"));
	for (c = 0; c < NCG; c++)
		CHECK_OK(sc_cg_create(cgs[c]));
	CHECK_OK(sc_set_budget(KEY, "/nxq-kill max=16M priority_max=10"));
	for (c = 1; c <= 3; c++)
		CHECK_OK(sc_set_budget(KEY, "%s max=4M", cgs[c]));
	CHECK_OK(sc_set_budget(KEY, "/nxq-kill/g3/sub max=2M"));
}

FIXTURE_TEARDOWN(sigkill)
{
	int c;

	CHECK_OK(sc_dev_unregister(KEY));
	for (c = NCG - 1; c >= 0; c--)
		CHECK_OK(sc_cg_remove(cgs[c]));
}

/* 5 rounds of 60 kills among 100 workers: 2 s here, more under TCG */
TEST_F_TIMEOUT(sigkill, kill_rounds, 55)
{
	uint64_t ops = 0, denied = 0, t;
	int i, k, round, c;

	for (i = 0; i < NWORKERS; i++)
		start(i);
	for (round = 1; round <= NROUNDS; round++) {
		wait_all(W_RUNNING, round);
		for (k = 0; k < KILLS; k++) {
			/* A random moment, 0-10 ms on (spin: exact, no wake-up). */
			t = sc_now_us() + sc_rand(&seed) % 10000;
			while (sc_now_us() < t)
				;
			do
				i = sc_rand(&seed) % NWORKERS;
			while (!pids[i]);
			kill_one(i);
		}
		reap();
		__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
		wait_all(W_REPORTED, round);
		verify(round);
		/* Next round: replace the dead, let everyone go again. */
		for (i = 0; i < NWORKERS; i++)
			if (!pids[i])
				start(i);
		__atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&sh->gen, round, __ATOMIC_RELEASE);
	}

	for (i = 0; i < NWORKERS; i++) {
		ops += sh->w[i].ops;
		denied += sh->w[i].denied;
	}
	for (i = 0; i < NWORKERS; i++)
		if (pids[i])
			kill_one(i);
	reap();
	sc_log("%d kills, %" PRIu64 " operations of the last generation, %"
	       PRIu64 " refused; device denials %" PRIu64 ", capacity hits %"
	       PRIu64, NROUNDS * KILLS + NWORKERS, ops, denied,
	       DEV_U64(KEY, "denials"), DEV_U64(KEY, "capacity_hits"));
	/* The storm must have exercised the refusal paths it claims to. */
	CHECK(DEV_U64(KEY, "capacity_hits") > 0);
	CHECK(DEV_U64(KEY, "denials") > DEV_U64(KEY, "capacity_hits"));

	for (c = 0; c < NCG; c++) {
		CHECK_EQ(NODE_U64(KEY, CG_ID(cgs[c]), "current"), 0);
		CHECK_EQ(NODE_U64(KEY, CG_ID(cgs[c]), "holders"), 0);
	}
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
