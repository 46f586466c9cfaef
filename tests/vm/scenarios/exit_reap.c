// SPDX-License-Identifier: GPL-2.0
/*
 * exit_reap: a process's charge is gone by the time its parent reaps it,
 * whoever else holds the file (issue 22, item 5).
 *
 * A supervisor (this program, root) opens the authority once and keeps
 * the descriptor.  Its worker, forked with that descriptor, moves into
 * /nxq-exr (max 100M), registers a holder on the shared file, charges
 * 60M and waits.  The supervisor SIGKILLs it, reaps it with waitpid()
 * and, with nothing in between:
 *  - even rounds: reads the device's used and holders and the node's
 *    current and holders, which must all be 0 (a read after the reap);
 *    then starts the next worker;
 *  - odd rounds: starts the next worker at once, whose 60M must be
 *    granted at the first try (60M + the old 60M would be above the max),
 *    then reads used 60M, holders 1.
 * NROUNDS rounds; every stale read and every refused first charge is
 * counted, and any is a failure.  The workers never close the shared
 * descriptor: it is in their files table when they die.
 *
 * With nxquotad (NXQ_AUTHORITY=daemon), QROUNDS more rounds in which the
 * daemon meets the new worker's charge before the old one's exit: the
 * new worker B has registered; nxquotad is SIGSTOPped; B sends its 60M
 * (one try); the old worker A is SIGKILLed and reaped; nxquotad is
 * SIGCONTed and finds B's request ready before A's pidfd.  B must be
 * granted (the daemon handles the exits that are ready before it
 * refuses a charge).
 */
#include "scen.h"

#define KEY	"t-exr"
#define CG	"/nxq-exr"
#define M	SC_MIB
#define NROUNDS	200

#define QROUNDS	20

static int w2s[2], go[2];

/* Worker: charge 60M on the shared file, say how many tries it took. */
static int worker(void *arg)
{
	int fd = (int)(uintptr_t)arg;
	uint64_t id = 0, c = 0, tries = 0;
	long rc;

	CHECK_OK(sc_cg_enter(CG));
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &id));
	do {
		rc = sc_charge(fd, id, 60 * M, &c);
		tries++;
		if (rc == -EDQUOT && tries < 5000)
			usleep(1000);
	} while (rc == -EDQUOT && tries < 5000);
	CHECK_OK(rc);
	CHECK_EQ(c, 60 * M);
	CHECK_OK(sc_send(w2s[1], tries));
	for (;;)
		pause();
	return 0;
}

/* Worker B: register, say so, wait for go, charge 60M once, say how. */
static int worker_once(void *arg)
{
	int fd = (int)(uintptr_t)arg;
	uint64_t id = 0, c = 0;
	long rc;

	CHECK_OK(sc_cg_enter(CG));
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &id));
	CHECK_OK(sc_send(w2s[1], 0));
	RECV(go[0]);
	CHECK_OK(sc_send(w2s[1], 1));	/* sending the charge */
	rc = sc_charge(fd, id, 60 * M, &c);
	CHECK_OK(sc_send(w2s[1], (uint64_t)-rc));
	for (;;)
		pause();
	return 0;
}

/* The daemon's pid, as the harness knows it. */
static pid_t daemon_pid(void)
{
	const char *f = getenv("NXQD_PIDFILE");
	char buf[32];

	if (!f || sc_read(f, buf, sizeof(buf)) <= 0)
		FAIL("NXQD_PIDFILE unset or unreadable: the harness must say "
		     "which process nxquotad is");
	return (pid_t)atoi(buf);
}

/* Start a worker and wait until it holds 60M; *tries: its charges. */
static pid_t start_worker(int fd, uint64_t *tries)
{
	pid_t pid = sc_spawn(worker, (void *)(uintptr_t)fd);

	*tries = RECV(w2s[0]);
	return pid;
}

/* SIGKILL and reap with waitpid() alone (sc_wait() waits for nxquotad). */
static void kill_reap(pid_t pid)
{
	int status;

	CHECK(kill(pid, SIGKILL) == 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			FAIL("waitpid %d: %s", (int)pid, sc_errname(errno));
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	sc_untrack(pid);
}

/* The exit work before waitpid() returns: the module and nxquotad alike. */
FIXTURE(exit_reap) {
	uint64_t cg;
};

FIXTURE_VARIANT(exit_reap) {};

FIXTURE_VARIANT_ADD(exit_reap, module) {};

FIXTURE_VARIANT_ADD(exit_reap, daemon) {};

FIXTURE_SETUP(exit_reap)
{
	CHECK_OK(sc_dev_register_open(KEY, "1G"));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M"));
	self->cg = CG_ID(CG);
	CHECK(pipe(w2s) == 0);
}

FIXTURE_TEARDOWN(exit_reap)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F_TIMEOUT(exit_reap, ledger_exact_after_waitpid, 55)
{
	uint64_t cg = self->cg;
	uint64_t tries, used, cur, dh, nh, last;
	unsigned int stale = 0, refused = 0, first_stale = 0, r;
	uint64_t stale_used = 0;
	pid_t pid;
	int fd;

	fd = sc_open();
	if (fd < 0)
		FAIL("open: %s", sc_errname(-fd));

	pid = start_worker(fd, &tries);
	CHECK_EQ(tries, 1);
	for (r = 0; r < NROUNDS; r++) {
		kill_reap(pid);
		if (r % 2 == 0) {
			used = DEV_U64(KEY, "used");
			dh = DEV_U64(KEY, "holders");
			cur = NODE_U64(KEY, cg, "current");
			nh = NODE_U64(KEY, cg, "holders");
			if (used || dh || cur || nh) {
				if (!stale++) {
					first_stale = r;
					stale_used = used;
				}
				sc_log("round %u: after the reap used %llu "
				       "holders %llu, node current %llu "
				       "holders %llu", r,
				       (unsigned long long)used,
				       (unsigned long long)dh,
				       (unsigned long long)cur,
				       (unsigned long long)nh);
				if (sc_wait_u64(sc_dev_path(KEY, "holders"), 0,
						5000, &last) < 0)
					FAIL("holders stay %llu 5 s after the "
					     "reap", (unsigned long long)last);
			}
			pid = start_worker(fd, &tries);
		} else {
			pid = start_worker(fd, &tries);
			if (tries > 1) {
				refused++;
				sc_log("round %u: the respawned worker's 60M "
				       "was refused %llu times", r,
				       (unsigned long long)(tries - 1));
			}
			used = DEV_U64(KEY, "used");
			dh = DEV_U64(KEY, "holders");
			cur = NODE_U64(KEY, cg, "current");
			nh = NODE_U64(KEY, cg, "holders");
			if (used != 60 * M || dh != 1 || cur != 60 * M ||
			    nh != 1) {
				stale++;
				sc_log("round %u: after the reap and the "
				       "respawn used %llu holders %llu, node "
				       "current %llu holders %llu", r,
				       (unsigned long long)used,
				       (unsigned long long)dh,
				       (unsigned long long)cur,
				       (unsigned long long)nh);
				if (sc_wait_u64(sc_dev_path(KEY, "holders"), 1,
						5000, &last) < 0)
					FAIL("holders stay %llu 5 s after the "
					     "reap", (unsigned long long)last);
			}
		}
	}
	kill_reap(pid);
	sc_log("%u rounds: %u stale reads after the reap, %u respawns "
	       "refused", NROUNDS, stale, refused);
	if (sc_daemon() && !stale && !refused) {
		unsigned int qrefused = 0;
		pid_t d = daemon_pid(), b;
		uint64_t err;

		CHECK(pipe(go) == 0);
		pid = start_worker(fd, &tries);
		for (r = 0; r < QROUNDS; r++) {
			b = sc_spawn(worker_once, (void *)(uintptr_t)fd);
			CHECK_EQ(RECV(w2s[0]), 0);
			CHECK(kill(d, SIGSTOP) == 0);
			CHECK_OK(sc_send(go[1], 1));
			CHECK_EQ(RECV(w2s[0]), 1);
			usleep(20000);		/* B's request is on the socket */
			kill_reap(pid);
			CHECK(kill(d, SIGCONT) == 0);
			err = RECV(w2s[0]);
			if (err) {
				qrefused++;
				sc_log("queued round %u: B's 60M: %s", r,
				       sc_errname((int)err));
				CHECK_OK(sc_wait_u64(sc_dev_path(KEY, "used"),
						     0, 5000, NULL));
			} else {
				CHECK_EQ(DEV_U64(KEY, "used"), 60 * M);
			}
			CHECK_EQ(DEV_U64(KEY, "holders"), 1);
			pid = b;
		}
		kill_reap(pid);
		if (qrefused)
			FAIL("%u of %u charges nxquotad met before the exit "
			     "of the holder in the way were refused",
			     qrefused, QROUNDS);
	}
	if (stale || refused)
		FAIL("%u of %u reads after waitpid() saw a reaped worker's "
		     "holder (first: round %u, used %llu), %u of %u respawned "
		     "workers were refused its charge", stale, NROUNDS,
		     first_stale, (unsigned long long)stale_used, refused,
		     NROUNDS / 2);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_OK(sc_close(fd));
}

TEST_HARNESS_MAIN
