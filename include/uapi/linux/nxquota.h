/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nxquota - per-cgroup device-memory budgets, the kernel ABI.
 *
 * This is the only copy of the ABI: the module, libnxquota, nxquotactl and
 * the tests all include this file.  Documentation/userspace-api/nxquota.rst
 * describes every command, field, flag and errno.
 *
 * Conventions:
 *  - Every argument struct starts with __u32 size, the size of the struct
 *    the caller was built with.  The kernel accepts any size from the
 *    first published version of the struct (NXQ_*_SIZE_VER0) up to a page:
 *    a smaller caller gets zeros for fields it does not know, a larger
 *    caller must zero the bytes the kernel does not know (else -E2BIG).
 *    Output is written back for min(size, kernel size) bytes.
 *  - The command is matched on type, number and direction; the size bits
 *    of the ioctl number are ignored because the size field carries it.
 *  - Padding and reserved fields must be zero (else -EINVAL); unknown
 *    flags are refused (-EINVAL); unknown commands get -ENOTTY.
 *  - Byte counts are __u64 and are never rounded by the kernel.
 */
#ifndef _UAPI_LINUX_NXQUOTA_H
#define _UAPI_LINUX_NXQUOTA_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NXQ_DEVICE_NAME		"nxquota"	/* /dev/nxquota */
/*
 * 3: the ioctl magic moved from 0xB7 (nsfs's and remoteproc's) to 0xB9,
 * free in Documentation/userspace-api/ioctl/ioctl-number.rst.
 */
#define NXQ_ABI_VERSION		3

/*
 * Device keys: "GPU-<uuid>", "host0", ... NUL-terminated, [A-Za-z0-9._:-],
 * not "." or "..".
 */
#define NXQ_DEVICE_KEY_MAX	64

/* Feature bits reported by NXQ_IOC_VERSION. */
#define NXQ_FEAT_HOLDERS	(1ULL << 0)	/* register/unregister */
#define NXQ_FEAT_CHARGE		(1ULL << 1)	/* charge/uncharge/reclaimable */
#define NXQ_FEAT_STATUS		(1ULL << 2)	/* NXQ_IOC_STATUS */
#define NXQ_FEAT_CHARGE_WAIT	(1ULL << 3)	/* NXQ_CHARGE_WAIT is honoured */
#define NXQ_FEAT_TICKETS	(1ULL << 4)	/* pressure tickets */
#define NXQ_FEAT_STATUS_V1	(1ULL << 5)	/* NXQ_IOC_STATUS's v1 fields */
#define NXQ_FEAT_CHARGE_PROBE	(1ULL << 6)	/* NXQ_CHARGE_PROBE */
#define NXQ_FEAT_CHARGE_V1	(1ULL << 7)	/* struct nxq_charge's v1 fields */

/**
 * struct nxq_version - NXQ_IOC_VERSION
 * @size: in, sizeof(struct nxq_version)
 * @abi_version: out, NXQ_ABI_VERSION of the running module
 * @features: out, NXQ_FEAT_* supported by the running module
 */
struct nxq_version {
	__u32 size;
	__u32 abi_version;
	__u64 features;
};
#define NXQ_VERSION_SIZE_VER0	16

/* Holder registration flags. */
#define NXQ_HOLDER_DEVFD	(1U << 0)	/* devfd carries a device node */
#define NXQ_HOLDER_FLAGS_ALL	NXQ_HOLDER_DEVFD

/*
 * Priorities: 0 is the default; higher is more important.  A holder may
 * register above 0 only up to its cgroup's priority_max (0 unless root
 * raises it).
 */
#define NXQ_PRIORITY_MAX	1000U

/**
 * struct nxq_holder_reg - NXQ_IOC_HOLDER_REGISTER
 * @size: in, sizeof(struct nxq_holder_reg)
 * @flags: in, NXQ_HOLDER_*
 * @device: in, NUL-terminated key of a registered device
 * @eventfd: in, an eventfd the module signals for this holder, or -1; a
 *	holder without one cannot be asked for memory, so it cannot borrow
 *	(charge its cgroup above its effective min)
 * @priority: in, 0..the cgroup's priority_max (-EPERM above it)
 * @holder_id: out, non-zero id, valid on this open file, for the
 *	registering process only
 * @devfd: in, with NXQ_HOLDER_DEVFD: an open file of the character device
 *	whose dev_t root gave when registering @device (e.g. /dev/nvidia0);
 *	required for such a device (-EACCES without it or for another
 *	node, -EBADF if not open); without the flag it must be 0
 * @reserved: must be 0
 *
 * The holder is bound to the caller's cgroup (cgroup v2, as the kernel sees
 * it at registration) and to @device, and belongs to the calling process
 * (its thread group): other processes get -ENOENT for its id.  It lives
 * until NXQ_IOC_HOLDER_UNREGISTER, the exit of that process, or the
 * release of the file, whichever comes first; each uncharges it.
 */
struct nxq_holder_reg {
	__u32 size;
	__u32 flags;
	char device[NXQ_DEVICE_KEY_MAX];
	__s32 eventfd;
	__u32 priority;
	__u64 holder_id;
	__s32 devfd;
	__u32 reserved;
};
#define NXQ_HOLDER_REG_SIZE_VER0	96

/**
 * struct nxq_holder_id - NXQ_IOC_HOLDER_UNREGISTER
 * @size: in, sizeof(struct nxq_holder_id)
 * @flags: in, must be 0
 * @holder_id: in
 */
struct nxq_holder_id {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
};
#define NXQ_HOLDER_ID_SIZE_VER0		16

/* Charge flags. */
#define NXQ_CHARGE_NOWAIT	(1U << 0)	/* fail at once (the default) */
#define NXQ_CHARGE_WAIT		(1U << 1)	/* wait up to timeout_ns */
/*
 * A refusal is not counted, reported or asked for: the caller will ask
 * again for less (a batch first, then the allocation alone).  Not with
 * NXQ_CHARGE_WAIT.
 */
#define NXQ_CHARGE_PROBE	(1U << 2)
#define NXQ_CHARGE_FLAGS_ALL	(NXQ_CHARGE_NOWAIT | NXQ_CHARGE_WAIT | \
				 NXQ_CHARGE_PROBE)

/**
 * struct nxq_charge - NXQ_IOC_CHARGE and NXQ_IOC_UNCHARGE
 * @size: in, sizeof(struct nxq_charge)
 * @flags: in, NXQ_CHARGE_* for a charge, 0 for an uncharge
 * @holder_id: in
 * @bytes: in, bytes to add to (charge) or take from (uncharge) the holder
 * @timeout_ns: in, with NXQ_CHARGE_WAIT the longest wait; else must be 0
 * @charged: out, the holder's charge after the call
 *
 * A charge either charges @bytes on every budget node from the holder's
 * cgroup to the root and on the device, or changes nothing.
 *
 * Version 1 (NXQ_FEAT_CHARGE_V1): a refusal names what refused, in the
 * same call, as the dmem controller hands back its limiting pool.  A
 * charge that fails in the ledger (not on its arguments: -EINVAL,
 * -EFAULT and the rest change nothing of the struct) is copied back too,
 * and returns its errno all the same; a granted one has these fields 0.
 * An uncharge takes none of them: they must be 0.
 * @path: in, a pointer to a buffer for the refusing node's cgroup path,
 *	or 0 for none
 * @path_size: in, that buffer's size (0 exactly when @path is 0)
 * @refused_reason: out, NXQ_REFUSED_*: the limit that refused (for a
 *	charge that timed out, the one it waited on); 0 when the failure
 *	names none (-EAGAIN, -ENOENT, -EINTR, -EOVERFLOW)
 * @refused_level: out, the node that refused: 0 the holder's cgroup, 1
 *	its parent, ...; NXQ_LEVEL_DEVICE for the device's capacity
 * @path_len: out, the length of the path written to @path (NUL
 *	excluded), relative to the caller's cgroup namespace, as
 *	/proc/self/cgroup shows paths; 0 with nothing written when the node
 *	lies outside that namespace (above its root: @refused_level says
 *	how far up), is gone, is the device, or the path does not fit
 * @refused_id: out, the refusing node's cgroup id, 0 for the device
 * @refused_limit: out, its limit then: its max, the device's default_max,
 *	or for a holder without an eventfd its effective min; the capacity
 *	for the device
 * @refused_min: out, its min then
 * @refused_usage: out, what counted against @refused_limit then
 */
struct nxq_charge {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
	__u64 bytes;
	__u64 timeout_ns;
	__u64 charged;
	__u64 path;
	__u32 path_size;
	__u32 refused_reason;
	__u32 refused_level;
	__u32 path_len;
	__u64 refused_id;
	__u64 refused_limit;
	__u64 refused_min;
	__u64 refused_usage;
};
#define NXQ_CHARGE_SIZE_VER0		40
#define NXQ_CHARGE_SIZE_VER1		96

/* struct nxq_charge.refused_reason */
#define NXQ_REFUSED_MAX		1	/* the node's max */
#define NXQ_REFUSED_DEFAULT_MAX	2	/* the device's default_max, which
					 * bounds a top cgroup without a
					 * budget */
#define NXQ_REFUSED_MIN		3	/* the node's effective min: a holder
					 * without an eventfd cannot give
					 * memory back, so it charges only
					 * within a guarantee */
#define NXQ_REFUSED_CAPACITY	4	/* the device's capacity */

/**
 * struct nxq_reclaimable - NXQ_IOC_SET_RECLAIMABLE
 * @size: in, sizeof(struct nxq_reclaimable)
 * @flags: in, must be 0
 * @holder_id: in
 * @bytes: in, bytes of the holder's charge it can release quickly;
 *	must not exceed its charge
 */
struct nxq_reclaimable {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
	__u64 bytes;
};
#define NXQ_RECLAIMABLE_SIZE_VER0	24

/* Sentinel for "no limit" in max fields. */
#define NXQ_UNLIMITED		(~0ULL)

/**
 * struct nxq_status - NXQ_IOC_STATUS
 * @size: in, sizeof(struct nxq_status)
 * @flags: in, must be 0
 * @holder_id: in, the holder whose budget is reported
 * @holder_charge: out, the holder's charge
 * @holder_reclaimable: out, the holder's reclaimable bytes
 * @cgroup_id: out, kernfs id of the holder's cgroup
 * @node_current: out, bytes charged in the holder's cgroup and below
 * @node_max: out, its max (NXQ_UNLIMITED when unset)
 * @node_min: out, its min (its guarantee, as set)
 * @node_effective_min: out, the guarantee after the tree's limits
 * @headroom: out, bytes a charge could take now: the least room left
 *	under any max on the path and the device's capacity
 * @device_capacity: out
 * @device_used: out, bytes charged on the device by everyone
 *
 * Version 1 (NXQ_FEAT_STATUS_V1; an authority without it leaves these 0):
 * @node_effective_max: out, the least limit a charge in the holder's
 *	cgroup meets (its max and its ancestors', default_max where it
 *	applies); NXQ_UNLIMITED when none
 * @room: out, what one more charge of this holder could take now: the
 *	headroom, and for a holder without an eventfd (which cannot borrow)
 *	what its cgroup's effective min leaves it
 * @limit: out, the most this holder's cgroup could hold: its effective
 *	max and the capacity, and for a holder without an eventfd, the most
 *	its effective min could reach (what a budget-aware cuMemGetInfo
 *	reports as total)
 * @last_error: out, the positive errno of the holder's last refused
 *	charge (EDQUOT, ENOSPC, ...), 0 for none
 * @last_level: out, the node that refused it: 0 the holder's cgroup, 1 its
 *	parent, and so on; NXQ_LEVEL_DEVICE for the device's capacity
 * @last_bytes: out, that charge's bytes
 * @last_limit: out, that node's limit then: its max, default_max, or for
 *	a holder without an eventfd its effective min; the capacity for the
 *	device
 * @last_min: out, that node's min then
 * @last_usage: out, what counted against @last_limit then
 * @last_ns: out, when it was refused (CLOCK_MONOTONIC)
 */
struct nxq_status {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
	__u64 holder_charge;
	__u64 holder_reclaimable;
	__u64 cgroup_id;
	__u64 node_current;
	__u64 node_max;
	__u64 node_min;
	__u64 node_effective_min;
	__u64 headroom;
	__u64 device_capacity;
	__u64 device_used;
	__u64 node_effective_max;
	__u64 room;
	__u64 limit;
	__u32 last_error;
	__u32 last_level;
	__u64 last_bytes;
	__u64 last_limit;
	__u64 last_min;
	__u64 last_usage;
	__u64 last_ns;
};
#define NXQ_STATUS_SIZE_VER0		96
#define NXQ_STATUS_SIZE_VER1		168
#define NXQ_LEVEL_DEVICE		0xffffffffU

/*
 * The most bytes a guarantee (a min), or the guarantees claimed under one
 * budget node, may add up to (as mm/page_counter.c's PAGE_COUNTER_MAX):
 * the ledger refuses more with EOVERFLOW, overcommit or not, so that no
 * sum it keeps can wrap.  4 EiB.
 */
#define NXQ_BYTES_MAX		(1ULL << 62)

/*
 * The vocabulary of the budget and device tables (NXQ_BUDGET_FIELDS and
 * NXQ_DEVICE_FIELDS below): what an attribute counts, how its text is
 * read, and who may set it.
 */
enum nxq_unit {
	NXQ_UNIT_BYTES,		/* bytes of device memory (charge) */
	NXQ_UNIT_MS,		/* milliseconds */
	NXQ_UNIT_NUMBER,	/* a count or a level, no unit */
	NXQ_UNIT_BOOL,		/* 0 or 1 */
	NXQ_UNIT_FLAG,		/* given or not */
};

enum nxq_parse {
	/* digits, then optionally K, M, G, T, P or E (powers of 1024, as
	 * memparse() and memory.max read them; also Ki .. Ei) */
	NXQ_PARSE_SIZE,
	NXQ_PARSE_SIZE_MAX,	/* as NXQ_PARSE_SIZE, or "max": NXQ_UNLIMITED */
	NXQ_PARSE_BOOL,		/* "0" or "1" */
	NXQ_PARSE_FLAG,		/* the name alone ("overcommit") */
	NXQ_PARSE_U32,		/* decimal digits */
};

enum nxq_who {
	NXQ_WHO_ANY,		/* whoever may open the door */
	NXQ_WHO_ADMIN,		/* CAP_SYS_ADMIN in the initial user namespace */
};

/* BEGIN YNL-GEN nxquota budget */
/*
 * The budget table (daemon/ynl-gen.sh, from the spec: every attribute of
 * budget-set's request but the device and the cgroup).  Not to be edited:
 * change the spec and run daemon/ynl-gen.sh --write.  The columns are
 * derived from what the spec says (ynl-gen.sh tells how);
 * NXQ_BUDGET_FIELDS(X) calls, for each,
 *   X(name, NAME, attr, unit, parse, lo, hi, dflt, who, lim, kept)
 * name   its name in sysfs, nxquotad's state file and JSON (netlink and
 *        nxquotactl's words spell it with '-'); NAME its enum suffix
 * attr   its netlink attribute
 * unit   NXQ_UNIT_*: a u64 is bytes, a u8 checked to 1 a boolean, a flag
 *        a flag, a u32 milliseconds when its name ends in _ms, else a
 *        number
 * parse  NXQ_PARSE_*: how its text is read
 * lo, hi the values root may set (the spec's checks); a size without
 *        checks goes up to NXQ_UNLIMITED where "max" is all ones, else
 *        NXQ_BYTES_MAX, which the ledger checks itself (its errno, its
 *        refusal's reason)
 * dflt   what a cgroup that sets none gets: the spec's const
 *        NAME-default; without one, NXQ_UNLIMITED where "max" is all
 *        ones (no max of its own), else 0.  Whom it binds and what is
 *        inherited is the ledger's (kmod/counter.c)
 * who    NXQ_WHO_*, from budget-set's flags
 * lim    its enum nxq_limit when it is a per-cgroup limit (a u32 with a
 *        max), else -1
 * kept   1 when budget-get reports it (a node keeps it), 0 for a
 *        modifier of the request alone
 */
#define NXQ_BUDGET_FIELDS(X) \
	X(max, MAX, NXQUOTA_A_BUDGET_MAX, \
	  NXQ_UNIT_BYTES, NXQ_PARSE_SIZE_MAX, 0, NXQ_UNLIMITED, \
	  NXQ_UNLIMITED, NXQ_WHO_ADMIN, -1, 1) \
	X(min, MIN, NXQUOTA_A_BUDGET_MIN, \
	  NXQ_UNIT_BYTES, NXQ_PARSE_SIZE, 0, NXQ_BYTES_MAX, \
	  0, NXQ_WHO_ADMIN, -1, 1) \
	X(kill_on_ignore, KILL_ON_IGNORE, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, \
	  NXQ_UNIT_BOOL, NXQ_PARSE_BOOL, 0, 1, \
	  0, NXQ_WHO_ADMIN, -1, 1) \
	X(holders_max, HOLDERS_MAX, NXQUOTA_A_BUDGET_HOLDERS_MAX, \
	  NXQ_UNIT_NUMBER, NXQ_PARSE_U32, 0, 4294967294U, \
	  NXQUOTA_HOLDERS_MAX_DEFAULT, NXQ_WHO_ADMIN, NXQ_LIM_HOLDERS_MAX, 1) \
	X(waiters_max, WAITERS_MAX, NXQUOTA_A_BUDGET_WAITERS_MAX, \
	  NXQ_UNIT_NUMBER, NXQ_PARSE_U32, 0, 4294967294U, \
	  NXQUOTA_WAITERS_MAX_DEFAULT, NXQ_WHO_ADMIN, NXQ_LIM_WAITERS_MAX, 1) \
	X(priority_max, PRIORITY_MAX, NXQUOTA_A_BUDGET_PRIORITY_MAX, \
	  NXQ_UNIT_NUMBER, NXQ_PARSE_U32, 0, 1000U, \
	  NXQUOTA_PRIORITY_MAX_DEFAULT, NXQ_WHO_ADMIN, NXQ_LIM_PRIORITY_MAX, 1) \
	X(wait_max_ms, WAIT_MAX_MS, NXQUOTA_A_BUDGET_WAIT_MAX_MS, \
	  NXQ_UNIT_MS, NXQ_PARSE_U32, 0, 3600000U, \
	  NXQUOTA_WAIT_MAX_MS_DEFAULT, NXQ_WHO_ADMIN, NXQ_LIM_WAIT_MAX_MS, 1) \
	X(overcommit, OVERCOMMIT, NXQUOTA_A_BUDGET_OVERCOMMIT, \
	  NXQ_UNIT_FLAG, NXQ_PARSE_FLAG, 0, 1, \
	  0, NXQ_WHO_ADMIN, -1, 0)

/* The budget table by number. */
enum nxq_budget_field {
	NXQ_BF_MAX,
	NXQ_BF_MIN,
	NXQ_BF_KILL_ON_IGNORE,
	NXQ_BF_HOLDERS_MAX,
	NXQ_BF_WAITERS_MAX,
	NXQ_BF_PRIORITY_MAX,
	NXQ_BF_WAIT_MAX_MS,
	NXQ_BF_OVERCOMMIT,
	NXQ_NR_BUDGET_FIELDS,
};

/*
 * The per-cgroup limits, of those: NXQ_LIMITS(X) calls X(name, NAME,
 * attr, max) for each, as NXQ_BUDGET_FIELDS has them (max is its hi).
 */
#define NXQ_LIMITS(X) \
	X(holders_max, HOLDERS_MAX, NXQUOTA_A_BUDGET_HOLDERS_MAX, 4294967294U) \
	X(waiters_max, WAITERS_MAX, NXQUOTA_A_BUDGET_WAITERS_MAX, 4294967294U) \
	X(priority_max, PRIORITY_MAX, NXQUOTA_A_BUDGET_PRIORITY_MAX, 1000U) \
	X(wait_max_ms, WAIT_MAX_MS, NXQUOTA_A_BUDGET_WAIT_MAX_MS, 3600000U)

/* The limits by number: a node keeps one value of each. */
enum nxq_limit {
	NXQ_LIM_HOLDERS_MAX,
	NXQ_LIM_WAITERS_MAX,
	NXQ_LIM_PRIORITY_MAX,
	NXQ_LIM_WAIT_MAX_MS,
	NXQ_NR_LIMITS,
};

/* Their defaults, by number: the ledger's (kmod/counter.c) initializer. */
#define NXQ_LIMIT_DEFAULTS { \
	[NXQ_LIM_HOLDERS_MAX] = NXQUOTA_HOLDERS_MAX_DEFAULT, \
	[NXQ_LIM_WAITERS_MAX] = NXQUOTA_WAITERS_MAX_DEFAULT, \
	[NXQ_LIM_PRIORITY_MAX] = NXQUOTA_PRIORITY_MAX_DEFAULT, \
	[NXQ_LIM_WAIT_MAX_MS] = NXQUOTA_WAIT_MAX_MS_DEFAULT, \
}

/*
 * The device table (daemon/ynl-gen.sh, from the spec: every attribute of
 * device-add's and device-set's requests but the key and the devt, which
 * say which device and prove its node).  Not to be edited, as the budget
 * table.  NXQ_DEVICE_FIELDS(X) calls, for each,
 *   X(name, NAME, attr, unit, parse, lo, hi, dflt, who, add, set)
 * name .. who  as the budget table's, derived the same way: its name in
 *        sysfs (the device's file), nxquotad's state file and JSON; a
 *        size without checks goes up to NXQ_UNLIMITED where "max" is all
 *        ones, else NXQ_BYTES_MAX (capacity: no door nor the ledger
 *        checks it yet, as before the table); dflt what a device
 *        registered without it gets (the const NAME-default, else as the
 *        budget table's)
 * add    1 when device-add takes it (the device starts with it)
 * set    1 when device-set changes it
 */
#define NXQ_DEVICE_FIELDS(X) \
	X(capacity, CAPACITY, NXQUOTA_A_DEVICE_CAPACITY, \
	  NXQ_UNIT_BYTES, NXQ_PARSE_SIZE, 0, NXQ_BYTES_MAX, \
	  0, NXQ_WHO_ADMIN, 1, 1) \
	X(ticket_timeout_ms, TICKET_TIMEOUT_MS, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, \
	  NXQ_UNIT_MS, NXQ_PARSE_U32, 1, 3600000U, \
	  NXQUOTA_TICKET_TIMEOUT_MS_DEFAULT, NXQ_WHO_ADMIN, 0, 1) \
	X(default_max, DEFAULT_MAX, NXQUOTA_A_DEVICE_DEFAULT_MAX, \
	  NXQ_UNIT_BYTES, NXQ_PARSE_SIZE_MAX, 0, NXQ_UNLIMITED, \
	  NXQUOTA_DEFAULT_MAX_DEFAULT, NXQ_WHO_ADMIN, 0, 1)

/* The device table by number. */
enum nxq_device_field {
	NXQ_DF_CAPACITY,
	NXQ_DF_TICKET_TIMEOUT_MS,
	NXQ_DF_DEFAULT_MAX,
	NXQ_NR_DEVICE_FIELDS,
};
/* END YNL-GEN nxquota budget */

/*
 * Pressure tickets.  When a charge does not fit, the module asks holders
 * that can give memory back: it opens a ticket on each chosen holder and
 * adds 1 to the holder's eventfd.  The holder reads the eventfd, reads its
 * ticket (NXQ_IOC_TICKET_READ), releases what it chooses -- possibly
 * nothing -- and answers (NXQ_IOC_TICKET_ANSWER), which uncharges what it
 * released and closes the ticket.  A holder has at most one open ticket;
 * a later ask on an open ticket raises its bytes and its generation.
 */
#define NXQ_TICKET_REASON_MAX		1	/* a charge under a max waits */
#define NXQ_TICKET_REASON_DEVICE	2	/* the device is full; you borrow */
#define NXQ_TICKET_REASON_BUDGET	3	/* your max was lowered below use */

#define NXQ_TICKET_LEVEL_ASK		0	/* give what you can spare */
#define NXQ_TICKET_LEVEL_RECALL		1	/* a guarantee is called back */

/**
 * struct nxq_ticket - NXQ_IOC_TICKET_READ
 * @size: in, sizeof(struct nxq_ticket)
 * @flags: in, must be 0
 * @holder_id: in
 * @generation: out, non-zero; changes whenever the ticket is raised
 * @bytes: out, bytes asked
 * @deadline_ns: out, CLOCK_MONOTONIC time after which the asker gives up
 *	or, where the cgroup's kill policy is on, escalates
 * @reason: out, NXQ_TICKET_REASON_*
 * @level: out, NXQ_TICKET_LEVEL_*
 */
struct nxq_ticket {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
	__u64 generation;
	__u64 bytes;
	__u64 deadline_ns;
	__u32 reason;
	__u32 level;
};
#define NXQ_TICKET_SIZE_VER0		48

/**
 * struct nxq_ticket_answer - NXQ_IOC_TICKET_ANSWER
 * @size: in, sizeof(struct nxq_ticket_answer)
 * @flags: in, must be 0
 * @holder_id: in
 * @generation: in, the generation read; a stale one is refused
 * @released: in, bytes released, uncharged by this call; may be 0
 * @charged: out, the holder's charge after the call
 */
struct nxq_ticket_answer {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
	__u64 generation;
	__u64 released;
	__u64 charged;
};
#define NXQ_TICKET_ANSWER_SIZE_VER0	40

#define NXQ_IOC_MAGIC	0xB9

#define NXQ_IOC_VERSION		_IOWR(NXQ_IOC_MAGIC, 0x00, struct nxq_version)
#define NXQ_IOC_HOLDER_REGISTER	_IOWR(NXQ_IOC_MAGIC, 0x01, struct nxq_holder_reg)
#define NXQ_IOC_HOLDER_UNREGISTER _IOW(NXQ_IOC_MAGIC, 0x02, struct nxq_holder_id)
#define NXQ_IOC_CHARGE		_IOWR(NXQ_IOC_MAGIC, 0x03, struct nxq_charge)
#define NXQ_IOC_UNCHARGE	_IOWR(NXQ_IOC_MAGIC, 0x04, struct nxq_charge)
#define NXQ_IOC_SET_RECLAIMABLE	_IOW(NXQ_IOC_MAGIC, 0x05, struct nxq_reclaimable)
#define NXQ_IOC_STATUS		_IOWR(NXQ_IOC_MAGIC, 0x06, struct nxq_status)
#define NXQ_IOC_TICKET_READ	_IOWR(NXQ_IOC_MAGIC, 0x07, struct nxq_ticket)
#define NXQ_IOC_TICKET_ANSWER	_IOWR(NXQ_IOC_MAGIC, 0x08, struct nxq_ticket_answer)

/*
 * ---- Generic netlink family "nxquota" ----------------------------------
 *
 * Dumps of devices, budget nodes and holders; device and budget
 * administration (CAP_SYS_ADMIN in the initial user namespace, as for
 * sysfs); a multicast group of ledger events (same capability to join).
 * A caller without the capability sees every device but only the budget
 * nodes and holders of its own cgroup subtree, with paths relative to its
 * cgroup namespace.  Byte counts are u64 attributes
 * (padded with the set's PAD attribute); max is NXQ_UNLIMITED when unset.
 * Documentation/userspace-api/nxquota-netlink.rst describes every
 * command; the text between the markers below is generated from
 * Documentation/netlink/specs/nxquota.yaml by the kernel's
 * tools/net/ynl/ynl-gen-c.py --mode uapi (tests/tools/check-spec.sh
 * checks it).
 */
/* BEGIN YNL-GEN nxquota */
#define NXQUOTA_FAMILY_NAME	"nxquota"
#define NXQUOTA_FAMILY_VERSION	1

#define NXQUOTA_HOLDERS_MAX_DEFAULT		1024
#define NXQUOTA_WAITERS_MAX_DEFAULT		64
#define NXQUOTA_PRIORITY_MAX_DEFAULT		0
#define NXQUOTA_WAIT_MAX_MS_DEFAULT		30000
#define NXQUOTA_DEFAULT_MAX_DEFAULT		0
#define NXQUOTA_TICKET_TIMEOUT_MS_DEFAULT	1000

/**
 * enum nxquota_event_type - What an event reports.
 * @NXQUOTA_EVENT_TYPE_DEVICE_ADDED: A device was registered; bytes is its
 *   capacity.
 * @NXQUOTA_EVENT_TYPE_DEVICE_REMOVED: A device was unregistered.
 * @NXQUOTA_EVENT_TYPE_BUDGET_CHANGED: A budget node's max or min was set;
 *   bytes is max, value is min.
 * @NXQUOTA_EVENT_TYPE_DENIED: A charge was refused; cgroup-id is the charging
 *   holder's cgroup, bytes the charge, reason its errno, and value the cgroup
 *   id of the node that refused it (its max, default-max, or the guarantee a
 *   holder without an eventfd draws on), 0 for the device's capacity.
 * @NXQUOTA_EVENT_TYPE_TICKET_ISSUED: A pressure ticket was opened or raised;
 *   bytes is what is asked, value the generation, reason the ticket reason.
 * @NXQUOTA_EVENT_TYPE_TICKET_ANSWERED: A ticket was answered; bytes is what
 *   was released, value the generation.
 * @NXQUOTA_EVENT_TYPE_KILLED: A holder that ignored its ticket was killed;
 *   bytes is its charge.
 * @NXQUOTA_EVENT_TYPE_ESCAPED: nxquotad's backstop (nxquotad -b) measured,
 *   through NVML, more device memory in a cgroup's subtree than its max and
 *   the allowance let it hold; cgroup-id is the budget node's, pid the process
 *   named (the one whose measured use its holders' charges cover least), bytes
 *   what the process uses beyond its charges, value what the subtree uses,
 *   reason 0 when only named, 9 (SIGKILL) when killed (nxquotad -k). The
 *   module never sends it.
 */
enum nxquota_event_type {
	NXQUOTA_EVENT_TYPE_DEVICE_ADDED = 1,
	NXQUOTA_EVENT_TYPE_DEVICE_REMOVED,
	NXQUOTA_EVENT_TYPE_BUDGET_CHANGED,
	NXQUOTA_EVENT_TYPE_DENIED,
	NXQUOTA_EVENT_TYPE_TICKET_ISSUED,
	NXQUOTA_EVENT_TYPE_TICKET_ANSWERED,
	NXQUOTA_EVENT_TYPE_KILLED,
	NXQUOTA_EVENT_TYPE_ESCAPED,
};

enum {
	NXQUOTA_A_DEVICE_PAD = 1,
	NXQUOTA_A_DEVICE_KEY,
	NXQUOTA_A_DEVICE_CAPACITY,
	NXQUOTA_A_DEVICE_USED,
	NXQUOTA_A_DEVICE_HOLDERS,
	NXQUOTA_A_DEVICE_DENIALS,
	NXQUOTA_A_DEVICE_CAPACITY_HITS,
	NXQUOTA_A_DEVICE_TICKETS,
	NXQUOTA_A_DEVICE_BYTES_ASKED,
	NXQUOTA_A_DEVICE_BYTES_RELEASED,
	NXQUOTA_A_DEVICE_KILLS,
	NXQUOTA_A_DEVICE_WAITS,
	NXQUOTA_A_DEVICE_TIMEOUTS,
	NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS,
	NXQUOTA_A_DEVICE_DEVT,
	NXQUOTA_A_DEVICE_DEFAULT_MAX,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED,
	NXQUOTA_A_DEVICE_WAITERS,
	NXQUOTA_A_DEVICE_CONNS_REFUSED,
	NXQUOTA_A_DEVICE_CREDS_REFUSED,
	NXQUOTA_A_DEVICE_RESTORED,
	NXQUOTA_A_DEVICE_RESTORE_REFUSED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_ADDED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_REMOVED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_BUDGET_CHANGED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_DENIED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_TICKET_ISSUED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_TICKET_ANSWERED,
	NXQUOTA_A_DEVICE_EVENTS_DROPPED_KILLED,

	__NXQUOTA_A_DEVICE_MAX,
	NXQUOTA_A_DEVICE_MAX = (__NXQUOTA_A_DEVICE_MAX - 1)
};

enum {
	NXQUOTA_A_BUDGET_PAD = 1,
	NXQUOTA_A_BUDGET_DEVICE,
	NXQUOTA_A_BUDGET_CGROUP_ID,
	NXQUOTA_A_BUDGET_CGROUP_PATH,
	NXQUOTA_A_BUDGET_PARENT_ID,
	NXQUOTA_A_BUDGET_MAX,
	NXQUOTA_A_BUDGET_MIN,
	NXQUOTA_A_BUDGET_EFFECTIVE_MIN,
	NXQUOTA_A_BUDGET_CURRENT,
	NXQUOTA_A_BUDGET_BORROWED,
	NXQUOTA_A_BUDGET_HEADROOM,
	NXQUOTA_A_BUDGET_MAX_HITS,
	NXQUOTA_A_BUDGET_DENIALS,
	NXQUOTA_A_BUDGET_HOLDERS,
	NXQUOTA_A_BUDGET_TICKETS,
	NXQUOTA_A_BUDGET_BYTES_ASKED,
	NXQUOTA_A_BUDGET_BYTES_RELEASED,
	NXQUOTA_A_BUDGET_KILLS,
	NXQUOTA_A_BUDGET_KILL_ON_IGNORE,
	NXQUOTA_A_BUDGET_HOLDERS_MAX,
	NXQUOTA_A_BUDGET_WAITERS_MAX,
	NXQUOTA_A_BUDGET_PRIORITY_MAX,
	NXQUOTA_A_BUDGET_WAIT_MAX_MS,
	NXQUOTA_A_BUDGET_EFFECTIVE_MAX,
	NXQUOTA_A_BUDGET_CLAIMED,
	NXQUOTA_A_BUDGET_OVERCOMMITTED,
	NXQUOTA_A_BUDGET_OVERCOMMIT,
	NXQUOTA_A_BUDGET_MEASURED,
	NXQUOTA_A_BUDGET_ESCAPED,

	__NXQUOTA_A_BUDGET_CNT,
	NXQUOTA_A_BUDGET_LAST = (__NXQUOTA_A_BUDGET_CNT - 1)
};

enum {
	NXQUOTA_A_HOLDER_PAD = 1,
	NXQUOTA_A_HOLDER_DEVICE,
	NXQUOTA_A_HOLDER_CGROUP_ID,
	NXQUOTA_A_HOLDER_PID,
	NXQUOTA_A_HOLDER_PRIORITY,
	NXQUOTA_A_HOLDER_CHARGE,
	NXQUOTA_A_HOLDER_RECLAIMABLE,
	NXQUOTA_A_HOLDER_TICKET_OPEN,
	NXQUOTA_A_HOLDER_TICKET_GENERATION,
	NXQUOTA_A_HOLDER_TICKET_BYTES,
	NXQUOTA_A_HOLDER_TICKET_REASON,
	NXQUOTA_A_HOLDER_TICKET_LEVEL,
	NXQUOTA_A_HOLDER_TICKET_DEADLINE_NS,

	__NXQUOTA_A_HOLDER_MAX,
	NXQUOTA_A_HOLDER_MAX = (__NXQUOTA_A_HOLDER_MAX - 1)
};

enum {
	NXQUOTA_A_EVENT_PAD = 1,
	NXQUOTA_A_EVENT_TYPE,
	NXQUOTA_A_EVENT_DEVICE,
	NXQUOTA_A_EVENT_CGROUP_ID,
	NXQUOTA_A_EVENT_PID,
	NXQUOTA_A_EVENT_BYTES,
	NXQUOTA_A_EVENT_VALUE,
	NXQUOTA_A_EVENT_REASON,
	NXQUOTA_A_EVENT_TIMESTAMP_NS,
	NXQUOTA_A_EVENT_COUNT,

	__NXQUOTA_A_EVENT_MAX,
	NXQUOTA_A_EVENT_MAX = (__NXQUOTA_A_EVENT_MAX - 1)
};

enum {
	NXQUOTA_CMD_DEVICE_GET = 1,
	NXQUOTA_CMD_DEVICE_ADD,
	NXQUOTA_CMD_DEVICE_DEL,
	NXQUOTA_CMD_DEVICE_SET,
	NXQUOTA_CMD_BUDGET_GET,
	NXQUOTA_CMD_BUDGET_SET,
	NXQUOTA_CMD_BUDGET_CLEAR,
	NXQUOTA_CMD_HOLDER_GET,
	NXQUOTA_CMD_EVENT,

	__NXQUOTA_CMD_MAX,
	NXQUOTA_CMD_MAX = (__NXQUOTA_CMD_MAX - 1)
};

#define NXQUOTA_MCGRP_EVENTS	"events"
/* END YNL-GEN nxquota */

#endif /* _UAPI_LINUX_NXQUOTA_H */
