// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's event layer (event.c): events reach the
 * hook after the lock drops, in order; a full ring counts what it drops,
 * by type; nothing is queued while nobody listens; a storm of denials is
 * coalesced per cgroup and evicts no vital event (issue 22).
 */
#include "ledger_test.h"

#define EV_MAX	(2 * NXQ_EV_RING)

static struct {
	bool listening;
	int n;
	enum nxq_event_type type[EV_MAX];
	u64 value[EV_MAX];
	u64 cgroup[EV_MAX];
	u64 count[EV_MAX];
	u64 seq[EV_MAX];
	u64 at[EV_MAX];
	u64 ts[EV_MAX];
} rec;

/* A gate: the hook's next call waits in it until the test opens it. */
static bool rec_gated;
static struct completion rec_entered, rec_gate;

static void rec_event(const struct nxq_event *ev)
{
	if (rec_gated) {
		rec_gated = false;
		complete(&rec_entered);
		wait_for_completion(&rec_gate);
	}
	if (rec.n < EV_MAX) {
		rec.type[rec.n] = ev->type;
		rec.value[rec.n] = ev->value;
		rec.cgroup[rec.n] = ev->cgroup_id;
		rec.count[rec.n] = ev->count;
		rec.seq[rec.n] = ev->seq;
		rec.at[rec.n] = ktime_get_ns();
		rec.ts[rec.n] = ev->ts_ns;
	}
	rec.n++;
}

static bool rec_listening(void)
{
	return rec.listening;
}

static const struct nxq_ledger_ops rec_ops = {
	.event = rec_event,
	.listening = rec_listening,
};

static void nxq_test_events(struct kunit *test)
{
	struct nxq_ledger l;
	struct nxq_device *dev;
	u64 dropped;
	int i, n;

	memset(&rec, 0, sizeof(rec));
	rec.listening = true;
	nxq_ledger_init(&l, &rec_ops);
	dev = nxq_device_add(&l, "gpu0", GiB, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	nxq_event_flush(dev, false);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, rec.type[0], NXQ_EV_DEVICE_ADDED);

	/* Nobody listens: nothing queued, nothing dropped. */
	rec.listening = false;
	spin_lock(&dev->lock);
	for (i = 0; i < 10; i++)
		nxq_event(dev, NXQ_EV_DENIED, NULL, NULL, 1, i, ENOSPC);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(&dev->events_dropped), 0LL);

	/*
	 * More than the ring holds, under the lock: in order, or counted
	 * (as answers: denials would be coalesced).
	 */
	rec.listening = true;
	rec.n = 0;
	n = NXQ_EV_RING + 10;
	spin_lock(&dev->lock);
	for (i = 0; i < n; i++)
		nxq_event(dev, NXQ_EV_TICKET_ANSWERED, NULL, NULL, 1, i, 0);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	dropped = atomic64_read(&dev->events_dropped);
	KUNIT_EXPECT_EQ(test, (u64)rec.n + dropped, (u64)n);
	KUNIT_EXPECT_GE(test, rec.n, NXQ_EV_RING);
	KUNIT_EXPECT_EQ(test, dropped, (u64)atomic64_read(
		&dev->events_dropped_type[NXQ_EV_TICKET_ANSWERED]));
	for (i = 1; i < rec.n && i < EV_MAX; i++)
		KUNIT_EXPECT_LT(test, rec.value[i - 1], rec.value[i]);

	rec.n = 0;
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, rec.type[0], NXQ_EV_DEVICE_REMOVED);
	nxq_ledger_destroy(&l);
}

/* Events of type @type recorded, and the denials they stand for. */
static int rec_find(enum nxq_event_type type, u64 cgroup, u64 *count)
{
	int i, found = 0;

	*count = 0;
	for (i = 0; i < rec.n && i < EV_MAX; i++) {
		if (rec.type[i] != type || rec.cgroup[i] != cgroup)
			continue;
		found++;
		*count += rec.count[i];
	}
	return found;
}

/*
 * A tenant's charges refused in a loop: ten rings' worth of denials under
 * the lock, then kills, a budget change and a RECALL ticket, then as many
 * denials again.  Every vital event reaches the hook; the denials reach it
 * coalesced, each event standing for many, at most a batch per
 * NXQ_EV_DENIED_GAP_MS, the last with the latest details; all in order
 * (a coalesced denial in the place of its first); nothing is dropped.
 * (The work may run during the storm: the daemon's worker is a thread.)
 */
static void nxq_test_event_storm(struct kunit *test)
{
	struct nxq_node a = { .id = 100 }, b = { .id = 200 };
	struct nxq_holder v = { .node = &b, .tgid = 42 };
	struct nxq_ledger l;
	struct nxq_device *dev;
	u64 count, t0, ms;
	int i, n = 10 * NXQ_EV_RING, kills = NXQ_EV_VITAL / 2, denied;
	int last = -1;

	memset(&rec, 0, sizeof(rec));
	rec.listening = true;
	nxq_ledger_init(&l, &rec_ops);
	dev = nxq_device_add(&l, "gpu0", GiB, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	nxq_event_flush(dev, false);
	rec.n = 0;

	t0 = ktime_get_ns();
	spin_lock(&dev->lock);
	for (i = 0; i < n; i++)
		nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, i, EDQUOT);
	for (i = 0; i < kills; i++)
		nxq_event(dev, NXQ_EV_KILLED, NULL, &v, MiB, i, 0);
	nxq_event(dev, NXQ_EV_BUDGET_CHANGED, &b, NULL, GiB, 0, 0);
	v.ticket.level = NXQ_TICKET_LEVEL_RECALL;
	nxq_event(dev, NXQ_EV_TICKET_ISSUED, NULL, &v, MiB, 7, 0);
	for (i = 0; i < n; i++)
		nxq_event(dev, NXQ_EV_DENIED, &a, NULL, 2 * MiB, n + i, EDQUOT);
	spin_unlock(&dev->lock);
	ms = div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC);
	nxq_event_flush(dev, false);

	KUNIT_EXPECT_EQ(test, atomic64_read(&dev->events_dropped), 0LL);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_KILLED, b.id, &count), kills);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_BUDGET_CHANGED, b.id, &count), 1);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_TICKET_ISSUED, b.id, &count), 1);
	denied = rec_find(NXQ_EV_DENIED, a.id, &count);
	KUNIT_EXPECT_EQ(test, count, (u64)(2 * n));
	/* one batch per gap while the storm lasted, and one after it */
	KUNIT_EXPECT_GE(test, denied, 1);
	KUNIT_EXPECT_LE(test, denied, 3 + (int)ms / NXQ_EV_DENIED_GAP_MS);
	KUNIT_EXPECT_EQ(test, rec.n, kills + 2 + denied);
	for (i = 0; i < rec.n && i < EV_MAX; i++) {
		if (i) {
			KUNIT_EXPECT_LT(test, rec.seq[i - 1], rec.seq[i]);
			/* timestamps do not go back: a denial's is its first */
			KUNIT_EXPECT_LE(test, rec.ts[i - 1], rec.ts[i]);
		}
		if (rec.type[i] == NXQ_EV_DENIED)
			last = i;
	}
	KUNIT_ASSERT_GE(test, last, 0);
	KUNIT_EXPECT_EQ(test, rec.value[last], (u64)(2 * n - 1));

	/* A cgroup's next denial waits for the gap after the last batch. */
	rec.n = 0;
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 1, EDQUOT);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 2, EDQUOT);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	KUNIT_ASSERT_EQ(test, rec.n, 2);
	KUNIT_EXPECT_GE(test, rec.at[1] - rec.at[0],
			(u64)NXQ_EV_DENIED_GAP_MS * NSEC_PER_MSEC);
	/*
	 * A kill behind a denial held by the gap: the denial goes first, at
	 * once, rather than the kill overtaking it (time would go back).
	 */
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 3, EDQUOT);
	nxq_event(dev, NXQ_EV_KILLED, NULL, &v, MiB, 0, 0);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	KUNIT_ASSERT_EQ(test, rec.n, 4);
	KUNIT_EXPECT_EQ(test, rec.type[2], NXQ_EV_DENIED);
	KUNIT_EXPECT_EQ(test, rec.type[3], NXQ_EV_KILLED);
	KUNIT_EXPECT_LE(test, rec.ts[2], rec.ts[3]);

	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	nxq_ledger_destroy(&l);
}

/*
 * A device on @l whose event work is held in the hook (rec_gate opens it),
 * so that what the test queues meets the queues as they fill.
 */
static struct nxq_device *held_device(struct kunit *test,
				      struct nxq_ledger *l)
{
	struct nxq_device *dev;

	memset(&rec, 0, sizeof(rec));
	rec.listening = true;
	nxq_ledger_init(l, &rec_ops);
	dev = nxq_device_add(l, "gpu0", GiB, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	nxq_event_flush(dev, false);
	rec.n = 0;
	init_completion(&rec_entered);
	init_completion(&rec_gate);
	rec_gated = true;
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_TICKET_ANSWERED, NULL, NULL, 0, 0, 0);
	spin_unlock(&dev->lock);
	wait_for_completion(&rec_entered);
	return dev;
}

/*
 * Drops are counted by type: denials of more cgroups than the table
 * holds are dropped as denials (none evicts another's entry), more vital
 * events than their ring holds as what they are, and the total is the
 * sum.  The table's probe is bounded: a denial looks at
 * NXQ_EV_DENIED_PROBE slots, whatever the other cgroups hold.
 */
static void nxq_test_event_drops(struct kunit *test)
{
	struct nxq_node *nodes;
	struct nxq_ledger l;
	struct nxq_device *dev;
	u64 count, delivered = 0, dd, dk, extra = 5;
	int i, n = 2 * NXQ_EV_DENIED_SLOTS;

	/* not on the stack: a node is large, the kernel's stack small */
	nodes = kunit_kcalloc(test, n, sizeof(*nodes), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, nodes);
	/* The work held in the hook, so the storm meets full queues. */
	dev = held_device(test, &l);

	spin_lock(&dev->lock);
	for (i = 0; i < n; i++) {
		nodes[i].id = 1000 + i;
		nxq_event(dev, NXQ_EV_DENIED, &nodes[i], NULL, MiB, i, EDQUOT);
		nxq_event(dev, NXQ_EV_DENIED, &nodes[i], NULL, MiB, i, EDQUOT);
	}
	for (i = 0; i < NXQ_EV_VITAL + extra; i++)
		nxq_event(dev, NXQ_EV_KILLED, &nodes[0], NULL, MiB, i, 0);
	spin_unlock(&dev->lock);
	complete(&rec_gate);
	nxq_event_flush(dev, false);

	for (i = 0; i < n; i++) {
		rec_find(NXQ_EV_DENIED, nodes[i].id, &count);
		delivered += count;
	}
	dd = atomic64_read(&dev->events_dropped_type[NXQ_EV_DENIED]);
	dk = atomic64_read(&dev->events_dropped_type[NXQ_EV_KILLED]);
	KUNIT_EXPECT_EQ(test, delivered + dd, (u64)(2 * n));
	KUNIT_EXPECT_GE(test, dd, (u64)(2 * (n - NXQ_EV_DENIED_SLOTS)));
	KUNIT_EXPECT_LT(test, dd, (u64)(2 * n));
	/* each cgroup's two denials: both delivered or both dropped */
	KUNIT_EXPECT_EQ(test, dd % 2, 0ULL);
	KUNIT_EXPECT_EQ(test, dk, extra);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_KILLED, nodes[0].id, &count),
			NXQ_EV_VITAL);
	KUNIT_EXPECT_EQ(test, (u64)atomic64_read(&dev->events_dropped),
			dd + dk);
	for (i = 0; i < NXQ_EV_TYPES; i++)
		if (i != NXQ_EV_DENIED && i != NXQ_EV_KILLED)
			KUNIT_EXPECT_EQ(test, atomic64_read(
				&dev->events_dropped_type[i]), 0LL);

	/* the hook's own losses: a coalesced event counts what it stood for */
	rec.n = 0;
	spin_lock(&dev->lock);
	for (i = 0; i < 3; i++)
		nxq_event(dev, NXQ_EV_DENIED, &nodes[0], NULL, MiB, i, EDQUOT);
	spin_unlock(&dev->lock);
	nxq_event_flush(dev, false);
	/* one event, or two if the work took the first at once */
	KUNIT_ASSERT_GE(test, rec_find(NXQ_EV_DENIED, nodes[0].id, &count), 1);
	KUNIT_EXPECT_EQ(test, count, 3ULL);
	{
		struct nxq_event ev = {
			.type = NXQ_EV_DENIED,
			.dropped = &dev->events_dropped,
			.dropped_type = dev->events_dropped_type,
			.count = 3,
		};

		nxq_event_lost(&ev);
	}
	KUNIT_EXPECT_EQ(test, (u64)atomic64_read(
		&dev->events_dropped_type[NXQ_EV_DENIED]), dd + 3);
	KUNIT_EXPECT_EQ(test, (u64)atomic64_read(&dev->events_dropped),
			dd + dk + 3);

	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	nxq_ledger_destroy(&l);
}

/*
 * Tenants cannot fill the vital ring (issue 30): with the work held in the
 * hook, RECALL tickets to twice NXQ_EV_VITAL holders -- more than one
 * round of victims -- and one holder asked ten times, then a kill: the
 * kill is delivered (before, the tickets filled the vital ring and the
 * kill was dropped: "kills delivered 0, kills dropped 1"), and the holder
 * asked ten times is one event that stands for ten.
 */
static void nxq_test_event_vital_origin(struct kunit *test)
{
	int i, n = 2 * NXQ_EV_VITAL;
	struct nxq_holder *hs;
	struct nxq_node *nodes;
	struct nxq_ledger l;
	struct nxq_device *dev;
	u64 count, tickets = 0;

	nodes = kunit_kcalloc(test, n + 1, sizeof(*nodes), GFP_KERNEL);
	hs = kunit_kcalloc(test, n + 1, sizeof(*hs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, nodes);
	KUNIT_ASSERT_NOT_NULL(test, hs);
	dev = held_device(test, &l);

	spin_lock(&dev->lock);
	for (i = 0; i <= n; i++) {
		nodes[i].id = 2000 + i;
		hs[i].node = &nodes[i];
		hs[i].ticket.level = NXQ_TICKET_LEVEL_RECALL;
	}
	for (i = 0; i < n; i++)
		nxq_event(dev, NXQ_EV_TICKET_ISSUED, NULL, &hs[i], MiB, 0, 0);
	for (i = 0; i < 10; i++)
		nxq_event(dev, NXQ_EV_TICKET_ISSUED, NULL, &hs[n], MiB + i, 0,
			  0);
	nxq_event(dev, NXQ_EV_KILLED, &nodes[0], NULL, MiB, 0, 0);
	spin_unlock(&dev->lock);
	complete(&rec_gate);
	nxq_event_flush(dev, false);

	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_KILLED, nodes[0].id, &count), 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(
		&dev->events_dropped_type[NXQ_EV_KILLED]), 0LL);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_TICKET_ISSUED, nodes[n].id,
				       &count), 1);
	KUNIT_EXPECT_EQ(test, count, 10ULL);
	for (i = 0; i < n; i++)
		tickets += rec_find(NXQ_EV_TICKET_ISSUED, nodes[i].id, &count);
	KUNIT_EXPECT_EQ(test, tickets, (u64)n);
	KUNIT_EXPECT_EQ(test, atomic64_read(&dev->events_dropped), 0LL);

	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	nxq_ledger_destroy(&l);
}

/* Wait up to @ms for the hook to have seen @n events; how many it saw. */
static int rec_wait(int n, u64 ms)
{
	u64 end = ktime_get_ns() + ms * NSEC_PER_MSEC;

	while (READ_ONCE(rec.n) < n && ktime_get_ns() < end)
		usleep_range(1000, 2000);
	return READ_ONCE(rec.n);
}

/*
 * The work never sleeps for a batch of denials (issue 30: it msleep()ed in
 * the system workqueue, and under a steady storm never returned).  With a
 * gap of 10 s between batches, a denial held for the next batch leaves
 * the work returned with its timer armed (ev_paced); a kill queued then is
 * sent at once, behind that older denial, not 10 s later; and removing the
 * device sends a held denial without its gap.
 */
static void nxq_test_event_paced(struct kunit *test)
{
	struct nxq_node a = { .id = 100 }, b = { .id = 200 };
	struct nxq_holder v = { .node = &b, .tgid = 42 };
	struct nxq_ledger l;
	struct nxq_device *dev;
	bool paced = false;
	u64 t0, count;
	int i;

	memset(&rec, 0, sizeof(rec));
	rec.listening = true;
	nxq_ledger_init(&l, &rec_ops);
	dev = nxq_device_add(&l, "gpu0", GiB, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	nxq_event_flush(dev, false);
	rec.n = 0;
	spin_lock(&dev->ev_lock);
	dev->ev_denied_gap_ns = 10ULL * NSEC_PER_SEC;
	spin_unlock(&dev->ev_lock);

	/* a first batch goes at once; the next may not before 10 s */
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 1, EDQUOT);
	spin_unlock(&dev->lock);
	KUNIT_ASSERT_EQ(test, rec_wait(1, 3000), 1);
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 2, EDQUOT);
	spin_unlock(&dev->lock);
	for (i = 0; i < 3000 && !paced; i++) {
		spin_lock(&dev->ev_lock);
		paced = dev->ev_paced;
		spin_unlock(&dev->ev_lock);
		if (!paced)
			usleep_range(1000, 2000);
	}
	KUNIT_ASSERT_TRUE(test, paced);
	KUNIT_EXPECT_EQ(test, READ_ONCE(rec.n), 1);

	t0 = ktime_get_ns();
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_KILLED, NULL, &v, MiB, 0, 0);
	spin_unlock(&dev->lock);
	KUNIT_ASSERT_EQ(test, rec_wait(3, 3000), 3);
	KUNIT_EXPECT_LT(test, rec.at[2] - t0, 3ULL * NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, rec.type[1], NXQ_EV_DENIED);
	KUNIT_EXPECT_EQ(test, rec.type[2], NXQ_EV_KILLED);

	/* held for its batch, it goes with the device, without its gap */
	spin_lock(&dev->lock);
	nxq_event(dev, NXQ_EV_DENIED, &a, NULL, MiB, 3, EDQUOT);
	spin_unlock(&dev->lock);
	t0 = ktime_get_ns();
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	KUNIT_EXPECT_LT(test, ktime_get_ns() - t0, 3ULL * NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, rec_find(NXQ_EV_DENIED, a.id, &count), 3);
	KUNIT_EXPECT_EQ(test, count, 3ULL);
	nxq_ledger_destroy(&l);
}

static struct kunit_case nxq_event_cases[] = {
	KUNIT_CASE(nxq_test_events),
	KUNIT_CASE(nxq_test_event_storm),
	KUNIT_CASE(nxq_test_event_drops),
	KUNIT_CASE(nxq_test_event_vital_origin),
	KUNIT_CASE(nxq_test_event_paced),
	{}
};

static struct kunit_suite nxq_event_suite = {
	.name = "nxquota-event",
	.test_cases = nxq_event_cases,
};

kunit_test_suite(nxq_event_suite);
