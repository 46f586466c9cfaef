// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's objects layer (objects.c): the objects: device keys, node and holder lifetimes, detach, device removal, rehoming.
 */
#include "ledger_test.h"

static void nxq_test_device_keys(struct kunit *test)
{
	struct nxq_ledger l;
	struct nxq_device *d;
	char longkey[NXQ_DEVICE_KEY_MAX + 1];

	KUNIT_EXPECT_TRUE(test, nxq_device_key_valid("GPU-8f1c2e4a-0d9b-4c1e-9a57-2b6d3f0e1a42"));
	KUNIT_EXPECT_TRUE(test, nxq_device_key_valid("host0"));
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid(""));
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid("a b"));
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid("a/b"));
	/* they would name the devices directory or its parent in sysfs */
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid("."));
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid(".."));
	KUNIT_EXPECT_TRUE(test, nxq_device_key_valid("..."));
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	KUNIT_EXPECT_FALSE(test, nxq_device_key_valid(longkey));
	longkey[NXQ_DEVICE_KEY_MAX - 1] = '\0';
	KUNIT_EXPECT_TRUE(test, nxq_device_key_valid(longkey));

	nxq_ledger_init(&l, &fake_ops);
	d = nxq_device_add(&l, "gpu0", GiB, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(d));
	KUNIT_EXPECT_PTR_EQ(test, nxq_device_add(&l, "gpu0", GiB, 0),
			    ERR_PTR(-EEXIST));
	KUNIT_EXPECT_PTR_EQ(test, nxq_device_add(&l, "bad key", GiB, 0),
			    ERR_PTR(-EINVAL));
	mutex_lock(&l.lock);
	KUNIT_EXPECT_PTR_EQ(test, nxq_device_find(&l, "gpu0"), d);
	KUNIT_EXPECT_NULL(test, nxq_device_find(&l, "gpu1"));
	mutex_unlock(&l.lock);
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu1"), -ENOENT);
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), -ENOENT);
	nxq_ledger_destroy(&l);
}

/* Detach uncharges everything, once; a detached holder is refused. */
static void nxq_test_detach(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->c);
	u64 charged;

	KUNIT_EXPECT_EQ(test, nxq_charge(h1, 10 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, 20 * MiB, 0, NULL), 0);
	kref_get(&h1->ref);	/* an ioctl still in flight */
	nxq_holder_detach(h1);
	nxq_holder_detach(h1);
	KUNIT_EXPECT_EQ(test, usage(t->c), 20 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->root), 20 * MiB);
	KUNIT_EXPECT_EQ(test, nxq_charge(h1, 1, 0, &charged), -ENOENT);
	KUNIT_EXPECT_EQ(test, charged, 0ULL);
	KUNIT_EXPECT_EQ(test, nxq_uncharge(h1, 1, NULL), -ENOENT);
	KUNIT_EXPECT_EQ(test, nxq_set_reclaimable(h1, 0), -ENOENT);
	/* The device stays busy until the in-flight reference is gone. */
	nxq_holder_put(h1, NULL);
	KUNIT_EXPECT_EQ(test, t->dev->nr_holders, 2U);
	nxq_holder_put(h1, NULL);
	KUNIT_EXPECT_EQ(test, t->dev->nr_holders, 1U);
	holder_free(h2);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	tree_free(t);
}

/*
 * nxq_holder_end(): every change it makes (the holder leaving the lists,
 * its uncharge) happens under the ledger lock, with the count that a
 * device's removal reads: nobody under that lock sees the holder gone from
 * the dump yet still counted.  With another reference held, the holder is
 * detached now and counted until that reference goes.
 */
static struct nxq_ledger *end_ledger;
static int end_changes, end_changes_unlocked;

static void end_changed(void)
{
	end_changes++;
	if (!mutex_is_locked(&end_ledger->lock))
		end_changes_unlocked++;
}

static void nxq_test_end(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h1 = holder_new(test, t, t->c);
	struct nxq_holder *h2 = holder_new(test, t, t->c);
	struct nxq_ledger_ops end_ops = fake_ops;	/* and a changed hook */

	end_ops.changed = end_changed;
	KUNIT_EXPECT_EQ(test, nxq_charge(h1, 10 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, 20 * MiB, 0, NULL), 0);
	end_ledger = &t->l;
	end_changes = end_changes_unlocked = 0;
	t->l.ops = &end_ops;
	nxq_holder_end(h1, NULL);
	t->l.ops = &fake_ops;
	KUNIT_EXPECT_GT(test, end_changes, 0);
	KUNIT_EXPECT_EQ(test, end_changes_unlocked, 0);
	KUNIT_EXPECT_EQ(test, t->dev->nr_holders, 1U);
	KUNIT_EXPECT_EQ(test, t->c->nr_holders, 1U);
	KUNIT_EXPECT_EQ(test, usage(t->c), 20 * MiB);

	kref_get(&h2->ref);	/* a request in flight */
	nxq_holder_end(h2, NULL);
	KUNIT_EXPECT_EQ(test, used(t->dev), 0ULL);
	KUNIT_EXPECT_EQ(test, nxq_charge(h2, 1, 0, NULL), -ENOENT);
	KUNIT_EXPECT_EQ(test, t->dev->nr_holders, 1U);
	nxq_holder_put(h2, NULL);
	KUNIT_EXPECT_EQ(test, t->dev->nr_holders, 0U);
	tree_free(t);
}

/* Nodes live while referenced or budgeted; dead keys lose budgets. */
static void nxq_test_node_lifetime(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_node *d;
	struct fake_key *kd = kunit_kzalloc(test, sizeof(*kd), GFP_KERNEL);
	struct nxq_holder *h;

	KUNIT_ASSERT_NOT_NULL(test, kd);
	mutex_lock(&t->l.lock);
	d = nxq_node_get(t->dev, t->c, 50, kd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(d));
	/* The same id under another parent is refused. */
	KUNIT_EXPECT_PTR_EQ(test, nxq_node_get(t->dev, t->b, 50, kd),
			    ERR_PTR(-EINVAL));
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, t->c->refs, 2U);

	/* A budget keeps the node after its last reference. */
	nxq_node_set_min(d, 10 * MiB);
	KUNIT_EXPECT_EQ(test, t->c->children_min, 10 * MiB);
	tree_put(t, d);
	mutex_lock(&t->l.lock);
	KUNIT_EXPECT_PTR_EQ(test, nxq_node_find(t->dev, 50), d);
	mutex_unlock(&t->l.lock);

	/* A holder on it, then its key dies: kept until the holder goes. */
	h = holder_new(test, t, d);
	KUNIT_EXPECT_EQ(test, nxq_charge(h, MiB, 0, NULL), 0);
	kd->dead = true;
	mutex_lock(&t->l.lock);
	nxq_device_prune(t->dev);
	KUNIT_EXPECT_PTR_EQ(test, nxq_node_find(t->dev, 50), d);
	mutex_unlock(&t->l.lock);
	holder_free(h);
	mutex_lock(&t->l.lock);
	KUNIT_EXPECT_NULL(test, nxq_node_find(t->dev, 50));
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, kd->puts, 1);
	KUNIT_EXPECT_EQ(test, t->c->refs, 1U);
	KUNIT_EXPECT_EQ(test, t->c->children_min, 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);

	/* Clearing a budget and pruning frees an unreferenced node. */
	mutex_lock(&t->l.lock);
	d = nxq_node_get(t->dev, t->b, 51, kd);
	mutex_unlock(&t->l.lock);
	kd->dead = false;
	nxq_node_set_max(d, MiB);
	tree_put(t, d);
	mutex_lock(&t->l.lock);
	KUNIT_EXPECT_PTR_EQ(test, nxq_node_find(t->dev, 51), d);
	/* "max" is a budget of its own now; clearing forgets it. */
	nxq_node_set_max(d, NXQ_UNLIMITED);
	nxq_node_prune(d);
	KUNIT_EXPECT_PTR_EQ(test, nxq_node_find(t->dev, 51), d);
	nxq_node_clear_budget(d);
	KUNIT_EXPECT_NULL(test, nxq_node_find(t->dev, 51));
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, kd->puts, 2);
	tree_free(t);
	/* Every key was put exactly once when the tree went. */
	KUNIT_EXPECT_EQ(test, t->k[1].puts, 1);
	KUNIT_EXPECT_EQ(test, t->k[4].puts, 1);
}

/* Apply @r to @n; the errno, with @why filled in. */
static int apply(struct nxq_node *n, bool set_max, u64 max, bool set_min,
		 u64 min, bool overcommit, struct nxq_budget_refusal *why)
{
	struct nxq_budget_req r = {
		.set_max = set_max, .max = max, .set_min = set_min,
		.min = min, .overcommit = overcommit,
	};

	return nxq_node_apply(n, &r, why);
}

/*
 * Impossible budgets are refused with the reason, and change nothing; an
 * explicit overcommit is accepted and shows.
 */
static void nxq_test_budget_check(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_node *d = tree_get(test, t, t->a, 5);
	struct nxq_budget_refusal why;
	struct nxq_budget b;
	char msg[80];

	/* min above max, either way round */
	KUNIT_EXPECT_EQ(test, apply(t->a, true, 100 * MiB, true, 200 * MiB,
				    false, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_MIN_ABOVE_MAX);
	KUNIT_EXPECT_FALSE(test, t->a->max_set);
	KUNIT_EXPECT_EQ(test, t->a->min, 0ULL);
	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 200 * MiB, false,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, apply(t->a, true, 100 * MiB, false, 0, true,
				    &why), -EINVAL);
	KUNIT_EXPECT_FALSE(test, t->a->max_set);
	nxq_refusal_msg(t->a, &why, msg, sizeof(msg), false);
	KUNIT_EXPECT_STREQ(test, msg, "min 200M is above its max 100M");
	/* above the device, even with overcommit */
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 1001 * MiB, true,
				    &why), -ENOSPC);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_MIN_ABOVE_DEVICE);
	KUNIT_EXPECT_EQ(test, t->b->min, 0ULL);

	/* a 200 + b 900 > 1000 on the device */
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 900 * MiB, false,
				    &why), -ENOSPC);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_DEVICE);
	KUNIT_EXPECT_PTR_EQ(test, why.node, t->root);
	KUNIT_EXPECT_EQ(test, why.value, 1100 * MiB);
	KUNIT_EXPECT_EQ(test, why.limit, 1000 * MiB);
	KUNIT_EXPECT_EQ(test, t->b->min, 0ULL);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 200 * MiB);
	/* overcommit: taken, shared out, and shown */
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 900 * MiB, true,
				    &why), 0);
	nxq_node_budget(t->root, &b);
	KUNIT_EXPECT_TRUE(test, b.overcommitted);
	nxq_node_budget(t->b, &b);
	KUNIT_EXPECT_EQ(test, b.effective_min,
			mul_u64_u64_div_u64(900 * MiB, 1000 * MiB,
					    1100 * MiB));
	/* lowering a claim is never refused for the overcommit there */
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 800 * MiB, false,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 0, false, &why), 0);

	/* under a's 200M: c 150 + d 100 > 200 */
	KUNIT_EXPECT_EQ(test, apply(t->c, false, 0, true, 150 * MiB, false,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, apply(d, false, 0, true, 100 * MiB, false,
				    &why), -ENOSPC);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_PARENT);
	KUNIT_EXPECT_PTR_EQ(test, why.node, t->a);
	KUNIT_EXPECT_EQ(test, why.value, 250 * MiB);
	KUNIT_EXPECT_EQ(test, why.limit, 200 * MiB);
	KUNIT_EXPECT_EQ(test, d->min, 0ULL);
	/* a's min below what its children claim */
	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 100 * MiB, false,
				    &why), -ENOSPC);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_CHILDREN);
	KUNIT_EXPECT_EQ(test, t->a->min, 200 * MiB);
	/* a without a min: its children's claims go up to the device */
	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 0, false, &why), 0);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 150 * MiB);
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 900 * MiB, false,
				    &why), -ENOSPC);
	KUNIT_EXPECT_EQ(test, why.value, 1050 * MiB);
	KUNIT_EXPECT_EQ(test, apply(d, false, 0, true, 850 * MiB, false,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 1000 * MiB);
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 1, false, &why),
			-ENOSPC);
	tree_put(t, d);
	tree_free(t);
}

/*
 * Every field of the budget table a node keeps (none named here), set
 * through the ABI's translation (nxq_abi_req_put(), nxq_node_apply()) on
 * a fresh node, reads back as set (nxq_abi_node_field(), what sysfs and
 * the dumps show) and as its own (nxq_abi_node_req(), what nxquotad's
 * state file writes); before, each reads its default; a clear takes each
 * back.  A field the ledger does not keep, or keeps elsewhere, fails.
 */
static void nxq_test_budget_fields(struct kunit *test)
{
	struct tree *t = tree_new(test, 8 * GiB);
	struct nxq_budget_refusal why;
	struct nxq_budget_req r;
	int f, g;
	u64 v, want;

	spin_lock(&t->dev->lock);
	t->root->lim[NXQ_LIM_PRIORITY_MAX] = NXQ_LIMIT_UNSET;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct nxq_abi_field *d = &nxq_abi_fields[f];

		/*
		 * A node with nothing of its own reports the default; only a
		 * max (none of its own: "max") and a request's modifier
		 * report nothing.
		 */
		if (nxq_abi_node_field(t->b, f, &v))
			KUNIT_EXPECT_EQ_MSG(test, v, d->dflt, "%s", d->name);
		else
			KUNIT_EXPECT_TRUE_MSG(test, !d->kept || (d->parse ==
					      NXQ_PARSE_SIZE_MAX && d->dflt ==
					      NXQ_UNLIMITED), "%s", d->name);
	}
	KUNIT_EXPECT_FALSE(test, nxq_abi_node_req(t->b, &r));
	spin_unlock(&t->dev->lock);

	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct nxq_abi_field *d = &nxq_abi_fields[f];

		if (!d->kept)
			continue;
		want = d->unit == NXQ_UNIT_BYTES ? 3 * GiB : d->hi;
		memset(&r, 0, sizeof(r));
		KUNIT_ASSERT_EQ(test, nxq_abi_req_put(&r, f, want), 0);
		KUNIT_ASSERT_EQ_MSG(test, nxq_node_apply(t->b, &r, &why), 0,
				    "%s", d->name);
		spin_lock(&t->dev->lock);
		KUNIT_EXPECT_TRUE_MSG(test, nxq_abi_node_field(t->b, f, &v),
				      "%s", d->name);
		KUNIT_EXPECT_EQ_MSG(test, v, want, "%s", d->name);
		KUNIT_EXPECT_TRUE(test, nxq_abi_node_req(t->b, &r));
		KUNIT_EXPECT_TRUE_MSG(test, nxq_abi_req_get(&r, f, &v), "%s",
				      d->name);
		KUNIT_EXPECT_EQ_MSG(test, v, want, "%s", d->name);
		/* the others are as they were: the default, or not its own */
		for (g = 0; g < NXQ_NR_BUDGET_FIELDS; g++)
			if (g != f && nxq_abi_fields[g].kept &&
			    nxq_abi_req_get(&r, g, &v))
				KUNIT_EXPECT_EQ_MSG(test, v, nxq_abi_fields[g].dflt,
						    "%s after %s",
						    nxq_abi_fields[g].name,
						    d->name);
		spin_unlock(&t->dev->lock);
		mutex_lock(&t->l.lock);
		nxq_node_clear_budget(t->b);
		mutex_unlock(&t->l.lock);
		spin_lock(&t->dev->lock);
		KUNIT_EXPECT_FALSE_MSG(test, nxq_abi_node_req(t->b, &r),
				       "%s left after a clear", d->name);
		spin_unlock(&t->dev->lock);
	}
	tree_free(t);
}

/*
 * Sums of guarantees never wrap (issue 30: with overcommit and a capacity
 * of 15 EiB, two 15 EiB guarantees summed to 14 EiB in children_min):
 * a min above NXQ_BYTES_MAX, or one that takes the guarantees under any
 * ancestor past it, is refused (-EOVERFLOW) and changes nothing.
 */
static void nxq_test_claims_bounded(struct kunit *test)
{
	const u64 EiB = 1ULL << 60;
	struct tree *t = tree_new(test, 15 * EiB);
	struct nxq_budget_refusal why;

	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 15 * EiB, true,
				    &why), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_BOUND);
	KUNIT_EXPECT_EQ(test, why.value, 15 * EiB);
	KUNIT_EXPECT_EQ(test, t->a->min, 0ULL);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 0ULL);
	/* 3 + 3 > 4 EiB: the second refused, at the root */
	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 3 * EiB, true,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 3 * EiB, true,
				    &why), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, why.why, NXQ_REFUSE_BOUND);
	KUNIT_EXPECT_PTR_EQ(test, why.node, t->root);
	KUNIT_EXPECT_EQ(test, why.value, 6 * EiB);
	KUNIT_EXPECT_EQ(test, why.limit, NXQ_BYTES_MAX);
	KUNIT_EXPECT_EQ(test, t->b->min, 0ULL);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 3 * EiB);
	/* through an ancestor without a min of its own: c under a */
	KUNIT_EXPECT_EQ(test, apply(t->a, false, 0, true, 0, true, &why), 0);
	KUNIT_EXPECT_EQ(test, apply(t->b, false, 0, true, 3 * EiB, true,
				    &why), 0);
	KUNIT_EXPECT_EQ(test, apply(t->c, false, 0, true, 2 * EiB, true,
				    &why), -EOVERFLOW);
	KUNIT_EXPECT_PTR_EQ(test, why.node, t->root);
	KUNIT_EXPECT_EQ(test, t->a->children_min, 0ULL);
	KUNIT_EXPECT_EQ(test, apply(t->c, false, 0, true, EiB, true, &why), 0);
	KUNIT_EXPECT_EQ(test, t->root->children_min, 4 * EiB);
	tree_free(t);
}

/* A device with holders cannot go; budgets go with the device. */
static void nxq_test_device_remove(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h = holder_new(test, t, t->c);

	nxq_node_set_max(t->a, MiB);
	nxq_node_set_min(t->b, MiB);
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&t->l, "gpu0"), -EBUSY);
	holder_free(h);
	tree_put(t, t->c);
	tree_put(t, t->b);
	tree_put(t, t->a);
	tree_put(t, t->root);
	/* a and b are still budgeted, so nodes remain until the device goes. */
	mutex_lock(&t->l.lock);
	KUNIT_EXPECT_NOT_NULL(test, nxq_node_find(t->dev, 2));
	KUNIT_EXPECT_NOT_NULL(test, nxq_node_find(t->dev, 3));
	KUNIT_EXPECT_NULL(test, nxq_node_find(t->dev, 4));
	mutex_unlock(&t->l.lock);
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&t->l, "gpu0"), 0);
	KUNIT_EXPECT_EQ(test, t->k[1].puts, 1);
	KUNIT_EXPECT_EQ(test, t->k[2].puts, 1);
	KUNIT_EXPECT_EQ(test, t->k[3].puts, 1);
	KUNIT_EXPECT_EQ(test, t->k[4].puts, 1);
	nxq_ledger_destroy(&t->l);
}

/* Moved to another node: new charges there, old ones stay until freed. */
static void nxq_test_rehome(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h = holder_new(test, t, t->c), *hw, *hw2;
	struct waiter_thread w;
	u64 pass;

	KUNIT_ASSERT_EQ(test, nxq_charge(h, 10 * MiB, 0, NULL), 0);
	mutex_lock(&t->l.lock);
	t->b->refs++;
	KUNIT_EXPECT_EQ(test, nxq_holder_rehome(h, t->b), 0);
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_EQ(test, nxq_charge(h, 5 * MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 10 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->b), 5 * MiB);
	KUNIT_EXPECT_EQ(test, h->charge, 15 * MiB);
	/* The old node's charge goes first. */
	KUNIT_ASSERT_EQ(test, nxq_uncharge(h, 12 * MiB, NULL), 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 0ULL);
	KUNIT_EXPECT_EQ(test, usage(t->b), 3 * MiB);
	/*
	 * The residue is drained: uncharges take the inline path again and
	 * serve no queue but their own path's (a waiter under a's max).
	 */
	KUNIT_EXPECT_EQ(test, h->residue_bytes, 0ULL);
	KUNIT_ASSERT_EQ(test, nxq_charge(h, 3 * MiB, 0, NULL), 0);
	hw = holder_new(test, t, t->c);
	hw2 = holder_new(test, t, t->c);
	nxq_node_set_max(t->a, 2 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(hw2, 2 * MiB, 0, NULL), 0);
	waiter_start(test, t, &w, hw, MiB, 300);
	pass = t->dev->dispatch_pass;
	KUNIT_EXPECT_TRUE(test, nxq_try_uncharge(h, MiB, NULL));
	KUNIT_EXPECT_EQ(test, t->dev->dispatch_pass, pass);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -ETIMEDOUT);
	holder_free(hw);
	holder_free(hw2);
	holder_free(h);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	tree_free(t);
}

/* Issue 30: move @h to @n as a charge's shell would; its errno. */
static int rehome(struct tree *t, struct nxq_holder *h, struct nxq_node *n)
{
	int err;

	mutex_lock(&t->l.lock);
	n->refs++;	/* the reference the holder takes on success */
	err = nxq_holder_rehome(h, n);
	if (err)
		n->refs--;
	mutex_unlock(&t->l.lock);
	return err;
}

/*
 * A move is checked as a registration there is: b's holders_max (2) and
 * priority_max refuse it, and the holder stays, counted where it was; a
 * move inside a full subtree (a's holders_max 1, c to a) is no newcomer.
 * Broken by checking no limit on the move (as before issue 30): 3 holders
 * in b, then the priority case granted.
 */
static void nxq_test_rehome_limits(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hb[2], *h, *hp;
	int i;

	spin_lock(&t->dev->lock);
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = 2;
	spin_unlock(&t->dev->lock);
	for (i = 0; i < 2; i++)
		hb[i] = holder_new(test, t, t->b);
	h = holder_new(test, t, t->c);
	KUNIT_ASSERT_EQ(test, nxq_charge(h, MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, rehome(t, h, t->b), -EMFILE);
	KUNIT_EXPECT_PTR_EQ(test, h->node, t->c);
	KUNIT_EXPECT_EQ(test, t->b->subtree_holders, 2U);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, 1U);
	KUNIT_EXPECT_EQ(test, t->c->nr_holders, 1U);
	KUNIT_EXPECT_EQ(test, t->root->subtree_holders, 3U);
	/* Refused, it still charges where it is. */
	KUNIT_EXPECT_EQ(test, nxq_charge(h, MiB, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, usage(t->c), 2 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->b), 0ULL);

	/* Room made in b: the move goes through. */
	holder_free(hb[1]);
	KUNIT_EXPECT_EQ(test, rehome(t, h, t->b), 0);
	KUNIT_EXPECT_EQ(test, t->b->subtree_holders, 2U);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, 0U);

	/* Inside a full subtree: a holders_max 1, from c to a. */
	hp = holder_prio(test, t, t->c, 3);
	spin_lock(&t->dev->lock);
	t->a->lim[NXQ_LIM_HOLDERS_MAX] = 1;
	t->a->lim[NXQ_LIM_PRIORITY_MAX] = 3;
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = 3;
	t->b->lim[NXQ_LIM_PRIORITY_MAX] = 2;
	spin_unlock(&t->dev->lock);
	KUNIT_EXPECT_EQ(test, rehome(t, hp, t->a), 0);
	KUNIT_EXPECT_EQ(test, t->a->subtree_holders, 1U);
	KUNIT_EXPECT_EQ(test, t->a->nr_holders, 1U);
	/* Priority 3 into b (priority_max 2), though b has room. */
	KUNIT_EXPECT_EQ(test, rehome(t, hp, t->b), -EPERM);
	KUNIT_EXPECT_PTR_EQ(test, hp->node, t->a);
	KUNIT_EXPECT_EQ(test, t->b->subtree_holders, 2U);

	holder_free(hp);
	holder_free(h);
	holder_free(hb[0]);
	KUNIT_EXPECT_EQ(test, t->root->subtree_holders, 0U);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	tree_free(t);
}

/* Where fake_follow() moves a holder (its process "moved" there). */
static struct tree *follow_tree;
static struct nxq_node *follow_to;
static int follow_calls;

static int fake_follow(struct nxq_holder *h)
{
	int err;

	follow_calls++;
	if (!READ_ONCE(follow_to))
		return 0;
	err = rehome(follow_tree, h, follow_to);
	return err == -ENOENT ? 0 : err;
}

static const struct nxq_ledger_ops follow_ops = {
	.key_put = fake_key_put,
	.key_dead = fake_key_dead,
	.holder_signal = fake_signal,
	.holder_kill = fake_kill,
	.holder_follow = fake_follow,
};

/*
 * A charge waiting under a's max (3M, full) when its process moves to b
 * (room) is granted on b's path within a follow period or two, not at
 * its timeout (3 s); its count of waiters moves with it.  Into a cgroup
 * whose waiters_max is reached it ends with EAGAIN; into one whose
 * holders_max is, with the move's EMFILE.  Broken by not asking the
 * shell while waiting (as before issue 30): the first wait times out.
 */
static void nxq_test_rehome_waiting(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *hf, *hw, *hx;
	struct waiter_thread w;
	u64 t0, ms;

	t->l.ops = &follow_ops;
	follow_tree = t;
	follow_to = NULL;
	follow_calls = 0;
	nxq_node_set_max(t->a, 3 * MiB);
	hf = holder_new(test, t, t->c);
	hw = holder_new(test, t, t->c);
	KUNIT_ASSERT_EQ(test, nxq_charge(hf, 3 * MiB, 0, NULL), 0);

	waiter_start(test, t, &w, hw, 2 * MiB, 3000);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters, 1U);
	t0 = ktime_get_ns();
	WRITE_ONCE(follow_to, t->b);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	ms = (ktime_get_ns() - t0) / NSEC_PER_MSEC;
	KUNIT_EXPECT_LT(test, ms, 1000ULL);
	KUNIT_EXPECT_GT(test, follow_calls, 0);
	KUNIT_EXPECT_PTR_EQ(test, hw->node, t->b);
	KUNIT_EXPECT_EQ(test, usage(t->b), 2 * MiB);
	KUNIT_EXPECT_EQ(test, usage(t->a), 3 * MiB);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters, 0U);
	KUNIT_EXPECT_EQ(test, t->b->subtree_waiters, 0U);
	KUNIT_EXPECT_EQ(test, t->root->subtree_waiters, 0U);

	/* Into b with its waiters_max (0) reached: EAGAIN, counts back. */
	WRITE_ONCE(follow_to, NULL);
	hx = holder_new(test, t, t->c);
	spin_lock(&t->dev->lock);
	t->b->lim[NXQ_LIM_WAITERS_MAX] = 0;
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = 3;
	spin_unlock(&t->dev->lock);
	nxq_node_set_max(t->b, MiB);	/* b grants nothing at once */
	waiter_start(test, t, &w, hx, MiB, 3000);
	WRITE_ONCE(follow_to, t->b);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -EAGAIN);
	KUNIT_EXPECT_EQ(test, t->a->subtree_waiters, 0U);
	KUNIT_EXPECT_EQ(test, t->b->subtree_waiters, 0U);
	KUNIT_EXPECT_EQ(test, t->root->subtree_waiters, 0U);

	/* Into b with its holders_max reached: the move's EMFILE. */
	WRITE_ONCE(follow_to, NULL);
	holder_free(hx);
	hx = holder_new(test, t, t->c);
	spin_lock(&t->dev->lock);
	t->b->lim[NXQ_LIM_HOLDERS_MAX] = 1;
	spin_unlock(&t->dev->lock);
	waiter_start(test, t, &w, hx, MiB, 3000);
	WRITE_ONCE(follow_to, t->b);
	KUNIT_EXPECT_EQ(test, waiter_end(&w), -EMFILE);
	KUNIT_EXPECT_PTR_EQ(test, hx->node, t->c);
	KUNIT_EXPECT_EQ(test, t->b->subtree_holders, 1U);
	KUNIT_EXPECT_EQ(test, t->root->subtree_waiters, 0U);

	WRITE_ONCE(follow_to, NULL);
	holder_free(hx);
	holder_free(hw);
	holder_free(hf);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
	tree_free(t);
}

static struct kunit_case nxq_objects_cases[] = {
	KUNIT_CASE(nxq_test_device_keys),
	KUNIT_CASE(nxq_test_detach),
	KUNIT_CASE(nxq_test_end),
	KUNIT_CASE(nxq_test_node_lifetime),
	KUNIT_CASE(nxq_test_device_remove),
	KUNIT_CASE(nxq_test_budget_check),
	KUNIT_CASE(nxq_test_budget_fields),
	KUNIT_CASE(nxq_test_claims_bounded),
	KUNIT_CASE(nxq_test_rehome),
	KUNIT_CASE(nxq_test_rehome_limits),
	KUNIT_CASE(nxq_test_rehome_waiting),
	{}
};

static struct kunit_suite nxq_objects_suite = {
	.name = "nxquota-objects",
	.test_cases = nxq_objects_cases,
};

kunit_test_suite(nxq_objects_suite);
