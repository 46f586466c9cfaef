// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's counter layer (counter.c): hierarchical counters: max, min and effective min, overflow, limits, concurrent charges.
 */
#include "ledger_test.h"

/* Up to max and no further; a refusal changes no counter. */
static void nxq_test_max(struct kunit *test)
{
	struct tree *t = tree_new(test, 10 * GiB);
	struct nxq_holder *h = holder_new(test, t, t->c);
	struct nxq_budget b;
	u64 charged;

	nxq_node_set_max(t->c, 100 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 60 * MiB, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 60 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 40 * MiB, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 100 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 1, 0, &charged), -EDQUOT);
	KUNIT_EXPECT_EQ(test, charged, 100 * MiB);

	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.current_bytes, 100 * MiB);
	KUNIT_EXPECT_EQ(test, b.max_hits, 1ULL);
	KUNIT_EXPECT_EQ(test, b.denials, 1ULL);
	KUNIT_EXPECT_EQ(test, b.headroom, 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->a), 100 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->root), 100 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->b), 0ULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 100 * MiB);
	/* The ancestors saw the denial, the sibling did not. */
	nxq_node_budget(t->a, &b);
	KUNIT_EXPECT_EQ(test, b.denials, 1ULL);
	KUNIT_EXPECT_EQ(test, b.max_hits, 0ULL);
	nxq_node_budget(t->b, &b);
	KUNIT_EXPECT_EQ(test, b.denials, 0ULL);

	/* Lowering max below usage takes nothing back but refuses more. */
	nxq_node_set_max(t->c, 50 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->c), 100 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 10 * MiB, &charged), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 41 * MiB, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 49 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 1, 0, NULL), -EDQUOT);

	holder_free(h);
	KUNIT_EXPECT_EQ(test, usage(t->c), 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	tree_free(t);
}

/* A parent's max binds every child; the capacity binds everyone. */
static void nxq_test_hierarchy(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_budget bd;

	nxq_node_set_max(t->a, 300 * MiB);
	nxq_node_set_max(t->c, 500 * MiB);	/* looser than its parent */
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 200 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 100 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 1, 0, NULL), -EDQUOT);
	nxq_node_budget(t->a, &bd);
	KUNIT_EXPECT_EQ(test, bd.max_hits, 2ULL);
	nxq_node_budget(t->c, &bd);
	KUNIT_EXPECT_EQ(test, bd.max_hits, 0ULL);
	KUNIT_EXPECT_EQ(test, bd.headroom, 0ULL);

	/* b has no max: the device's capacity stops it. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hb, 724 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hb, 1, 0, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, usage(t->root), GiB);
	KUNIT_EXPECT_EQ(test, t->dev->capacity_hits, 1ULL);
	KUNIT_EXPECT_EQ(test, t->dev->denials, 3ULL);

	/* Capacity lowered below use: nothing taken, nothing more given. */
	nxq_device_set_capacity(t->dev, 512 * MiB);
	KUNIT_EXPECT_EQ(test, used(t->dev), GiB);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hb, 100 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hb, 1, 0, NULL), -ENOSPC);

	holder_free(hc);
	holder_free(ha);
	holder_free(hb);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->a), 0ULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	tree_free(t);
}

/* Counters never wrap; bad sizes change nothing. */
static void nxq_test_overflow(struct kunit *test)
{
	struct tree *t = tree_new(test, U64_MAX);
	struct nxq_holder *h = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->b);
	u64 charged;

	KUNIT_EXPECT_EQ(test, nxq_charge(h, 0, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, U64_MAX - 10, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 11, 0, &charged), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, charged, U64_MAX - 10);
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, 11, 0, NULL), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, U64_MAX, 0, NULL), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 10, 0, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, U64_MAX);
	KUNIT_EXPECT_EQ(test, used(t->dev), U64_MAX);
	KUNIT_EXPECT_EQ(test, usage(t->b), 0ULL);

	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h2, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, U64_MAX, &charged), 0);
	KUNIT_EXPECT_EQ(test, charged, 0ULL);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);

	/* With a finite capacity, a huge charge is refused as ENOSPC. */
	nxq_device_set_capacity(t->dev, GiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, U64_MAX - 1, 0, NULL), -ENOSPC);
	nxq_node_set_max(t->c, GiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, U64_MAX - 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);

	holder_free(h);
	holder_free(h2);
	tree_free(t);
}

static void nxq_test_reclaimable(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h = holder_new(test, t, t->c);

	KUNIT_EXPECT_EQ(test, nxq_set_reclaimable(h, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 100 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_set_reclaimable(h, 100 * MiB + 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_set_reclaimable(h, 80 * MiB), 0);
	KUNIT_EXPECT_EQ(test, h->reclaimable, 80 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h, 50 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, h->reclaimable, 50 * MiB);
	holder_free(h);
	tree_free(t);
}

/* Effective min: proportional when siblings overcommit their parent. */
static void nxq_test_effective_min(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_holder *h = holder_new(test, t, t->b);
	struct nxq_budget bd;

	nxq_node_set_min(t->a, 300 * MiB);
	nxq_node_set_min(t->b, 200 * MiB);
	nxq_node_budget(t->a, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 300 * MiB);
	nxq_node_budget(t->root, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 1000 * MiB);

	/* 600 + 900 > 1000: shares scaled to 400 and 600. */
	nxq_node_set_min(t->a, 600 * MiB);
	nxq_node_set_min(t->b, 900 * MiB);
	nxq_node_budget(t->a, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 400 * MiB);
	nxq_node_budget(t->b, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 600 * MiB);

	/* c asks for more than a can give: capped by a's share. */
	nxq_node_set_min(t->c, 800 * MiB);
	nxq_node_budget(t->c, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 400 * MiB);

	/* Borrowed: usage above the effective min. */
	KUNIT_EXPECT_EQ(test, nxq_charge(h, 700 * MiB, 0, NULL), 0);
	nxq_node_budget(t->b, &bd);
	KUNIT_EXPECT_EQ(test, bd.borrowed, 100 * MiB);
	nxq_node_set_min(t->b, 0);
	nxq_node_budget(t->b, &bd);
	KUNIT_EXPECT_EQ(test, bd.borrowed, 700 * MiB);
	nxq_node_budget(t->a, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 600 * MiB);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 600 * MiB);
	holder_free(h);
	tree_free(t);
}

/*
 * Effective mins are cached per node and recomputed after every change
 * of a min (a sibling's included) or of the capacity, never served stale.
 */
static void nxq_test_emin_cache(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_budget b;
	u64 gen;

	nxq_node_set_min(t->a, 80 * MiB);
	nxq_node_set_min(t->c, 75 * MiB);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min, 75 * MiB);
	spin_lock(&t->dev->lock);
	gen = t->dev->emin_gen;
	KUNIT_EXPECT_EQ(test, t->c->emin_gen, gen);
	KUNIT_EXPECT_EQ(test, t->a->emin_gen, gen);
	KUNIT_EXPECT_EQ(test, t->a->emin, 80 * MiB);
	spin_unlock(&t->dev->lock);
	/* A sibling's min overcommits the root: a gets 80/120 of 100. */
	nxq_node_set_min(t->b, 40 * MiB);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min,
			mul_u64_u64_div_u64(80 * MiB, 100 * MiB, 120 * MiB));
	/* The capacity: a gets 80/120 of 60, c all of that. */
	nxq_device_set_capacity(t->dev, 60 * MiB);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min, 40 * MiB);
	/* The sibling's min gone: a gets min(80, 60). */
	nxq_node_set_min(t->b, 0);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min, 60 * MiB);
	nxq_node_budget(t->a, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min, 60 * MiB);
	tree_free(t);
}

/* default_max binds unbudgeted top-level nodes; no eventfd, no borrow. */
static void nxq_test_default_max(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *hn;
	int err;

	nxq_device_set_default_max(t->dev, 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, 1ULL);
	nxq_device_set_default_max(t->dev, 10 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 10 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	/* a's own max covers its subtree: c, without one, is not bound. */
	nxq_node_set_max(t->a, 50 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 40 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hc, 50 * MiB, NULL), 0);

	/* A holder that cannot be asked cannot go above its emin (0). */
	mutex_lock(&t->l.lock);
	t->b->refs++;
	hn = nxq_holder_create(t->b, 0, NULL, NULL, 0, &err);
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_NOT_NULL(test, hn);
	nxq_device_set_default_max(t->dev, NXQ_UNLIMITED);
	KUNIT_EXPECT_EQ(test, nxq_charge(hn, 1, 0, NULL), -EDQUOT);
	nxq_node_set_min(t->b, 5 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hn, 5 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hn, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 0ULL);

	holder_free(hn);
	holder_free(hc);
	tree_free(t);
}

/* Per-cgroup limits: priority_max, holders_max, waiters_max, waits. */
static void nxq_test_limits(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *h[3], *hv, *hp;
	struct waiter_thread w;
	int err, i;

	/* Defaults: a's priority_max is root's here (raised by tree_new). */
	spin_lock(&t->dev->lock);
	t->root->lim[NXQ_LIM_PRIORITY_MAX] = NXQ_LIMIT_UNSET;
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_PRIORITY_MAX), 0U);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_HOLDERS_MAX),
			(u32)NXQUOTA_HOLDERS_MAX_DEFAULT);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->root, NXQ_LIM_HOLDERS_MAX),
			U32_MAX);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_WAIT_MAX_MS),
			(u32)NXQUOTA_WAIT_MAX_MS_DEFAULT);
	/* Inherited from the nearest ancestor that sets one. */
	t->a->lim[NXQ_LIM_HOLDERS_MAX] = 2;
	t->a->lim[NXQ_LIM_WAITERS_MAX] = 1;
	t->a->lim[NXQ_LIM_WAIT_MAX_MS] = 30;
	spin_unlock(&t->dev->lock);

	mutex_lock(&t->l.lock);
	t->c->refs++;
	hp = nxq_holder_create(t->c, 1, &err, NULL, 0, &err);
	KUNIT_EXPECT_NULL(test, hp);
	KUNIT_EXPECT_EQ(test, err, -EPERM);
	t->c->refs--;
	mutex_unlock(&t->l.lock);

	h[0] = holder_new(test, t, t->c);
	h[1] = holder_new(test, t, t->a);
	mutex_lock(&t->l.lock);
	t->c->refs++;
	hp = nxq_holder_create(t->c, 0, &err, NULL, 0, &err);
	KUNIT_EXPECT_NULL(test, hp);
	KUNIT_EXPECT_EQ(test, err, -EMFILE);
	t->c->refs--;
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, 2U);
	h[2] = holder_new(test, t, t->b);	/* b's subtree is not a's */

	/* One waiter in a's subtree; the second gets EAGAIN at once. */
	hv = h[2];
	KUNIT_ASSERT_EQ(test, nxq_charge(hv, 100 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, h[0], 10 * MiB, 5000);
	KUNIT_EXPECT_EQ(test, nxq_charge(h[1], MiB, NSEC_PER_SEC, NULL),
			-EAGAIN);
	/* The wait is clamped to a's wait_max_ms (30 ms, not 5 s). */
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters, 0U);

	for (i = 0; i < 3; i++)
		holder_free(h[i]);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, 0U);
	tree_free(t);
}

/*
 * A guarantee reaches its whole subtree: children without a min of their
 * own share what their parent's min leaves unclaimed, in proportion to
 * what they charge, and may charge it without an eventfd; an ancestor
 * without a min neither dilutes nor voids its children's guarantees.
 */
static void nxq_test_recursive_min(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_node *d = tree_get(test, t, t->a, 5);
	struct nxq_holder *hc = holder_noask(test, t, t->c);
	struct nxq_holder *hd = holder_noask(test, t, d);
	struct nxq_budget bc, bd;

	/* a is a pod with min 600M; c and d, its containers, have none. */
	nxq_node_set_min(t->a, 600 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 400 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 200 * MiB, 0, NULL), 0);
	/* The pod's guarantee is used up: its containers cannot borrow. */
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, 2ULL);
	nxq_node_budget(t->c, &bc);
	nxq_node_budget(d, &bd);
	KUNIT_EXPECT_EQ(test, bc.effective_min, 400 * MiB);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 200 * MiB);
	KUNIT_EXPECT_EQ(test, bc.borrowed + bd.borrowed, 0ULL);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 0ULL);
	/* What one gives back the other may take. */
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hc, 100 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 100 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);

	/* d claims 500M of its own: c shares the 100M left unclaimed. */
	nxq_node_set_min(d, 500 * MiB);
	KUNIT_EXPECT_EQ(test, t->a->children_min, 500 * MiB);
	KUNIT_EXPECT_EQ(test, t->a->claimed_usage, 300 * MiB);
	nxq_node_budget(t->c, &bc);
	nxq_node_budget(d, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 500 * MiB);
	KUNIT_EXPECT_EQ(test, bc.effective_min, 100 * MiB);
	KUNIT_EXPECT_EQ(test, bc.borrowed, 200 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 200 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 1, 0, NULL), -EDQUOT);

	/* a without a min: it claims d's 500M, which d keeps whole. */
	nxq_node_set_min(t->a, 0);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 500 * MiB);
	nxq_node_budget(d, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 500 * MiB);
	nxq_node_budget(t->a, &bd);
	KUNIT_EXPECT_EQ(test, bd.effective_min, 500 * MiB);
	/* and c, with no guarantee on its path, none (the root lends none) */
	nxq_node_budget(t->c, &bc);
	KUNIT_EXPECT_EQ(test, bc.effective_min, 0ULL);
	/* d's min gone: nothing claims, nothing counts as claimed. */
	nxq_node_set_min(d, 0);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 0ULL);
	KUNIT_EXPECT_EQ(test, t->a->children_min, 0ULL);
	KUNIT_EXPECT_EQ(test, t->a->claimed_usage, 0ULL);
	KUNIT_EXPECT_EQ(test, t->root->claimed_usage, 0ULL);

	holder_free(hc);
	holder_free(hd);
	KUNIT_EXPECT_EQ(test, usage(t->a), 0ULL);
	tree_put(t, d);
	tree_free(t);
}

/*
 * A charge waiting on a guarantee its siblings use up is served when
 * one of them gives back, and when the guarantee is raised.
 */
static void nxq_test_guarantee_waiters(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_node *d = tree_get(test, t, t->a, 5);
	struct nxq_holder *hc = holder_noask(test, t, t->c);
	struct nxq_holder *hd = holder_noask(test, t, d);
	struct waiter_thread w;

	nxq_node_set_min(t->a, 100 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 100 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, hd, 50 * MiB, 5000);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(hc, 50 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	waiter_start(test, t, &w, hd, 50 * MiB, 5000);
	nxq_node_set_min(t->a, 200 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, usage(d), 100 * MiB);
	holder_free(hc);
	holder_free(hd);
	tree_put(t, d);
	tree_free(t);
}

/*
 * default_max binds what a top-level node's subtree charges outside
 * budgeted subtrees: an intermediate node without a budget never blocks
 * a budgeted descendant, and its asks pass budgeted holders by.
 */
static void nxq_test_default_budgeted(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *ha2 = holder_new(test, t, t->a);
	struct nxq_budget b;

	nxq_device_set_default_max(t->dev, 10 * MiB);
	nxq_node_set_max(t->c, 500 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 300 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, t->a->budgeted_usage, 300 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha2, 6 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 4 * MiB, 0, NULL), 0);
	/* a's own holders share default_max; hc's 300M do not count. */
	KUNIT_EXPECT_EQ(test, nxq_charge(ha, 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, 1ULL);
	/* Asked: the unbudgeted holders of a only (one with charge). */
	KUNIT_EXPECT_EQ(test, ticket(test, ha2, 0).bytes, 1ULL);
	ticket(test, hc, -EAGAIN);
	nxq_node_budget(t->a, &b);
	KUNIT_EXPECT_EQ(test, b.effective_max, 10 * MiB);
	KUNIT_EXPECT_FALSE(test, b.max_set);
	KUNIT_EXPECT_EQ(test, b.headroom, 0ULL);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_max, 500 * MiB);
	KUNIT_EXPECT_EQ(test, b.headroom, 200 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 200 * MiB, 0, NULL), 0);

	/* c's budget gone: its 500M count against default_max at once. */
	mutex_lock(&t->l.lock);
	nxq_node_clear_budget(t->c);
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, t->a->budgeted_usage, 0ULL);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 1, 0, NULL), -EDQUOT);
	/* A min alone is a budget too. */
	nxq_node_set_min(t->c, MiB);
	KUNIT_EXPECT_EQ(test, t->a->budgeted_usage, 500 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, MiB, 0, NULL), 0);
	nxq_node_budget(t->c, &b);
	KUNIT_EXPECT_EQ(test, b.effective_max, NXQ_UNLIMITED);

	holder_free(hc);
	holder_free(ha);
	holder_free(ha2);
	KUNIT_EXPECT_EQ(test, t->a->budgeted_usage, 0ULL);
	tree_free(t);
}

/*
 * Object limits belong to each cgroup: without its own, a node gets the
 * default for itself; siblings never share one; an ancestor's own limit
 * bounds its subtree's total.
 */
static void nxq_test_limits_own(struct kunit *test)
{
	const unsigned int nr = NXQUOTA_HOLDERS_MAX_DEFAULT;
	struct tree *t = tree_new(test, GiB);
	struct nxq_node *d = tree_get(test, t, t->a, 5);
	struct nxq_holder **hs, *h;
	unsigned int i, n = 0;
	int err;

	hs = kunit_kcalloc(test, 2 * nr + 2, sizeof(*hs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, hs);
	for (i = 0; i < nr; i++)
		hs[n++] = holder_noask(test, t, t->c);
	mutex_lock(&t->l.lock);
	t->c->refs++;
	h = nxq_holder_create(t->c, 0, NULL, NULL, 0, &err);
	KUNIT_EXPECT_NULL(test, h);
	KUNIT_EXPECT_EQ(test, err, -EMFILE);
	t->c->refs--;
	mutex_unlock(&t->l.lock);
	/* c's sibling and their parent each have their own default. */
	hs[n++] = holder_noask(test, t, d);
	hs[n++] = holder_noask(test, t, t->a);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, nr + 2);

	/* A limit set on a bounds a's subtree: c, d and a together. */
	spin_lock(&t->dev->lock);
	t->a->lim[NXQ_LIM_HOLDERS_MAX] = nr + 2;
	spin_unlock(&t->dev->lock);
	mutex_lock(&t->l.lock);
	d->refs++;
	h = nxq_holder_create(d, 0, NULL, NULL, 0, &err);
	KUNIT_EXPECT_NULL(test, h);
	KUNIT_EXPECT_EQ(test, err, -EMFILE);
	d->refs--;
	mutex_unlock(&t->l.lock);

	/* Waiters likewise: 64 each for c and d, then a's own 70 in all. */
	spin_lock(&t->dev->lock);
	for (i = 0; i < NXQUOTA_WAITERS_MAX_DEFAULT; i++)
		KUNIT_EXPECT_EQ(test, nxq_waiters_add(t->c), 0);
	KUNIT_EXPECT_EQ(test, nxq_waiters_add(t->c), -EAGAIN);
	KUNIT_EXPECT_EQ(test, nxq_waiters_add(d), 0);
	t->a->lim[NXQ_LIM_WAITERS_MAX] = NXQUOTA_WAITERS_MAX_DEFAULT + 2;
	KUNIT_EXPECT_EQ(test, nxq_waiters_add(d), 0);
	KUNIT_EXPECT_EQ(test, nxq_waiters_add(d), -EAGAIN);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters,
			NXQUOTA_WAITERS_MAX_DEFAULT + 2U);
	for (i = 0; i < NXQUOTA_WAITERS_MAX_DEFAULT; i++)
		nxq_waiters_del(t->c);
	nxq_waiters_del(d);
	nxq_waiters_del(d);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters, 0U);
	KUNIT_EXPECT_EQ(test, d->own_waiters, 0U);
	spin_unlock(&t->dev->lock);

	for (i = 0; i < n; i++)
		holder_free(hs[i]);
	tree_put(t, d);
	tree_free(t);
}

/*
 * What STATUS tells a holder: what it could charge now and at most (a
 * holder without an eventfd: within the guarantee it draws on), and its
 * last refusal -- which node refused, its limit and usage then.
 */
static void nxq_test_holder_status(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_node *d = tree_get(test, t, t->a, 5);
	struct nxq_holder *hc = holder_noask(test, t, t->c);
	struct nxq_holder *hd = holder_new(test, t, d);
	struct nxq_refusal_rec r;
	struct nxq_budget b;
	u64 ch, rc, room, limit;

	/* a: the pod, min 100M max 300M; c (no eventfd) and d share it */
	nxq_node_set_min(t->a, 100 * MiB);
	nxq_node_set_max(t->a, 300 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hd, 30 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 20 * MiB, 0, NULL), 0);
	nxq_holder_status(hc, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, room, 50 * MiB);	/* 100 - 30 - 20 */
	KUNIT_EXPECT_EQ(test, limit, 100 * MiB);
	KUNIT_EXPECT_EQ(test, b.effective_max, 300 * MiB);
	KUNIT_EXPECT_EQ(test, r.err, 0U);
	/* the bisection found the exact largest charge */
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 50 * MiB + 1, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 50 * MiB, 0, NULL), 0);
	nxq_holder_status(hc, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, room, 0ULL);
	/* the refusal above: a's guarantee, one level up */
	KUNIT_EXPECT_EQ(test, r.err, (u32)EDQUOT);
	KUNIT_EXPECT_EQ(test, r.level, 1U);
	KUNIT_EXPECT_EQ(test, r.bytes, 50 * MiB + 1);
	KUNIT_EXPECT_EQ(test, r.limit, 100 * MiB);
	KUNIT_EXPECT_EQ(test, r.min, 100 * MiB);
	KUNIT_EXPECT_EQ(test, r.usage, 50 * MiB);
	KUNIT_EXPECT_NE(test, r.ns, 0ULL);
	/* d has an eventfd: bound by a's max, 300 - 100 */
	nxq_holder_status(hd, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, room, 200 * MiB);
	KUNIT_EXPECT_EQ(test, limit, 300 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 200 * MiB + 1, 0, NULL), -EDQUOT);
	nxq_holder_status(hd, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, r.level, 1U);
	KUNIT_EXPECT_EQ(test, r.limit, 300 * MiB);
	KUNIT_EXPECT_EQ(test, r.usage, 100 * MiB);
	/* the device: level NXQ_LEVEL_DEVICE, its capacity and use */
	nxq_device_set_capacity(t->dev, 120 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(hd, 30 * MiB, 0, NULL), -ENOSPC);
	nxq_holder_status(hd, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, r.err, (u32)ENOSPC);
	KUNIT_EXPECT_EQ(test, r.level, NXQ_LEVEL_DEVICE);
	KUNIT_EXPECT_EQ(test, r.limit, 120 * MiB);
	KUNIT_EXPECT_EQ(test, r.usage, 100 * MiB);
	KUNIT_EXPECT_EQ(test, room, 20 * MiB);
	KUNIT_EXPECT_EQ(test, limit, 120 * MiB);
	holder_free(hc);
	holder_free(hd);
	tree_put(t, d);
	tree_free(t);
}

/*
 * NXQ_CHARGE_PROBE: a refusal that nobody hears of (the caller asks again
 * for less): no denial counted, no ticket, no event, no refusal recorded;
 * a probe that fits is an ordinary charge.
 */
static void nxq_test_probe(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_refusal_rec r;
	struct nxq_budget b;
	u64 ch, rc, room, limit;

	nxq_node_set_max(t->a, 10 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 8 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge_probe(hc, 4 * MiB, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->dev->denials, 0ULL);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, 0ULL);
	KUNIT_EXPECT_EQ(test, t->dev->tickets, 0ULL);
	nxq_holder_status(hc, &b, &ch, &rc, &room, &limit, &r);
	KUNIT_EXPECT_EQ(test, r.err, 0U);
	/* the exact charge then speaks for the refusal, once */
	KUNIT_EXPECT_EQ(test, nxq_charge(hc, 3 * MiB, 0, NULL), -EDQUOT);
	KUNIT_EXPECT_EQ(test, t->dev->denials, 1ULL);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, 1ULL);
	KUNIT_EXPECT_EQ(test, nxq_charge_probe(hc, 2 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, usage(t->a), 10 * MiB);
	/* the device full: no ask of the borrower either */
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, GiB - 10 * MiB, 0, NULL), 0);
	nxq_node_set_max(t->a, NXQ_UNLIMITED);
	KUNIT_EXPECT_EQ(test, nxq_charge_probe(hc, MiB, NULL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, t->dev->capacity_hits, 0ULL);
	KUNIT_EXPECT_EQ(test, signals(hb), 0);
	holder_free(hc);
	holder_free(hb);
	tree_free(t);
}

/*
 * A charge's own refusal, for the reply that hands it back (struct
 * nxq_charge version 1, nxq_charge_why()): the node, its level, limit,
 * min, usage and why; all zero for a grant and a probe; the capacity for
 * the device; the guarantee for a holder that cannot be asked; what a
 * timed-out wait waited on.
 */
static void nxq_test_charge_why(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *hc2 = holder_new(test, t, t->c);
	struct nxq_holder *hb = holder_noask(test, t, t->b);
	struct nxq_refusal_rec r;

	nxq_node_set_max(t->a, 10 * MiB);
	nxq_node_set_min(t->a, MiB);
	memset(&r, 0xff, sizeof(r));
	KUNIT_ASSERT_EQ(test, nxq_charge_why(hc, 8 * MiB, 0, 0, NULL, &r), 0);
	KUNIT_EXPECT_EQ(test, r.err, 0U);
	KUNIT_EXPECT_EQ(test, r.reason, 0U);
	KUNIT_EXPECT_EQ(test, r.id, 0ULL);

	KUNIT_EXPECT_EQ(test, nxq_charge_why(hc, 4 * MiB, 0, 0, NULL, &r),
			-EDQUOT);
	KUNIT_EXPECT_EQ(test, r.err, (u32)EDQUOT);
	KUNIT_EXPECT_EQ(test, r.reason, (u32)NXQ_REFUSED_MAX);
	KUNIT_EXPECT_EQ(test, r.level, 1U);
	KUNIT_EXPECT_EQ(test, r.id, 2ULL);
	KUNIT_EXPECT_EQ(test, r.limit, 10 * MiB);
	KUNIT_EXPECT_EQ(test, r.min, MiB);
	KUNIT_EXPECT_EQ(test, r.usage, 8 * MiB);
	KUNIT_EXPECT_EQ(test, r.bytes, 4 * MiB);

	/* a probe's refusal is nobody's: nothing named */
	memset(&r, 0xff, sizeof(r));
	KUNIT_EXPECT_EQ(test, nxq_charge_why(hc, 4 * MiB, 0, NXQ_CHARGE_PROBE,
					     NULL, &r), -EDQUOT);
	KUNIT_EXPECT_EQ(test, r.err, 0U);
	KUNIT_EXPECT_EQ(test, r.reason, 0U);

	/* a wait that ran out names what it waited on */
	KUNIT_EXPECT_EQ(test, nxq_charge_why(hc2, 4 * MiB, 50 * NSEC_PER_MSEC,
					     0, NULL, &r), -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, r.err, (u32)EDQUOT);
	KUNIT_EXPECT_EQ(test, r.reason, (u32)NXQ_REFUSED_MAX);
	KUNIT_EXPECT_EQ(test, r.id, 2ULL);

	/* a holder that cannot be asked, past its guarantee */
	nxq_node_set_min(t->b, 2 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge_why(hb, 3 * MiB, 0, 0, NULL, &r),
			-EDQUOT);
	KUNIT_EXPECT_EQ(test, r.reason, (u32)NXQ_REFUSED_MIN);
	KUNIT_EXPECT_EQ(test, r.level, 0U);
	KUNIT_EXPECT_EQ(test, r.id, 3ULL);
	KUNIT_EXPECT_EQ(test, r.limit, 2 * MiB);
	KUNIT_EXPECT_EQ(test, r.min, 2 * MiB);

	/* the device */
	nxq_node_set_max(t->a, NXQ_UNLIMITED);
	KUNIT_EXPECT_EQ(test, nxq_charge_why(hc, 101 * MiB, 0, 0, NULL, &r),
			-ENOSPC);
	KUNIT_EXPECT_EQ(test, r.reason, (u32)NXQ_REFUSED_CAPACITY);
	KUNIT_EXPECT_EQ(test, r.level, NXQ_LEVEL_DEVICE);
	KUNIT_EXPECT_EQ(test, r.id, 0ULL);
	KUNIT_EXPECT_EQ(test, r.limit, 100 * MiB);
	KUNIT_EXPECT_EQ(test, r.usage, 8 * MiB);
	holder_free(hc);
	holder_free(hc2);
	holder_free(hb);
	tree_free(t);
}

/*
 * Every change that can make a waiter fit serves it at once: a raised
 * max, default_max, capacity or min, and a holder's end.  (A charge that
 * could never fit under the limits as they are is refused at once, so
 * each waiter here waits for room another holder uses.)
 */
static void nxq_test_dispatch_triggers(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_holder *hc2 = holder_new(test, t, t->c);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *hn = holder_noask(test, t, t->b);
	struct nxq_holder *hn2 = holder_noask(test, t, t->b);
	struct waiter_thread w;

	/* a max raised: hc2 holds a's 10M, hc waits for 5M */
	nxq_node_set_max(t->a, 10 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc2, 10 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, hc, 5 * MiB, 5000);
	nxq_node_set_max(t->a, 15 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	/* default_max raised (a's max cleared: default_max binds a) */
	nxq_device_set_default_max(t->dev, 15 * MiB);
	mutex_lock(&t->l.lock);
	nxq_node_clear_budget(t->a);
	mutex_unlock(&t->l.lock);
	waiter_start(test, t, &w, hc, 5 * MiB, 5000);
	nxq_device_set_default_max(t->dev, 20 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	nxq_device_set_default_max(t->dev, NXQ_UNLIMITED);
	/* the capacity raised: hb fills the device */
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 80 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, hc, 5 * MiB, 5000);
	nxq_device_set_capacity(t->dev, 105 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	/* a holder's end (hb never answers its ticket) */
	waiter_start(test, t, &w, hc, 5 * MiB, 5000);
	holder_free(hb);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	/* a min raised: hn2 holds b's guarantee, hn (no eventfd) waits */
	nxq_node_set_min(t->b, 5 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hn2, 5 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, hn, 5 * MiB, 5000);
	nxq_node_set_min(t->b, 10 * MiB);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	holder_free(hn);
	holder_free(hn2);
	holder_free(hc);
	holder_free(hc2);
	tree_free(t);
}

/* Two threads charge and uncharge against one max: never above it. */
struct race {
	struct nxq_holder *h;
	struct nxq_node *cap;
	struct completion done;
	int refusals;
	bool over;
};

static int race_fn(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < 20000; i++) {
		if (nxq_charge(r->h, 3 * MiB, 0, NULL)) {
			r->refusals++;
			continue;
		}
		if (usage(r->cap) > 10 * MiB)
			r->over = true;
		nxq_uncharge(r->h, 3 * MiB, NULL);
		if (!(i % 256))
			cond_resched();
	}
	complete(&r->done);
	return 0;
}

static void nxq_test_race(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct race r[3];
	int i, refusals = 0;

	nxq_node_set_max(t->a, 10 * MiB);	/* room for three of four */
	for (i = 0; i < 3; i++) {
		r[i].h = holder_new(test, t, i == 2 ? t->a : t->c);
		r[i].cap = t->a;
		r[i].refusals = 0;
		r[i].over = false;
		init_completion(&r[i].done);
	}
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(race_fn, &r[i],
							    "nxq-race%d", i)));
	for (i = 0; i < 3; i++) {
		wait_for_completion(&r[i].done);
		KUNIT_EXPECT_FALSE(test, r[i].over);
		refusals += r[i].refusals;
	}
	KUNIT_EXPECT_EQ(test, usage(t->a), 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	KUNIT_EXPECT_EQ(test, t->a->max_hits, (u64)refusals);
	for (i = 0; i < 3; i++)
		holder_free(r[i].h);
	tree_free(t);
}

static struct kunit_case nxq_counter_cases[] = {
	KUNIT_CASE(nxq_test_max),
	KUNIT_CASE(nxq_test_hierarchy),
	KUNIT_CASE(nxq_test_overflow),
	KUNIT_CASE(nxq_test_reclaimable),
	KUNIT_CASE(nxq_test_effective_min),
	KUNIT_CASE(nxq_test_emin_cache),
	KUNIT_CASE(nxq_test_default_max),
	KUNIT_CASE(nxq_test_limits),
	KUNIT_CASE(nxq_test_recursive_min),
	KUNIT_CASE(nxq_test_guarantee_waiters),
	KUNIT_CASE(nxq_test_default_budgeted),
	KUNIT_CASE(nxq_test_limits_own),
	KUNIT_CASE(nxq_test_holder_status),
	KUNIT_CASE(nxq_test_probe),
	KUNIT_CASE(nxq_test_charge_why),
	KUNIT_CASE(nxq_test_dispatch_triggers),
	KUNIT_CASE(nxq_test_race),
	{}
};

static struct kunit_suite nxq_counter_suite = {
	.name = "nxquota-counter",
	.test_cases = nxq_counter_cases,
};

kunit_test_suite(nxq_counter_suite);
