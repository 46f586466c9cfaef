// SPDX-License-Identifier: GPL-2.0
/*
 * press_lending: an unused guarantee is lent and called back.
 *
 * Device of C = 100M.  /nxq-plend-a has min = 60M and sits idle;
 * /nxq-plend-b (min 0) borrows 90M through a holder with an eventfd.
 * A then charges 40M with NXQ_CHARGE_WAIT: only 10M are free, so B gets
 * one ticket (reason DEVICE, level RECALL, 30M: the shortfall), answers
 * it releasing 30M, and A is granted well within its deadline.  Twice
 * more with B answering by itself: A grows to its guarantee (RECALL
 * again), then above it (level ASK: A borrows too).  At every step every
 * node's current, effective_min and borrowed, the device's used and the
 * pressure counters (tickets, bytes_asked, bytes_released, waits,
 * waiters, timeouts, denials) are checked, and must add up.  A, the
 * charging holder, is never asked.
 */
#include "scen.h"

#define KEY	"t-plend"
#define A	"/nxq-plend-a"
#define B	"/nxq-plend-b"
#define M	SC_MIB
#define C	(100 * M)
#define TMO	(10ULL * 1000000000)	/* A's wait: 10 s */

static uint64_t a, b;

struct want {
	uint64_t a, b;			/* current */
	uint64_t tickets, asked, released;	/* all of them on B's node */
	uint64_t waits, waiters;
};

/* The whole ledger, against what it must be. */
static void check_at(int line, const struct want *w)
{
	uint64_t emin_a = 60 * M, v;

	sc_log("step at line %d: A %llu M, B %llu M", line,
	       (unsigned long long)(w->a / M), (unsigned long long)(w->b / M));
#define EQ(x, y) do {							\
	v = (x);							\
	if (v != (uint64_t)(y))						\
		FAIL("(step at line %d) %s == %s: %llu != %llu", line,	\
		     #x, #y, (unsigned long long)v,			\
		     (unsigned long long)(y));				\
} while (0)
	EQ(NODE_U64(KEY, a, "current"), w->a);
	EQ(NODE_U64(KEY, b, "current"), w->b);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), w->a + w->b);
	EQ(DEV_U64(KEY, "used"), w->a + w->b);
	EQ(NODE_U64(KEY, a, "min"), emin_a);
	EQ(NODE_U64(KEY, a, "effective_min"), emin_a);
	EQ(NODE_U64(KEY, b, "effective_min"), 0);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "effective_min"), C);
	EQ(NODE_U64(KEY, a, "borrowed"), w->a > emin_a ? w->a - emin_a : 0);
	EQ(NODE_U64(KEY, b, "borrowed"), w->b);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "borrowed"), 0);
	/* Tickets go to B only; the root node counts them too. */
	EQ(NODE_U64(KEY, b, "tickets"), w->tickets);
	EQ(NODE_U64(KEY, b, "bytes_asked"), w->asked);
	EQ(NODE_U64(KEY, b, "bytes_released"), w->released);
	EQ(NODE_U64(KEY, a, "tickets"), 0);
	EQ(NODE_U64(KEY, a, "bytes_asked"), 0);
	EQ(NODE_U64(KEY, a, "bytes_released"), 0);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "tickets"), w->tickets);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "bytes_asked"), w->asked);
	EQ(NODE_U64(KEY, CG_ROOT_ID, "bytes_released"), w->released);
	EQ(DEV_U64(KEY, "tickets"), w->tickets);
	EQ(DEV_U64(KEY, "bytes_asked"), w->asked);
	EQ(DEV_U64(KEY, "bytes_released"), w->released);
	EQ(DEV_U64(KEY, "waits"), w->waits);
	EQ(DEV_U64(KEY, "waiters"), w->waiters);
	EQ(DEV_U64(KEY, "timeouts"), 0);
	EQ(DEV_U64(KEY, "kills"), 0);
	EQ(DEV_U64(KEY, "denials"), 0);
	EQ(DEV_U64(KEY, "capacity_hits"), 0);
	EQ(NODE_U64(KEY, a, "denials"), 0);
	EQ(DEV_U64(KEY, "holders"), 2);
#undef EQ
}
#define CHECK_LEDGER(...) do {						\
	struct want _w = { __VA_ARGS__ };				\
	check_at(__LINE__, &_w);					\
} while (0)

/* A's waiting charge of bytes, answered by B (served or by hand). */
static void a_granted(struct sc_peer *pa, uint64_t bytes, uint64_t charged)
{
	struct sc_rep r = PEER_REPLY(pa);

	if (r.rc)
		FAIL("A's waiting charge of %llu M: %s after %llu ms",
		     (unsigned long long)(bytes / M),
		     sc_errname((int)-r.rc),
		     (unsigned long long)(r.v[1] / 1000000));
	CHECK_EQ(r.v[0], charged);
	sc_log("A granted %llu M after %llu us", (unsigned long long)(bytes / M),
	       (unsigned long long)(r.v[1] / 1000));
	/* "Well within the deadline": under a fifth of it, even on TCG. */
	if (r.v[1] > TMO / 5)
		FAIL("A waited %llu ms for a ticket answered at once (timeout "
		     "%llu ms)", (unsigned long long)(r.v[1] / 1000000),
		     (unsigned long long)(TMO / 1000000));
}

/* Lending is the ledger's: the module and nxquotad alike. */
FIXTURE(lending) {};

FIXTURE_VARIANT(lending) {};

FIXTURE_VARIANT_ADD(lending, module) {};

FIXTURE_VARIANT_ADD(lending, daemon) {};

FIXTURE_SETUP(lending)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	a = CG_ID(A);
	b = CG_ID(B);
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
}

FIXTURE_TEARDOWN(lending)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
}

TEST_F(lending, recall_and_ask)
{
	struct sc_peer pa, pb;
	struct sc_rep r;
	uint64_t t_sent;

	sc_peer_start(&pb, "B", B, KEY, 0, 1);
	sc_peer_start(&pa, "A", A, KEY, 0, 1);
	CHECK_LEDGER(.a = 0, .b = 0);

	/* B borrows 90% of the device: A's guarantee is lent to it. */
	r = PEER_OK(&pb, SC_PEER_CHARGE, 90 * M, 0);
	CHECK_EQ(r.v[0], 90 * M);
	CHECK_LEDGER(.a = 0, .b = 90 * M);
	CHECK_EQ(NODE_U64(KEY, a, "holders"), 1);

	/* A grows by 40M and waits: B is asked for the 30M missing. */
	t_sent = sc_now_ns();
	PEER_SEND(&pa, SC_PEER_CHARGE, 40 * M, TMO);
	r = PEER_CALL(&pb, SC_PEER_EFD, 10000, 0);
	if (r.rc <= 0)
		FAIL("B's eventfd not signalled within 10 s: %s",
		     sc_rcname(r.rc));
	CHECK_EQ(r.rc, 1);
	WAIT_U64(sc_dev_path(KEY, "waiters"), 1);
	PEER_BLOCKED(&pa, 50);
	CHECK_LEDGER(.a = 0, .b = 90 * M, .tickets = 1, .asked = 30 * M,
		     .waits = 1, .waiters = 1);

	r = PEER_OK(&pb, SC_PEER_TICKET, 0, 0);
	CHECK(r.v[0] != 0);
	CHECK_EQ(r.v[1], 30 * M);
	CHECK_EQ(r.v[3], NXQ_TICKET_REASON_DEVICE);
	CHECK_EQ(r.v[4], NXQ_TICKET_LEVEL_RECALL);
	/* The deadline is A's: sent + 10 s, give or take the trip. */
	if (r.v[2] < t_sent + TMO || r.v[2] > sc_now_ns() + TMO)
		FAIL("ticket deadline %llu not within [%llu, %llu]",
		     (unsigned long long)r.v[2],
		     (unsigned long long)(t_sent + TMO),
		     (unsigned long long)(sc_now_ns() + TMO));
	/* Reading the ticket changes nothing; a stale answer is refused. */
	CHECK_EQ(PEER_CALL(&pb, SC_PEER_ANSWER, r.v[0] + 1, 30 * M).rc,
		 -ESTALE);
	PEER_BLOCKED(&pa, 50);
	CHECK_LEDGER(.a = 0, .b = 90 * M, .tickets = 1, .asked = 30 * M,
		     .waits = 1, .waiters = 1);

	/* B releases what it was asked: A is granted. */
	r = PEER_OK(&pb, SC_PEER_ANSWER, r.v[0], 30 * M);
	CHECK_EQ(r.v[0], 60 * M);
	a_granted(&pa, 40 * M, 40 * M);
	CHECK_LEDGER(.a = 40 * M, .b = 60 * M, .tickets = 1, .asked = 30 * M,
		     .released = 30 * M, .waits = 1, .waiters = 0);
	CHECK_EQ(PEER_CALL(&pb, SC_PEER_TICKET, 0, 0).rc, -EAGAIN);

	/* Now B answers its tickets by itself; A grows to its guarantee. */
	PEER_OK(&pb, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	PEER_SEND(&pa, SC_PEER_CHARGE, 20 * M, TMO);
	a_granted(&pa, 20 * M, 60 * M);
	CHECK_LEDGER(.a = 60 * M, .b = 40 * M, .tickets = 2, .asked = 50 * M,
		     .released = 50 * M, .waits = 2, .waiters = 0);
	r = PEER_OK(&pb, SC_PEER_STATS, 0, 0);
	CHECK_EQ(r.v[0], 2);	/* one answer by hand, one by itself */
	CHECK_EQ(r.v[3], 20 * M);
	CHECK_EQ(r.v[4], NXQ_TICKET_REASON_DEVICE << 8 |
		 NXQ_TICKET_LEVEL_RECALL);

	/* Above its guarantee A borrows too: B is only asked (level ASK). */
	PEER_SEND(&pa, SC_PEER_CHARGE, 10 * M, TMO);
	a_granted(&pa, 10 * M, 70 * M);
	CHECK_LEDGER(.a = 70 * M, .b = 30 * M, .tickets = 3, .asked = 60 * M,
		     .released = 60 * M, .waits = 3, .waiters = 0);
	r = PEER_OK(&pb, SC_PEER_STATS, 0, 0);
	CHECK_EQ(r.v[0], 3);
	CHECK_EQ(r.v[3], 10 * M);
	CHECK_EQ(r.v[4], NXQ_TICKET_REASON_DEVICE << 8 | NXQ_TICKET_LEVEL_ASK);

	/* A charge that fits asks nobody. */
	PEER_OK(&pb, SC_PEER_SERVE, SC_SERVE_OFF, 0);
	PEER_OK(&pb, SC_PEER_UNCHARGE, 10 * M, 0);
	r = PEER_OK(&pa, SC_PEER_CHARGE, 10 * M, TMO);
	CHECK_EQ(r.v[0], 80 * M);
	CHECK_LEDGER(.a = 80 * M, .b = 20 * M, .tickets = 3, .asked = 60 * M,
		     .released = 60 * M, .waits = 3, .waiters = 0);

	/* The asker is never asked: A's eventfd was never signalled. */
	CHECK_EQ(PEER_CALL(&pa, SC_PEER_EFD, 0, 0).rc, -ETIMEDOUT);
	CHECK_EQ(PEER_CALL(&pa, SC_PEER_TICKET, 0, 0).rc, -EAGAIN);

	PEER_STOP(&pa);
	PEER_STOP(&pb);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ROOT_ID, "current"), 0);
}

TEST_HARNESS_MAIN
