/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 0: events.  Every layer reports what happened
 * through nxq_event(), which queues the event on its device's ring under
 * the caller's lock; a work item sends the ring to the shell's event hook
 * once the locks are dropped.  Calls nothing of the ledger above it.
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

/**
 * struct nxq_event - what the ledger reports to the event hook
 * @type: enum nxq_event_type
 * @device: the device's key
 * @cgroup_id: the node concerned, 0 if none
 * @tgid: the holder's process, 0 if none
 * @bytes: see enum nxq_event_type
 * @value: see enum nxq_event_type
 * @reason: a ticket's NXQ_TICKET_REASON_*, or a denial's positive errno
 * @dropped: the device's counter of events no listener got
 * @ts_ns: ktime_get_ns() when it happened
 */
struct nxq_event {
	enum nxq_event_type type;
	const char *device;
	atomic64_t *dropped;
	u64 cgroup_id;
	u32 tgid;
	u64 bytes;
	u64 value;
	u32 reason;
	u64 ts_ns;
};

/* Events queued per device between the lock and the event hook. */
#define NXQ_EV_RING	256

void nxq_event_work(struct work_struct *work);
void nxq_event(struct nxq_device *dev, enum nxq_event_type type,
	       struct nxq_node *node, struct nxq_holder *h, u64 bytes,
	       u64 value, u32 reason);

#endif /* _NXQ_EVENT_H */
