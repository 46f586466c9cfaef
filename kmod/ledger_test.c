// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the nxquota ledger (ledger.c), driven directly: each
 * test builds its own ledger with fake keys standing in for cgroups, so
 * nothing here touches the module's global ledger, files or sysfs.
 */
#include <kunit/test.h>
#include <linux/kthread.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/sizes.h>
#include <linux/math64.h>

#include "ledger.h"

#define MiB BIT_ULL(20)
#define GiB BIT_ULL(30)

struct fake_key {
	bool dead;
	int puts;
};

static void fake_key_put(void *key)
{
	((struct fake_key *)key)->puts++;
}

static bool fake_key_dead(void *key)
{
	return ((struct fake_key *)key)->dead;
}

/* A holder's priv is its signal counter; kills are recorded here. */
static struct nxq_holder *fake_killed[4];
static int fake_nr_killed;

static void fake_signal(struct nxq_holder *h)
{
	(*(int *)h->priv)++;
}

static void fake_kill(struct nxq_holder *h)
{
	if (fake_nr_killed < ARRAY_SIZE(fake_killed))
		fake_killed[fake_nr_killed] = h;
	fake_nr_killed++;
}

static const struct nxq_ledger_ops fake_ops = {
	.key_put = fake_key_put,
	.key_dead = fake_key_dead,
	.holder_signal = fake_signal,
	.holder_kill = fake_kill,
};

/* A root with children a and b, and a/c below a: ids 1, 2, 3, 4. */
struct tree {
	struct nxq_ledger l;
	struct nxq_device *dev;
	struct fake_key k[5];
	struct nxq_node *root, *a, *b, *c;
};

static struct nxq_node *tree_get(struct kunit *test, struct tree *t,
				 struct nxq_node *parent, u64 id)
{
	struct nxq_node *n;

	mutex_lock(&t->l.lock);
	n = nxq_node_get(t->dev, parent, id, &t->k[id]);
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_FALSE(test, IS_ERR(n));
	return n;
}

static void tree_put(struct tree *t, struct nxq_node *n)
{
	mutex_lock(&t->l.lock);
	nxq_node_put(n);
	mutex_unlock(&t->l.lock);
}

/* Build the tree; the test keeps one reference on every node. */
static struct tree *tree_new(struct kunit *test, u64 capacity)
{
	struct tree *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	nxq_ledger_init(&t->l, &fake_ops);
	t->dev = nxq_device_add(&t->l, "gpu0", capacity, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->dev));
	t->root = tree_get(test, t, NULL, 1);
	t->a = tree_get(test, t, t->root, 2);
	t->b = tree_get(test, t, t->root, 3);
	t->c = tree_get(test, t, t->a, 4);
	/* As before default_max and priority_max: tests narrow them. */
	nxq_device_set_default_max(t->dev, NXQ_UNLIMITED);
	spin_lock(&t->dev->lock);
	t->root->lim[NXQ_LIM_PRIORITY] = NXQ_PRIORITY_MAX;
	spin_unlock(&t->dev->lock);
	return t;
}

static struct nxq_holder *holder_prio(struct kunit *test, struct tree *t,
				      struct nxq_node *n, u32 prio)
{
	int *signals = kunit_kzalloc(test, sizeof(*signals), GFP_KERNEL);
	struct nxq_holder *h;
	int err;

	KUNIT_ASSERT_NOT_NULL(test, signals);
	mutex_lock(&t->l.lock);
	n->refs++;	/* the holder's own node reference */
	h = nxq_holder_create(n, prio, signals, NULL, 0, &err);
	if (!h)
		n->refs--;
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_NOT_NULL(test, h);
	return h;
}

static struct nxq_holder *holder_new(struct kunit *test, struct tree *t,
				     struct nxq_node *n)
{
	return holder_prio(test, t, n, 0);
}

static int signals(struct nxq_holder *h)
{
	return *(int *)h->priv;
}

static void holder_free(struct nxq_holder *h)
{
	nxq_holder_detach(h);
	nxq_holder_put(h, NULL);
}

static void tree_free(struct tree *t)
{
	tree_put(t, t->c);
	tree_put(t, t->b);
	tree_put(t, t->a);
	tree_put(t, t->root);
	nxq_ledger_destroy(&t->l);
}

static u64 usage(struct nxq_node *n)
{
	struct nxq_budget b;

	nxq_node_budget(n, &b);
	return b.current_bytes;
}

static u64 used(struct nxq_device *dev)
{
	u64 v;

	spin_lock(&dev->lock);
	v = dev->used;
	spin_unlock(&dev->lock);
	return v;
}

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


static struct nxq_ticket_state ticket(struct kunit *test, struct nxq_holder *h,
				      int expect)
{
	struct nxq_ticket_state t = {};

	KUNIT_EXPECT_EQ(test, nxq_ticket_read(h, &t), expect);
	return t;
}

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
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct nxq_holder *ha2 = holder_new(test, t, t->a);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *hc = holder_new(test, t, t->c);
	struct nxq_ticket_state ts;

	nxq_node_set_min(t->a, 600 * MiB);
	KUNIT_ASSERT_EQ(test, nxq_charge(ha2, 100 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hb, 700 * MiB, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, nxq_charge(hc, 100 * MiB, 0, NULL), 0);
	/* a: 200 of 600 guaranteed; b borrows 700, c (min 0) borrows 100. */
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
	tree_free(t);
}

struct waiter_thread {
	struct nxq_holder *h;
	u64 bytes, timeout_ns;
	int result;
	struct completion done;
};

static int waiter_fn(void *arg)
{
	struct waiter_thread *w = arg;

	w->result = nxq_charge(w->h, w->bytes, w->timeout_ns, NULL);
	complete(&w->done);
	return 0;
}

static void waiter_start(struct kunit *test, struct tree *t,
			 struct waiter_thread *w, struct nxq_holder *h,
			 u64 bytes, u64 timeout_ms)
{
	unsigned int before, n, i;
	struct list_head *p;

	spin_lock(&t->dev->lock);
	before = 0;
	list_for_each(p, &t->dev->waiters)
		before++;
	spin_unlock(&t->dev->lock);
	w->h = h;
	w->bytes = bytes;
	w->timeout_ns = timeout_ms * NSEC_PER_MSEC;
	w->result = 1;
	init_completion(&w->done);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(waiter_fn, w, "nxq-wait")));
	/* Wait until it is queued (or already done). */
	for (i = 0; i < 2000; i++) {
		spin_lock(&t->dev->lock);
		n = 0;
		list_for_each(p, &t->dev->waiters)
			n++;
		spin_unlock(&t->dev->lock);
		if (n > before || completion_done(&w->done))
			return;
		usleep_range(1000, 2000);
	}
	KUNIT_FAIL(test, "waiter never queued");
}

static int waiter_end(struct waiter_thread *w)
{
	if (!wait_for_completion_timeout(&w->done, 10 * HZ))
		return 1;
	return w->result;
}

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

/* Kill policy: an ignoring borrower is killed, the waiter granted. */
static void nxq_test_escalation(struct kunit *test)
{
	struct tree *t = tree_new(test, 1000 * MiB);
	struct nxq_holder *hb = holder_new(test, t, t->b);
	struct nxq_holder *ha = holder_new(test, t, t->a);
	struct waiter_thread w;
	int i;

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
	nxq_holder_detach(hb);		/* the process dies */
	KUNIT_EXPECT_EQ(test, waiter_end(&w), 0);
	KUNIT_EXPECT_EQ(test, usage(t->a), 500 * MiB);
	KUNIT_EXPECT_EQ(test, used(t->dev), 500 * MiB);
	fake_nr_killed = 0;

	nxq_holder_put(hb, NULL);
	holder_free(ha);
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

/* Per-cgroup limits: priority_max, holders_max, waiters_max, waits. */
static void nxq_test_limits(struct kunit *test)
{
	struct tree *t = tree_new(test, 100 * MiB);
	struct nxq_holder *h[3], *hv, *hp;
	struct waiter_thread w;
	int err, i;

	/* Defaults: a's priority_max is root's here (raised by tree_new). */
	spin_lock(&t->dev->lock);
	t->root->lim[NXQ_LIM_PRIORITY] = NXQ_LIMIT_UNSET;
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_PRIORITY), 0U);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_HOLDERS),
			(u32)NXQ_DEFAULT_HOLDERS_MAX);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->root, NXQ_LIM_HOLDERS),
			U32_MAX);
	KUNIT_EXPECT_EQ(test, nxq_node_limit(t->c, NXQ_LIM_WAIT_MS),
			(u32)NXQ_DEFAULT_WAIT_MAX_MS);
	/* Inherited from the nearest ancestor that sets one. */
	t->a->lim[NXQ_LIM_HOLDERS] = 2;
	t->a->lim[NXQ_LIM_WAITERS] = 1;
	t->a->lim[NXQ_LIM_WAIT_MS] = 30;
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

/* Moved to another node: new charges there, old ones stay until freed. */
static void nxq_test_rehome(struct kunit *test)
{
	struct tree *t = tree_new(test, GiB);
	struct nxq_holder *h = holder_new(test, t, t->c);

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
	holder_free(h);
	KUNIT_EXPECT_EQ(test, usage(t->root), 0ULL);
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
	t->b->lim[NXQ_LIM_HOLDERS] = nr;
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

static struct kunit_case nxq_ledger_cases[] = {
	KUNIT_CASE(nxq_test_device_keys),
	KUNIT_CASE(nxq_test_max),
	KUNIT_CASE(nxq_test_hierarchy),
	KUNIT_CASE(nxq_test_overflow),
	KUNIT_CASE(nxq_test_reclaimable),
	KUNIT_CASE(nxq_test_detach),
	KUNIT_CASE(nxq_test_effective_min),
	KUNIT_CASE(nxq_test_node_lifetime),
	KUNIT_CASE(nxq_test_device_remove),
	KUNIT_CASE(nxq_test_race),
	KUNIT_CASE(nxq_test_victims_max),
	KUNIT_CASE(nxq_test_victims_device),
	KUNIT_CASE(nxq_test_wait),
	KUNIT_CASE(nxq_test_fair_queue),
	KUNIT_CASE(nxq_test_escalation),
	KUNIT_CASE(nxq_test_budget_lowered),
	KUNIT_CASE(nxq_test_never_fits),
	KUNIT_CASE(nxq_test_shortfall_moves_on),
	KUNIT_CASE(nxq_test_coalesce),
	KUNIT_CASE(nxq_test_limits),
	KUNIT_CASE(nxq_test_default_max),
	KUNIT_CASE(nxq_test_queue_order),
	KUNIT_CASE(nxq_test_rehome),
	KUNIT_CASE(nxq_test_dispatch_cost),
	KUNIT_CASE(nxq_test_no_kill_on_ask),
	KUNIT_CASE(nxq_test_search_bound),
	KUNIT_CASE(nxq_test_emin_cache),
	{}
};

static struct kunit_suite nxq_ledger_suite = {
	.name = "nxquota",
	.test_cases = nxq_ledger_cases,
};

kunit_test_suite(nxq_ledger_suite);
