// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's pressure layer (pressure.c): pressure: victims, tickets, coalescing, moving on, escalation.
 */
#include "ledger_test.h"

/* Under a max: reclaimable holders first, most first; asks accumulate. */
static void nxq_test_victims_max(struct kunit *test)
{
	struct tree *t = tree_new(test, 10 * GiB);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->c);
	struct nxq_holder *h3 = holder_new(test, t, t->c);
	struct nxq_holder *hr = holder_new(test, t, t->c);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_ticket_state ts;
	u64 charged;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(h1, 30 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(h2, 40 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(h3, 20 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 20 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(h1, 10 * MiB), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(h2, 30 * MiB), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(hb, 20 * MiB), 0);

	/* 25 wanted, 10 free: 15 asked of h2, who has most reclaimable. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hr, 25 * MiB, 0, NULL), -EDQUOT);
	ts = ticket(test, h2, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 15 * MiB);
	KUNIT_EXPECT_EQ(test, ts.reason, (u32)NXQ_TICKET_REASON_MAX);
	KUNIT_EXPECT_EQ(test, signals(h2), 1);
	ticket(test, h1, -EAGAIN);
	ticket(test, h3, -EAGAIN);
	ticket(test, hb, -EAGAIN);	/* outside c: never asked */
	ticket(test, hr, -EAGAIN);	/* the asker is never asked */

	/* 40 wanted: 30 short, 15 already asked; h2 raised by 15. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hr, 40 * MiB, 0, NULL), -EDQUOT);
	ts = ticket(test, h2, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 30 * MiB);
	KUNIT_EXPECT_EQ(test, signals(h2), 2);
	ticket(test, h1, -EAGAIN);

	/*
	 * 60 wanted: 50 short, 30 asked.  Round 0: h1's 10 reclaimable.
	 * Round 1: h3, whom round 0 did not reach, for 10 of its charge.
	 */
	KUNIT_EXPECT_EQ(test, nxq_charge(hr, 60 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, ticket(test, h1, 0).bytes, 10 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, h3, 0).bytes, 10 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, h2, 0).bytes, 30 * MiB);
	/*
	 * 80 wanted: 70 short, 50 asked.  Round 1: h3's other 10; round 2,
	 * beyond what it reported: the largest charge, h2, for 10.
	 */
	KUNIT_EXPECT_EQ(test, nxq_charge(hr, 80 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, ticket(test, h3, 0).bytes, 20 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, h2, 0).bytes, 40 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, h1, 0).bytes, 10 * MiB);
	KUNIT_EXPECT_EQ(test, t->c->tickets, 6ULL);
	KUNIT_EXPECT_EQ(test, t->c->bytes_asked, 70 * MiB);
	KUNIT_EXPECT_EQ(test, t->c->denials, 4ULL);

	/* Answers: a stale generation changes nothing; a good one closes. */
	ts = ticket(test, h2, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 40 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h2, ts.generation - 1,
						30 * MiB, &charged), -ESTALE);
	KUNIT_EXPECT_EQ(test, charged, 40 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h2, ts.generation,
						41 * MiB, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h2, ts.generation,
						30 * MiB, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 10 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h2, ts.generation, 0, NULL),
			-ESTALE);
	ticket(test, h2, -EAGAIN);
	KUNIT_EXPECT_EQ(test, usage(t->c), 60 * MiB);
	KUNIT_EXPECT_EQ(test, t->c->bytes_released, 30 * MiB);
	/* An answer of nothing is an answer. */
	ts = ticket(test, h3, 0);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h3, ts.generation, 0, NULL), 0);
	ticket(test, h3, -EAGAIN);
	KUNIT_EXPECT_EQ(test, h3->charge, 20 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hr, 40 * MiB, 0, NULL), 0);

	holder_free(h1);
	holder_free(h2);
	holder_free(h3);
	holder_free(hr);
	holder_free(hb);
	tree_free(t);
}

/*
 * Device full: borrowers are asked, most borrowed first; a group under
 * its guarantee recalls.
 */
static void nxq_test_victims_device(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_node *d = tree_get(test, t, t->b, 5);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *ha2 = holder_new(test, t, t->a);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *hc = holder_new(test, t, d);
	struct nxq_ticket_state ts;

	nxq_node_set_min(t->a, 600 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(ha2, 100 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 700 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 100 * MiB, 0, NULL), 0);
	/*
	 * a: 200 of 600 guaranteed; b borrows 700, and hc, in b/d (no min
	 * anywhere on its path), borrows 100.
	 */
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 250 * MiB, 0, NULL), -ENOSPC);
	ts = ticket(test, hb, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 150 * MiB);
	KUNIT_EXPECT_EQ(test, ts.reason, (u32)NXQ_TICKET_REASON_DEVICE);
	KUNIT_EXPECT_EQ(test, ts.level, (u32)NXQ_TICKET_LEVEL_RECALL);
	ticket(test, hc, -EAGAIN);
	ticket(test, ha2, -EAGAIN);	/* a is within its guarantee */
	KUNIT_EXPECT_EQ(test, t->dev->capacity_hits, 1ULL);

	/*
	 * hb answers 0: declined, it is passed by for a floor
	 * (ticket_timeout_ms) and the shortfall moves on.  c now offers 50
	 * reclaimable (round 0), then the rest of its charge (round 2); hb
	 * is not asked again.
	 */
	KUNIT_ASSERT_EQ(test, nxq_ticket_answer(hb, ticket(test, hb, 0).generation,
						0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(hc, 50 * MiB), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 300 * MiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, ticket(test, hc, 0).bytes, 100 * MiB);
	ticket(test, hb, -EAGAIN);

	/*
	 * Once the floor passed, hb may be asked again.  Reported
	 * reclaimable bytes do not cap the asks: 200 short, hb offers 10
	 * (round 0), hc is asked its 100 (round 1), hb the other 90 (round
	 * 2).
	 */
	ts = ticket(test, hc, 0);
	KUNIT_ASSERT_EQ(test, nxq_ticket_answer(hc, ts.generation, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 1), 0);
	msleep(20);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(hc, 0), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(hb, 10 * MiB), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 300 * MiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, ticket(test, hb, 0).bytes, 100 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, hc, 0).bytes, 100 * MiB);

	holder_free(ha);
	holder_free(ha2);
	holder_free(hb);
	holder_free(hc);
	tree_put(t, d);
	tree_free(t);
}

/* Kill policy: an ignoring borrower is killed, the waiter granted. */
static void nxq_test_escalation(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *idle[16];
	struct waiter_thread w;
	int i;

	/* Holders with no ticket: an escalation does not look at them. */
	for (i = 0; i < ARRAY_SIZE(idle); i++)
		idle[i] = holder_new(test, t, t->c);
	fake_nr_killed = 0;
	nxq_node_set_min(t->a, 600 * MiB);
	nxq_node_set_kill_on_ignore(t->b, true);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 900 * MiB, 0, NULL), 0);

	/* The floor (1 s) has not passed at the waiter's 50 ms: no kill. */
	waiter_start(test, t, &w, ha, 500 * MiB, 50);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, fake_nr_killed, 0);
	KUNIT_EXPECT_EQ(test, ticket(test, hb, 0).level,
			(u32)NXQ_TICKET_LEVEL_RECALL);
	KUNIT_EXPECT_GE(test, ticket(test, hb, 0).deadline_ns,
			ticket(test, hb, 0).opened_ns + NSEC_PER_SEC);
	nxq_ticket_answer(hb, ticket(test, hb, 0).generation, 0, NULL);
	hb->declined_ns = 0;	/* forget it declined */

	/* A floor below the waiter's timeout: the ignored RECALL kills. */
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 20), 0);
	waiter_start(test, t, &w, ha, 500 * MiB, 50);
	for (i = 0; i < 500 && !fake_nr_killed; i++)
		usleep_range(1000, 2000);
	KUNIT_ASSERT_EQ(test, fake_nr_killed, 1);
	KUNIT_EXPECT_PTR_EQ(test, fake_killed[0], hb);
	KUNIT_EXPECT_EQ(test, t->b->kills, 1ULL);
	KUNIT_EXPECT_EQ(test, t->dev->escalate_visits, 1ULL);
	nxq_holder_detach(hb);		/* the process dies */
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, usage(t->a), 500 * MiB);
	KUNIT_EXPECT_EQ(test, used(t->dev), 500 * MiB);
	fake_nr_killed = 0;

	nxq_holder_put(hb, NULL);
	holder_free(ha);
	for (i = 0; i < ARRAY_SIZE(idle); i++)
		holder_free(idle[i]);
	tree_free(t);
}

/* Wait until @h's ticket is open; its state. */
static struct nxq_ticket_state ticket_wait(struct kunit *test,
					   struct nxq_holder *h)
{
	struct nxq_ticket_state ts = {};
	int i;

	for (i = 0; i < 1000; i++) {
		if (!nxq_ticket_read(h, &ts))
			return ts;
		usleep_range(500, 1000);
	}
	KUNIT_FAIL(test, "no ticket");
	return ts;
}

/*
 * Compliance is bytes: a lone borrower that answers a RECALL with 0, or
 * short, is treated as one that ignored it -- with kill_on_ignore it is
 * killed once the waiter's deadline passes; one that gives all it was
 * asked, at once or in two steps, is not.
 */
static void nxq_test_compliance_bytes(struct kunit *test)
{
	static const u64 answers[][2] = {	/* answered, then uncharged */
		{ 0, 0 }, { 100 * MiB, 0 }, { 400 * MiB, 0 },
		{ 100 * MiB, 300 * MiB },
	};
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_holder *ha = holder_new(test, t, t->a), *hb;
	struct nxq_ticket_state ts;
	struct waiter_thread w;
	int i, k, want_kill;

	nxq_node_set_min(t->a, 600 * MiB);
	nxq_node_set_kill_on_ignore(t->b, true);
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 20), 0);
	for (k = 0; k < ARRAY_SIZE(answers); k++) {
		fake_nr_killed = 0;
		hb = holder_new(test, t, t->b);
		KUNIT_ASSERT_EQ(test, nxq_charge(hb, 900 * MiB, 0, NULL), 0);
		/* 100M free, 500M wanted: 400M called back */
		waiter_start(test, t, &w, ha, 500 * MiB, 300);
		ts = ticket_wait(test, hb);
		KUNIT_EXPECT_EQ(test, ts.level, (u32)NXQ_TICKET_LEVEL_RECALL);
		KUNIT_EXPECT_EQ(test, ts.bytes, 400 * MiB);
		KUNIT_EXPECT_EQ(test, nxq_ticket_answer(hb, ts.generation,
							answers[k][0], NULL), 0);
		if (answers[k][1])
			KUNIT_EXPECT_EQ(test, nxq_uncharge(hb, answers[k][1],
							   NULL), 0);
		want_kill = answers[k][0] + answers[k][1] < 400 * MiB;
		for (i = 0; i < 600 && want_kill && !fake_nr_killed; i++)
			usleep_range(1000, 2000);
		KUNIT_EXPECT_EQ_MSG(test, fake_nr_killed, want_kill,
				    "answer %llu MiB, then %llu MiB", answers[k][0] >> 20,
				    answers[k][1] >> 20);
		if (fake_nr_killed)
			nxq_holder_detach(hb);	/* the process dies */
		KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
		KUNIT_EXPECT_EQ(test, usage(t->a), 500 * MiB);
		KUNIT_EXPECT_EQ(test, nxq_uncharge(ha, 500 * MiB, NULL), 0);
		if (fake_nr_killed)
			nxq_holder_put(hb, NULL);
		else
			holder_free(hb);
		KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	}
	fake_nr_killed = 0;
	holder_free(ha);
	tree_free(t);
}

/*
 * A debt paid later is paid: hb answers 50M of the 450M it was asked,
 * then gives back 400M more; hc ignores its ticket.  At the waiter's
 * deadline hc is killed, hb is not.
 */
static void nxq_test_compliance_paid(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_node *d = tree_get(test, t, t->b, 5);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *hc = holder_new(test, t, d);
	struct nxq_ticket_state ts;
	struct waiter_thread w;
	int i;

	fake_nr_killed = 0;
	nxq_node_set_min(t->a, 600 * MiB);
	nxq_node_set_kill_on_ignore(t->b, true);
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 20), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 450 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 450 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, ha, 600 * MiB, 300);
	ts = ticket_wait(test, hb);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(hb, ts.generation, 50 * MiB,
						NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hb, 400 * MiB, NULL), 0);
	for (i = 0; i < 600 && !fake_nr_killed; i++)
		usleep_range(1000, 2000);
	usleep_range(20000, 30000);
	KUNIT_EXPECT_EQ(test, fake_nr_killed, 1);
	KUNIT_EXPECT_PTR_EQ(test, fake_killed[0], hc);
	nxq_holder_detach(hc);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	fake_nr_killed = 0;
	nxq_holder_put(hc, NULL);
	holder_free(ha);
	holder_free(hb);
	tree_put(t, d);
	tree_free(t);
}

/* A max lowered below use asks the subtree for the excess. */
static void nxq_test_budget_lowered(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->a);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_ticket_state ts;

	KUNIT_ASSERT_EQ(test, nxq_charge(h1, 60 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(h2, 40 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 40 * MiB, 0, NULL), 0);
	nxq_node_set_max(t->a, 30 * MiB);
	ts = ticket(test, h1, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 60 * MiB);
	KUNIT_EXPECT_EQ(test, ts.reason, (u32)NXQ_TICKET_REASON_BUDGET);
	KUNIT_EXPECT_EQ(test, ticket(test, h2, 0).bytes, 10 * MiB);
	ticket(test, hb, -EAGAIN);
	KUNIT_EXPECT_EQ(test, usage(t->a), 100 * MiB);	/* nothing taken */
	holder_free(h1);
	holder_free(h2);
	holder_free(hb);
	tree_free(t);
}

/* A charge that can never fit is refused at once and asks nobody. */
static void nxq_test_never_fits(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hw = holder_new(test, t, t->c);
	struct nxq_holder *hx = holder_new(test, t, t->b);
	struct waiter_thread w;

	nxq_node_set_max(t->c, 20 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 20 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hx, 1000 * MiB, 0, NULL), 0);
	/* A queue exists: hw waits for 10M under c's max. */
	waiter_start(test, t, &w, hw, 10 * MiB, 5000);
	KUNIT_EXPECT_EQ(test, ticket(test, hv, 0).bytes, 10 * MiB);
	/* Above c's max: EDQUOT at once, no raise of hv, no ask of hx. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hw, GiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_charge(hw, GiB, NSEC_PER_SEC, NULL),
			-EDQUOT);
	KUNIT_EXPECT_EQ(test, ticket(test, hv, 0).bytes, 10 * MiB);
	KUNIT_EXPECT_EQ(test, ticket(test, hv, 0).level,
			(u32)NXQ_TICKET_LEVEL_ASK);
	ticket(test, hx, -EAGAIN);
	/* Above the capacity; overflowing: their own errno. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hx, 2 * GiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, nxq_charge(hx, U64_MAX, 0, NULL), -EOVERFLOW);
	ticket(test, hv, 0);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 1ULL);
	nxq_uncharge(hv, 10 * MiB, NULL);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);

	holder_free(hv);
	holder_free(hw);
	holder_free(hx);
	tree_free(t);
}

/* Short and zero answers move the shortfall on to the next victim. */
static void nxq_test_shortfall_moves_on(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *h1 = holder_new(test, t, t->b);
	struct nxq_holder *h2 = holder_new(test, t, t->b);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_ticket_state ts;
	struct waiter_thread w;

	nxq_node_set_min(t->a, 50 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(h1, 60 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(h2, 40 * MiB, 0, NULL), 0);
	/* a waits for 30M of its guarantee: h1, the larger, is asked. */
	waiter_start(test, t, &w, ha, 30 * MiB, 5000);
	ts = ticket(test, h1, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 30 * MiB);
	ticket(test, h2, -EAGAIN);
	/* h1 releases 10 of 30: the other 20 go to h2 at once. */
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h1, ts.generation, 10 * MiB,
						NULL), 0);
	ts = ticket(test, h2, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 20 * MiB);
	ticket(test, h1, -EAGAIN);	/* not asked again */
	/* h2 answers 0: nobody else; then h2 gives all. */
	KUNIT_EXPECT_FALSE(test, completion_done(&w.done));
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(h2, ts.generation, 20 * MiB,
						NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, usage(t->a), 30 * MiB);

	holder_free(h1);
	holder_free(h2);
	holder_free(ha);
	tree_free(t);
}

/* A loop of refused charges: one ask, then the decliner is passed by. */
static void nxq_test_coalesce(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *hv = holder_new(test, t, t->b);
	struct nxq_holder *hw = holder_new(test, t, t->a);
	struct nxq_ticket_state ts;
	int i;

	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 100 * MiB, 0, NULL), 0);
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_EQ(test, nxq_charge(hw, 10 * MiB, 0, NULL),
				-ENOSPC);
	/* 100 refusals, one open ticket for the one shortfall. */
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 1ULL);
	KUNIT_EXPECT_EQ(test, signals(hv), 1);
	ts = ticket(test, hv, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 10 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(hv, ts.generation, 0, NULL), 0);
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_EQ(test, nxq_charge(hw, 10 * MiB, 0, NULL),
				-ENOSPC);
	/* It declined: not woken again within the floor. */
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 1ULL);
	KUNIT_EXPECT_EQ(test, signals(hv), 1);
	ticket(test, hv, -EAGAIN);

	holder_free(hv);
	holder_free(hw);
	tree_free(t);
}

/* Only a RECALL can kill: an ASK left unanswered past its floor cannot. */
static void nxq_test_no_kill_on_ask(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct waiter_thread w;

	fake_nr_killed = 0;
	nxq_node_set_kill_on_ignore(t->b, true);
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 20), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 900 * MiB, 0, NULL), 0);
	/* a has no guarantee: its ask of the borrower b is an ASK. */
	waiter_start(test, t, &w, ha, 500 * MiB, 100);
	KUNIT_EXPECT_EQ(test, ticket(test, hb, 0).level,
			(u32)NXQ_TICKET_LEVEL_ASK);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, fake_nr_killed, 0);
	KUNIT_EXPECT_EQ(test, t->dev->kills, 0ULL);
	holder_free(hb);
	holder_free(ha);
	tree_free(t);
}

/*
 * A victim search looks at NXQ_SCAN_MAX holders at most, whatever the
 * device holds; a loop of refused no-wait charges searches once per floor;
 * successive searches cover every holder.
 */
static void nxq_test_search_bound(struct kunit *test)
{
	const int nr = 2 * NXQ_SCAN_MAX + 10;
	struct tree *t = tree_new(test, (u64)nr * SZ_4K + MiB);
	struct nxq_holder **hv = kunit_kcalloc(test, nr, sizeof(*hv),
					       GFP_KERNEL);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	u64 visits;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, hv);
	spin_lock(&t->dev->lock);
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = nr;
	spin_unlock(&t->dev->lock);
	for (i = 0; i < nr; i++) {
		hv[i] = holder_new(test, t, t->b);
		KUNIT_ASSERT_EQ(test, nxq_charge(hv[i], SZ_4K, 0, NULL), 0);
	}
	/* 1M short: the first 64 of the first window are asked 4K each. */
	visits = t->dev->victim_visits;
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 1ULL);
	KUNIT_EXPECT_GT(test, t->dev->victim_visits - visits, 0ULL);
	KUNIT_EXPECT_LE(test, t->dev->victim_visits - visits,
			4ULL * NXQ_SCAN_MAX);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, (u64)NXQ_MAX_VICTIMS);
	ticket(test, hv[0], 0);
	ticket(test, hv[NXQ_SCAN_MAX], -EAGAIN);
	/* The same refusal again within the floor: no search at all. */
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL),
				-ENOSPC);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 1ULL);
	KUNIT_EXPECT_EQ(test, t->dev->victim_visits - visits,
			4ULL * NXQ_SCAN_MAX);
	/* Once a floor passed, each search looks at the next window. */
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 1), 0);
	msleep(20);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 2ULL);
	ticket(test, hv[NXQ_SCAN_MAX], 0);
	ticket(test, hv[nr - 1], -EAGAIN);
	msleep(20);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 3ULL);
	ticket(test, hv[nr - 1], 0);
	KUNIT_EXPECT_LE(test, t->dev->victim_visits - visits,
			3 * 4ULL * NXQ_SCAN_MAX);

	for (i = 0; i < nr; i++)
		holder_free(hv[i]);
	holder_free(ha);
	tree_free(t);
}

/*
 * A search under a max looks only at its subtree's holders, however many
 * the device has elsewhere: the holders registered first (b's) do not
 * fill its window.
 */
static void nxq_test_search_scope(struct kunit *test)
{
	const int nr = NXQ_SCAN_MAX + 10;
	struct tree *t = tree_new(test, 10 * GiB);
	struct nxq_holder **hb = kunit_kcalloc(test, nr, sizeof(*hb),
					       GFP_KERNEL);
	struct nxq_holder *hv, *ha;
	u64 visits;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, hb);
	spin_lock(&t->dev->lock);
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = nr;
	spin_unlock(&t->dev->lock);
	for (i = 0; i < nr; i++) {
		hb[i] = holder_new(test, t, t->b);
		KUNIT_ASSERT_EQ(test, nxq_charge(hb[i], SZ_4K, 0, NULL), 0);
	}
	hv = holder_new(test, t, t->c);
	ha = holder_new(test, t, t->c);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 10 * MiB, 0, NULL), 0);
	nxq_node_set_max(t->c, 11 * MiB);
	visits = t->dev->victim_visits;
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, ticket(test, hv, 0).bytes, 1 * MiB);
	/* Two holders in c, four passes at most. */
	KUNIT_EXPECT_LE(test, t->dev->victim_visits - visits, 8ULL);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 1ULL);
	for (i = 0; i < nr; i++)
		holder_free(hb[i]);
	holder_free(hv);
	holder_free(ha);
	tree_free(t);
}

/*
 * A subtree with more holders than a search looks at: the next search
 * starts where the last stopped, so a holder in a later child is reached.
 */
static void nxq_test_search_rotate(struct kunit *test)
{
	const int nr = NXQ_SCAN_MAX + 10;
	struct tree *t = tree_new(test, 10 * GiB);
	struct nxq_holder **hc = kunit_kcalloc(test, nr, sizeof(*hc),
					       GFP_KERNEL);
	struct fake_key kd = {};
	struct nxq_holder *hv, *ha;
	struct nxq_node *d;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, hc);
	mutex_lock(&t->l.lock);
	d = nxq_node_get(t->dev, t->a, 5, &kd);
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_FALSE(test, IS_ERR(d));
	spin_lock(&t->dev->lock);
	t->a->lim[NXQ_LIM_HOLDERS_MAX] = nr + 2;
	t->c->lim[NXQ_LIM_HOLDERS_MAX] = nr;
	spin_unlock(&t->dev->lock);
	/* c's holders have nothing to give; d's one has. */
	for (i = 0; i < nr; i++)
		hc[i] = holder_new(test, t, t->c);
	hv = holder_new(test, t, d);
	ha = holder_new(test, t, t->a);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 10 * MiB, 0, NULL), 0);
	nxq_node_set_max(t->a, 11 * MiB);
	/* The first search looks at a's own holder and at c's only. */
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 1ULL);
	ticket(test, hv, -EAGAIN);
	/* A floor later the next one goes on from there, and reaches d. */
	KUNIT_ASSERT_EQ(test, nxq_device_set_ticket_timeout(t->dev, 1), 0);
	msleep(20);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 2 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->dev->searches, 2ULL);
	KUNIT_EXPECT_EQ(test, ticket(test, hv, 0).bytes, 1 * MiB);
	for (i = 0; i < nr; i++)
		holder_free(hc[i]);
	holder_free(hv);
	holder_free(ha);
	tree_put(t, d);
	tree_free(t);
}

static struct kunit_case nxq_pressure_cases[] = {
	KUNIT_CASE(nxq_test_victims_max),
	KUNIT_CASE(nxq_test_victims_device),
	KUNIT_CASE(nxq_test_escalation),
	KUNIT_CASE(nxq_test_compliance_bytes),
	KUNIT_CASE(nxq_test_compliance_paid),
	KUNIT_CASE(nxq_test_budget_lowered),
	KUNIT_CASE(nxq_test_never_fits),
	KUNIT_CASE(nxq_test_shortfall_moves_on),
	KUNIT_CASE(nxq_test_coalesce),
	KUNIT_CASE(nxq_test_no_kill_on_ask),
	KUNIT_CASE(nxq_test_search_bound),
	KUNIT_CASE(nxq_test_search_scope),
	KUNIT_CASE(nxq_test_search_rotate),
	{}
};

static struct kunit_suite nxq_pressure_suite = {
	.name = "nxquota-pressure",
	.test_cases = nxq_pressure_cases,
};

kunit_test_suite(nxq_pressure_suite);
