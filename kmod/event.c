// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota ledger, layer 0: events (see event.h).  Each device owns three
 * queues -- the vital ring (nxq_device.ev_vital, NXQ_EV_VITAL events),
 * the coalesced denials (ev_denied, NXQ_EV_DENIED_SLOTS cgroups) and the
 * ring of the others (ev_ring, NXQ_EV_RING events) -- all under ev_lock,
 * inside the device lock, and a work item that empties them into the
 * event hook, oldest first.  They are allocated with the device and freed
 * with it (objects.c), after the work is flushed.  The work never sleeps:
 * when only denials wait, for the next batch, it arms its own timer and
 * returns (a delayed_work), and any other event queued meanwhile runs it
 * at once.
 */
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/workqueue.h>

#include "event.h"

/**
 * nxq_event_vital() - is an event one that must not queue behind others?
 * @type: enum nxq_event_type
 * @h: the holder concerned, or NULL
 *
 * Events that root or the ledger itself causes -- kills, budget changes,
 * devices added and removed -- go to the device's vital ring.  Nothing a
 * tenant does queues there: its charges cause denials and tickets (asks
 * and RECALLs alike), which go to the other queues, so no number of
 * tenants' tickets can make a kill wait or be lost (issue 30: the vital
 * ring held 64, exactly one round of RECALL tickets, and a KILLED queued
 * behind them was dropped).
 *
 * Return: true for a vital event.
 */
bool nxq_event_vital(enum nxq_event_type type, struct nxq_holder *h)
{
	switch (type) {
	case NXQ_EV_DEVICE_ADDED:
	case NXQ_EV_DEVICE_REMOVED:
	case NXQ_EV_BUDGET_CHANGED:
	case NXQ_EV_KILLED:
		return true;
	default:
		return false;
	}
}

/*
 * A ticket for @h whose event still waits in the ring: the event is
 * brought up to date there (the latest bytes, level and reason, its first
 * place and time, and a count), so a holder asked again and again takes
 * one entry, as a cgroup's denials do.  False if none waits.
 */
static bool nxq_event_ticket_join(struct nxq_device *dev,
				  struct nxq_holder *h,
				  const struct nxq_event *ev)
{
	unsigned int pos = h->ev_ticket_pos;
	struct nxq_event *o;

	lockdep_assert_held(&dev->ev_lock);
	if (!h->ev_ticket_seq ||
	    pos - dev->ev_tail >= dev->ev_head - dev->ev_tail)
		return false;
	o = &dev->ev_ring[pos % NXQ_EV_RING];
	if (o->seq != h->ev_ticket_seq || o->type != NXQ_EV_TICKET_ISSUED)
		return false;
	o->bytes = ev->bytes;
	o->value = ev->value;
	o->reason = ev->reason;
	o->cgroup_id = ev->cgroup_id;
	o->count++;
	return true;
}

/**
 * nxq_event_lost() - count an event no listener got
 * @ev: the event
 *
 * Adds the events @ev stands for (a coalesced denial's count) to its
 * device's events_dropped, in all and for its type.  The shells call it
 * for an event they could not send.
 *
 * Context: any.
 */
void nxq_event_lost(const struct nxq_event *ev)
{
	u64 n = ev->count ? ev->count : 1;

	BUILD_BUG_ON(NXQ_EV_NR > NXQ_EV_TYPES);
	if (ev->dropped)
		atomic64_add(n, ev->dropped);
	if (ev->dropped_type && ev->type < NXQ_EV_NR)
		atomic64_add(n, &ev->dropped_type[ev->type]);
}

/*
 * The slot of @id's pending denials, or a free slot of its probe window,
 * or NULL: NXQ_EV_DENIED_PROBE slots looked at, whatever the others hold.
 */
static struct nxq_ev_denied *nxq_ev_denied_slot(struct nxq_device *dev,
						u64 id)
{
	struct nxq_ev_denied *d, *free = NULL;
	unsigned int i, start;

	lockdep_assert_held(&dev->ev_lock);
	start = (u32)((id * 0x9e3779b97f4a7c15ULL) >> 32) % NXQ_EV_DENIED_SLOTS;
	for (i = 0; i < NXQ_EV_DENIED_PROBE; i++) {
		d = &dev->ev_denied[(start + i) % NXQ_EV_DENIED_SLOTS];
		if (d->ev.count && d->ev.cgroup_id == id)
			return d;
		if (!d->ev.count && !free)
			free = d;
	}
	return free;
}

/*
 * Take the oldest event into @ev.  Denials go in batches (every cgroup
 * pending when a batch starts), a batch at most every ev_denied_gap_ns
 * (NXQ_EV_DENIED_GAP_MS; none while the device is being removed),
 * but a denial older than another event that waits is sent at once (so no
 * event waits for a batch, and the order holds); when only denials wait
 * for the next batch, *@wait is how long.
 */
static bool nxq_event_take(struct nxq_device *dev, struct nxq_event *ev,
			   u64 *wait)
{
	struct nxq_event *best = NULL, *o;
	struct nxq_ev_denied *d = NULL;
	bool vital = false;
	u64 now;

	lockdep_assert_held(&dev->ev_lock);
	if (dev->ev_vhead != dev->ev_vtail) {
		best = &dev->ev_vital[dev->ev_vtail % NXQ_EV_VITAL];
		vital = true;
	}
	if (dev->ev_head != dev->ev_tail) {
		o = &dev->ev_ring[dev->ev_tail % NXQ_EV_RING];
		if (!best || o->seq < best->seq) {
			best = o;
			vital = false;
		}
	}
	if (!list_empty(&dev->ev_denied_list)) {
		d = list_first_entry(&dev->ev_denied_list, struct nxq_ev_denied,
				     link);
		if (best && best->seq < d->ev.seq) {
			d = NULL;
		} else if (best) {
			/*
			 * Older than an event waiting behind it: sent now,
			 * gap or not, so that nothing waits for denials and
			 * the order holds.
			 */
		} else if (!dev->ev_denied_batch) {
			now = ktime_get_ns();
			if (now < dev->ev_denied_next && !dev->ev_draining) {
				if (!best)
					*wait = dev->ev_denied_next - now;
				d = NULL;
			} else {
				dev->ev_denied_batch = dev->ev_denied_nr;
			}
		}
	}
	if (d) {
		*ev = d->ev;
		list_del(&d->link);
		dev->ev_denied_nr--;
		d->ev.count = 0;
		if (dev->ev_denied_batch && !--dev->ev_denied_batch)
			dev->ev_denied_next = ktime_get_ns() +
				dev->ev_denied_gap_ns;
		return true;
	}
	if (!best)
		return false;
	*ev = *best;
	if (vital)
		dev->ev_vtail++;
	else
		dev->ev_tail++;
	return true;
}

/**
 * nxq_event_work() - send a device's queued events, oldest first
 * @work: the device's ev_work
 *
 * When only denials wait, for their next batch, the work arms its own
 * timer for then and returns (ev_paced): it never sleeps in the system
 * workqueue, so a steady storm of denials holds no worker, and an event
 * of another kind queued meanwhile runs it at once (nxq_event()).
 *
 * Context: a work item; takes ev_lock around each dequeue only, so the
 * hook (which allocates and multicasts) runs with no ledger lock held.
 */
void nxq_event_work(struct work_struct *work)
{
	struct nxq_device *dev = container_of(to_delayed_work(work),
					      struct nxq_device, ev_work);
	const struct nxq_ledger_ops *ops = dev->ledger->ops;
	struct nxq_event ev;
	u64 wait;

	for (;;) {
		wait = 0;
		spin_lock(&dev->ev_lock);
		dev->ev_paced = false;
		if (!nxq_event_take(dev, &ev, &wait)) {
			if (wait) {
				/* under ev_lock: see nxq_event_flush() */
				dev->ev_paced = true;
				schedule_delayed_work(&dev->ev_work,
					msecs_to_jiffies(DIV_ROUND_UP(wait,
							NSEC_PER_MSEC)));
			} else {
				dev->ev_busy = false;
			}
			spin_unlock(&dev->ev_lock);
			return;
		}
		spin_unlock(&dev->ev_lock);
		ops->event(&ev);
	}
}

/**
 * nxq_event_flush() - wait until a device's queued events are sent
 * @dev: the device
 * @draining: the device is going: send the denials without their gap
 *
 * Returns once the queues are empty and the work neither queued nor
 * running nor waiting for a batch.  Without @draining, a denial held by
 * the gap is waited for (up to ev_denied_gap_ns).
 *
 * Context: process context, no ledger lock held; sleeps.
 */
void nxq_event_flush(struct nxq_device *dev, bool draining)
{
	bool busy;

	might_sleep();
	for (;;) {
		spin_lock(&dev->ev_lock);
		if (draining)
			dev->ev_draining = true;
		busy = dev->ev_busy;
		spin_unlock(&dev->ev_lock);
		if (!busy)
			break;
		/* runs an armed timer's work now; it re-arms if too early */
		flush_delayed_work(&dev->ev_work);
		spin_lock(&dev->ev_lock);
		busy = dev->ev_paced;
		spin_unlock(&dev->ev_lock);
		if (busy)
			usleep_range(500, 1000);
	}
	/* nothing is armed once ev_busy is false: this only makes it sure */
	cancel_delayed_work_sync(&dev->ev_work);
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
 * The event is queued (see event.h for which queue) and sent by
 * nxq_event_work() once the caller's locks are dropped; a full queue (or
 * none) counts the event in events_dropped.  A denial joins its cgroup's
 * pending one if there is one.  Holder attach and detach only mark dumps
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
		.dropped_type = dev->events_dropped_type,
		.bytes = bytes,
		.value = value,
		.reason = reason,
		.count = 1,
	};
	struct nxq_ev_denied *d;
	bool idle;
	u64 n;

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
	if (!dev->ev_ring)
		goto lost;
	ev.seq = dev->ev_seq++;
	if (type == NXQ_EV_DENIED) {
		d = nxq_ev_denied_slot(dev, ev.cgroup_id);
		if (!d)
			goto lost;
		if (d->ev.count) {
			/*
			 * The latest details, the first's place and time (so
			 * that timestamps do not go back in the order sent).
			 */
			n = d->ev.count + 1;
			ev.seq = d->ev.seq;
			ev.ts_ns = d->ev.ts_ns;
			d->ev = ev;
			d->ev.count = n;
		} else {
			d->ev = ev;
			list_add_tail(&d->link, &dev->ev_denied_list);
			dev->ev_denied_nr++;
		}
	} else if (type == NXQ_EV_TICKET_ISSUED && h &&
		   nxq_event_ticket_join(dev, h, &ev)) {
		dev->ev_seq--;	/* (it took no place of its own) */
	} else if (nxq_event_vital(type, h)) {
		if (dev->ev_vhead - dev->ev_vtail >= NXQ_EV_VITAL)
			goto lost;
		dev->ev_vital[dev->ev_vhead % NXQ_EV_VITAL] = ev;
		dev->ev_vhead++;
	} else {
		if (dev->ev_head - dev->ev_tail >= NXQ_EV_RING)
			goto lost;
		if (type == NXQ_EV_TICKET_ISSUED && h) {
			h->ev_ticket_seq = ev.seq;
			h->ev_ticket_pos = dev->ev_head;
		}
		dev->ev_ring[dev->ev_head % NXQ_EV_RING] = ev;
		dev->ev_head++;
	}
	/*
	 * The work empties the queues, and says under ev_lock when done.  An
	 * event that is not a denial does not wait for the next batch of
	 * denials: it runs the work now (mod_delayed_work() may be called
	 * from any context).
	 */
	idle = !dev->ev_busy;
	dev->ev_busy = true;
	if (idle || (dev->ev_paced && type != NXQ_EV_DENIED)) {
		dev->ev_paced = false;
		mod_delayed_work(system_wq, &dev->ev_work, 0);
	}
	spin_unlock(&dev->ev_lock);
	return;
lost:
	spin_unlock(&dev->ev_lock);
	nxq_event_lost(&ev);
}
