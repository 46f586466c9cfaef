// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's restarts (issue 21, item 1): what a restart gives back is
 * what was held, no more, to whoever held it, before anyone grows.  The
 * clients are processes of their own (a restore is a process's), speaking
 * <linux/nxquotad.h> by hand and doing what the restore protocol says a
 * client does: watch the connection, reconnect, restore holder by holder,
 * say it is done.  Root and a writable cgroup2 hierarchy are needed.
 */
#include <sys/mman.h>

#include "client_util.h"

/* ---- a peer: a process that does what it is told ---- */

enum {
	P_DIAL = 1,	/* a new connection */
	P_REG,		/* register (version 0) into slot */
	P_REG1,		/* register at version 1 restoring slot's id */
	P_CHARGE,	/* charge a on slot (version 0), b: timeout */
	P_CHARGE1,	/* a restore of a on slot (version 1), no wait */
	P_SEND1,	/* the same, its reply read by P_RECV */
	P_RECV,		/* the reply to P_SEND1, within b ms */
	P_RESTORED,	/* NXQD_REQ_RESTORED */
	P_ID,		/* slot's id */
};

struct pmsg {
	int op, slot;
	u64 a, b;
};

struct prep {
	int err;
	u64 v;
};

struct peer {
	pid_t pid;
	int cmd, rep;
};

static void peer_main(const char *sock, int cmd, int rep)
{
	int fd = -1, efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u64 ids[8] = { 0 };
	struct pmsg m;
	struct prep r;

	while (read(cmd, &m, sizeof(m)) == sizeof(m)) {
		memset(&r, 0, sizeof(r));
		switch (m.op) {
		case P_DIAL:
			if (fd >= 0)
				close(fd);
			fd = dial(sock, SOCK_SEQPACKET);
			r.err = fd < 0 ? fd : 0;
			break;
		case P_REG:
			r.err = reg(fd, efd, &ids[m.slot]);
			r.v = ids[m.slot];
			break;
		case P_REG1:
			r.err = reg_v1(fd, efd, NXQD_REQ_RESTORE, ids[m.slot],
				       &ids[m.slot]);
			r.v = ids[m.slot];
			break;
		case P_CHARGE:
			r.err = charge(fd, ids[m.slot], m.a,
				       m.b ? NXQ_CHARGE_WAIT : 0, m.b, &r.v);
			break;
		case P_CHARGE1:
			r.err = charge_v1(fd, ids[m.slot], m.a, NXQD_REQ_RESTORE,
					  0, 0, &r.v);
			break;
		case P_SEND1: {
			struct nxq_charge c = {
				.size = sizeof(c), .holder_id = ids[m.slot],
				.bytes = m.a,
			};

			r.err = send_req(fd, NXQ_IOC_CHARGE,
					 req_vf(1, NXQD_REQ_RESTORE), &c,
					 sizeof(c));
			break;
		}
		case P_RECV:
			r.err = recv_rep(fd, (int)m.b, NULL, 0);
			break;
		case P_RESTORED:
			r.err = restored_v1(fd);
			break;
		case P_ID:
			r.v = ids[m.slot];
			break;
		default:
			r.err = -EINVAL;
		}
		if (write(rep, &r, sizeof(r)) != sizeof(r))
			break;
	}
	_exit(0);
}

static void peer_start(struct kunit *test, struct peer *p, const char *sock)
{
	int c[2], r[2];

	KUNIT_ASSERT_EQ(test, pipe2(c, O_CLOEXEC), 0);
	KUNIT_ASSERT_EQ(test, pipe2(r, O_CLOEXEC), 0);
	p->pid = fork();
	KUNIT_ASSERT_GE(test, p->pid, 0);
	if (!p->pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(c[1]);
		close(r[0]);
		peer_main(sock, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	p->cmd = c[1];
	p->rep = r[0];
}

/* Tell @p to do @op; its answer (err), and in *@v its value. */
static int peer(struct peer *p, int op, int slot, u64 a, u64 b, u64 *v)
{
	struct pmsg m = { .op = op, .slot = slot, .a = a, .b = b };
	struct prep r = { .err = 1 };

	if (write(p->cmd, &m, sizeof(m)) != sizeof(m) ||
	    read(p->rep, &r, sizeof(r)) != sizeof(r))
		return 1;
	if (v)
		*v = r.v;
	return r.err;
}

static void peer_stop(struct peer *p)
{
	close(p->cmd);
	close(p->rep);
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
}

/* A restart: SIGKILL, then the same daemon again with @args. */
static void crash_restart(struct kunit *test, struct daemon *d,
			  const char *const *args)
{
	KUNIT_ASSERT_EQ(test, stop(d, SIGKILL), 128 + SIGKILL);
	d->pid = spawn_args(test, d, args);
	wait_up(test, d);
}

static u64 used(struct daemon *d)
{
	return ctl_dev_attr(d->ctl, KEY, NXQUOTA_A_DEVICE_USED);
}

/*
 * A restore is what the record has, no more (version 0, the libraries of
 * today): X held 10000 and asks 90000 back as its first charge; Y held
 * 60000 of the 100000 and gets them back.  Before: X took 90000 and Y's
 * restore was refused (-ENOSPC) -- memory Y still has mapped.
 */
static void nxqd_test_restore_bounded(struct kunit *test)
{
	const char *const grace[] = { "-G", "5000", NULL };
	struct peer x, y;
	struct daemon d;
	struct tcg cg;

	cg_enter(test, &cg);
	prepare(test, &d);
	write_state(test, &d, 100000, "-", NULL, 0);
	d.pid = spawn(test, &d);
	wait_up(test, &d);
	peer_start(test, &x, d.sock);
	peer_start(test, &y, d.sock);
	KUNIT_ASSERT_EQ(test, peer(&x, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&x, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&x, P_CHARGE, 0, 10000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&y, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&y, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&y, P_CHARGE, 0, 60000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, x.pid, 1), 1);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, y.pid, 1), 1);

	crash_restart(test, &d, grace);
	KUNIT_ASSERT_EQ(test, peer(&x, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&x, P_REG, 0, 0, 0, NULL), 0);
	/* more than it held: not a restore, and the window is not over */
	KUNIT_EXPECT_EQ(test, peer(&x, P_CHARGE, 0, 90000, 0, NULL), -EAGAIN);
	KUNIT_ASSERT_EQ(test, peer(&y, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&y, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&y, P_CHARGE, 0, 60000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, used(&d), 60000ULL);
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_RESTORED), 60000ULL);
	peer_stop(&x);
	peer_stop(&y);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * The restore protocol (version 1), issue 32: a restore within what the
 * record has for the holder passes at once, whoever comes first; one
 * for more than the record has is refused at once (-ERANGE: a client
 * holding 20000 asked 25000); a restore from a process the record does
 * not name is growth: it waits for the window, even when it comes first
 * and asks for room the listed need.  The window closes once every
 * listed process has restored every holder it had (A) or said it is done
 * (B), not by time; then the nobody competes for what is left.  Before:
 * Z's restore from nobody was listed and came ahead of growth, and A's
 * 25000 was held, then granted: 5000 it never had.
 */
static void nxqd_test_restore_v1(struct kunit *test)
{
	const char *const grace[] = { "-G", "5000", NULL };
	struct peer a, b, z;
	struct daemon d;
	struct tcg cg;
	u64 t0;

	cg_enter(test, &cg);
	prepare(test, &d);
	write_state(test, &d, 100000, "-", NULL, 0);
	d.pid = spawn(test, &d);
	wait_up(test, &d);
	peer_start(test, &a, d.sock);
	peer_start(test, &b, d.sock);
	peer_start(test, &z, d.sock);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_CHARGE, 0, 10000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG, 1, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_CHARGE, 1, 20000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_CHARGE, 0, 50000, 0, NULL), 0);
	/* written before the answers: no wait for the record */
	KUNIT_EXPECT_EQ(test, listed(&d, a.pid), 2);
	KUNIT_EXPECT_EQ(test, listed(&d, b.pid), 1);

	crash_restart(test, &d, grace);
	t0 = now_ms();
	/* Z held nothing: its "restore" of 30000 comes first, and waits */
	KUNIT_ASSERT_EQ(test, peer(&z, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&z, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&z, P_SEND1, 0, 30000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&z, P_RECV, 0, 0, 300, NULL), 1);
	/* A: its first holder within the record; 25000 of 20000 refused */
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 0, 10000, 0, NULL), 0);
	/* its old line ended with the new one's: a crash now restores it once */
	KUNIT_EXPECT_EQ(test, listed(&d, a.pid), 2);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 1, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 1, 25000, 0, NULL), -ERANGE);
	KUNIT_EXPECT_EQ(test, used(&d), 10000ULL);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 1, 20000, 0, NULL), 0);
	/* A restored every holder it had: the window waits for B only */
	KUNIT_EXPECT_EQ(test, peer(&z, P_RECV, 0, 0, 200, NULL), 1);
	KUNIT_ASSERT_EQ(test, peer(&b, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&b, P_CHARGE1, 0, 50000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&b, P_RESTORED, 0, 0, 0, NULL), 0);
	/* then Z competes for what is left: 20000 of its 30000 */
	KUNIT_EXPECT_EQ(test, peer(&z, P_RECV, 0, 0, 2000, NULL), -ENOSPC);
	KUNIT_EXPECT_LT(test, now_ms() - t0, 4000ULL);	/* not by time */
	KUNIT_EXPECT_EQ(test, used(&d), 80000ULL);
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_RESTORED), 80000ULL);
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_RESTORE_REFUSED), 0ULL);
	/* the old ids ended with the restores: 2 holders, not 4 */
	KUNIT_EXPECT_EQ(test, listed(&d, a.pid), 2);
	KUNIT_EXPECT_EQ(test, listed(&d, z.pid), 0);

	/* crashed again at once: the same again, nothing twice */
	crash_restart(test, &d, grace);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 0, 10000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 1, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 1, 20000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&b, P_CHARGE1, 0, 50000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, used(&d), 80000ULL);
	peer_stop(&a);
	peer_stop(&b);
	peer_stop(&z);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * The record has every byte before it is acknowledged (issue 32): with
 * compaction put off (-R 60000), a charge answered just before a SIGKILL
 * is in the record, and restored in full; growth after the restart comes
 * after it.  Before: the record was written -R after a change, so the
 * last 50 ms of growth (here, all of it) was not in it, and its restore
 * was beyond the record.
 */
static void nxqd_test_record_before_ack(struct kunit *test)
{
	const char *const args[] = { "-G", "5000", "-R", "60000", NULL };
	struct peer a, b;
	struct daemon d;
	struct tcg cg;
	int i;

	cg_enter(test, &cg);
	prepare(test, &d);
	write_state(test, &d, 100000, "-", NULL, 0);
	d.pid = spawn_args(test, &d, args);
	wait_up(test, &d);
	peer_start(test, &a, d.sock);
	peer_start(test, &b, d.sock);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG, 0, 0, 0, NULL), 0);
	for (i = 0; i < 10; i++)
		KUNIT_ASSERT_EQ(test, peer(&a, P_CHARGE, 0, 4000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, listed(&d, a.pid), 1);
	crash_restart(test, &d, args);
	/* B grows first: it waits */
	KUNIT_ASSERT_EQ(test, peer(&b, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&b, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&b, P_CHARGE, 0, 70000, 0, NULL), -EAGAIN);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 0, 40000, 0, NULL), 0);
	/* A restored all it had: the window is closed, 70000 do not fit */
	KUNIT_EXPECT_EQ(test, peer(&b, P_CHARGE, 0, 70000, 300000000ULL,
				   NULL), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, peer(&b, P_CHARGE, 0, 60000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, used(&d), 100000ULL);
	KUNIT_EXPECT_EQ(test, ctl_dev_attr(d.ctl, KEY,
					   NXQUOTA_A_DEVICE_RESTORED), 40000ULL);
	peer_stop(&a);
	peer_stop(&b);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A record cut by the crash in the middle of a line: the cut line is not
 * read (a "4000" cut to "40" would be a smaller restore; to "4" in an id,
 * another holder), the lines before it are.
 */
static void nxqd_test_record_cut(struct kunit *test)
{
	const char *const args[] = { "-G", "3000", "-R", "60000", NULL };
	char path[160], line[128];
	struct peer a;
	struct daemon d;
	struct tcg cg;
	u64 id;
	FILE *f;

	cg_enter(test, &cg);
	prepare(test, &d);
	write_state(test, &d, 100000, "-", NULL, 0);
	d.pid = spawn_args(test, &d, args);
	wait_up(test, &d);
	peer_start(test, &a, d.sock);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_CHARGE, 0, 30000, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_ID, 0, 0, 0, &id), 0);
	KUNIT_ASSERT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	/* as if the crash cut the next line: "...40000" written as "...4" */
	snprintf(path, sizeof(path), "%s/record", d.dir);
	f = fopen(path, "ae");
	KUNIT_ASSERT_NOT_NULL(test, f);
	snprintf(line, sizeof(line), "holder %d %llu %llu %s 4", a.pid,
		 (unsigned long long)proc_start(a.pid), (unsigned long long)id,
		 KEY);
	fputs(line, f);
	fclose(f);
	d.pid = spawn_args(test, &d, args);
	wait_up(test, &d);
	KUNIT_ASSERT_EQ(test, peer(&a, P_DIAL, 0, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, peer(&a, P_REG1, 0, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, peer(&a, P_CHARGE1, 0, 30000, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, used(&d), 30000ULL);
	peer_stop(&a);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* ---- under load ---- */

#define LC_CLIENTS	12
#define LC_HOLDERS	4
#define LC_UNIT		4096ULL
#define LC_CAPACITY	(LC_UNIT * 2048)	/* 8 MiB */

struct lc_state {
	pid_t pid;
	u64 belief[LC_HOLDERS];	/* what it holds charged, as it knows */
	u64 refused;		/* restore bytes refused */
	u64 restores;		/* restores done */
	int v1;			/* speaks version 1 */
	int quiet;		/* quiesced, restored, connected */
	int gen;		/* bumped at each (re)start of the slot */
	int err;		/* the last restore's error */
	int verr;		/* the last version probe's */
};

struct lc_shared {
	int stop, quiesce;
	int v0;			/* the clients speak version 0 only */
	struct lc_state c[LC_CLIENTS];
	/* the nobody: restores it never held, after each restart */
	pid_t nobody;
	u64 nobody_tries;
	u64 nobody_holds;
};

static bool lc_gone(int err)
{
	return err == 1 || err == -ECONNRESET || err == -EPIPE ||
	       err == -ENOTCONN || err == -ECONNREFUSED || err == -ENOENT;
}

struct lc {
	const char *sock;
	struct lc_shared *sh;
	struct lc_state *st;
	int fd, efd;
	u64 id[LC_HOLDERS];
	unsigned int seed;
};

/* Connect again and restore every holder; 0, or 1 to start over. */
static int lc_restore(struct lc *l)
{
	struct nxq_version v = { .size = sizeof(v) };
	u64 end = now_ms() + 10000;
	size_t rlen;
	int i, err;

	if (l->fd >= 0)
		close(l->fd);
	for (;;) {
		l->fd = dial(l->sock, SOCK_SEQPACKET);
		if (l->fd >= 0)
			break;
		if (now_ms() > end)
			return 1;
		usleep_range(10000, 11000);
	}
	err = call(l->fd, NXQ_IOC_VERSION, l->sh->v0 ? 0 : req_vf(1, 0), &v,
		   sizeof(v), NULL, &rlen);
	if (lc_gone(err))
		return 1;
	l->st->v1 = !err && !l->sh->v0;
	l->st->verr = err;
	for (i = 0; i < LC_HOLDERS; i++) {
		u64 b = l->st->belief[i];

		err = l->st->v1 ?
		      reg_v1(l->fd, l->efd, NXQD_REQ_RESTORE, l->id[i],
			     &l->id[i]) :
		      reg(l->fd, l->efd, &l->id[i]);
		l->st->err = err;
		if (err)
			return 1;
		if (!b)
			continue;
		if (l->st->v1) {
			err = charge_v1(l->fd, l->id[i], b, NXQD_REQ_RESTORE,
					0, 0, NULL);
		} else {
			/* as libnxquota: -EAGAIN, then wait for the window */
			err = charge(l->fd, l->id[i], b, 0, 0, NULL);
			if (err == -EAGAIN)
				err = charge(l->fd, l->id[i], b,
					     NXQ_CHARGE_WAIT,
					     10ULL * NSEC_PER_SEC, NULL);
		}
		l->st->err = err;
		if (lc_gone(err))
			return 1;
		if (err) {
			/* it gives them back: memory the daemon refused */
			l->st->refused += b;
			l->st->belief[i] = 0;
		}
	}
	if (l->st->v1 && restored_v1(l->fd))
		return 1;
	l->st->restores++;
	return 0;
}

/*
 * Reconnect and restore; then grow at once on a new holder, as a process
 * whose work goes on does, and only then give back the last slot's
 * memory (the new holder takes its place).  That charge is growth, which
 * must not pass before the others' restores (before, a holder's first
 * charge in the window was taken for its restore, so it passed, and a
 * neighbour's restore found its room taken).
 */
static void lc_reconnect(struct lc *l)
{
	const int g = LC_HOLDERS - 1;
	u64 n, b = LC_UNIT * 64;

	while (lc_restore(l))
		usleep_range(5000, 6000);
	if (reg(l->fd, l->efd, &n))
		return;		/* the next call reconnects */
	if (charge(l->fd, n, b, 0, 0, NULL)) {
		unreg(l->fd, n);
		return;
	}
	if (l->st->belief[g] &&
	    !uncharge(l->fd, l->id[g], l->st->belief[g], NULL))
		l->st->belief[g] = 0;
	if (!l->st->belief[g] && !unreg(l->fd, l->id[g])) {
		l->id[g] = n;
		l->st->belief[g] = b;
		return;
	}
	/* (the connection went: the new holder's charge went with it) */
}

/* One client: grow, shrink, idle watching its connection, maybe die. */
static void lc_main(const char *sock, struct lc_shared *sh, int slot)
{
	struct lc l = { .sock = sock, .sh = sh, .st = &sh->c[slot], .fd = -1,
			.seed = (unsigned int)getpid() };
	struct pollfd p;
	int i, err, op;

	l.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	memset(l.st->belief, 0, sizeof(l.st->belief));
	/* its first holders: a restore of nothing is a registration */
	lc_reconnect(&l);
	while (!sh->stop) {
		if (sh->quiesce) {
			/* quiet: restored, and its connection is alive */
			p = (struct pollfd){ .fd = l.fd, .events = POLLRDHUP };
			if (poll(&p, 1, 20) > 0) {
				l.st->quiet = 0;
				lc_reconnect(&l);
			} else {
				l.st->quiet = 1;
			}
			continue;
		}
		l.st->quiet = 0;
		i = rand_r(&l.seed) % LC_HOLDERS;
		op = rand_r(&l.seed) % 100;
		if (op < 55 && i < LC_HOLDERS - 1) {	/* the last: see above */
			u64 b = LC_UNIT * (1 + rand_r(&l.seed) % 32);

			err = charge(l.fd, l.id[i], b, 0, 0, NULL);
			if (!err)
				l.st->belief[i] += b;
		} else if (op < 75) {
			u64 b = l.st->belief[i] / 2;

			if (!b)
				continue;
			/* what it sends back is not its any more */
			l.st->belief[i] -= b;
			err = uncharge(l.fd, l.id[i], b, NULL);
		} else if (op < 99 || rand_r(&l.seed) % 4) {
			/* idle, watching: a hang-up is seen at once */
			p = (struct pollfd){ .fd = l.fd, .events = POLLRDHUP };
			err = poll(&p, 1, rand_r(&l.seed) % 40) > 0 ? 1 : 0;
		} else {
			_exit(0);	/* dies; the parent starts another */
		}
		if (lc_gone(err))
			lc_reconnect(&l);
	}
	_exit(0);
}

/*
 * A process that never held anything and asks, at each restart, for a
 * restore of 1 MiB (version 1, on a holder it just registered, claiming
 * an id a listed process may have had), as soon as the daemon answers.
 * Granted in the window it would take the room of a listed process's
 * restore; it must wait for the window like growth.  What it gets after
 * the window it keeps (nobody_holds) until the next restart.
 */
static void lc_nobody(const char *sock, struct lc_shared *sh)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), fd = -1, err;
	struct pollfd p;
	u64 id, claim = 1;

	while (!sh->stop) {
		if (fd >= 0) {
			p = (struct pollfd){ .fd = fd, .events = POLLRDHUP };
			if (poll(&p, 1, 20) <= 0)
				continue;
			close(fd);
			sh->nobody_holds = 0;	/* its holder went with it */
		}
		while ((fd = dial(sock, SOCK_SEQPACKET)) < 0 && !sh->stop)
			usleep_range(2000, 3000);
		if (fd < 0)
			break;
		if (reg_v1(fd, efd, NXQD_REQ_RESTORE, claim++ % 64, &id))
			continue;
		sh->nobody_tries++;
		/* sent at once: what the daemon says within 5 ms is early */
		err = charge_v1(fd, id, 256 * LC_UNIT, NXQD_REQ_RESTORE, 0, 0,
				NULL);
		if (!err)
			sh->nobody_holds = 256 * LC_UNIT;
	}
	_exit(0);
}

/* Spin: the load of a busy node, beside the test (issue 32). */
static pid_t lc_hog(void)
{
	pid_t pid = fork();
	volatile unsigned long n = 0;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		n++;
}

struct lc_holder {
	pid_t pid;
	u64 charge;
};

struct lc_dump {
	struct lc_holder h[1024];
	int n;
};

static void lc_dump_each(void *ctx, struct nlattr *a, int rem)
{
	struct lc_dump *d = ctx;
	struct lc_holder h = { 0 };

	for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= rem;
	     rem -= NLA_ALIGN(a->nla_len),
	     a = (void *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if (a->nla_type == NXQUOTA_A_HOLDER_PID)
			memcpy(&h.pid, (char *)a + NLA_HDRLEN, 4);
		if (a->nla_type == NXQUOTA_A_HOLDER_CHARGE)
			memcpy(&h.charge, (char *)a + NLA_HDRLEN, 8);
	}
	if (d->n < (int)ARRAY_SIZE(d->h))
		d->h[d->n++] = h;
}

/* What the daemon says @pid holds, from its holder dump. */
static u64 lc_daemon_holds(struct lc_dump *dump, pid_t pid)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < dump->n; i++)
		if (dump->h[i].pid == pid)
			sum += dump->h[i].charge;
	return sum;
}

/*
 * SIGKILL nxquotad five times while twelve clients charge, grow, go idle
 * and die, each doing the restore protocol (version 1, else what the
 * first protocol allows: its first charge, then a wait): no byte of a
 * restore is refused, and after the last restart the daemon holds for
 * each client exactly what that client holds -- nothing lost, nothing
 * granted twice.
 */
static void lc_run(struct kunit *test, int v0)
{
	const char *const args[] = { "-G", "8000", NULL };	/* -R: 50 ms */
	struct lc_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct lc_dump *dump = calloc(1, sizeof(*dump));
	u64 refused = 0, restores = 0, want, have, sum = 0, deaths = 0;
	struct daemon d;
	struct tcg cg;
	int i, k, fd, bad = 0, v1 = 0;
	pid_t pid, hogs[2];
	u64 end;

	KUNIT_ASSERT_NE(test, (void *)sh, MAP_FAILED);
	KUNIT_ASSERT_NOT_NULL(test, dump);
	memset(sh, 0, sizeof(*sh));
	sh->v0 = v0;
	cg_enter(test, &cg);
	prepare(test, &d);
	write_state(test, &d, LC_CAPACITY, "-", NULL, 0);
	d.pid = spawn_args(test, &d, args);
	wait_up(test, &d);
	for (i = 0; i < (int)ARRAY_SIZE(hogs); i++)
		hogs[i] = lc_hog();
	pid = fork();	/* (sh->nobody is shared: the parent's to write) */
	KUNIT_ASSERT_GE(test, pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		lc_nobody(d.sock, sh);
	}
	sh->nobody = pid;
	for (i = 0; i < LC_CLIENTS; i++) {
		pid_t pid = fork();	/* (the slot is shared: the parent's) */

		KUNIT_ASSERT_GE(test, pid, 0);
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			lc_main(d.sock, sh, i);
		}
		sh->c[i].pid = pid;
	}
	for (k = 0; k < 5; k++) {
		/* load, with deaths and new clients */
		end = now_ms() + 500 + (k * 137) % 400;
		while (now_ms() < end) {
			for (i = 0; i < LC_CLIENTS; i++) {
				if (waitpid(sh->c[i].pid, NULL, WNOHANG) !=
				    sh->c[i].pid)
					continue;
				deaths++;
				refused += sh->c[i].refused;
				restores += sh->c[i].restores;
				sh->c[i].refused = sh->c[i].restores = 0;
				sh->c[i].gen++;
				pid = fork();
				if (!pid) {
					prctl(PR_SET_PDEATHSIG, SIGKILL);
					lc_main(d.sock, sh, i);
				}
				sh->c[i].pid = pid;
			}
			usleep_range(10000, 11000);
		}
		crash_restart(test, &d, args);
	}
	/* quiesce: every client restored, idle, watching; the dead gone */
	sh->quiesce = 1;
	end = now_ms() + 20000;
	for (;;) {
		int alive = 0;

		for (i = 0, k = 0; i < LC_CLIENTS; i++) {
			if (sh->c[i].pid &&
			    waitpid(sh->c[i].pid, NULL, WNOHANG) ==
			    sh->c[i].pid) {
				deaths++;
				sh->c[i].pid = 0;	/* its holders ended */
			}
			if (!sh->c[i].pid)
				continue;
			alive++;
			k += sh->c[i].quiet;
		}
		if (k == alive || now_ms() > end)
			break;
		usleep_range(10000, 11000);
	}
	for (i = 0, want = 0; i < LC_CLIENTS; i++)
		want += !!sh->c[i].pid;
	KUNIT_EXPECT_EQ(test, (u64)k, want);
	usleep_range(100000, 101000);
	fd = dial(d.ctl, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_EXPECT_EQ(test, nl_call(fd, NXQUOTA_CMD_HOLDER_GET, NLM_F_DUMP,
				      NULL, 0, lc_dump_each, dump, NULL, 0), 0);
	close(fd);
	for (i = 0; i < LC_CLIENTS; i++) {
		refused += sh->c[i].refused;
		restores += sh->c[i].restores;
		if (!sh->c[i].pid)
			continue;
		want = 0;
		for (k = 0; k < LC_HOLDERS; k++)
			want += sh->c[i].belief[k];
		have = lc_daemon_holds(dump, sh->c[i].pid);
		if (want != have) {
			bad++;
			kunit_info(test, "client %d (pid %d): holds %llu, the daemon says %llu",
				   i, sh->c[i].pid, (unsigned long long)want,
				   (unsigned long long)have);
		}
		sum += want;
		v1 += sh->c[i].v1;
	}
	for (k = 0; k < dump->n; k++) {
		for (i = 0; i < LC_CLIENTS; i++)
			if (sh->c[i].pid == dump->h[k].pid)
				break;
		if (i == LC_CLIENTS)
			kunit_info(test, "a holder of pid %d, no client's: %llu",
				   dump->h[k].pid,
				   (unsigned long long)dump->h[k].charge);
	}
	for (i = 0; i < LC_CLIENTS; i++)
		if (sh->c[i].pid && !sh->c[i].quiet)
			kunit_info(test, "client %d (pid %d) not quiet, last error %d",
				   i, sh->c[i].pid, sh->c[i].err);
	for (i = 0; i < LC_CLIENTS; i++)
		if (sh->c[i].pid && !sh->v0 && !sh->c[i].v1)
			kunit_info(test, "client %d (pid %d) at version 0: %d",
				   i, sh->c[i].pid, sh->c[i].verr);
	have = lc_daemon_holds(dump, sh->nobody);
	kunit_info(test, "5 restarts, %d clients (%d at version 1), %llu deaths; %llu restores, %llu bytes refused at restore; %llu bytes held, %llu charged; the nobody asked %llu times, holds %llu (the daemon says %llu)",
		   LC_CLIENTS, v1, (unsigned long long)deaths,
		   (unsigned long long)restores, (unsigned long long)refused,
		   (unsigned long long)sum, (unsigned long long)used(&d),
		   (unsigned long long)sh->nobody_tries,
		   (unsigned long long)sh->nobody_holds,
		   (unsigned long long)have);
	KUNIT_EXPECT_EQ(test, refused, 0ULL);
	KUNIT_EXPECT_EQ(test, bad, 0);
	KUNIT_EXPECT_EQ(test, have, sh->nobody_holds);
	KUNIT_EXPECT_GE(test, sh->nobody_tries, 5ULL);
	KUNIT_EXPECT_EQ(test, used(&d), sum + have);
	KUNIT_EXPECT_GE(test, restores, (u64)(4 * LC_CLIENTS));
	sh->stop = 1;
	for (i = 0; i < LC_CLIENTS; i++) {
		if (!sh->c[i].pid)
			continue;
		kill(sh->c[i].pid, SIGKILL);
		waitpid(sh->c[i].pid, NULL, 0);
	}
	kill(sh->nobody, SIGKILL);
	waitpid(sh->nobody, NULL, 0);
	for (i = 0; i < (int)ARRAY_SIZE(hogs); i++) {
		if (hogs[i] <= 0)
			continue;	/* (never kill(-1) or kill(0)) */
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
	free(dump);
	munmap(sh, sizeof(*sh));
}

static void nxqd_test_restart_load(struct kunit *test)
{
	lc_run(test, 0);
}

/* The same with clients of version 0 (the first charge, then a wait). */
static void nxqd_test_restart_load_v0(struct kunit *test)
{
	lc_run(test, 1);
}

static struct kunit_case nxqd_restart_cases[] = {
	KUNIT_CASE(nxqd_test_restore_bounded),
	KUNIT_CASE(nxqd_test_restore_v1),
	KUNIT_CASE(nxqd_test_record_before_ack),
	KUNIT_CASE(nxqd_test_record_cut),
	KUNIT_CASE(nxqd_test_restart_load),
	KUNIT_CASE(nxqd_test_restart_load_v0),
	{}
};

static struct kunit_suite nxqd_restart_suite = {
	.name = "nxquotad-restart",
	.test_cases = nxqd_restart_cases,
};

kunit_test_suite(nxqd_restart_suite);
