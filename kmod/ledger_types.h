/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger objects: their fields, lifetimes and locks.
 *
 * The ledger knows nothing of files, ioctls, sysfs or cgroups: a budget
 * node is keyed by an id and an opaque key pointer that the caller owns
 * (the module passes struct cgroup *, KUnit passes fakes).  The shells
 * (cdev.c, sysfs.c, cgroup.c) are thin layers over this API (ledger.h).
 *
 * This header only defines the objects, shared by every layer of the
 * ledger (see ledger.h for the layers); it declares no function.
 *
 * Objects and lifetimes:
 *  - struct nxq_ledger: one per module (KUnit makes its own).  Owns the
 *    device list.
 *  - struct nxq_device: created by nxq_device_add(), destroyed by
 *    nxq_device_remove(), which is refused while holders exist.
 *  - struct nxq_node: one per (key, device).  Counted references: one per
 *    child node, one per holder; a node with no reference is kept while it
 *    has a budget (max or min set) and its key is alive, else freed.
 *  - struct nxq_holder: created by nxq_holder_create() with one kref; the
 *    creator's reference is dropped after nxq_holder_detach().  A holder
 *    holds a reference on its node, which keeps its device alive.
 *  - Holders and nodes are freed after an RCU grace period, and a removed
 *    device after synchronize_rcu(): a caller that found a holder under
 *    rcu_read_lock() may use it, its nodes and its device, without a
 *    kref, until rcu_read_unlock() -- for calls that do not sleep
 *    (nxq_charge() with no timeout, nxq_uncharge()); a holder detached
 *    meanwhile gets -ENOENT as with a kref.
 *
 * Locking (outer to inner):
 *  - nxq_ledger.reg_lock (mutex): device registration and removal, whole;
 *    a key is free again only once its removal, sysfs included, is done.
 *  - nxq_ledger.lock (mutex): the device list, node creation and removal,
 *    node reference counts, device removal.  Sleeps; never taken on the
 *    charge path.
 *  - nxq_device.lock (spinlock): every counter of the device and of its
 *    nodes and holders (usage, max, min, charge, reclaimable, events).
 *    Held for O(tree depth) at most; nothing allocates under it.
 */
#ifndef _NXQ_LEDGER_TYPES_H
#define _NXQ_LEDGER_TYPES_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/kref.h>
#include <linux/xarray.h>
#include <linux/wait.h>
#include <linux/time64.h>
#include <linux/workqueue.h>
#include <linux/rcupdate.h>
#include <linux/rbtree.h>
#include <linux/nxquota.h>

struct nxq_ledger;
struct nxq_device;
struct nxq_node;
struct nxq_holder;
struct pid;
struct nxq_event;
struct nxq_ev_denied;

/* enum nxq_event_type's NXQ_EV_NR (event.h), for per-type counters */
#define NXQ_EV_TYPES	10

/**
 * struct nxq_ask_stamp - the last victim search for one constraint
 * @ns: when it ran (ktime_get_ns()), 0 never
 * @shortfall: what it asked for
 * @gen: nxq_device.decline_gen then
 *
 * A charge that will not wait ticket_timeout_ms searches again for the
 * same constraint only when a floor passed since, an asked holder
 * declined since, or its shortfall is larger than the last one.
 */
struct nxq_ask_stamp {
	u64 ns;
	u64 shortfall;
	u64 gen;
};

/*
 * Per-cgroup limits (struct nxq_limits): a node's own value, or
 * NXQ_LIMIT_UNSET to inherit its nearest ancestor's; with none set, the
 * spec's defaults (the budget table's dflt, NXQUOTA_<NAME>_DEFAULT in the
 * uapi header; nxq_node_limit()).  holders_max and waiters_max bound a subtree
 * (the root's only when set on the root itself); priority_max and
 * wait_max_ms bind the holders of the node itself.
 */
#define NXQ_LIMIT_UNSET			U32_MAX

/* enum nxq_limit: the uapi header, generated from the spec (NXQ_LIMITS). */

/**
 * struct nxq_budget_req - what one budget-setting call changes
 * @set_max: change @max; @max: bytes or NXQ_UNLIMITED ("max")
 * @set_min: change @min; @min: bytes (0: no guarantee of its own)
 * @overcommit: accept guarantees that add up to more than their parent's
 *	(or the device's), which then shares them out in proportion
 * @set_kill: change @kill_on_ignore
 * @kill_on_ignore: the escalation policy
 * @set_lim: bit i set: change @lim[i] (enum nxq_limit)
 * @lim: the limits' new values (NXQ_LIMIT_UNSET to inherit)
 */
struct nxq_budget_req {
	bool set_max, set_min, set_kill, kill_on_ignore, overcommit;
	u64 max, min;
	unsigned int set_lim;
	u32 lim[NXQ_NR_LIMITS];
};

/**
 * enum nxq_refusal_why - why a budget request was refused
 * @NXQ_REFUSE_NONE: it was not
 * @NXQ_REFUSE_MIN_ABOVE_MAX: @value is the min, @limit the max
 * @NXQ_REFUSE_MIN_ABOVE_DEVICE: @value is the min, @limit the capacity
 * @NXQ_REFUSE_CHILDREN: the guarantees below the node (@value) add up
 *	to more than its new min (@limit)
 * @NXQ_REFUSE_PARENT: the guarantees under @node, an ancestor with a min
 *	of its own (@limit), would add up to @value
 * @NXQ_REFUSE_DEVICE: the guarantees on the device would add up to
 *	@value, above its capacity (@limit)
 * @NXQ_REFUSE_BOUND: a min (@value), or the guarantees under @node (@value),
 *	above NXQ_BYTES_MAX (@limit), even with overcommit
 */
enum nxq_refusal_why {
	NXQ_REFUSE_NONE,
	NXQ_REFUSE_MIN_ABOVE_MAX,
	NXQ_REFUSE_MIN_ABOVE_DEVICE,
	NXQ_REFUSE_CHILDREN,
	NXQ_REFUSE_PARENT,
	NXQ_REFUSE_DEVICE,
	NXQ_REFUSE_BOUND,
};

/*
 * NXQ_BYTES_MAX (the uapi header: the budget table's bound of a min): the
 * most bytes a guarantee, or the guarantees under one node, may add up
 * to (page_counter's PAGE_COUNTER_MAX): every sum of claims the ledger
 * keeps (children_min) then fits a u64 with room to add one more, and
 * never wraps, overcommit or not.
 */

/**
 * struct nxq_budget_refusal - a refused budget request, for the message
 * @why: enum nxq_refusal_why
 * @node: the node the reason is about (NXQ_REFUSE_PARENT: the ancestor),
 *	valid while the ledger lock is held
 * @value: see enum nxq_refusal_why
 * @limit: see enum nxq_refusal_why
 */
struct nxq_budget_refusal {
	int why;
	struct nxq_node *node;
	u64 value, limit;
};

/**
 * struct nxq_ledger_ops - hooks for the shells; every member optional
 * @key_put: drop the caller's reference on a node key (called once, when
 *	the node is freed)
 * @key_dead: true if the key's object is gone (a removed cgroup)
 * @key_path: write the key's name (a cgroup's path) to buf, NUL-terminated;
 *	its length or a negative errno.  For messages
 * @device_added: a device was added (ledger lock held)
 * @device_removed: a device was removed (ledger lock NOT held); after it
 *	returns nothing may still use the device's shell objects
 * @node_added: a node was created (ledger lock held)
 * @node_removed: a node is about to be freed (ledger lock held); must not
 *	take the ledger lock, nor wait for anything that does
 * @holder_kill: kill the process owning a holder (device lock held: must
 *	not sleep)
 * @holder_signal: tell a holder a ticket was opened or raised (device
 *	lock held: must not sleep)
 * @holder_follow: a charge of the holder's process is waiting: if that
 *	process is in another cgroup now, move the holder to its node
 *	(nxq_holder_rehome()).  Called by the waiting charge every
 *	NXQ_FOLLOW_NS, with no ledger lock held (it may sleep); 0 or the
 *	errno the move was refused with.  Absent: a waiting charge stays
 *	where it was queued
 * @changed: the ledger changed (every event, multicast or not); called
 *	with the device lock or the ledger lock held: must not sleep
 * @event: report an event; called from a work item, in process context,
 *	with no ledger lock held, in the order the events happened
 * @listening: would an event reach anyone now?  Called with the device
 *	lock or the ledger lock held: must not sleep.  False: events are
 *	not queued at all (nobody misses them; none counts as dropped).
 *	Absent: always true
 */
struct nxq_ledger_ops {
	void (*key_put)(void *key);
	bool (*key_dead)(void *key);
	int (*key_path)(void *key, char *buf, size_t size);
	int (*device_added)(struct nxq_device *dev);
	void (*device_removed)(struct nxq_device *dev);
	int (*node_added)(struct nxq_node *node);
	void (*node_removed)(struct nxq_node *node);
	void (*holder_kill)(struct nxq_holder *h);
	void (*holder_signal)(struct nxq_holder *h);
	int (*holder_follow)(struct nxq_holder *h);
	void (*changed)(void);
	void (*event)(const struct nxq_event *ev);
	bool (*listening)(void);
};

struct nxq_ledger {
	struct mutex reg_lock;		/* see the top of this file */
	struct mutex lock;		/* see the top of this file */
	struct list_head devices;	/* lock */
	bool closing;			/* lock: no more devices */
	const struct nxq_ledger_ops *ops;
};

struct nxq_device {
	struct nxq_ledger *ledger;
	struct list_head link;		/* ledger->lock */
	struct xarray nodes;		/* id -> node; ledger->lock */
	bool dead;			/* ledger->lock */
	unsigned int nr_holders;	/* ledger->lock: holders not yet freed */
	char key[NXQ_DEVICE_KEY_MAX];
	void *priv;			/* the sysfs shell's */
	dev_t devt;			/* node proving access, 0: none; const */
	atomic64_t events_dropped;	/* events no listener got, in all */
	atomic64_t events_dropped_type[NXQ_EV_TYPES];	/* by type */
	spinlock_t ev_lock;		/* the queues below; inside dev->lock */
	struct nxq_event *ev_ring;	/* ev_lock: NXQ_EV_RING entries */
	unsigned int ev_head, ev_tail;	/* ev_lock */
	struct nxq_event *ev_vital;	/* ev_lock: NXQ_EV_VITAL entries */
	unsigned int ev_vhead, ev_vtail;	/* ev_lock */
	struct nxq_ev_denied *ev_denied;	/* ev_lock: NXQ_EV_DENIED_SLOTS */
	struct list_head ev_denied_list;	/* ev_lock: pending, oldest
						 * first
						 */
	unsigned int ev_denied_nr;	/* ev_lock: entries of the list */
	unsigned int ev_denied_batch;	/* ev_lock: left in this batch */
	u64 ev_denied_next;		/* ev_lock: no batch before (ns) */
	u64 ev_denied_gap_ns;		/* ev_lock: between batches */
	u64 ev_seq;			/* ev_lock: events queued */
	bool ev_busy;			/* ev_lock: the work is queued, runs,
					 * or waits for the next batch
					 */
	bool ev_paced;			/* ev_lock: it waits for the next batch
					 * (its timer is armed)
					 */
	bool ev_draining;		/* ev_lock: the device goes: no gap */
	struct delayed_work ev_work;	/* sends the queues' events */

	spinlock_t lock;		/* the counters, see above */
	u64 capacity;			/* lock */
	u64 default_max;		/* lock: the max of what top-level nodes
					 * charge outside budgeted subtrees
					 */
	u64 used;			/* lock */
	u64 denials;			/* lock */
	u64 capacity_hits;		/* lock */
	struct list_head holders;	/* lock: attached holders, all nodes */
	struct list_head waiters;	/* lock: struct nxq_waiter */
	unsigned int nr_waiters;	/* lock: entries of waiters */
	u64 ticket_gen;			/* lock */
	u32 ticket_timeout_ms;		/* lock: deadline of unwaited asks */
	u64 tickets;			/* lock: tickets opened or raised */
	u64 bytes_asked;		/* lock */
	u64 bytes_released;		/* lock: released in answers */
	u64 kills;			/* lock */
	u64 waits;			/* lock: charges that had to wait */
	u64 timeouts;			/* lock: waits that ran out */
	u64 waiter_seq;			/* lock: arrivals, for the order */
	u64 dispatch_pass;		/* lock: walks of the wait queue */
	u64 dispatch_visits;		/* lock: waiters they looked at */
	struct rb_root_cached blocked;	/* lock: waiters short of capacity,
					 * in key order (struct nxq_waiter)
					 */
	unsigned int nr_dev_blocked;	/* lock: entries of blocked */
	u64 blocked_bytes;		/* lock: what they ask, in all */
	u64 blocked_pass;		/* lock: dispatch scratch */
	struct list_head blocked_nodes;	/* lock: nodes whose blocked tree
					 * is not empty (blocked_link)
					 */
	u64 victim_pass;		/* lock */
	u64 excess_pass;		/* lock: node excess cache generation */
	u64 emin_gen;			/* lock: generation of the cached
					 * effective mins; bumped by every
					 * change of a min, children_min or
					 * the capacity
					 */
	u64 victim_visits;		/* lock: holders looked at by searches */
	u64 searches;			/* lock: victim searches run */
	struct list_head recalls;	/* lock: holders with an open RECALL
					 * ticket, or owing what one asked
					 * (nxq_holder.recall_link)
					 */
	u64 escalate_visits;		/* lock: holders looked at by
					 * escalations
					 */
	u64 decline_gen;		/* lock: bumped when an asked holder
					 * declines (short answer, detach)
					 */
	struct nxq_ask_stamp ask_dev;	/* lock: last search for capacity */
};

struct nxq_node {
	struct nxq_device *dev;
	struct nxq_node *parent;	/* holds a reference */
	u64 id;
	void *key;
	unsigned int refs;		/* dev->ledger->lock */
	unsigned int nr_holders;	/* dev->ledger->lock */
	unsigned int subtree_holders;	/* dev->ledger->lock: here and below */
	void *priv;			/* the sysfs shell's */

	u64 usage;			/* dev->lock */
	u64 max;			/* dev->lock */
	bool max_set;			/* dev->lock: max is the node's own */
	u32 lim[NXQ_NR_LIMITS];		/* dev->lock: own, or NXQ_LIMIT_UNSET */
	unsigned int subtree_waiters;	/* dev->lock: waiting here and below */
	unsigned int own_waiters;	/* dev->lock: waiting here */
	u64 min;			/* dev->lock: 0 is none of its own */
	u64 children_min;		/* dev->lock: sum of the children's
					 * claims; a child's claim is its
					 * min, or without one, its own
					 * children_min (nxq_claim())
					 */
	u64 claimed_usage;		/* dev->lock: usage of the nearest
					 * nodes strictly below with a min
					 * (counted whole, subtrees included)
					 */
	u64 budgeted_usage;		/* dev->lock: likewise, of the nearest
					 * nodes below with a budget (a max
					 * or a min of their own)
					 */
	u64 emin;			/* dev->lock: cached share of the */
	u64 emin_gen;			/* guarantees (nxq_node_share()),
					 * valid while == dev->emin_gen
					 */
	u64 max_hits;			/* dev->lock */
	u64 denials;			/* dev->lock */
	bool kill_on_ignore;		/* dev->lock: escalation policy */
	u64 tickets;			/* dev->lock: for holders at or below */
	u64 bytes_asked;		/* dev->lock */
	u64 bytes_released;		/* dev->lock */
	u64 kills;			/* dev->lock */
	struct rb_root_cached blocked;	/* dev->lock: waiters held up here
					 * (struct nxq_waiter), in key order
					 */
	unsigned int nr_blocked;	/* dev->lock: entries of blocked */
	struct list_head blocked_link;	/* dev->lock: in dev->blocked_nodes
					 * while blocked is not empty
					 */
	u64 blocked_pass;		/* dev->lock: dispatch scratch */
	u64 queued_below;		/* dev->lock: what the waiters held up
					 * by a node (-EDQUOT) whose own
					 * node is this one or below ask, in
					 * all (nxq_queued_ahead())
					 */
	u64 ex_pass;			/* dev->lock: victim-search scratch: */
	u64 ex_excess;			/* usage above emin in that search */
	struct nxq_ask_stamp ask_max;	/* dev->lock: last search for this
					 * node's max
					 */
	struct list_head children;	/* dev->lock, changed also under
					 * dev->ledger->lock: child nodes
					 */
	struct list_head sibling;	/* in parent->children, as children */
	struct list_head holders;	/* dev->lock: attached holders whose
					 * node this is (nxq_holder.node_link)
					 */
	struct rcu_head rcu;		/* freed after a grace period */
};

/**
 * struct nxq_ticket_state - a holder's ticket, under the device lock
 * @generation: current generation, 0 before the first ticket
 * @open: a ticket is open (asked, not yet answered)
 * @bytes: bytes asked by the open ticket
 * @deadline_ns: ktime_get_ns() time after which the asker escalates
 * @opened_ns: when the ticket was opened
 * @reason: NXQ_TICKET_REASON_*
 * @level: NXQ_TICKET_LEVEL_*
 */
struct nxq_ticket_state {
	u64 generation;
	bool open;
	u64 bytes;
	u64 deadline_ns;
	u64 opened_ns;
	u32 reason;
	u32 level;
};

/**
 * struct nxq_refusal_rec - a refused charge: a holder's last, for STATUS,
 *	and a charge's own, for its caller (nxq_charge_why())
 * @err: its positive errno, 0 none
 * @level: the node that refused: 0 the holder's, 1 its parent, ...;
 *	NXQ_LEVEL_DEVICE for the capacity
 * @reason: NXQ_REFUSED_*, the limit that refused; 0 for none named
 * @id: the refusing node's id (its key's: a cgroup id), 0 for the device
 * @bytes: the charge
 * @limit: that node's limit then (max, default_max, effective min; the
 *	capacity)
 * @min: that node's min then
 * @usage: what counted against @limit then
 * @ns: when (ktime_get_ns())
 */
struct nxq_refusal_rec {
	u32 err;
	u32 level;
	u32 reason;
	u64 id;
	u64 bytes, limit, min, usage, ns;
};

struct nxq_holder {
	struct kref ref;
	struct nxq_node *node;		/* holds a node reference */
	u32 priority;
	u32 tgid;			/* its tgid, initial pid namespace */
	void *priv;			/* the caller's (an eventfd context) */
	struct pid *owner;		/* registering process, a ref */
	struct list_head link;		/* node->dev->holders, dev->lock */
	struct list_head recall_link;	/* node->dev->lock: in dev->recalls
					 * while its ticket is an open RECALL,
					 * or it owes what a RECALL asked
					 */
	bool debt;			/* node->dev->lock: it answered a
					 * RECALL short (or not at all), and
					 * owes until its charge comes down
					 * to debt_line: compliance is bytes
					 */
	u64 debt_line;			/* node->dev->lock */
	u64 debt_deadline;		/* node->dev->lock: the ticket's */
	struct list_head node_link;	/* node->holders, dev->lock: a victim
					 * search under a max walks only the
					 * subtree's lists
					 */
	bool detached;			/* node->dev->lock */
	u64 charge;			/* node->dev->lock */
	u64 reclaimable;		/* node->dev->lock */
	struct nxq_ticket_state ticket;	/* node->dev->lock */
	bool killed;			/* node->dev->lock */
	u64 declined_ns;		/* node->dev->lock: last short answer or
					 * ignored ticket; asks for waiters
					 * queued before it pass it by
					 */
	u64 victim_pass;		/* node->dev->lock: victim scratch */
	struct list_head residue;	/* node->dev->lock: struct nxq_residue,
					 * charges left on earlier nodes
					 */
	u64 residue_bytes;		/* node->dev->lock: their sum; the
					 * rest of charge is on node
					 */
	struct list_head waiters;	/* node->dev->lock: its queued
					 * charges (nxq_waiter.hlink)
					 */
	struct nxq_refusal_rec refused;	/* node->dev->lock: the last one */
	u64 ev_ticket_seq;		/* node->dev->ev_lock: its ticket event
					 * queued in the ring, not yet sent
					 * (0: none), at ev_ticket_pos
					 */
	unsigned int ev_ticket_pos;	/* node->dev->ev_lock */
	struct rcu_head rcu;		/* freed after a grace period: the
					 * file's lookup takes its kref
					 * under RCU
					 */
};

/**
 * struct nxq_residue - a holder's charge left on a node it moved from
 * @link: in nxq_holder.residue
 * @node: the earlier node (a reference)
 * @bytes: what stays charged there until released
 */
struct nxq_residue {
	struct list_head link;
	struct nxq_node *node;
	u64 bytes;
};

#endif /* _NXQ_LEDGER_TYPES_H */
