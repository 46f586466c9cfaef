// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_restart: nxquotad killed with SIGKILL in the middle of lending
 * loses nothing and grants nothing twice (daemon mode only).
 *
 * Device of C = 120M.  /nxq-drst-a has min = 60M and holds 20M; /nxq-drst-b
 * (no budget) borrows 80M.  A then waits for 30M: only 20M are free, so B
 * gets a ticket and does not answer.  The daemon is killed (SIGKILL) with
 * A's charge waiting, and started again ($NXQD_START, new pid in
 * $NXQD_PIDFILE for the harness).  Each client does what libnxquota does
 * on a lost connection (the contract's section 3), here by hand over the
 * raw protocol: A's waiting charge ends with ECONNRESET, nothing granted;
 * A and B reconnect, register again and charge what they held, NOWAIT.
 *
 * Checked: the device (capacity), A's budget (min) and the nodes are back
 * from the state file before anyone restores; during the restart's grace a
 * process that held nothing before (C) gets EAGAIN for a no-wait charge;
 * A and B restore exactly 20M and 80M (used 100M: nothing lost); C then
 * charges; A asks its 30M again, B answers the new ticket, and A is granted
 * once: A 50M, B 70M, used 120M (nothing granted twice).
 *
 * Written with the harness's fixtures (harness.h): the device, the three
 * cgroups and A's budget are the fixture's setup, their removal its
 * teardown, and the story one TEST_F (each step reads what the one
 * before left).  Its only variant is nxquotad's (on the module it is
 * reported skipped, and so is the program).  The daemon started again
 * is a child of the test's process in a session of its own (setsid): not
 * in the test's process group, so the harness neither kills it nor
 * reports it left behind; when the test's process ends it goes to the
 * program (the subreaper), then to the runner, which reads its pid from
 * $NXQD_PIDFILE.  It is not th_fork()ed: no PR_SET_PDEATHSIG, not
 * tracked, so an ASSERT ending the test does not kill it either.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-drst"
#define A	"/nxq-drst-a"
#define B	"/nxq-drst-b"
#define CG	"/nxq-drst-c"
#define M	SC_MIB
#define SEC	1000000000ULL

enum {
	R_CHARGE = 1,	/* a bytes, b timeout_ns (0: NOWAIT) -> rc, v0 charge */
	R_RESTORE,	/* reconnect, register, charge what it had -> rc */
	R_STATUS,	/* -> rc, v0 holder_charge */
	R_EFD,		/* a timeout_ms -> rc (count or -ETIMEDOUT) */
	R_ANSWER,	/* answer the open ticket releasing what it asks */
	R_UNCHARGE,	/* a bytes */
	R_EXIT = SC_PEER_EXIT,	/* as PEER_STOP sends it */
};

struct client {
	int fd, efd, cmd, rep;
	uint64_t id, charge;	/* what this client knows it holds */
};

static int lost(long rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN;
}

/* Reconnect (up to 10 s), register again, charge what was held. */
static long restore(struct client *c)
{
	uint64_t end = sc_now_ms() + 10000;
	long rc;

	sc_close(c->fd);
	for (;;) {
		c->fd = sc_open();
		if (c->fd >= 0)
			break;
		if (sc_now_ms() > end)
			return c->fd;
		usleep(20000);
	}
	rc = sc_register(c->fd, KEY, c->efd, 0, &c->id);
	if (rc < 0)
		return rc;
	return c->charge ? sc_charge(c->fd, c->id, c->charge, NULL) : 0;
}

static void client_run(struct client *c)
{
	struct nxq_ticket t;
	struct sc_msg m;
	struct sc_rep r;
	uint64_t got;

	for (;;) {
		if (read(c->cmd, &m, sizeof(m)) != sizeof(m))
			_exit(0);
		memset(&r, 0, sizeof(r));
		switch (m.op) {
		case R_CHARGE:
			r.rc = sc_charge_ex(c->fd, c->id, m.a,
					    m.b ? NXQ_CHARGE_WAIT : 0, m.b, &got);
			if (!r.rc)
				c->charge += m.a;
			r.v[0] = c->charge;
			break;
		case R_UNCHARGE:
			r.rc = sc_uncharge(c->fd, c->id, m.a, NULL);
			if (!r.rc)
				c->charge -= m.a;
			r.v[0] = c->charge;
			break;
		case R_RESTORE:
			r.rc = restore(c);
			r.v[0] = c->charge;
			break;
		case R_STATUS: {
			struct nxq_status st;

			r.rc = sc_status(c->fd, c->id, &st);
			r.v[0] = st.holder_charge;
			break;
		}
		case R_EFD:
			r.rc = sc_efd_wait(c->efd, (int)m.a);
			break;
		case R_ANSWER:
			r.rc = sc_ticket_read(c->fd, c->id, &t);
			if (r.rc)
				break;
			r.rc = sc_ticket_answer(c->fd, c->id, t.generation,
						t.bytes, NULL);
			if (!r.rc)
				c->charge -= t.bytes;
			r.v[0] = c->charge;
			r.v[1] = t.bytes;
			r.v[2] = t.level;
			break;
		case R_EXIT:
			if (write(c->rep, &r, sizeof(r)) != sizeof(r))
				_exit(1);
			_exit(0);
		}
		if (write(c->rep, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
}

static void client_start(struct sc_peer *p, const char *name, const char *cg)
{
	int cm[2], rp[2];
	struct sc_rep r;

	if (pipe2(cm, O_CLOEXEC) < 0 || pipe2(rp, O_CLOEXEC) < 0)
		FAIL("pipe: %s", sc_errname(errno));
	p->name = name;
	p->pid = sc_fork();
	if (p->pid == 0) {
		struct client c = { .cmd = cm[0], .rep = rp[1] };

		close(cm[1]);
		close(rp[0]);
		CHECK_OK(sc_cg_enter(cg));
		c.fd = sc_open();
		CHECK_OK(c.fd);
		c.efd = sc_eventfd();
		CHECK_OK(sc_register(c.fd, KEY, c.efd, 0, &c.id));
		memset(&r, 0, sizeof(r));
		if (write(c.rep, &r, sizeof(r)) != sizeof(r))
			_exit(1);
		client_run(&c);
	}
	close(cm[0]);
	close(rp[1]);
	p->cmd = cm[1];
	p->rep = rp[0];
	PEER_REPLY(p);
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

/* Start $NXQD_START in a session of its own (it outlives the scenario). */
static pid_t daemon_start(void)
{
	const char *cmd = getenv("NXQD_START"), *log = getenv("NXQD_LOG");
	const char *pidf = getenv("NXQD_PIDFILE");
	char line[1024];
	pid_t pid;
	int fd;

	if (!cmd || !*cmd || !pidf)
		FAIL("NXQD_START or NXQD_PIDFILE unset: how the harness "
		     "starts nxquotad and where it looks for its pid");
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", sc_errname(errno));
	if (pid == 0) {
		setsid();
		fd = open(log ? log : "/dev/null",
			  O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		snprintf(line, sizeof(line), "exec %s", cmd);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	fd = open(pidf, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || dprintf(fd, "%d\n", (int)pid) < 0)
		FAIL("write %s: %s", pidf, sc_errname(errno));
	close(fd);
	return pid;
}

/* Wait (10 s) until the control socket answers again. */
static void wait_control(void)
{
	uint64_t end = sc_now_ms() + 10000;
	char buf[32];

	while (sc_read(SC_SYSFS "/abi_version", buf, sizeof(buf)) < 0 ||
	       !sc_dev_exists(KEY)) {
		if (sc_now_ms() > end)
			FAIL("nxquotad did not come back with device %s within "
			     "10 s: %s", KEY,
			     sc_rcname(sc_read(SC_SYSFS "/abi_version", buf,
					       sizeof(buf))));
		usleep(20000);
	}
}

/* nxquotad's restart: the daemon only. */
FIXTURE(daemon_restart) {
	uint64_t a, b, c;
};

FIXTURE_VARIANT(daemon_restart) {};

FIXTURE_VARIANT_ADD(daemon_restart, daemon) {};

FIXTURE_SETUP(daemon_restart)
{
	CHECK_OK(sc_dev_register_open(KEY, "120M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
	self->a = CG_ID(A);
	self->b = CG_ID(B);
	self->c = CG_ID(CG);
}

FIXTURE_TEARDOWN(daemon_restart)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
	CHECK_OK(sc_cg_remove(CG));
}

/*
 * Its waits (10 s for the daemon to come back, 10 s to reconnect, 20 s
 * for a charge) were bounded by the runner's 60 s alone: 55 s, not 30.
 */
TEST_F_TIMEOUT(daemon_restart, kill_restart_restore, 55)
{
	uint64_t a = self->a, b = self->b, c = self->c;
	struct sc_peer pa, pb, pc;
	struct sc_rep r;
	pid_t old, neu;

	client_start(&pa, "A", A);
	client_start(&pb, "B", B);
	CHECK_EQ(PEER_CALL(&pa, R_CHARGE, 20 * M, 0).rc, 0);
	CHECK_EQ(PEER_CALL(&pb, R_CHARGE, 80 * M, 0).rc, 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 100 * M);

	/* A waits for 30M; B is asked (its eventfd) and does not answer. */
	PEER_SEND(&pa, R_CHARGE, 30 * M, 20 * SEC);
	r = PEER_CALL(&pb, R_EFD, 10000, 0);
	if (r.rc <= 0)
		FAIL("B was not asked while A waits: %s", sc_rcname(r.rc));
	PEER_BLOCKED(&pa, 100);
	CHECK_EQ(NODE_U64(KEY, b, "tickets"), 1);

	/* SIGKILL the daemon with A's charge waiting; start it again. */
	old = daemon_pid();
	CHECK(old > 0 && kill(old, 0) == 0);
	CHECK_OK(kill(old, SIGKILL) < 0 ? -errno : 0);
	/* gone, or a zombie until its parent (the runner) reaps it */
	while (tn_running(old))
		usleep(10000);
	sc_log("nxquotad %d killed", (int)old);

	/* A's waiting charge ends: the connection is gone, nothing granted. */
	r = PEER_REPLY(&pa);
	if (!lost(r.rc))
		FAIL("A's waiting charge across the kill: expected a lost "
		     "connection, got %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 20 * M);

	neu = daemon_start();
	sc_log("nxquotad started again: pid %d", (int)neu);
	wait_control();

	/* What the state file brings back: the device, A's budget. */
	CHECK_EQ(DEV_U64(KEY, "capacity"), 120 * M);
	CHECK_EQ(DEV_U64(KEY, "default_max"), NXQ_UNLIMITED);
	CHECK_EQ(NODE_U64(KEY, a, "min"), 60 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);

	/* C held nothing before: during the grace its no-wait charge waits. */
	client_start(&pc, "C", CG);
	r = PEER_CALL(&pc, R_CHARGE, 1 * M, 0);
	CHECK_ERR(r.rc, EAGAIN);

	/* A and B restore what they held. */
	r = PEER_CALL(&pa, R_RESTORE, 0, 0);
	CHECK_OK(r.rc);
	r = PEER_CALL(&pb, R_RESTORE, 0, 0);
	CHECK_OK(r.rc);
	CHECK_EQ(PEER_CALL(&pa, R_STATUS, 0, 0).v[0], 20 * M);
	CHECK_EQ(PEER_CALL(&pb, R_STATUS, 0, 0).v[0], 80 * M);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 20 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 80 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 100 * M);	/* nothing lost */

	/* Every listed client is back: the grace is over for C. */
	CHECK_EQ(PEER_CALL(&pc, R_CHARGE, 1 * M, 0).rc, 0);
	CHECK_EQ(NODE_U64(KEY, c, "current"), 1 * M);
	CHECK_EQ(PEER_CALL(&pc, R_UNCHARGE, 1 * M, 0).rc, 0);

	/* A asks its 30M again: B is asked for the 10M missing, answers. */
	PEER_SEND(&pa, R_CHARGE, 30 * M, 20 * SEC);
	r = PEER_CALL(&pb, R_EFD, 10000, 0);
	if (r.rc <= 0)
		FAIL("B was not asked after the restart: %s",
		     sc_rcname(r.rc));
	r = PEER_CALL(&pb, R_ANSWER, 0, 0);
	CHECK_OK(r.rc);
	CHECK_EQ(r.v[1], 10 * M);
	CHECK_EQ(r.v[2], NXQ_TICKET_LEVEL_RECALL);
	r = PEER_REPLY(&pa);
	CHECK_OK(r.rc);

	/* Granted once. */
	CHECK_EQ(PEER_CALL(&pa, R_STATUS, 0, 0).v[0], 50 * M);
	CHECK_EQ(PEER_CALL(&pb, R_STATUS, 0, 0).v[0], 70 * M);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 50 * M);
	CHECK_EQ(NODE_U64(KEY, b, "current"), 70 * M);
	CHECK_EQ(NODE_U64(KEY, c, "current"), 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 120 * M);
	CHECK_EQ(DEV_U64(KEY, "holders"), 3);

	PEER_STOP(&pa);
	PEER_STOP(&pb);
	PEER_STOP(&pc);
	WAIT_U64(sc_dev_path(KEY, "used"), 0);
	WAIT_U64(sc_dev_path(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
