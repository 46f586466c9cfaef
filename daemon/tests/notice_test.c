// SPDX-License-Identifier: GPL-2.0
/*
 * Tickets told on the tenant's own connection (protocol version 2,
 * NXQD_REQ_NOTIFY; <linux/nxquotad.h>), from outside: the daemon binary
 * ($NXQD_BIN) as root, in a cgroup the case makes, as client_test.c.
 *
 *  - nxqd_test_notice: a ticket reaches a holder registered with
 *    NXQD_REQ_NOTIFY as a struct nxqd_notice on its connection, and no
 *    thread is started for it (one is, for a legacy eventfd);
 *  - nxqd_test_notice_coalesced: raises of a ticket not read yet send
 *    one notice; once it is read, the next raise sends the next;
 *  - nxqd_test_notice_unread: a tenant that never reads its connection
 *    fills it; the daemon keeps what it could not send and sends it once
 *    there is room, and meanwhile answers the others and tells their
 *    tickets at once;
 *  - nxqd_test_notice_in_flight: a notice comes on a connection whose
 *    charge waits, before that charge's reply, and is not its reply;
 *  - nxqd_test_notice_before_ack: a budget change's notices are sent
 *    before the change is acknowledged.
 *
 * Each was seen to fail on a daemon broken for it (daemon/mutants.sh,
 * notice-*).  They need root and a writable cgroup2 hierarchy, else they
 * are skipped.
 */
#include "client_util.h"

/* Register on @fd at version 2 with NXQD_REQ_NOTIFY and no eventfd. */
static int reg_notify(int fd, u64 *id)
{
	struct nxq_holder_reg r = { .size = sizeof(r), .eventfd = -1 };
	size_t rlen;
	int err;

	strscpy(r.device, KEY, sizeof(r.device));
	err = call(fd, NXQ_IOC_HOLDER_REGISTER, req_vf(2, NXQD_REQ_NOTIFY), &r,
		   sizeof(r), &r, &rlen);
	if (!err && id)
		*id = r.holder_id;
	return err;
}

/*
 * The next message on @fd within @ms: 1 a notice (its holder in *@id), 0
 * anything else (a reply: its bytes in @rep, its length in *@len), -1
 * none.  A notice must be exactly a struct nxqd_notice, from version 2.
 */
static int next_msg(struct kunit *test, int fd, int ms, u64 *id, void *rep,
		    size_t *len)
{
	unsigned char buf[sizeof(struct nxqd_rep) + 4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct nxqd_notice n;
	struct nxqd_rep r;
	ssize_t got;

	if (poll(&p, 1, ms) != 1)
		return -1;
	got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (got < (ssize_t)sizeof(r))
		return -1;
	memcpy(&r, buf, sizeof(r));
	if (r.flags & NXQD_REP_TICKET) {
		KUNIT_EXPECT_EQ(test, got, (ssize_t)sizeof(n));
		memcpy(&n, buf, min_t(size_t, got, sizeof(n)));
		KUNIT_EXPECT_EQ(test, n.rep.err, 0);
		KUNIT_EXPECT_EQ(test, n.rep.version, 2);
		KUNIT_EXPECT_EQ(test, n.rep.flags, NXQD_REP_TICKET);
		if (id)
			*id = n.holder_id;
		return 1;
	}
	if (rep)
		memcpy(rep, buf, got);
	if (len)
		*len = got;
	return 0;
}

/* Notices for @want on @fd within @ms, until none comes for @ms. */
static int count_notices(struct kunit *test, int fd, int ms, u64 want)
{
	int n = 0, k;
	u64 id;

	while ((k = next_msg(test, fd, ms, &id, NULL, NULL)) >= 0) {
		KUNIT_EXPECT_EQ(test, k, 1);	/* nothing but notices here */
		KUNIT_EXPECT_EQ(test, id, want);
		n++;
	}
	return n;
}

static int ticket_read(int fd, u64 id, struct nxq_ticket *t)
{
	size_t rlen;

	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->holder_id = id;
	return call(fd, NXQ_IOC_TICKET_READ, 0, t, sizeof(*t), t, &rlen);
}

static void rcvtimeo(struct kunit *test, int fd, int s)
{
	struct timeval tv = { .tv_sec = s };

	KUNIT_ASSERT_EQ(test, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					 sizeof(tv)), 0);
}

/*
 * A refused charge asks the holder that has the memory; registered with
 * NXQD_REQ_NOTIFY and no eventfd, it can be asked, and it is told on its
 * connection.  The rules of the flag; no thread for notices.
 */
static void nxqd_test_notice(struct kunit *test)
{
	struct nxq_holder_reg r = { .size = sizeof(r) };
	struct nxq_ticket t;
	struct daemon d;
	struct tcg cg;
	int a, b, efd, threads;
	u64 x, y, z, id = 0;
	size_t rlen;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	a = dial(d.sock, SOCK_SEQPACKET);
	b = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a, 0);
	KUNIT_ASSERT_GE(test, b, 0);
	rcvtimeo(test, a, 3);
	rcvtimeo(test, b, 3);
	usleep_range(100000, 101000);
	threads = count_threads(d.pid);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &x), 0);
	/* the flag is version 2's, and it replaces the eventfd */
	strscpy(r.device, KEY, sizeof(r.device));
	r.eventfd = -1;
	KUNIT_EXPECT_EQ(test, call(b, NXQ_IOC_HOLDER_REGISTER,
				   req_vf(1, NXQD_REQ_NOTIFY), &r, sizeof(r),
				   NULL, &rlen), -EINVAL);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r.eventfd = efd;
	KUNIT_EXPECT_EQ(test, call_fds(b, NXQ_IOC_HOLDER_REGISTER,
				       req_vf(2, NXQD_REQ_NOTIFY), &r,
				       sizeof(r), NULL, &rlen, &efd, 1),
			-EINVAL);
	/*
	 * The asker, y, can be asked too: only such a holder may borrow
	 * past its guarantee and so ask anyone (counter.c, nxq_fits())
	 */
	KUNIT_ASSERT_EQ(test, reg_notify(b, &y), 0);
	KUNIT_ASSERT_EQ(test, charge(a, x, 1000, 0, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, ticket_read(a, x, &t), -EAGAIN);
	/* y's refusal asks x: told on a, not on b */
	KUNIT_EXPECT_EQ(test, charge(b, y, 500, 0, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, next_msg(test, a, 2000, &id, NULL, NULL), 1);
	KUNIT_EXPECT_EQ(test, id, x);
	KUNIT_EXPECT_EQ(test, next_msg(test, b, 100, NULL, NULL, NULL), -1);
	KUNIT_EXPECT_EQ(test, ticket_read(a, x, &t), 0);
	KUNIT_EXPECT_GE(test, t.bytes, 500ULL);
	KUNIT_EXPECT_EQ(test, t.reason, NXQ_TICKET_REASON_MAX);
	/* no thread of the daemon's for it */
	KUNIT_EXPECT_EQ(test, count_threads(d.pid), threads);
	/* (the eventfd writer starts with the first eventfd: counted) */
	KUNIT_ASSERT_EQ(test, reg(b, efd, &z), 0);
	KUNIT_EXPECT_EQ(test, count_threads(d.pid), threads + 1);
	close(a);
	close(b);
	close(efd);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/* y's refusals of @n growing charges from @from: each raises x's ticket. */
static void raise_n(struct kunit *test, int b, u64 y, u64 from, int n)
{
	int i;

	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, charge(b, y, from + i, 0, 0, NULL),
				-EDQUOT);
}

/*
 * Many raises of a ticket its holder has not read: one notice.  Read
 * (on another connection of its process), the next raise sends one more.
 */
static void nxqd_test_notice_coalesced(struct kunit *test)
{
	struct nxq_ticket t;
	struct daemon d;
	struct tcg cg;
	u64 x, y, asks;
	int a, b;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	a = dial(d.sock, SOCK_SEQPACKET);
	b = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a, 0);
	KUNIT_ASSERT_GE(test, b, 0);
	rcvtimeo(test, b, 3);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &x), 0);
	KUNIT_ASSERT_EQ(test, reg_notify(b, &y), 0);
	KUNIT_ASSERT_EQ(test, charge(a, x, 1000, 0, 0, NULL), 0);
	asks = ctl_dev_attr(d.ctl, KEY, NXQUOTA_A_DEVICE_TICKETS);
	raise_n(test, b, y, 500, 20);
	/* the raises happened: each one asked x again */
	KUNIT_EXPECT_GE(test,
			ctl_dev_attr(d.ctl, KEY, NXQUOTA_A_DEVICE_TICKETS),
			asks + 20);
	KUNIT_EXPECT_EQ(test, count_notices(test, a, 300, x), 1);
	/* read, from another connection: the next raise is told */
	KUNIT_EXPECT_EQ(test, ticket_read(b, x, &t), 0);
	KUNIT_EXPECT_GE(test, t.bytes, 519ULL);
	raise_n(test, b, y, 600, 5);
	KUNIT_EXPECT_EQ(test, count_notices(test, a, 300, x), 1);
	close(a);
	close(b);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

#define UNREAD_ROUNDS	1500

/* Notices on @fd for each of @ids[@n] into @counts, until none for @ms. */
static int tally_notices(struct kunit *test, int fd, int ms, const u64 *ids,
			 int *counts, int n)
{
	int total = 0, k, i;
	u64 id;

	while ((k = next_msg(test, fd, ms, &id, NULL, NULL)) >= 0) {
		KUNIT_EXPECT_EQ(test, k, 1);
		for (i = 0; i < n && ids[i] != id; i++)
			;
		KUNIT_EXPECT_LT(test, i, n);
		if (i < n)
			counts[i]++;
		total++;
	}
	return total;
}

/*
 * A tenant that never reads the connection its holders were registered
 * on, while x's ticket is raised and read (elsewhere) over and over: that
 * socket fills.  The daemon does not wait for it: every request is
 * answered at once, and a neighbour's ticket is told at once on its own
 * connection.  Nothing is dropped: x2, asked once the socket is full, is
 * told once the tenant reads.
 */
static void nxqd_test_notice_unread(struct kunit *test)
{
	struct nxq_ticket t;
	struct daemon d;
	struct tcg cg;
	u64 ids[2], y, z, id = 0, t0, worst = 0, told;
	int a, b, c, i, counts[2] = { 0, 0 };

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 240000, "-");
	a = dial(d.sock, SOCK_SEQPACKET);
	b = dial(d.sock, SOCK_SEQPACKET);
	c = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a, 0);
	KUNIT_ASSERT_GE(test, b, 0);
	KUNIT_ASSERT_GE(test, c, 0);
	rcvtimeo(test, b, 3);
	rcvtimeo(test, c, 3);
	/* the victims, largest first: x and x2 on a, z on c */
	KUNIT_ASSERT_EQ(test, reg_notify(a, &ids[0]), 0);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &ids[1]), 0);
	KUNIT_ASSERT_EQ(test, reg_notify(c, &z), 0);
	KUNIT_ASSERT_EQ(test, reg_notify(b, &y), 0);
	KUNIT_ASSERT_EQ(test, charge(a, ids[0], 150000, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, charge(a, ids[1], 60000, 0, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, charge(c, z, 30000, 0, 0, NULL), 0);
	/* x is asked, told on a, read on b (a is never read), again, ... */
	for (i = 0; i < UNREAD_ROUNDS; i++) {
		int e1, e2;

		t0 = now_ms();
		e1 = charge(b, y, 1000 + i, 0, 0, NULL);
		e2 = ticket_read(b, ids[0], &t);
		worst = max(worst, now_ms() - t0);
		KUNIT_EXPECT_EQ(test, e1, -EDQUOT);
		KUNIT_EXPECT_EQ(test, e2, 0);
		if (e1 != -EDQUOT || e2)
			break;	/* the daemon stopped answering */
	}
	kunit_info(test, "%d rounds, the slowest %llu ms", i,
		   (unsigned long long)worst);
	KUNIT_EXPECT_LT(test, worst, 1000ULL);
	/*
	 * All three asked (within the max: a charge that could never fit
	 * asks nobody): z told at once on c, x2 kept for a
	 */
	t0 = now_ms();
	KUNIT_EXPECT_EQ(test, charge(b, y, 239000, 0, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, next_msg(test, c, 2000, &id, NULL, NULL), 1);
	told = now_ms() - t0;
	KUNIT_EXPECT_EQ(test, id, z);
	kunit_info(test, "z told in %llu ms", (unsigned long long)told);
	KUNIT_EXPECT_LT(test, told, 1000ULL);
	/* the tenant reads a at last */
	tally_notices(test, a, 500, ids, counts, 2);
	kunit_info(test, "a had %d notices of x, %d of x2", counts[0],
		   counts[1]);
	/* a was full (x was told fewer times than it was raised and read) */
	KUNIT_EXPECT_GT(test, counts[0], 0);
	KUNIT_EXPECT_LT(test, counts[0], UNREAD_ROUNDS);
	/* x2's, kept while a was full, came once there was room */
	KUNIT_EXPECT_EQ(test, counts[1], 1);
	close(a);
	close(b);
	close(c);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A charge waits on connection a; a holder registered on a is asked (by
 * that very charge): its notice comes on a while the charge waits, before
 * the charge's reply, and is told from it by NXQD_REP_TICKET.  The
 * answer (on b) grants the charge: its reply follows.
 */
static void nxqd_test_notice_in_flight(struct kunit *test)
{
	unsigned char rep[sizeof(struct nxqd_rep) + sizeof(struct nxq_charge)];
	struct nxq_charge c = { .size = sizeof(c) };
	struct nxq_ticket_answer ans = { .size = sizeof(ans) };
	struct nxq_ticket t;
	struct nxqd_rep r;
	struct daemon d;
	struct tcg cg;
	u64 x, w, id = 0;
	size_t len = 0, rlen;
	int a, b;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	a = dial(d.sock, SOCK_SEQPACKET);
	b = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a, 0);
	KUNIT_ASSERT_GE(test, b, 0);
	rcvtimeo(test, b, 3);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &x), 0);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &w), 0);
	KUNIT_ASSERT_EQ(test, charge(a, x, 1000, 0, 0, NULL), 0);
	/* w's charge waits (up to 10 s) on a, asking x */
	c.flags = NXQ_CHARGE_WAIT;
	c.holder_id = w;
	c.bytes = 500;
	c.timeout_ns = 10ULL * NSEC_PER_SEC;
	KUNIT_ASSERT_EQ(test, send_req(a, NXQ_IOC_CHARGE, 0, &c, sizeof(c)), 0);
	KUNIT_EXPECT_EQ(test, next_msg(test, a, 3000, &id, rep, &len), 1);
	KUNIT_EXPECT_EQ(test, id, x);
	/* read and answered on b: x gives back 500, w's charge is granted */
	KUNIT_EXPECT_EQ(test, ticket_read(b, x, &t), 0);
	KUNIT_EXPECT_GE(test, t.bytes, 500ULL);
	ans.holder_id = x;
	ans.generation = t.generation;
	ans.released = 500;
	KUNIT_EXPECT_EQ(test, call(b, NXQ_IOC_TICKET_ANSWER, 0, &ans,
				   sizeof(ans), &ans, &rlen), 0);
	KUNIT_EXPECT_EQ(test, next_msg(test, a, 3000, NULL, rep, &len), 0);
	KUNIT_EXPECT_EQ(test, len, sizeof(rep));
	memcpy(&r, rep, sizeof(r));
	memcpy(&c, rep + sizeof(r), sizeof(c));
	KUNIT_EXPECT_EQ(test, r.err, 0);
	KUNIT_EXPECT_EQ(test, r.flags, 0);
	KUNIT_EXPECT_EQ(test, c.charged, 500ULL);
	KUNIT_EXPECT_EQ(test, next_msg(test, a, 200, NULL, NULL, NULL), -1);
	close(a);
	close(b);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

/*
 * A budget change's tickets are told before it is acknowledged, as the
 * module's sysfs write returns after eventfd_signal(): the notice is in
 * the holder's socket when the ack comes.
 */
static void nxqd_test_notice_before_ack(struct kunit *test)
{
	struct daemon d;
	struct tcg cg;
	u64 x, id = 0;
	int a, i;

	cg_enter(test, &cg);
	start_with(test, &d, &cg, 1000, "-");
	a = dial(d.sock, SOCK_SEQPACKET);
	KUNIT_ASSERT_GE(test, a, 0);
	KUNIT_ASSERT_EQ(test, reg_notify(a, &x), 0);
	KUNIT_ASSERT_EQ(test, charge(a, x, 900, 0, 0, NULL), 0);
	/* each change asks x again (read in between), each told first */
	for (i = 0; i < 10; i++) {
		struct nxq_ticket t;

		KUNIT_EXPECT_EQ(test, ctl_set_max(&d, cg.rel, 800 - 50 * i, NULL, 0), 0);
		KUNIT_EXPECT_EQ(test, next_msg(test, a, 0, &id, NULL, NULL), 1);
		KUNIT_EXPECT_EQ(test, id, x);
		/* (one that came late: not counted twice) */
		next_msg(test, a, 100, NULL, NULL, NULL);
		KUNIT_EXPECT_EQ(test, ticket_read(a, x, &t), 0);
	}
	close(a);
	KUNIT_EXPECT_EQ(test, stop(&d, SIGTERM), 0);
	cleanup(test, &d);
	cg_leave(&cg);
}

static struct kunit_case nxqd_notice_cases[] = {
	KUNIT_CASE(nxqd_test_notice),
	KUNIT_CASE(nxqd_test_notice_coalesced),
	KUNIT_CASE(nxqd_test_notice_unread),
	KUNIT_CASE(nxqd_test_notice_in_flight),
	KUNIT_CASE(nxqd_test_notice_before_ack),
	{}
};

static struct kunit_suite nxqd_notice_suite = {
	.name = "nxquotad-notice",
	.test_cases = nxqd_notice_cases,
};

kunit_test_suite(nxqd_notice_suite);
