// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's waitq layer (waitq.c): the fair wait queue: waits, grants, order, aging, the cost of a dispatch.
 */
#include "ledger_test.h"

/* A waiter is granted when its victim answers; or times out cleanly. */
static void nxq_test_wait(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hw = holder_new(test, t, t->c);
	struct nxq_ticket_state ts;
	struct waiter_thread w;

	nxq_node_set_max(t->a, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 90 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_set_reclaimable(hv, 90 * MiB), 0);

	waiter_start(test, t, &w, hw, 50 * MiB, 5000);
	ts = ticket(test, hv, 0);
	KUNIT_EXPECT_EQ(test, ts.bytes, 40 * MiB);
	KUNIT_EXPECT_EQ(test, t->dev->waits, 1ULL);
	KUNIT_EXPECT_EQ(test, nxq_ticket_answer(hv, ts.generation, 40 * MiB,
						NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, hw->charge, 50 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->a), 100 * MiB);

	/* The victim ignores: the waiter fails at its deadline, unchanged. */
	waiter_start(test, t, &w, hw, 10 * MiB, 30);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, hw->charge, 50 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->a), 100 * MiB);
	KUNIT_EXPECT_EQ(test, t->dev->timeouts, 1ULL);
	KUNIT_EXPECT_EQ(test, fake_nr_killed, 0);	/* no policy */
	KUNIT_EXPECT_TRUE(test, list_empty(&t->dev->waiters));

	/* Unregistered while waiting: cancelled. */
	waiter_start(test, t, &w, hw, 10 * MiB, 5000);
	nxq_holder_detach(hw);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ENOENT);
	KUNIT_EXPECT_EQ(test, usage(t->a), 50 * MiB);

	nxq_holder_put(hw, NULL);
	holder_free(hv);
	tree_free(t);
}

/* Priority first, bounded aging, and no newcomer takes the head's room. */
static void nxq_test_fair_queue(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hl = holder_prio(test, t, t->c, 0);
	struct nxq_holder *hu = holder_prio(test, t, t->c, NXQ_PRIORITY_MAX);
	struct nxq_holder *hn = holder_prio(test, t, t->c, 5);
	struct waiter_thread wl, wu;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 95 * MiB, 0, NULL), 0);

	waiter_start(test, t, &wl, hl, 80 * MiB, 5000);	/* large, first */
	msleep(100);	/* ten aging points */
	/* A newcomer of lower effective priority cannot take freed room. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, 10 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hn, 10 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, usage(t->c), 85 * MiB);
	/* A small urgent request goes before the large one. */
	waiter_start(test, t, &wu, hu, 15 * MiB, 5000);
	KUNIT_EXPECT_EQ(test, waiter_end(&wu), 0);
	KUNIT_EXPECT_FALSE(test, completion_done(&wl.done));
	/* The large one gets its room when it is there. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, 85 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&wl), 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 95 * MiB);

	holder_free(hv);
	holder_free(hl);
	holder_free(hu);
	holder_free(hn);
	tree_free(t);
}

/* The queue is kept in key order: one pass serves it. */
static void nxq_test_queue_order(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *h0 = holder_prio(test, t, t->c, 0);
	struct nxq_holder *h1 = holder_prio(test, t, t->c, 100);
	struct nxq_holder *h9 = holder_prio(test, t, t->c, 900);
	struct waiter_thread w0, w1, w9;
	u64 pass;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 100 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w0, h0, MiB, 5000);
	waiter_start(test, t, &w1, h1, MiB, 5000);
	waiter_start(test, t, &w9, h9, MiB, 5000);
	/* Order: 900 first, then 100 (a second of head start), then 0. */
	spin_lock(&t->dev->lock);
	KUNIT_EXPECT_PTR_EQ(test, list_first_entry(&t->dev->waiters,
				struct nxq_waiter, link)->h, h9);
	KUNIT_EXPECT_PTR_EQ(test, list_last_entry(&t->dev->waiters,
				struct nxq_waiter, link)->h, h0);
	pass = t->dev->dispatch_pass;
	spin_unlock(&t->dev->lock);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w9), 0);
	/* One uncharge, one dispatch pass. */
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_pass, pass + 1);
	KUNIT_EXPECT_FALSE(test, completion_done(&w1.done));
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w1), 0);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w0), 0);

	holder_free(hv);
	holder_free(h0);
	holder_free(h1);
	holder_free(h9);
	tree_free(t);
}

/* Waiters under one max cost a charge elsewhere nothing: no dispatch. */
static void nxq_test_dispatch_cost(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hn = holder_new(test, t, t->b);
	struct nxq_holder *hw[8];
	struct waiter_thread w[8];
	u64 pass;
	int i;

	nxq_node_set_max(t->c, 10 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 10 * MiB, 0, NULL), 0);
	for (i = 0; i < 8; i++) {
		hw[i] = holder_new(test, t, t->c);
		waiter_start(test, t, &w[i], hw[i], MiB, 5000);
	}
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 8U);
	spin_lock(&t->dev->lock);
	pass = t->dev->dispatch_pass;
	spin_unlock(&t->dev->lock);
	/* The neighbour under b: fast path both ways, no pass over them. */
	for (i = 0; i < 10; i++) {
		KUNIT_EXPECT_EQ(test, nxq_charge(hn, MiB, 0, NULL), 0);
		KUNIT_EXPECT_EQ(test, nxq_uncharge(hn, MiB, NULL), 0);
	}
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_pass, pass);
	/* A release under c serves them, in order. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, 8 * MiB, NULL), 0);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, waiter_end(&w[i]), 0);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 0U);
	KUNIT_EXPECT_EQ(test, t->dev->nr_dev_blocked, 0U);
	for (i = 0; i < 8; i++)
		holder_free(hw[i]);
	holder_free(hv);
	holder_free(hn);
	tree_free(t);
}

/*
 * The ioctl's inline fast paths charge exactly what nxq_charge() would
 * with nobody waiting, and decline (changing nothing) whenever the full
 * path must decide: over a max, a waiter on the path, 0 bytes, residue,
 * more than the charge, a detached holder.
 */
static void nxq_test_try_charge(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h = holder_new(test, t, t->c);
	struct nxq_holder *hw = holder_new(test, t, t->c);
	struct waiter_thread w;
	u64 charged = 7;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_EXPECT_TRUE(test, nxq_try_charge(h, 60 * MiB, &charged));
	KUNIT_EXPECT_EQ(test, charged, 60 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->c), 60 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->root), 60 * MiB);
	KUNIT_EXPECT_EQ(test, used(t->dev), 60 * MiB);
	charged = 7;
	KUNIT_EXPECT_FALSE(test, nxq_try_charge(h, 41 * MiB, &charged));
	KUNIT_EXPECT_FALSE(test, nxq_try_charge(h, 0, &charged));
	KUNIT_EXPECT_FALSE(test, nxq_try_uncharge(h, 0, &charged));
	KUNIT_EXPECT_FALSE(test, nxq_try_uncharge(h, 61 * MiB, &charged));
	KUNIT_EXPECT_EQ(test, charged, 7ULL);
	KUNIT_EXPECT_EQ(test, usage(t->c), 60 * MiB);

	/* A waiter on the path: 1 byte fits, but the queue decides. */
	waiter_start(test, t, &w, hw, 50 * MiB, 5000);
	KUNIT_EXPECT_FALSE(test, nxq_try_charge(h, 1, &charged));
	KUNIT_EXPECT_EQ(test, usage(t->c), 60 * MiB);
	/* An uncharge serves it. */
	KUNIT_EXPECT_TRUE(test, nxq_try_uncharge(h, 20 * MiB, &charged));
	KUNIT_EXPECT_EQ(test, charged, 40 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 90 * MiB);

	/* Residue from a move: nxq_uncharge() decides which node first. */
	mutex_lock(&t->l.lock);
	t->b->refs++;
	KUNIT_EXPECT_EQ(test, nxq_holder_rehome(h, t->b), 0);
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_FALSE(test, nxq_try_uncharge(h, MiB, &charged));
	KUNIT_EXPECT_EQ(test, usage(t->c), 90 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 40 * MiB, NULL), 0);
	KUNIT_EXPECT_TRUE(test, nxq_try_charge(h, MiB, &charged));
	KUNIT_EXPECT_EQ(test, usage(t->b), MiB);
	/*
	 * Its residue drained, a moved holder takes the inline path again
	 * (it keeps the listed residue until it ends: it costs nothing).
	 */
	KUNIT_EXPECT_TRUE(test, nxq_try_uncharge(h, MiB, &charged));
	KUNIT_EXPECT_EQ(test, usage(t->b), 0ULL);

	/* Detached: neither. */
	nxq_holder_detach(hw);
	KUNIT_EXPECT_FALSE(test, nxq_try_charge(hw, MiB, &charged));
	KUNIT_EXPECT_FALSE(test, nxq_try_uncharge(hw, MiB, &charged));
	KUNIT_EXPECT_EQ(test, usage(t->c), 0ULL);

	nxq_holder_put(hw, NULL);
	holder_free(h);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	tree_free(t);
}

/*
 * What a tenant's waiters cost: a walk looks only at the trees of the
 * constraints a change touched, from their heads.  Eight waiters held up
 * by c's max: a neighbour's pairs, the tenant's refused charges and a
 * waiter behind the head timing out look at none of them; the head
 * leaving looks at the next head only; a release under c at the one it
 * grants and the next.  (Before the per-constraint trees, each refused
 * charge and each timeout walked the whole queue.)
 */
static void nxq_test_queue_cost(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hx = holder_new(test, t, t->c);
	struct nxq_holder *hn = holder_new(test, t, t->b);
	struct nxq_holder *hs = holder_new(test, t, t->c);
	struct nxq_holder *hw[8];
	struct waiter_thread w[8], ws;
	u64 visits, pass;
	int i;

	nxq_node_set_max(t->c, 10 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 10 * MiB, 0, NULL), 0);
	for (i = 0; i < 8; i++) {
		hw[i] = holder_new(test, t, t->c);
		waiter_start(test, t, &w[i], hw[i], MiB, 5000);
	}
	waiter_start(test, t, &ws, hs, MiB, 50);	/* behind the head */
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 9U);
	spin_lock(&t->dev->lock);
	visits = t->dev->dispatch_visits;
	pass = t->dev->dispatch_pass;
	spin_unlock(&t->dev->lock);

	for (i = 0; i < 10; i++) {
		KUNIT_EXPECT_EQ(test, nxq_charge(hn, MiB, 0, NULL), 0);
		KUNIT_EXPECT_EQ(test, nxq_uncharge(hn, MiB, NULL), 0);
		KUNIT_EXPECT_EQ(test, nxq_charge(hx, MiB, 0, NULL), -EDQUOT);
	}
	KUNIT_EXPECT_EQ(test, waiter_end(&ws), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_visits, visits);
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_pass, pass);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 8U);

	/* The head goes: the next head is looked at, and stays. */
	nxq_holder_detach(hw[0]);
	KUNIT_EXPECT_EQ(test, waiter_end(&w[0]), -ENOENT);
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_visits, visits + 1);
	/* 1M freed under c: the head is granted, the next stays. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w[1]), 0);
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_visits, visits + 3);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 6U);
	KUNIT_EXPECT_EQ(test, t->c->queued_below, 6 * MiB);
	KUNIT_EXPECT_EQ(test, t->root->queued_below, 6 * MiB);
	KUNIT_EXPECT_EQ(test, t->b->queued_below, 0ULL);

	/* The rest, in order, as room comes. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, 6 * MiB, NULL), 0);
	for (i = 2; i < 8; i++)
		KUNIT_EXPECT_EQ(test, waiter_end(&w[i]), 0);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 0U);
	KUNIT_EXPECT_EQ(test, t->root->queued_below, 0ULL);
	KUNIT_EXPECT_TRUE(test, list_empty(&t->dev->blocked_nodes));
	nxq_holder_put(hw[0], NULL);
	for (i = 1; i < 8; i++)
		holder_free(hw[i]);
	holder_free(hv);
	holder_free(hx);
	holder_free(hn);
	holder_free(hs);
	tree_free(t);
}

/*
 * The order holds across constraints: a waiter that fits c's raised max
 * but not a's moves to a's tree and keeps its place there (a newcomer
 * under a that fits waits behind it, and is granted when it goes).  A
 * waiter whose holder moves is judged on its new path at once.
 */
static void nxq_test_queue_moves(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *hva = holder_new(test, t, t->a);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->a);
	struct nxq_holder *h3 = holder_new(test, t, t->c);
	struct waiter_thread w1, w2, w3;

	nxq_node_set_max(t->c, 10 * MiB);
	nxq_node_set_max(t->a, 20 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 10 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hva, 9 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w1, h1, 4 * MiB, 5000);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 1U);
	/* c's max raised: w1 fits c, not a (19M + 4M > 20M): it moves. */
	nxq_node_set_max(t->c, 14 * MiB);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 0U);
	KUNIT_EXPECT_EQ(test, t->a->nr_blocked, 1U);
	KUNIT_EXPECT_EQ(test, t->a->queued_below, 4 * MiB);
	/* a has 1M, but w1 is first: a newcomer of 1M under a waits. */
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, MiB, 0, NULL), -EDQUOT);
	waiter_start(test, t, &w2, h2, MiB, 5000);
	KUNIT_EXPECT_EQ(test, t->a->nr_blocked, 2U);
	KUNIT_EXPECT_EQ(test, t->a->queued_below, 5 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->a), 19 * MiB);
	/* w1 goes: w2 fits and is granted. */
	nxq_holder_detach(h1);
	KUNIT_EXPECT_EQ(test, waiter_end(&w1), -ENOENT);
	KUNIT_EXPECT_EQ(test, waiter_end(&w2), 0);
	KUNIT_EXPECT_EQ(test, usage(t->a), 20 * MiB);
	KUNIT_EXPECT_EQ(test, t->a->nr_blocked, 0U);
	KUNIT_EXPECT_EQ(test, t->root->queued_below, 0ULL);

	/* Moved while waiting: judged on its new path at once. */
	nxq_node_set_max(t->c, 10 * MiB);	/* c: hv's 10M, full */
	waiter_start(test, t, &w3, h3, MiB, 5000);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 1U);
	mutex_lock(&t->l.lock);
	t->b->refs++;
	KUNIT_EXPECT_EQ(test, nxq_holder_rehome(h3, t->b), 0);
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, waiter_end(&w3), 0);
	KUNIT_EXPECT_EQ(test, usage(t->b), MiB);
	KUNIT_EXPECT_EQ(test, t->c->nr_blocked, 0U);

	nxq_holder_put(h1, NULL);
	holder_free(h2);
	holder_free(h3);
	holder_free(hv);
	holder_free(hva);
	tree_free(t);
}

/* nxq_charge_begin()'s shells count the done hooks called, per waiter. */
struct split_waiter {
	struct nxq_waiter w;
	int done;
};

static void split_done(struct nxq_waiter *w)
{
	container_of(w, struct split_waiter, w)->done++;
}

/*
 * A waiting charge in steps, with no thread asleep in the ledger (as
 * nxquotad runs it): begin queues it and returns; a release settles it
 * and calls its own done hook, no other waiter's; a tick before its wake
 * time changes nothing; a cancelled one and a timed-out one leave nothing
 * charged and nothing counted; end gives back the refusal of a timeout.
 */
static void nxq_test_charge_split(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hv = holder_new(test, t, t->c);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->c);
	struct split_waiter a = {}, b = {};
	struct nxq_refusal_rec why;
	u64 charged = 0;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 90 * MiB, 0, NULL), 0);

	KUNIT_ASSERT_EQ(test, nxq_charge_begin(h1, &a.w, 20 * MiB,
					       5000 * NSEC_PER_MSEC, 0,
					       split_done),
			NXQ_CHARGE_QUEUED);
	KUNIT_ASSERT_EQ(test, nxq_charge_begin(h2, &b.w, 30 * MiB,
					       5000 * NSEC_PER_MSEC, 0,
					       split_done),
			NXQ_CHARGE_QUEUED);
	KUNIT_EXPECT_EQ(test, t->c->subtree_waiters, 2U);
	KUNIT_EXPECT_GT(test, a.w.wake_ns, ktime_get_ns());
	/* not yet its wake time: it still waits, nothing told */
	KUNIT_EXPECT_EQ(test, nxq_charge_tick(&a.w), NXQ_CHARGE_QUEUED);
	KUNIT_EXPECT_EQ(test, a.done, 0);

	/* room for the first alone: it alone is told, once */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hv, 20 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, a.done, 1);
	KUNIT_EXPECT_EQ(test, b.done, 0);
	KUNIT_EXPECT_EQ(test, nxq_charge_tick(&a.w), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge_end(&a.w, &charged, &why), 0);
	KUNIT_EXPECT_EQ(test, charged, 20 * MiB);
	KUNIT_EXPECT_EQ(test, why.reason, 0U);
	KUNIT_EXPECT_EQ(test, t->c->subtree_waiters, 1U);

	/* its caller gives up: nothing charged, nothing counted, not told */
	nxq_charge_cancel(&b.w, -EINTR);
	KUNIT_EXPECT_EQ(test, nxq_charge_end(&b.w, &charged, &why), -EINTR);
	KUNIT_EXPECT_EQ(test, charged, 0ULL);
	KUNIT_EXPECT_EQ(test, why.reason, 0U);
	KUNIT_EXPECT_EQ(test, b.done, 0);
	KUNIT_EXPECT_EQ(test, t->c->subtree_waiters, 0U);
	KUNIT_EXPECT_TRUE(test, list_empty(&t->dev->waiters));
	KUNIT_EXPECT_EQ(test, usage(t->c), 90 * MiB);

	/* at its deadline a tick times it out, and says what refused it */
	KUNIT_ASSERT_EQ(test, nxq_charge_begin(h2, &b.w, 30 * MiB,
					       20 * NSEC_PER_MSEC, 0,
					       split_done),
			NXQ_CHARGE_QUEUED);
	while (nxq_charge_tick(&b.w) == NXQ_CHARGE_QUEUED)
		usleep_range(5000, 6000);
	KUNIT_EXPECT_EQ(test, nxq_charge_end(&b.w, &charged, &why),
			-ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, why.reason, (u32)NXQ_REFUSED_MAX);
	KUNIT_EXPECT_EQ(test, why.id, t->c->id);
	KUNIT_EXPECT_EQ(test, t->dev->timeouts, 1ULL);
	KUNIT_EXPECT_EQ(test, b.done, 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 90 * MiB);

	/* its holder's end settles it: told, -ENOENT */
	KUNIT_ASSERT_EQ(test, nxq_charge_begin(h2, &b.w, 30 * MiB,
					       5000 * NSEC_PER_MSEC, 0,
					       split_done),
			NXQ_CHARGE_QUEUED);
	nxq_holder_detach(h2);
	KUNIT_EXPECT_EQ(test, b.done, 1);
	KUNIT_EXPECT_EQ(test, nxq_charge_end(&b.w, NULL, NULL), -ENOENT);
	KUNIT_EXPECT_EQ(test, t->c->subtree_waiters, 0U);

	nxq_holder_put(h2, NULL);
	holder_free(hv);
	holder_free(h1);
	tree_free(t);
}

static struct kunit_case nxq_waitq_cases[] = {
	KUNIT_CASE(nxq_test_wait),
	KUNIT_CASE(nxq_test_charge_split),
	KUNIT_CASE(nxq_test_fair_queue),
	KUNIT_CASE(nxq_test_queue_order),
	KUNIT_CASE(nxq_test_dispatch_cost),
	KUNIT_CASE(nxq_test_queue_cost),
	KUNIT_CASE(nxq_test_queue_moves),
	KUNIT_CASE(nxq_test_try_charge),
	{}
};

static struct kunit_suite nxq_waitq_suite = {
	.name = "nxquota-waitq",
	.test_cases = nxq_waitq_cases,
};

kunit_test_suite(nxq_waitq_suite);
