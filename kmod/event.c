// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 0: events (see event.h).  Each device owns a ring
 * of NXQ_EV_RING events (nxq_device.ev_ring, under ev_lock, inside the
 * device lock) and a work item that empties it into the event hook.
 */
#include <linux/ktime.h>
#include <linux/workqueue.h>

#include "event.h"

/**
 * nxq_event_work() - send a device's queued events, oldest first
 * @work: the device's ev_work
 *
 * Context: a work item; takes ev_lock around each dequeue only, so the
 * hook (which allocates and multicasts) runs with no ledger lock held.
 */
void nxq_event_work(struct work_struct *work)
{
	struct nxq_device *dev = container_of(work, struct nxq_device,
					      ev_work);
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev;

	for (;;) {
		spin_lock(&dev->ev_lock);
		if (dev->ev_head == dev->ev_tail) {
			spin_unlock(&dev->ev_lock);
			return;
		}
		ev = dev->ev_ring[dev->ev_tail % NXQ_EV_RING];
		dev->ev_tail++;
		spin_unlock(&dev->ev_lock);
		ops->event(&ev);
	}
}

/**
 * nxq_event() - report an event to the shell's hook, if any
 * @dev: the device
 * @type: enum nxq_event_type
 * @node: the node concerned, or NULL
 * @h: the holder concerned, or NULL (its node is used if @node is NULL)
 * @bytes: see enum nxq_event_type
 * @value: see enum nxq_event_type
 * @reason: see struct nxq_event
 *
 * The event is queued on the device's ring and sent by nxq_event_work()
 * once the caller's locks are dropped; a full ring (or no ring) counts
 * the event in events_dropped.  Holder attach and detach only mark dumps
 * (the changed hook), they are not queued.
 *
 * Context: the device lock or the ledger lock is held; does not sleep.
 */
void nxq_event(struct nxq_device *dev, enum nxq_event_type type,
	       struct nxq_node *node, struct nxq_holder *h, u64 bytes,
	       u64 value, u32 reason)
{
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev = {
		.type = type,
		.device = dev->key,
		.dropped = &dev->events_dropped,
		.bytes = bytes,
		.value = value,
		.reason = reason,
	};
	bool idle;

	if (!ops)
		return;
	if (ops->changed)
		ops->changed();
	if (!ops->event || type == NXQ_EV_HOLDER_ADDED ||
	    type == NXQ_EV_HOLDER_REMOVED ||
	    (ops->listening && !ops->listening()))
		return;
	/* Only now: on some clocksources (a VM's HPET) a read is slow. */
	ev.ts_ns = ktime_get_ns();
	if (!node && h)
		node = h->node;
	ev.cgroup_id = node ? node->id : 0;
	ev.tgid = h ? h->tgid : 0;
	spin_lock(&dev->ev_lock);
	if (!dev->ev_ring || dev->ev_head - dev->ev_tail >= NXQ_EV_RING) {
		spin_unlock(&dev->ev_lock);
		atomic64_inc(&dev->events_dropped);
		return;
	}
	/*
	 * The work empties the ring, checking under ev_lock: it needs
	 * scheduling only when it may have seen the ring empty.
	 */
	idle = dev->ev_head == dev->ev_tail;
	dev->ev_ring[dev->ev_head % NXQ_EV_RING] = ev;
	dev->ev_head++;
	spin_unlock(&dev->ev_lock);
	if (idle)
		schedule_work(&dev->ev_work);
}
