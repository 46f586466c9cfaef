// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite of the ledger's event layer (event.c): events reach the
 * hook after the lock drops, in order; a full ring counts what it drops;
 * nothing is queued while nobody listens.
 */
#include "ledger_test.h"

#define EV_MAX	(2 * NXQ_EV_RING)

static struct {
	bool listening;
	int n;
	enum nxq_event_type type[EV_MAX];
	u64 value[EV_MAX];
} rec;

static void rec_event(const struct nxq_event *ev)
{
	if (rec.n < EV_MAX) {
		rec.type[rec.n] = ev->type;
		rec.value[rec.n] = ev->value;
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
	flush_work(&dev->ev_work);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, rec.type[0], NXQ_EV_DEVICE_ADDED);

	/* Nobody listens: nothing queued, nothing dropped. */
	rec.listening = false;
	spin_lock(&dev->lock);
	for (i = 0; i < 10; i++)
		nxq_event(dev, NXQ_EV_DENIED, NULL, NULL, 1, i, ENOSPC);
	spin_unlock(&dev->lock);
	flush_work(&dev->ev_work);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(&dev->events_dropped), 0LL);

	/* More than the ring holds, under the lock: in order, or counted. */
	rec.listening = true;
	rec.n = 0;
	n = NXQ_EV_RING + 10;
	spin_lock(&dev->lock);
	for (i = 0; i < n; i++)
		nxq_event(dev, NXQ_EV_DENIED, NULL, NULL, 1, i, ENOSPC);
	spin_unlock(&dev->lock);
	flush_work(&dev->ev_work);
	dropped = atomic64_read(&dev->events_dropped);
	KUNIT_EXPECT_EQ(test, (u64)rec.n + dropped, (u64)n);
	KUNIT_EXPECT_GE(test, rec.n, NXQ_EV_RING);
	for (i = 1; i < rec.n && i < EV_MAX; i++)
		KUNIT_EXPECT_LT(test, rec.value[i - 1], rec.value[i]);

	rec.n = 0;
	KUNIT_EXPECT_EQ(test, nxq_device_remove(&l, "gpu0"), 0);
	KUNIT_EXPECT_EQ(test, rec.n, 1);
	KUNIT_EXPECT_EQ(test, rec.type[0], NXQ_EV_DEVICE_REMOVED);
	nxq_ledger_destroy(&l);
}

static struct kunit_case nxq_event_cases[] = {
	KUNIT_CASE(nxq_test_events),
	{}
};

static struct kunit_suite nxq_event_suite = {
	.name = "nxquota-event",
	.test_cases = nxq_event_cases,
};

kunit_test_suite(nxq_event_suite);
