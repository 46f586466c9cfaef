// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad as the authority, tested from outside: the daemon binary
 * ($NXQD_BIN) runs as root on a socket in a fresh directory, with a state
 * file written by the case (state.c's format: a device and a budget on a
 * cgroup the case makes and moves itself into).  The cases are the
 * module's rules over the socket, as a hostile tenant would try them.
 * They need root and a writable cgroup2 hierarchy, else they are skipped.
 */
#include "client_util.h"

/* ---- cases ---- */

/* Register with an eventfd, charge to the max and beyond, status, back. */
static void nxqd_test_charge(struct kunit *test)
{
	struct nxq_status st;
	struct daemon d;
	struct tcg cg;
	struct stat sb;
	u64 id = 0, charged = 1;
	int fd, efd;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_GE(test, efd, 0);
	KUNIT_EXPECT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_EXPECT_NE(test, id, 0ULL);
	/* a holder is in the record from its first byte, before the answer */
	KUNIT_EXPECT_EQ(test, listed(&d, getpid()), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 600, 0, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, listed(&d, getpid()), 1);
	KUNIT_EXPECT_EQ(test, charged, 600ULL);
	/* over the max: refused, nothing charged */
	KUNIT_EXPECT_EQ(test, charge(fd, id, 600, NXQ_CHARGE_NOWAIT, 0,
				     NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 600ULL);
	KUNIT_EXPECT_EQ(test, st.node_current, 600ULL);
	KUNIT_EXPECT_EQ(test, st.node_max, 1000ULL);
	KUNIT_EXPECT_EQ(test, st.device_used, 600ULL);
	KUNIT_EXPECT_EQ(test, st.device_capacity, 1000000ULL);
	/* the node is the cgroup the daemon found for this process */
	KUNIT_EXPECT_EQ(test, stat(cg.dir, &sb), 0);
	KUNIT_EXPECT_EQ(test, st.cgroup_id, (u64)sb.st_ino);
	KUNIT_EXPECT_EQ(test, uncharge(fd, id, 600, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 0ULL);
	KUNIT_EXPECT_EQ(test, uncharge(fd, id, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, unreg(fd, id), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 1, 0, 0, NULL), -ENOENT);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, getpid(), 0), 0);
	/* no such device */
	{
		struct nxq_holder_reg r = { .size = sizeof(r), .eventfd = -1 };
		size_t rlen;

		strscpy(r.device, "nodev", sizeof(r.device));
		KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_HOLDER_REGISTER, 0, &r,
					   sizeof(r), NULL, &rlen), -ENODEV);
	}
	close(efd);
	close(fd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* Descriptors: exactly the ones announced, else EBADF and none kept. */
static void nxqd_test_register_fds(struct kunit *test)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct daemon d;
	struct tcg cg;
	int fd, efd, efd2, p[2], nul, zero, before, fds[3];
	size_t rlen;
	u64 id;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "1:3");	/* /dev/null's number */
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	KUNIT_ASSERT_EQ(test, pipe2(p, O_CLOEXEC), 0);
	KUNIT_ASSERT_GE(test, nul, 0);
	KUNIT_ASSERT_GE(test, zero, 0);
	/* a first holder: the daemon keeps a pidfd for this process */
	fds[0] = efd;
	fds[1] = nul;
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, nul, &id, fds, 2), 0);
	KUNIT_EXPECT_EQ(test, unreg(fd, id), 0);
	usleep_range(100000, 101000);
	before = count_fds(d.pid);
	KUNIT_ASSERT_GT(test, before, 0);

	/* an eventfd announced, none sent */
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, nul, &id, &nul, 1), -EBADF);
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, -1, &id, NULL, 0), -EBADF);
	/* none announced, one sent */
	KUNIT_EXPECT_EQ(test, reg_fds(fd, -1, -1, &id, &efd, 1), -EBADF);
	/* one too many */
	fds[0] = efd;
	fds[1] = nul;
	fds[2] = efd2;
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, nul, &id, fds, 3), -EBADF);
	/* an "eventfd" that is a pipe */
	fds[0] = p[0];
	fds[1] = nul;
	KUNIT_EXPECT_EQ(test, reg_fds(fd, p[0], nul, &id, fds, 2), -EINVAL);
	/* a descriptor with another command */
	KUNIT_EXPECT_EQ(test, call_fds(fd, NXQ_IOC_VERSION, 0, &v, sizeof(v),
				       NULL, &rlen, &efd, 1), -EINVAL);
	/* the device's node: required, and the right one */
	KUNIT_EXPECT_EQ(test, reg(fd, efd, &id), -EACCES);
	fds[0] = efd;
	fds[1] = zero;
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, zero, &id, fds, 2), -EACCES);
	/* nothing was kept: every descriptor received is closed */
	KUNIT_EXPECT_EQ(test, fds_wait(d.pid, before), before);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, getpid(), 0), 0);
	/* and the right way works, keeping just the eventfd */
	fds[0] = efd;
	fds[1] = nul;
	KUNIT_EXPECT_EQ(test, reg_fds(fd, efd, nul, &id, fds, 2), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, count_fds(d.pid), before + 1);
	KUNIT_EXPECT_EQ(test, unreg(fd, id), 0);
	KUNIT_EXPECT_EQ(test, fds_wait(d.pid, before), before);
	close(fd);
	close(efd);
	close(efd2);
	close(nul);
	close(zero);
	close(p[0]);
	close(p[1]);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* A holder is its process's: another one gets ENOENT, on any socket. */
static void nxqd_test_other_process(struct kunit *test)
{
	struct nxq_status st;
	struct daemon d;
	struct tcg cg;
	int fd, efd, p[2], got[5] = { 0 };
	pid_t child;
	u64 id;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, id, 300, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, pipe2(p, O_CLOEXEC), 0);
	child = fork();
	KUNIT_ASSERT_GE(test, child, 0);
	if (!child) {
		int own = dial(d.sock, SOCK_SEQPACKET);

		/* the connection it inherited, then its own */
		got[0] = charge(fd, id, 1, 0, 0, NULL);
		got[1] = status(fd, id, &st);
		got[2] = uncharge(fd, id, 300, NULL);
		got[3] = own < 0 ? own : charge(own, id, 1, 0, 0, NULL);
		got[4] = own < 0 ? own : unreg(own, id);
		_exit(write(p[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(p[1]);
	KUNIT_EXPECT_EQ(test, (long)read(p[0], got, sizeof(got)),
			(long)sizeof(got));
	waitpid(child, NULL, 0);
	KUNIT_EXPECT_EQ(test, got[0], -ENOENT);
	KUNIT_EXPECT_EQ(test, got[1], -ENOENT);
	KUNIT_EXPECT_EQ(test, got[2], -ENOENT);
	KUNIT_EXPECT_EQ(test, got[3], -ENOENT);
	KUNIT_EXPECT_EQ(test, got[4], -ENOENT);
	/* the owner still has it, as it was */
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 300ULL);
	/* and may use it from another of its connections */
	{
		int fd2 = dial(d.sock, SOCK_SEQPACKET);

		KUNIT_EXPECT_EQ(test, uncharge(fd2, id, 300, NULL), 0);
		close(fd2);
	}
	close(p[0]);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A SIGKILLed client leaks nothing: its holder ends with its connection;
 * and with its process when the connection outlives it.
 */
static void nxqd_test_sigkill(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	int fd, shared, efd, p[2], round, before;
	pid_t child;
	char ok;
	u64 id;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);	/* the observer */
	usleep_range(50000, 51000);
	before = count_fds(d.pid);
	/* a holder ends with the connection it was registered on */
	shared = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, shared, 0);
	{
		int e = eventfd(0, EFD_CLOEXEC);
		u64 cid;

		KUNIT_EXPECT_EQ(test, reg(shared, e, &cid), 0);
		KUNIT_EXPECT_EQ(test, charge(shared, cid, 200, 0, 0, NULL), 0);
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 200), 200ULL);
		close(shared);
		close(e);
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 0), 0ULL);
	}
	for (round = 0; round < 2; round++) {
		/* round 1: the child uses a connection the parent keeps */
		shared = round ? dial(d.sock, SOCK_SEQPACKET) : -1;
		KUNIT_ASSERT_EQ(test, pipe2(p, O_CLOEXEC), 0);
		child = fork();
		KUNIT_ASSERT_GE(test, child, 0);
		if (!child) {
			int c = shared >= 0 ? shared :
				dial(d.sock, SOCK_SEQPACKET);
			int e = eventfd(0, EFD_CLOEXEC);
			u64 cid;

			if (c < 0 || reg(c, e, &cid) ||
			    charge(c, cid, 700, 0, 0, NULL))
				_exit(1);
			ok = 1;
			if (write(p[1], &ok, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		close(p[1]);
		ok = 0;
		KUNIT_EXPECT_EQ(test, (long)read(p[0], &ok, 1), 1L);
		close(p[0]);
		KUNIT_EXPECT_EQ(test, ok, 1);
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 700), 700ULL);
		KUNIT_EXPECT_EQ(test, listed_wait(&d, child, 1), 1);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 0), 0ULL);
		/* and its budget is whole again */
		KUNIT_EXPECT_EQ(test, charge(fd, id, 1000, 0, 0, NULL), 0);
		KUNIT_EXPECT_EQ(test, uncharge(fd, id, 1000, NULL), 0);
		KUNIT_EXPECT_EQ(test, listed_wait(&d, child, 0), 0);
		if (shared >= 0)
			close(shared);
	}
	/*
	 * The connection outlives its process (a grandchild inherited it
	 * and keeps it open): the holder ends with the process all the same.
	 */
	KUNIT_ASSERT_EQ(test, pipe2(p, O_CLOEXEC), 0);
	child = fork();
	KUNIT_ASSERT_GE(test, child, 0);
	if (!child) {
		int c = dial(d.sock, SOCK_SEQPACKET);
		int e = eventfd(0, EFD_CLOEXEC);
		pid_t gc;
		u64 cid;

		if (c < 0 || reg(c, e, &cid) || charge(c, cid, 700, 0, 0, NULL))
			_exit(1);
		gc = fork();
		if (!gc) {
			pause();
			_exit(0);
		}
		if (write(p[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	{
		pid_t gc = 0;

		KUNIT_EXPECT_EQ(test, (long)read(p[0], &gc, sizeof(gc)),
				(long)sizeof(gc));
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 700), 700ULL);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		/* gc still has the connection open */
		KUNIT_EXPECT_EQ(test, gc > 0 ? kill(gc, 0) : -1, 0);
		KUNIT_EXPECT_EQ(test, wait_used(fd, id, 0), 0ULL);
		if (gc > 0)
			kill(gc, SIGKILL);
	}
	close(p[0]);
	/* the children's eventfds were closed with their holders */
	KUNIT_EXPECT_EQ(test, fds_wait(d.pid, before), before);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A process moved to another cgroup charges the new one from its next
 * charge on; what it charged before stays where it was (atk_migrate).
 */
static void nxqd_test_migrate(struct kunit *test)
{
	struct nxq_status st;
	struct daemon d;
	struct tcg c1, c2;
	struct stat s1, s2;
	char procs[600], pid[32];
	int fd, efd;
	u64 id;

	cg_enter(test, &c2);	/* made first, left last */
	cg_enter(test, &c1);
	prepare(test, &d);
	write_state(test, &d, 1000000, "-", c1.rel, 100);
	add_budget(test, &d, c2.rel, 8);
	d.pid = spawn(test, &d);
	wait_up(test, &d);
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 10, 0, 0, NULL), 0);
	/* moved to c2 (max 8): 10 more is over c2's max, 5 fits there */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", c2.dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	KUNIT_ASSERT_EQ(test, write_str(procs, pid), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 10, 0, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 5, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, stat(c1.dir, &s1), 0);
	KUNIT_EXPECT_EQ(test, stat(c2.dir, &s2), 0);
	KUNIT_EXPECT_EQ(test, st.cgroup_id, (u64)s2.st_ino);
	KUNIT_EXPECT_NE(test, st.cgroup_id, (u64)s1.st_ino);
	KUNIT_EXPECT_EQ(test, st.node_current, 5ULL);
	KUNIT_EXPECT_EQ(test, st.node_max, 8ULL);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 15ULL);
	KUNIT_EXPECT_EQ(test, st.device_used, 15ULL);
	KUNIT_EXPECT_EQ(test, uncharge(fd, id, 15, NULL), 0);
	KUNIT_EXPECT_EQ(test, status(fd, id, &st), 0);
	KUNIT_EXPECT_EQ(test, st.node_current, 0ULL);
	KUNIT_EXPECT_EQ(test, st.device_used, 0ULL);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&c1);	/* back to c2's cgroup.procs... then out of c2 */
	cg_leave(&c2);
}

/* A refused charge asks the holder that has it: eventfd, read, answer. */
static void nxqd_test_ticket(struct kunit *test)
{
	struct nxq_ticket t = { .size = sizeof(t) };
	struct nxq_ticket_answer a = { .size = sizeof(a) };
	struct pollfd pf;
	struct daemon d;
	struct tcg cg;
	int fd, efa, efb;
	u64 ida, idb, n = 0, charged;
	size_t rlen;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 1000, 0, 0, NULL), 0);
	/* no ticket yet */
	t.holder_id = ida;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   &t, &rlen), -EAGAIN);
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, NULL), -EDQUOT);
	/* A is asked, on its eventfd */
	pf.fd = efa;
	pf.events = POLLIN;
	KUNIT_EXPECT_EQ(test, poll(&pf, 1, 2000), 1);
	KUNIT_EXPECT_EQ(test, (long)read(efa, &n, sizeof(n)), 8L);
	KUNIT_EXPECT_GE(test, n, 1ULL);
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   &t, &rlen), 0);
	KUNIT_EXPECT_NE(test, t.generation, 0ULL);
	KUNIT_EXPECT_GE(test, t.bytes, 500ULL);
	KUNIT_EXPECT_EQ(test, t.reason, NXQ_TICKET_REASON_MAX);
	/* B's own ticket is not A's */
	t.holder_id = idb;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   NULL, &rlen), -EAGAIN);
	/* A answers, releasing 500; a second answer is stale */
	a.holder_id = ida;
	a.generation = t.generation;
	a.released = 500;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_ANSWER, 0, &a, sizeof(a),
				   &a, &rlen), 0);
	KUNIT_EXPECT_EQ(test, a.charged, 500ULL);
	KUNIT_EXPECT_NE(test, call(fd, NXQ_IOC_TICKET_ANSWER, 0, &a,
				   sizeof(a), NULL, &rlen), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 500ULL);
	close(fd);
	close(efa);
	close(efb);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A tenant that fills its eventfd and makes it blocking does not stall
 * the daemon: the signal that would wait is skipped, the ticket is open.
 */
static void nxqd_test_eventfd_full(struct kunit *test)
{
	struct nxq_ticket t = { .size = sizeof(t) };
	struct timeval tv = { .tv_sec = 3 };
	u64 big = 0xfffffffffffffffeULL;
	struct daemon d;
	struct tcg cg;
	int fd, efa, efb;
	u64 ida, idb;
	size_t rlen;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_EQ(test, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 1000, 0, 0, NULL), 0);
	/* the shared file: full, and blocking again */
	KUNIT_ASSERT_EQ(test, (long)write(efa, &big, sizeof(big)), 8L);
	KUNIT_ASSERT_EQ(test, fcntl(efa, F_SETFL, 0), 0);
	/* B's refusal asks A; the daemon answers within the timeout */
	KUNIT_EXPECT_EQ(test, charge(fd, idb, 500, 0, 0, NULL), -EDQUOT);
	t.holder_id = ida;
	KUNIT_EXPECT_EQ(test, call(fd, NXQ_IOC_TICKET_READ, 0, &t, sizeof(t),
				   &t, &rlen), 0);
	KUNIT_EXPECT_GE(test, t.bytes, 500ULL);
	/* (had a write waited, this read lets it go) */
	KUNIT_EXPECT_EQ(test, (long)read(efa, &big, sizeof(big)), 8L);
	close(fd);
	close(efa);
	close(efb);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A charge that waits ends, granting nothing, when its connection goes;
 * and waiting charges are kept as state, not as threads of the daemon.
 */
static void nxqd_test_close_ends_wait(struct kunit *test)
{
	struct nxq_charge c = { .size = sizeof(c) };
	struct nxqd_req req = { .cmd = NXQ_IOC_CHARGE };
	unsigned char msg[sizeof(req) + sizeof(c)];
	struct nxq_status st;
	struct daemon d;
	struct tcg cg;
	int fd, w[20], efa, efb, threads, i;
	u64 ida, idb;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 1000, 0, 0, NULL), 0);
	usleep_range(100000, 101000);
	threads = count_threads(d.pid);
	/* B waits up to 20 s, twenty times, on other connections */
	c.flags = NXQ_CHARGE_WAIT;
	c.holder_id = idb;
	c.bytes = 500;
	c.timeout_ns = 20ULL * NSEC_PER_SEC;
	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), &c, sizeof(c));
	for (i = 0; i < 20; i++) {
		w[i] = dial(d.sock, SOCK_SEQPACKET);
		KUNIT_ASSERT_GE(test, w[i], 0);
		KUNIT_ASSERT_EQ(test, (long)send(w[i], msg, sizeof(msg), 0),
				(long)sizeof(msg));
	}
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   20), 20ULL);
	/* no thread per waiting charge, nor per connection */
	KUNIT_EXPECT_EQ(test, count_threads(d.pid), threads);
	for (i = 0; i < 20; i++)
		close(w[i]);
	/* the waits end: interrupted, not timed out */
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   0), 0ULL);
	/* room now: nothing is granted to the charges that went away */
	KUNIT_EXPECT_EQ(test, uncharge(fd, ida, 1000, NULL), 0);
	usleep_range(100000, 101000);
	KUNIT_EXPECT_EQ(test, status(fd, idb, &st), 0);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 0ULL);
	KUNIT_EXPECT_EQ(test, st.device_used, 0ULL);
	close(fd);
	close(efa);
	close(efb);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * Waiting charges are decided by the ledger, not by a sleeper: a release
 * grants the earliest that fits and answers it at once (its connection
 * gets its reply, with what it holds), the other keeps waiting, and its
 * hang-up ends it; a wait that runs out is answered -ETIMEDOUT with what
 * refused it (version 1).  Issue 30, item 4: no fibers.
 */
static void nxqd_test_wait_granted(struct kunit *test)
{
	struct nxq_charge c = { .size = sizeof(c) }, out;
	struct timeval tv = { .tv_sec = 5 };
	struct nxq_status st;
	struct daemon d;
	struct tcg cg;
	int fd, wb, wc, efa, efb, efc;
	u64 ida, idb, idc, t0;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	fd = dial(d.sock, SOCK_SEQPACKET);
	wb = dial(d.sock, SOCK_SEQPACKET);
	wc = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_ASSERT_GE(test, wb, 0);
	KUNIT_ASSERT_GE(test, wc, 0);
	efa = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efb = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efc = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efa, &ida), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efb, &idb), 0);
	KUNIT_ASSERT_EQ(test, reg(fd, efc, &idc), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 1000, 0, 0, NULL), 0);
	c.flags = NXQ_CHARGE_WAIT;
	c.timeout_ns = 20ULL * NSEC_PER_SEC;
	c.holder_id = idb;
	c.bytes = 400;
	KUNIT_ASSERT_EQ(test, send_req(wb, NXQ_IOC_CHARGE, 0, &c, sizeof(c)), 0);
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   1), 1ULL);
	c.holder_id = idc;
	c.bytes = 700;
	KUNIT_ASSERT_EQ(test, send_req(wc, NXQ_IOC_CHARGE, 0, &c, sizeof(c)), 0);
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   2), 2ULL);
	/* room for B (400), not for C (700): B is answered, C waits */
	t0 = now_ms();
	KUNIT_EXPECT_EQ(test, uncharge(fd, ida, 500, NULL), 0);
	memset(&out, 0, sizeof(out));
	KUNIT_EXPECT_EQ(test, recv_rep(wb, 5000, &out, sizeof(out)), 0);
	KUNIT_EXPECT_LT(test, now_ms() - t0, 5000ULL);
	KUNIT_EXPECT_EQ(test, out.charged, 400ULL);
	KUNIT_EXPECT_EQ(test, recv_rep(wc, 0, NULL, 0), 1);
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   1), 1ULL);
	/* C's connection goes: its wait ends, nothing granted */
	close(wc);
	KUNIT_EXPECT_EQ(test, ctl_dev_wait(d.ctl, KEY, NXQUOTA_A_DEVICE_WAITERS,
					   0), 0ULL);
	KUNIT_EXPECT_EQ(test, uncharge(fd, ida, 500, NULL), 0);
	KUNIT_EXPECT_EQ(test, status(fd, idc, &st), 0);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 0ULL);
	KUNIT_EXPECT_EQ(test, st.device_used, 400ULL);
	/* a wait that runs out: -ETIMEDOUT after its timeout, not before */
	KUNIT_ASSERT_EQ(test, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
	KUNIT_ASSERT_EQ(test, charge(fd, ida, 600, 0, 0, NULL), 0);
	t0 = now_ms();
	KUNIT_EXPECT_EQ(test, charge(fd, idc, 700, NXQ_CHARGE_WAIT,
				     200 * NSEC_PER_MSEC, NULL), -ETIMEDOUT);
	KUNIT_EXPECT_GE(test, now_ms() - t0, 190ULL);
	KUNIT_EXPECT_EQ(test, status(fd, idc, &st), 0);
	KUNIT_EXPECT_EQ(test, st.holder_charge, 0ULL);
	close(wb);
	close(fd);
	close(efa);
	close(efb);
	close(efc);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * The restarted client, a child process that does what it is told on
 * @cmd and answers each with an errno on @res: 'n' a new connection, 'r'
 * register a holder on it, 'h' charge 300 on the last holder.
 */
static void client_loop(const char *sock, int cmd, int res)
{
	int c = -1, e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), err;
	char op;
	u64 id = 0;

	while (read(cmd, &op, 1) == 1) {
		switch (op) {
		case 'n':
			if (c >= 0)
				close(c);
			c = dial(sock, SOCK_SEQPACKET);
			err = c < 0 ? c : 0;
			break;
		case 'r':
			err = reg(c, e, &id);
			break;
		case 'h':
			err = charge(c, id, 300, 0, 0, NULL);
			break;
		default:
			err = -EINVAL;
		}
		if (write(res, &err, sizeof(err)) != sizeof(err))
			break;
	}
	_exit(0);
}

/* Tell the client to do @ops, one by one; the first error, or 0. */
static int tell(int cmd, int res, const char *ops)
{
	int err = 0;

	for (; *ops && !err; ops++)
		if (write(cmd, ops, 1) != 1 ||
		    read(res, &err, sizeof(err)) != sizeof(err))
			return 1;
	return err;
}

/* After a restart, the listed clients restore first. */
static void nxqd_test_restart_grace(struct kunit *test)
{
	const char *const grace5[] = { "-G", "5000", NULL };
	const char *const grace8[] = { "-G", "800", NULL };
	int cmd[2], res[2], fd, efd;
	struct daemon d;
	struct tcg cg;
	pid_t x;
	u64 id, t0, t;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	KUNIT_ASSERT_EQ(test, pipe2(cmd, O_CLOEXEC), 0);
	KUNIT_ASSERT_EQ(test, pipe2(res, O_CLOEXEC), 0);
	x = fork();
	KUNIT_ASSERT_GE(test, x, 0);
	if (!x) {
		close(cmd[1]);
		close(res[0]);
		client_loop(d.sock, cmd[0], res[1]);
	}
	close(cmd[0]);
	close(res[1]);
	/* X holds 600 in two holders, as the record says */
	KUNIT_EXPECT_EQ(test, tell(cmd[1], res[0], "nrhrh"), 0);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, x, 2), 2);

	/* a crash: the list stays; the next daemon gives X 5 s */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGKILL), 128 + SIGKILL);
	d.pid = spawn_args(test, &d, grace5);
	wait_up(test, &d);
	t0 = now_ms();
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	/* this process was not listed: it waits its turn */
	KUNIT_EXPECT_EQ(test, charge(fd, id, 600, 0, 0, NULL), -EAGAIN);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 600, NXQ_CHARGE_WAIT,
				     100 * NSEC_PER_MSEC, NULL), -ETIMEDOUT);
	/* X comes back holder by holder; until its last charge, Y waits */
	KUNIT_EXPECT_EQ(test, tell(cmd[1], res[0], "nrh"), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, 0, 0, NULL), -EAGAIN);
	/* X's new charges wait too: restores first, growth after */
	KUNIT_EXPECT_EQ(test, tell(cmd[1], res[0], "h"), -EAGAIN);
	KUNIT_EXPECT_EQ(test, tell(cmd[1], res[0], "r"), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, 0, 0, NULL), -EAGAIN);
	KUNIT_EXPECT_EQ(test, tell(cmd[1], res[0], "h"), 0);
	/* restored: the window closed early, and X's 600 came first */
	KUNIT_EXPECT_EQ(test, charge(fd, id, 600, 0, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 400, 0, 0, NULL), 0);
	t = now_ms() - t0;
	KUNIT_EXPECT_LT(test, t, 4000ULL);
	close(fd);
	close(efd);
	KUNIT_EXPECT_EQ(test, listed_wait(&d, getpid(), 0), 0);

	/* a clean stop keeps the record too; this window ends by time */
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	KUNIT_EXPECT_EQ(test, listed(&d, x), 2);
	d.pid = spawn_args(test, &d, grace8);
	wait_up(test, &d);
	t0 = now_ms();
	fd = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, fd, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	KUNIT_ASSERT_EQ(test, reg(fd, efd, &id), 0);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, 0, 0, NULL), -EAGAIN);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, NXQ_CHARGE_WAIT,
				     5ULL * NSEC_PER_SEC, NULL), 0);
	t = now_ms() - t0;
	KUNIT_EXPECT_GE(test, t, 500ULL);
	KUNIT_EXPECT_LT(test, t, 4000ULL);
	KUNIT_EXPECT_EQ(test, charge(fd, id, 100, 0, 0, NULL), 0);
	close(fd);
	close(efd);
	close(cmd[1]);	/* X exits */
	waitpid(x, NULL, 0);
	close(res[0]);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * At most @opt connections (16; the other bounds at their defaults, all
 * above that): the next one is closed at once, and once one closes there
 * is room for one again.
 */
static void conn_bound(struct kunit *test, const char *opt)
{
	struct nxq_version v = { .size = sizeof(v) };
	/* no room kept per subtree (-Q 0): it passes the bounds per uid and in all */
	const char *const bound[] = { opt, "16", "-Q", "0", NULL };
	int fds[NXQD_CONN_PER_PROC_T + 1], i, ok = 0, extra;
	struct daemon d;
	size_t rlen;

	prepare(test, &d);
	d.pid = spawn_args(test, &d, bound);
	wait_up(test, &d);
	usleep_range(100000, 101000);	/* wait_up's connection is gone */
	for (i = 0; i < NXQD_CONN_PER_PROC_T; i++) {
		fds[i] = dial(d.sock, SOCK_SEQPACKET);
		ok += fds[i] >= 0 && !call(fds[i], NXQ_IOC_VERSION, 0, &v,
					   sizeof(v), NULL, &rlen);
	}
	KUNIT_EXPECT_EQ(test, ok, NXQD_CONN_PER_PROC_T);
	extra = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_EXPECT_EQ(test, extra >= 0 ? call(extra, NXQ_IOC_VERSION, 0, &v,
						sizeof(v), NULL, &rlen) : 1, 1);
	if (extra >= 0)
		close(extra);
	/* one closed: room for one again */
	close(fds[0]);
	for (i = 0, ok = 1; i < 100 && ok; i++) {
		usleep_range(10000, 11000);
		extra = dial(d.sock, SOCK_SEQPACKET);
		ok = extra < 0 || call(extra, NXQ_IOC_VERSION, 0, &v,
				       sizeof(v), NULL, &rlen);
		if (extra >= 0)
			close(extra);
	}
	KUNIT_EXPECT_EQ(test, ok, 0);
	for (i = 1; i < NXQD_CONN_PER_PROC_T; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
}

/* Per process (-P), in all (-N), per uid (-U), per cgroup (-K). */
static void nxqd_test_conn_bound(struct kunit *test)
{
	conn_bound(test, "-P");
}

static void nxqd_test_conn_bound_all(struct kunit *test)
{
	conn_bound(test, "-N");
}

static void nxqd_test_conn_bound_uid(struct kunit *test)
{
	conn_bound(test, "-U");
}

static void nxqd_test_conn_bound_cgroup(struct kunit *test)
{
	conn_bound(test, "-K");
}

static struct kunit_case nxqd_client_cases[] = {
	KUNIT_CASE(nxqd_test_charge),
	KUNIT_CASE(nxqd_test_register_fds),
	KUNIT_CASE(nxqd_test_other_process),
	KUNIT_CASE(nxqd_test_sigkill),
	KUNIT_CASE(nxqd_test_migrate),
	KUNIT_CASE(nxqd_test_ticket),
	KUNIT_CASE(nxqd_test_eventfd_full),
	KUNIT_CASE(nxqd_test_close_ends_wait),
	KUNIT_CASE(nxqd_test_wait_granted),
	KUNIT_CASE(nxqd_test_restart_grace),
	KUNIT_CASE(nxqd_test_conn_bound),
	KUNIT_CASE(nxqd_test_conn_bound_all),
	KUNIT_CASE(nxqd_test_conn_bound_uid),
	KUNIT_CASE(nxqd_test_conn_bound_cgroup),
	{}
};

static struct kunit_suite nxqd_client_suite = {
	.name = "nxquotad-client",
	.test_cases = nxqd_client_cases,
};

kunit_test_suite(nxqd_client_suite);
