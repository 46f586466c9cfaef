// SPDX-License-Identifier: GPL-2.0
/*
 * press_budget: a max lowered below current asks the subtree to shrink.
 *
 *   /nxq-pbud        max lowered from unlimited to 80M (current 100M),
 *                    its min from 100M to 80M with it
 *   /nxq-pbud/a      a1: 30M, 10M of it reclaimable; a2: 20M
 *   /nxq-pbud/b      b1: 10M; bx: 40M, registered without an eventfd
 *                    (so it may not borrow: b has min 50M, under
 *                    /nxq-pbud's min 100M)
 *   /nxq-pbud-out    o1: 20M (outside the subtree)
 *
 * The excess, 20M, is asked of holders in the subtree (reason BUDGET,
 * level ASK): reclaimable first (a1, its 10M), then the largest charge
 * among those with an eventfd (a2, 10M); b1, bx and o1 are not asked.
 * The deadline is ticket_timeout_ms away.  Nothing is taken back, not
 * even after the deadline; charges in the subtree are refused, outside
 * they are not.  The answers bring the subtree to its max; raising the
 * max again serves a charge waiting under it.
 */
#include "scen.h"

#define KEY	"t-pbud"
#define P	"/nxq-pbud"
#define PA	"/nxq-pbud/a"
#define PB	"/nxq-pbud/b"
#define O	"/nxq-pbud-out"
#define M	SC_MIB
#define TTL_MS	300

static uint64_t p, pa, pb, o;

static void currents(int line, uint64_t ca, uint64_t cb, uint64_t co)
{
	uint64_t v[5] = {
		NODE_U64(KEY, pa, "current"), NODE_U64(KEY, pb, "current"),
		NODE_U64(KEY, o, "current"), NODE_U64(KEY, p, "current"),
		DEV_U64(KEY, "used"),
	};

	if (v[0] != ca || v[1] != cb || v[2] != co || v[3] != ca + cb ||
	    v[4] != ca + cb + co)
		FAIL("(line %d) a %llu b %llu out %llu P %llu used %llu; "
		     "expected a %llu b %llu out %llu", line,
		     (unsigned long long)v[0], (unsigned long long)v[1],
		     (unsigned long long)v[2], (unsigned long long)v[3],
		     (unsigned long long)v[4], (unsigned long long)ca,
		     (unsigned long long)cb, (unsigned long long)co);
}
#define CURRENTS(ca, cb, co) currents(__LINE__, ca, cb, co)

/* The peer was asked exactly once, for bytes, reason BUDGET. */
static struct sc_rep asked(int line, struct sc_peer *h, uint64_t bytes,
			   uint64_t t_low, uint64_t t_high)
{
	struct sc_rep r = PEER_CALL(h, SC_PEER_EFD, 0, 0), t;

	if (r.rc != 1)
		FAIL("(line %d) %s's eventfd: expected 1, got %s", line,
		     h->name, sc_rcname(r.rc));
	t = PEER_CALL(h, SC_PEER_TICKET, 0, 0);
	if (t.rc)
		FAIL("(line %d) %s's ticket: %s", line, h->name,
		     sc_errname((int)-t.rc));
	if (t.v[1] != bytes || t.v[3] != NXQ_TICKET_REASON_BUDGET ||
	    t.v[4] != NXQ_TICKET_LEVEL_ASK)
		FAIL("(line %d) %s's ticket: %llu bytes, reason %llu, level "
		     "%llu; expected %llu, BUDGET (%d), ASK (%d)", line,
		     h->name, (unsigned long long)t.v[1],
		     (unsigned long long)t.v[3], (unsigned long long)t.v[4],
		     (unsigned long long)bytes, NXQ_TICKET_REASON_BUDGET,
		     NXQ_TICKET_LEVEL_ASK);
	if (t.v[2] < t_low + TTL_MS * 1000000ULL ||
	    t.v[2] > t_high + TTL_MS * 1000000ULL)
		FAIL("(line %d) %s's deadline is not ticket_timeout_ms (%d) "
		     "after the max was lowered", line, h->name, TTL_MS);
	return t;
}

static void not_asked(int line, struct sc_peer *h)
{
	struct sc_rep r = PEER_CALL(h, SC_PEER_EFD, 0, 0);

	if (r.rc != -ETIMEDOUT)
		FAIL("(line %d) %s's eventfd: expected nothing, got %s", line,
		     h->name, sc_rcname(r.rc));
	r = PEER_CALL(h, SC_PEER_TICKET, 0, 0);
	if (r.rc != -EAGAIN)
		FAIL("(line %d) %s has a ticket (%s, %llu bytes)", line,
		     h->name, sc_rcname(r.rc), (unsigned long long)r.v[1]);
}

/* The ledger's rules: the module and nxquotad alike. */
FIXTURE(budget) {};

FIXTURE_VARIANT(budget) {};

FIXTURE_VARIANT_ADD(budget, module) {};

FIXTURE_VARIANT_ADD(budget, daemon) {};

FIXTURE_SETUP(budget)
{
	CHECK_OK(sc_dev_register_open(KEY, "200M"));
	CHECK_OK(sc_write(sc_dev_path(KEY, "ticket_timeout_ms"), "300"));
	CHECK_OK(sc_cg_create(P));
	CHECK_OK(sc_cg_create(PA));
	CHECK_OK(sc_cg_create(PB));
	CHECK_OK(sc_cg_create(O));
	p = CG_ID(P), pa = CG_ID(PA), pb = CG_ID(PB), o = CG_ID(O);
	CHECK_OK(sc_set_budget(KEY, P " min=100M"));
	CHECK_OK(sc_set_budget(KEY, PB " min=50M"));
}

FIXTURE_TEARDOWN(budget)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(PA));
	CHECK_OK(sc_cg_remove(PB));
	CHECK_OK(sc_cg_remove(P));
	CHECK_OK(sc_cg_remove(O));
}

TEST_F(budget, max_lowered_below_current)
{
	struct sc_peer a1, a2, b1, bx, o1;
	struct sc_rep r, t1, t2;
	uint64_t t0, t1ns;

	sc_peer_start(&a1, "a1", PA, KEY, 0, 1);
	sc_peer_start(&a2, "a2", PA, KEY, 0, 1);
	sc_peer_start(&b1, "b1", PB, KEY, 0, 1);
	sc_peer_start(&bx, "bx", PB, KEY, 0, 0);
	sc_peer_start(&o1, "o1", O, KEY, 0, 1);
	PEER_OK(&a1, SC_PEER_CHARGE, 30 * M, 0);
	PEER_OK(&a1, SC_PEER_RECLAIMABLE, 10 * M, 0);
	PEER_OK(&a2, SC_PEER_CHARGE, 20 * M, 0);
	PEER_OK(&b1, SC_PEER_CHARGE, 10 * M, 0);
	PEER_OK(&bx, SC_PEER_CHARGE, 40 * M, 0);
	PEER_OK(&o1, SC_PEER_CHARGE, 20 * M, 0);
	CURRENTS(50 * M, 50 * M, 20 * M);
	CHECK_EQ(DEV_U64(KEY, "tickets"), 0);

	/*
	 * Lower the subtree's max by 20M below what it holds (and its min
	 * with it: a min above the max is refused).
	 */
	CHECK_EQ(sc_set_budget(KEY, P " max=80M"), -EINVAL);
	CHECK_EQ(NODE_U64(KEY, p, "max"), UINT64_MAX);
	t0 = sc_now_ns();
	CHECK_OK(sc_set_budget(KEY, P " max=80M min=80M"));
	t1ns = sc_now_ns();
	CHECK_EQ(NODE_U64(KEY, p, "max"), 80 * M);
	t1 = asked(__LINE__, &a1, 10 * M, t0, t1ns);
	t2 = asked(__LINE__, &a2, 10 * M, t0, t1ns);
	not_asked(__LINE__, &b1);
	not_asked(__LINE__, &o1);
	CHECK_EQ(PEER_CALL(&bx, SC_PEER_TICKET, 0, 0).rc, -EAGAIN);
	CHECK_EQ(DEV_U64(KEY, "tickets"), 2);
	CHECK_EQ(DEV_U64(KEY, "bytes_asked"), 20 * M);
	CHECK_EQ(NODE_U64(KEY, p, "tickets"), 2);
	CHECK_EQ(NODE_U64(KEY, p, "bytes_asked"), 20 * M);
	CHECK_EQ(NODE_U64(KEY, pa, "tickets"), 2);
	CHECK_EQ(NODE_U64(KEY, pa, "bytes_asked"), 20 * M);
	CHECK_EQ(NODE_U64(KEY, pb, "tickets"), 0);
	CHECK_EQ(NODE_U64(KEY, o, "tickets"), 0);
	CHECK_EQ(NODE_U64(KEY, o, "bytes_asked"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "tickets"), 2);

	/* Nothing is taken back, not even past the tickets' deadline. */
	CURRENTS(50 * M, 50 * M, 20 * M);
	usleep(2 * TTL_MS * 1000);
	CURRENTS(50 * M, 50 * M, 20 * M);
	CHECK_EQ(PEER_OK(&a1, SC_PEER_STATUS, 0, 0).v[0], 30 * M);
	CHECK_EQ(PEER_OK(&bx, SC_PEER_STATUS, 0, 0).v[0], 40 * M);
	CHECK_EQ(DEV_U64(KEY, "kills"), 0);
	CHECK_EQ(DEV_U64(KEY, "bytes_released"), 0);

	/* Over its max the subtree is refused; outside it is not. */
	CHECK_EQ(PEER_CALL(&b1, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);
	PEER_OK(&o1, SC_PEER_CHARGE, 1 * M, 0);
	CURRENTS(50 * M, 50 * M, 21 * M);

	/* The asked answer: the subtree comes down to its max. */
	r = PEER_OK(&a1, SC_PEER_ANSWER, t1.v[0], 10 * M);
	CHECK_EQ(r.v[0], 20 * M);
	r = PEER_OK(&a2, SC_PEER_ANSWER, t2.v[0], 10 * M);
	CHECK_EQ(r.v[0], 10 * M);
	CURRENTS(30 * M, 50 * M, 21 * M);
	CHECK_EQ(NODE_U64(KEY, p, "bytes_released"), 20 * M);
	CHECK_EQ(NODE_U64(KEY, o, "bytes_released"), 0);
	CHECK_EQ(DEV_U64(KEY, "bytes_released"), 20 * M);
	CHECK_EQ(PEER_CALL(&b1, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);

	/* Raising the max serves a charge that waits under it. */
	PEER_SEND(&b1, SC_PEER_CHARGE, 10 * M, 20ULL * 1000000000);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	PEER_BLOCKED(&b1, 50);
	CHECK_OK(sc_set_budget(KEY, P " max=90M"));
	r = PEER_REPLY(&b1);
	if (r.rc)
		FAIL("b1 waiting under a max raised by 10M: expected a grant, "
		     "got %s", sc_rcname(r.rc));
	CURRENTS(30 * M, 60 * M, 21 * M);

	PEER_STOP(&a1);
	PEER_STOP(&a2);
	PEER_STOP(&b1);
	PEER_STOP(&bx);
	PEER_STOP(&o1);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
}

TEST_HARNESS_MAIN
