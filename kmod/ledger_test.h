/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixtures shared by the ledger's KUnit suites (counter_test.c,
 * waitq_test.c, pressure_test.c, objects_test.c): each test builds its own
 * ledger with fake keys standing in for cgroups, so nothing touches the
 * module's global ledger, files or sysfs.  Everything here is static, one
 * copy per suite.
 */
#ifndef _NXQ_LEDGER_TEST_H
#define _NXQ_LEDGER_TEST_H

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

static inline void fake_key_put(void *key)
{
	((struct fake_key *)key)->puts++;
}

static inline bool fake_key_dead(void *key)
{
	return ((struct fake_key *)key)->dead;
}

/* A holder's priv is its signal counter; kills are recorded here. */
static struct nxq_holder *fake_killed[4];

static int fake_nr_killed;

static inline void fake_signal(struct nxq_holder *h)
{
	(*(int *)h->priv)++;
}

static inline void fake_kill(struct nxq_holder *h)
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

/*
 * A root with children a and b, and a/c below a: ids 1, 2, 3, 4; a test
 * may add nodes of ids 5..7 with tree_get().
 */
struct tree {
	struct nxq_ledger l;
	struct nxq_device *dev;
	struct fake_key k[8];
	struct nxq_node *root, *a, *b, *c;
};

static inline struct nxq_node *tree_get(struct kunit *test, struct tree *t,
				 struct nxq_node *parent, u64 id)
{
	struct nxq_node *n;

	mutex_lock(&t->l.lock);
	n = nxq_node_get(t->dev, parent, id, &t->k[id]);
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_FALSE(test, IS_ERR(n));
	return n;
}

static inline void tree_put(struct tree *t, struct nxq_node *n)
{
	mutex_lock(&t->l.lock);
	nxq_node_put(n);
	mutex_unlock(&t->l.lock);
}

/* Build the tree; the test keeps one reference on every node. */
static inline struct tree *tree_new(struct kunit *test, u64 capacity)
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
	t->root->lim[NXQ_LIM_PRIORITY_MAX] = NXQ_PRIORITY_MAX;
	spin_unlock(&t->dev->lock);
	return t;
}

static inline struct nxq_holder *holder_prio(struct kunit *test, struct tree *t,
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

static inline struct nxq_holder *holder_new(struct kunit *test, struct tree *t,
				     struct nxq_node *n)
{
	return holder_prio(test, t, n, 0);
}

/* A holder without an eventfd: it cannot be asked, so it cannot borrow. */
static inline struct nxq_holder *holder_noask(struct kunit *test,
					      struct tree *t,
					      struct nxq_node *n)
{
	struct nxq_holder *h;
	int err;

	mutex_lock(&t->l.lock);
	n->refs++;
	h = nxq_holder_create(n, 0, NULL, NULL, 0, &err);
	if (!h)
		n->refs--;
	mutex_unlock(&t->l.lock);
	KUNIT_ASSERT_NOT_NULL(test, h);
	return h;
}

static inline int signals(struct nxq_holder *h)
{
	return *(int *)h->priv;
}

static inline void holder_free(struct nxq_holder *h)
{
	nxq_holder_detach(h);
	nxq_holder_put(h, NULL);
}

static inline void tree_free(struct tree *t)
{
	tree_put(t, t->c);
	tree_put(t, t->b);
	tree_put(t, t->a);
	tree_put(t, t->root);
	nxq_ledger_destroy(&t->l);
}

static inline u64 usage(struct nxq_node *n)
{
	struct nxq_budget b;

	nxq_node_budget(n, &b);
	return b.current_bytes;
}

static inline u64 used(struct nxq_device *dev)
{
	u64 v;

	spin_lock(&dev->lock);
	v = dev->used;
	spin_unlock(&dev->lock);
	return v;
}

static inline struct nxq_ticket_state ticket(struct kunit *test, struct nxq_holder *h,
				      int expect)
{
	struct nxq_ticket_state t = {};

	KUNIT_EXPECT_EQ(test, nxq_ticket_read(h, &t), expect);
	return t;
}

struct waiter_thread {
	struct nxq_holder *h;
	u64 bytes, timeout_ns;
	int result;
	struct completion done;
};

static inline int waiter_fn(void *arg)
{
	struct waiter_thread *w = arg;

	w->result = nxq_charge(w->h, w->bytes, w->timeout_ns, NULL);
	complete(&w->done);
	return 0;
}

static inline void waiter_start(struct kunit *test, struct tree *t,
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
		/* the count sysfs and netlink report follows the queue */
		KUNIT_EXPECT_EQ(test, t->dev->nr_waiters, n);
		spin_unlock(&t->dev->lock);
		if (n > before || completion_done(&w->done))
			return;
		usleep_range(1000, 2000);
	}
	KUNIT_FAIL(test, "waiter never queued");
}

static inline int waiter_end(struct waiter_thread *w)
{
	if (!wait_for_completion_timeout(&w->done, 10 * HZ))
		return 1;
	return w->result;
}

#endif /* _NXQ_LEDGER_TEST_H */
