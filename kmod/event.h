/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 0: events.  Every layer reports what happened
 * through nxq_event(), which queues the event under the caller's lock; a
 * work item sends the queues to the shell's event hook once the locks are
 * dropped.  Calls nothing of the ledger above it.
 *
 * Three queues per device, so that a storm of one kind cannot evict
 * another (issue 22):
 *  - the vital ring (NXQ_EV_VITAL): kills, budget changes, devices added
 *    and removed -- what root and the ledger cause, which a listener
 *    must not miss and no tenant can fill (issue 30);
 *  - coalesced denials (NXQ_EV_DENIED_SLOTS): one pending entry per
 *    cgroup, carrying how many denials it stands for and the latest one's
 *    details; found by a bounded probe (NXQ_EV_DENIED_PROBE slots), so
 *    its cost under the device lock does not grow with other tenants'
 *    denials; sent at most once per NXQ_EV_DENIED_GAP_MS per batch;
 *  - the ring (NXQ_EV_RING) of every other event; a holder's tickets
 *    take one entry while it waits (the latest details, a count).
 * Events are sent in the order they happened across the queues; a
 * coalesced denial takes the place of the first denial it stands for.
 */
#ifndef _NXQ_EVENT_H
#define _NXQ_EVENT_H

#include "ledger_types.h"

enum nxq_event_type {
	NXQ_EV_DEVICE_ADDED = 1,
	NXQ_EV_DEVICE_REMOVED,
	NXQ_EV_BUDGET_CHANGED,	/* bytes: max, value: min */
	NXQ_EV_DENIED,		/* bytes: the charge, reason: errno,
				 * value: the refusing node's id, 0 the
				 * device
				 */
	NXQ_EV_TICKET_ISSUED,	/* bytes: asked, value: generation */
	NXQ_EV_TICKET_ANSWERED,	/* bytes: released, value: generation */
	NXQ_EV_KILLED,		/* bytes: the holder's charge */
	NXQ_EV_HOLDER_ADDED,	/* value: priority (not multicast) */
	NXQ_EV_HOLDER_REMOVED,	/* bytes: its charge (not multicast) */
};

/* The size of an array indexed by type. */
#define NXQ_EV_NR	(NXQ_EV_HOLDER_REMOVED + 1)

/**
 * struct nxq_event - what the ledger reports to the event hook
 * @type: enum nxq_event_type
 * @device: the device's key
 * @cgroup_id: the node concerned, 0 if none
 * @tgid: the holder's process, 0 if none
 * @bytes: see enum nxq_event_type
 * @value: see enum nxq_event_type
 * @reason: a ticket's NXQ_TICKET_REASON_*, or a denial's positive errno
 * @dropped: the device's counter of events no listener got, in all
 * @dropped_type: the device's counters of them by type (NXQ_EV_NR)
 * @count: the events this one stands for: a coalesced denial's count of
 *	denials (the other fields are the latest one's, but @seq and @ts_ns
 *	the first's), else 1
 * @seq: the device's sequence number of the (first) event, for the order
 * @ts_ns: ktime_get_ns() when it happened (a coalesced denial: the first)
 */
struct nxq_event {
	enum nxq_event_type type;
	const char *device;
	atomic64_t *dropped;
	atomic64_t *dropped_type;
	u64 cgroup_id;
	u32 tgid;
	u64 bytes;
	u64 value;
	u32 reason;
	u64 count;
	u64 seq;
	u64 ts_ns;
};

/**
 * struct nxq_ev_denied - a cgroup's coalesced denials, pending
 * @ev: the latest denial, @ev.count of them, @ev.seq and @ev.ts_ns the
 *	first's
 * @link: in nxq_device.ev_denied_list, oldest first
 *
 * Free while @ev.count is 0.  Under nxq_device.ev_lock.
 */
struct nxq_ev_denied {
	struct nxq_event ev;
	struct list_head link;
};

/* Events queued per device between the lock and the event hook. */
#define NXQ_EV_RING		256	/* events neither vital nor denials */
#define NXQ_EV_VITAL		64	/* vital events */
#define NXQ_EV_DENIED_SLOTS	64	/* cgroups with denials pending */
#define NXQ_EV_DENIED_PROBE	8	/* slots a denial looks at */
#define NXQ_EV_DENIED_GAP_MS	10	/* between batches of denials */

void nxq_event_work(struct work_struct *work);
void nxq_event_flush(struct nxq_device *dev, bool draining);
bool nxq_event_vital(enum nxq_event_type type, struct nxq_holder *h);
void nxq_event_lost(const struct nxq_event *ev);
void nxq_event(struct nxq_device *dev, enum nxq_event_type type,
	       struct nxq_node *node, struct nxq_holder *h, u64 bytes,
	       u64 value, u32 reason);

#endif /* _NXQ_EVENT_H */
