// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: the ABI's transport-free rules (see abi.h), compiled by the
 * module (cdev.c, netlink.c) and by nxquotad (daemon/client.c, ctl.c), so
 * that both authorities apply one copy of them.  Nothing here owns an
 * object or takes a reference; the ledger calls take their own locks.
 *
 * Size (over 800 lines): one file on purpose for now -- it is the one copy
 * of the ABI both authorities build, and its two halves (the ioctl table
 * with registration's checks and the device proof; the generic netlink
 * ops, policies and messages, 110 lines generated from the YAML spec) are
 * the split to make, into abi-ioctl.c and abi-genl.c, with kmod/Kbuild and
 * daemon/Makefile changed together.
 */
#include <linux/errno.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/kdev_t.h>
#include <linux/indirect_call_wrapper.h>
#include <linux/genetlink.h>
#include <linux/limits.h>
#include <net/netlink.h>

#include "ledger.h"

/* ---- the ioctl commands ---- */

/**
 * nxq_abi_charge_check() - the rules of NXQ_IOC_CHARGE's flags
 * @karg: a struct nxq_charge, copied in
 *
 * NXQ_CHARGE_NOWAIT and NXQ_CHARGE_WAIT exclude each other, and so do
 * NXQ_CHARGE_PROBE and NXQ_CHARGE_WAIT; a timeout is given exactly when
 * NXQ_CHARGE_WAIT is.
 *
 * Context: any.
 * Return: 0, or -EINVAL.
 */
int nxq_abi_charge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	if ((a->flags & NXQ_CHARGE_NOWAIT) && (a->flags & NXQ_CHARGE_WAIT))
		return -EINVAL;
	if ((a->flags & NXQ_CHARGE_PROBE) && (a->flags & NXQ_CHARGE_WAIT))
		return -EINVAL;
	if (!!(a->flags & NXQ_CHARGE_WAIT) != !!a->timeout_ns)
		return -EINVAL;
	return 0;
}

/**
 * nxq_abi_uncharge_check() - the rules of NXQ_IOC_UNCHARGE's arguments
 * @karg: a struct nxq_charge, copied in
 *
 * Context: any.
 * Return: 0, or -EINVAL for a timeout (an uncharge never waits).
 */
int nxq_abi_uncharge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	return a->timeout_ns ? -EINVAL : 0;
}

#define NXQ_ABI_CMD(c, type, v0, fl, hold, o, chk)			\
	[_IOC_NR(c)] = { .cmd = (c), .ksize = sizeof(type), .ver0 = (v0),	\
	  .flags = (fl), .holder = (hold), .out = (o), .check = (chk) }

/*
 * The commands, by number.  A command is copied back when userspace
 * reads its argument (_IOC_READ); its checks run before its holder is
 * looked up.
 */
const struct nxq_abi_cmd nxq_abi_cmds[NXQ_ABI_NR_CMDS] = {
	NXQ_ABI_CMD(NXQ_IOC_VERSION, struct nxq_version, NXQ_VERSION_SIZE_VER0,
		    NXQ_ABI_NO_FLAGS, false, true, NULL),
	NXQ_ABI_CMD(NXQ_IOC_HOLDER_REGISTER, struct nxq_holder_reg,
		    NXQ_HOLDER_REG_SIZE_VER0, NXQ_HOLDER_FLAGS_ALL, false, true,
		    NULL),
	NXQ_ABI_CMD(NXQ_IOC_HOLDER_UNREGISTER, struct nxq_holder_id,
		    NXQ_HOLDER_ID_SIZE_VER0, 0, true, false, NULL),
	NXQ_ABI_CMD(NXQ_IOC_CHARGE, struct nxq_charge, NXQ_CHARGE_SIZE_VER0,
		    NXQ_CHARGE_FLAGS_ALL, true, true, nxq_abi_charge_check),
	NXQ_ABI_CMD(NXQ_IOC_UNCHARGE, struct nxq_charge, NXQ_CHARGE_SIZE_VER0,
		    0, true, true, nxq_abi_uncharge_check),
	NXQ_ABI_CMD(NXQ_IOC_SET_RECLAIMABLE, struct nxq_reclaimable,
		    NXQ_RECLAIMABLE_SIZE_VER0, 0, true, false, NULL),
	NXQ_ABI_CMD(NXQ_IOC_STATUS, struct nxq_status, NXQ_STATUS_SIZE_VER0, 0,
		    true, true, NULL),
	NXQ_ABI_CMD(NXQ_IOC_TICKET_READ, struct nxq_ticket,
		    NXQ_TICKET_SIZE_VER0, 0, true, true, NULL),
	NXQ_ABI_CMD(NXQ_IOC_TICKET_ANSWER, struct nxq_ticket_answer,
		    NXQ_TICKET_ANSWER_SIZE_VER0, 0, true, true, NULL),
};

/* The command without its size bits: the size field carries the size. */
#define NXQ_ABI_CMDNR(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

/**
 * nxq_abi_cmd() - the rules of an ioctl command
 * @cmd: the command as the caller passed it
 *
 * Matched on type, number and direction; the size bits are ignored.
 *
 * Context: any.
 * Return: the command's entry, or NULL (-ENOTTY) for an unknown command.
 */
const struct nxq_abi_cmd *nxq_abi_cmd(unsigned int cmd)
{
	unsigned int i = _IOC_NR(cmd);

	BUILD_BUG_ON(sizeof(struct nxq_holder_reg) > NXQ_ABI_ARG_MAX);
	BUILD_BUG_ON(sizeof(struct nxq_ticket) > NXQ_ABI_ARG_MAX);
	BUILD_BUG_ON(sizeof(struct nxq_charge) > NXQ_ABI_ARG_MAX);
	if (i >= ARRAY_SIZE(nxq_abi_cmds) || !nxq_abi_cmds[i].cmd ||
	    NXQ_ABI_CMDNR(cmd) != NXQ_ABI_CMDNR(nxq_abi_cmds[i].cmd))
		return NULL;
	return &nxq_abi_cmds[i];
}

/**
 * nxq_abi_size() - the rule of an argument's size field
 * @op: the command
 * @usize: the size the caller gives
 *
 * Any size from the first published one up to a page; bytes beyond what
 * this ABI knows must be zero, which the shell checks as it copies them.
 *
 * Context: any.
 * Return: 0, -EINVAL (too small) or -E2BIG (more than a page).
 */
int nxq_abi_size(const struct nxq_abi_cmd *op, u32 usize)
{
	if (usize < op->ver0)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	return 0;
}

/**
 * nxq_abi_args() - the rules of an argument, once copied in
 * @op: the command
 * @karg: the argument, copied in (union nxq_abi_arg)
 *
 * Unknown flags, then the command's own checks.  The charge's and the
 * uncharge's are called directly: this is the path of every arena growth.
 *
 * Context: any.
 * Return: 0, or the errno the command's rules give (-EINVAL).
 */
int nxq_abi_args(const struct nxq_abi_cmd *op, const void *karg)
{
	const struct nxq_abi_head *head = karg;

	if (op->flags != NXQ_ABI_NO_FLAGS && (head->flags & ~op->flags))
		return -EINVAL;
	if (!op->check)
		return 0;
	return INDIRECT_CALL_2(op->check, nxq_abi_charge_check,
			       nxq_abi_uncharge_check, karg);
}

/**
 * nxq_abi_register_check() - the rules of NXQ_IOC_HOLDER_REGISTER's fields
 * @a: the argument, copied in
 *
 * A priority within NXQ_PRIORITY_MAX (the cgroup's priority_max is the
 * ledger's to check), reserved zero, a devfd only with NXQ_HOLDER_DEVFD,
 * a non-empty NUL-terminated device key, an eventfd of -1 or a descriptor.
 * Whether the descriptors are open, and what they are, is each shell's.
 *
 * Context: any.
 * Return: 0, -EINVAL, or -EBADF for an eventfd below -1.
 */
int nxq_abi_register_check(const struct nxq_holder_reg *a)
{
	if (a->priority > NXQ_PRIORITY_MAX || a->reserved)
		return -EINVAL;
	if (!(a->flags & NXQ_HOLDER_DEVFD) && a->devfd)
		return -EINVAL;
	if (strnlen(a->device, sizeof(a->device)) == sizeof(a->device) ||
	    !a->device[0])
		return -EINVAL;
	if (a->eventfd < -1)
		return -EBADF;
	return 0;
}

/**
 * nxq_abi_devnode_check() - the device's access rule
 * @dev: the device a holder registers on
 * @given: a descriptor came with NXQ_HOLDER_DEVFD, open for reading or
 *	writing (an O_PATH one is no proof: the shell does not count it)
 * @chr: it is a character device
 * @rdev: its device number, in the shell's encoding of dev->devt
 *
 * A device registered with a dev_t may be charged only by a caller that
 * can open its node: the descriptor must be that node.
 *
 * Context: any.
 * Return: 0 or -EACCES.
 */
int nxq_abi_devnode_check(const struct nxq_device *dev, bool given, bool chr,
			  dev_t rdev)
{
	if (!dev->devt)
		return 0;
	if (!given || !chr || rdev != dev->devt)
		return -EACCES;
	return 0;
}

/**
 * nxq_abi_version() - fill NXQ_IOC_VERSION's answer
 * @a: the struct to fill
 *
 * Context: any.
 */
void nxq_abi_version(struct nxq_version *a)
{
	a->abi_version = NXQ_ABI_VERSION;
	a->features = NXQ_ABI_FEATURES;
}

/**
 * nxq_abi_status() - fill NXQ_IOC_STATUS's answer
 * @h: the caller's holder
 * @a: the struct to fill
 *
 * Context: process context; takes the device lock.
 * Return: 0.
 */
int nxq_abi_status(struct nxq_holder *h, struct nxq_status *a)
{
	struct nxq_refusal_rec r;
	struct nxq_budget b;

	nxq_holder_status(h, &b, &a->holder_charge, &a->holder_reclaimable,
			  &a->room, &a->limit, &r);
	a->cgroup_id = READ_ONCE(h->node)->id;
	a->node_current = b.current_bytes;
	a->node_max = b.max;
	a->node_min = b.min;
	a->node_effective_min = b.effective_min;
	a->headroom = b.headroom;
	a->device_capacity = b.capacity;
	a->device_used = b.used;
	/* version 1 */
	a->node_effective_max = b.effective_max;
	a->last_error = r.err;
	a->last_level = r.level;
	a->last_bytes = r.bytes;
	a->last_limit = r.limit;
	a->last_min = r.min;
	a->last_usage = r.usage;
	a->last_ns = r.ns;
	return 0;
}

/**
 * nxq_abi_ticket_read() - fill NXQ_IOC_TICKET_READ's answer
 * @h: the caller's holder
 * @a: the struct to fill
 *
 * Context: process context; takes the device lock.
 * Return: 0, or nxq_ticket_read()'s -EAGAIN when no ticket is open.
 */
int nxq_abi_ticket_read(struct nxq_holder *h, struct nxq_ticket *a)
{
	struct nxq_ticket_state t;
	int err;

	err = nxq_ticket_read(h, &t);
	if (err)
		return err;
	a->generation = t.generation;
	a->bytes = t.bytes;
	a->deadline_ns = t.deadline_ns;
	a->reason = t.reason;
	a->level = t.level;
	return 0;
}

/**
 * nxq_abi_ticket_answer() - carry out NXQ_IOC_TICKET_ANSWER
 * @h: the caller's holder
 * @a: the answer; its charged field is set
 *
 * Context: process context; takes the device lock.
 * Return: nxq_ticket_answer()'s.
 */
int nxq_abi_ticket_answer(struct nxq_holder *h, struct nxq_ticket_answer *a)
{
	return nxq_ticket_answer(h, a->generation, a->released, &a->charged);
}

/* ---- the administration's values ---- */

/**
 * nxq_abi_limit_valid() - check a per-cgroup limit's value
 * @which: enum nxq_limit
 * @v: the value
 *
 * Context: any.
 * Return: true if root may set it (priority_max up to NXQ_PRIORITY_MAX,
 * wait_max_ms up to an hour, the counts below NXQ_LIMIT_UNSET).
 */
bool nxq_abi_limit_valid(enum nxq_limit which, u32 v)
{
	switch (which) {
	case NXQ_LIM_PRIORITY:
		return v <= NXQ_PRIORITY_MAX;
	case NXQ_LIM_WAIT_MS:
		return v <= 3600 * 1000;
	default:
		return v != NXQ_LIMIT_UNSET;
	}
}

/**
 * nxq_abi_ticket_timeout_valid() - check a device's ticket timeout
 * @ms: milliseconds
 *
 * Context: any.
 * Return: true for 1 ms to an hour.
 */
bool nxq_abi_ticket_timeout_valid(u32 ms)
{
	return ms && ms <= 3600 * 1000;
}

/**
 * nxq_abi_holder_new() - a registration's holder
 * @l: the ledger; its lock is held
 * @a: the registration, nxq_abi_register_check()ed
 * @proof: the device node it brought
 * @node_of: the shell's node of the caller's cgroup on a device, with a
 *	reference, or an ERR_PTR
 * @ctx: for @node_of
 * @priv: the holder's signal context (nxq_holder_create())
 * @owner: its process, as the shell keeps it
 * @tgid: its process's id
 * @err: set when NULL is returned
 *
 * The device the registration names, the device proof, the node, the
 * holder: what both authorities do, in this order.
 *
 * Context: the ledger lock is held.
 * Return: the holder, or NULL: -ENODEV, -EACCES, @node_of's errno, or
 * nxq_holder_create()'s.
 */
struct nxq_holder *nxq_abi_holder_new(struct nxq_ledger *l,
				      const struct nxq_holder_reg *a,
				      const struct nxq_abi_devnode *proof,
				      struct nxq_node *(*node_of)(struct nxq_device *dev,
								  void *ctx),
				      void *ctx, void *priv, struct pid *owner,
				      u32 tgid, int *err)
{
	struct nxq_device *dev;
	struct nxq_holder *h;
	struct nxq_node *node;

	lockdep_assert_held(&l->lock);
	dev = nxq_device_find(l, a->device);
	if (!dev) {
		*err = -ENODEV;
		return NULL;
	}
	*err = nxq_abi_devnode_check(dev, proof->given, proof->chr,
				     proof->rdev);
	if (*err)
		return NULL;
	node = node_of(dev, ctx);
	if (IS_ERR(node)) {
		*err = PTR_ERR(node);
		return NULL;
	}
	h = nxq_holder_create(node, a->priority, priv, owner, tgid, err);
	if (!h)
		nxq_node_put(node);
	return h;
}

/**
 * nxq_abi_rehome() - a charge follows its process to its new cgroup
 * @h: the holder
 * @node: the node of the process's cgroup now, with a reference the
 *	shell got for it (under the ledger lock), or an ERR_PTR
 *
 * What the process charged before stays where it was (a residue); its
 * next charges go to @node.  The reference is the holder's on success,
 * dropped otherwise.
 *
 * Context: the ledger lock is held.
 * Return: 0 (also when @h was detached or moved already), or the errno
 * of @node or of nxq_holder_rehome().
 */
int nxq_abi_rehome(struct nxq_holder *h, struct nxq_node *node)
{
	int err;

	if (IS_ERR(node))
		return PTR_ERR(node);
	err = nxq_holder_rehome(h, node);
	if (err)
		nxq_node_put(node);
	return err == -ENOENT ? 0 : err;	/* detached, or moved already */
}

/**
 * nxq_abi_parse_devt() - parse "MAJOR:MINOR" (decimal)
 * @s: the text, NUL-terminated, nothing after the minor
 * @major: set on success
 * @minor: set on success
 *
 * Within the kernel's limits (12 bits of major, 20 of minor), and not
 * 0:0, which is no device; each shell encodes the pair as it keeps dev_t.
 *
 * Context: any.
 * Return: 0 or -EINVAL.
 */
int nxq_abi_parse_devt(const char *s, unsigned int *major,
		       unsigned int *minor)
{
	unsigned long long v[2];
	int i;

	for (i = 0; i < 2; i++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v[i] = 0;
		while (*s >= '0' && *s <= '9') {
			v[i] = v[i] * 10 + (*s++ - '0');
			if (v[i] >= (1U << 20))
				return -EINVAL;
		}
		if (*s++ != (i ? '\0' : ':'))
			return -EINVAL;
	}
	if (v[0] >= (1U << 12) || (!v[0] && !v[1]))
		return -EINVAL;
	*major = v[0];
	*minor = v[1];
	return 0;
}

/* ---- the generic netlink family ---- */

#if IS_ENABLED(CONFIG_NET)

/* BEGIN YNL-GEN nxquota kernel (daemon/ynl-gen.sh) */
/* NXQUOTA_CMD_DEVICE_ADD - do */
static const struct nla_policy nxquota_device_add_nl_policy[NXQUOTA_A_DEVICE_DEVT + 1] = {
	[NXQUOTA_A_DEVICE_KEY] = { .type = NLA_NUL_STRING, .len = 63, },
	[NXQUOTA_A_DEVICE_CAPACITY] = { .type = NLA_U64, },
	[NXQUOTA_A_DEVICE_DEVT] = { .type = NLA_NUL_STRING, .len = 31, },
};

/* NXQUOTA_CMD_DEVICE_DEL - do */
static const struct nla_policy nxquota_device_del_nl_policy[NXQUOTA_A_DEVICE_KEY + 1] = {
	[NXQUOTA_A_DEVICE_KEY] = { .type = NLA_NUL_STRING, .len = 63, },
};

/* NXQUOTA_CMD_DEVICE_SET - do */
static const struct nla_policy nxquota_device_set_nl_policy[NXQUOTA_A_DEVICE_DEFAULT_MAX + 1] = {
	[NXQUOTA_A_DEVICE_KEY] = { .type = NLA_NUL_STRING, .len = 63, },
	[NXQUOTA_A_DEVICE_CAPACITY] = { .type = NLA_U64, },
	[NXQUOTA_A_DEVICE_DEFAULT_MAX] = { .type = NLA_U64, },
	[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS] = { .type = NLA_U32, },
};

/* NXQUOTA_CMD_BUDGET_GET - dump */
static const struct nla_policy nxquota_budget_get_nl_policy[NXQUOTA_A_BUDGET_DEVICE + 1] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { .type = NLA_NUL_STRING, .len = 63, },
};

/* NXQUOTA_CMD_BUDGET_SET - do */
static const struct nla_policy nxquota_budget_set_nl_policy[NXQUOTA_A_BUDGET_OVERCOMMIT + 1] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { .type = NLA_NUL_STRING, .len = 63, },
	[NXQUOTA_A_BUDGET_CGROUP_PATH] = { .type = NLA_NUL_STRING, .len = 4095, },
	[NXQUOTA_A_BUDGET_MAX] = { .type = NLA_U64, },
	[NXQUOTA_A_BUDGET_MIN] = { .type = NLA_U64, },
	[NXQUOTA_A_BUDGET_KILL_ON_IGNORE] = NLA_POLICY_MAX(NLA_U8, 1),
	[NXQUOTA_A_BUDGET_HOLDERS_MAX] = { .type = NLA_U32, },
	[NXQUOTA_A_BUDGET_WAITERS_MAX] = { .type = NLA_U32, },
	[NXQUOTA_A_BUDGET_PRIORITY_MAX] = { .type = NLA_U32, },
	[NXQUOTA_A_BUDGET_WAIT_MAX_MS] = { .type = NLA_U32, },
	[NXQUOTA_A_BUDGET_OVERCOMMIT] = { .type = NLA_FLAG, },
};

/* NXQUOTA_CMD_BUDGET_CLEAR - do */
static const struct nla_policy nxquota_budget_clear_nl_policy[NXQUOTA_A_BUDGET_CGROUP_PATH + 1] = {
	[NXQUOTA_A_BUDGET_DEVICE] = { .type = NLA_NUL_STRING, .len = 63, },
	[NXQUOTA_A_BUDGET_CGROUP_PATH] = { .type = NLA_NUL_STRING, .len = 4095, },
};

/* NXQUOTA_CMD_HOLDER_GET - dump */
static const struct nla_policy nxquota_holder_get_nl_policy[NXQUOTA_A_HOLDER_DEVICE + 1] = {
	[NXQUOTA_A_HOLDER_DEVICE] = { .type = NLA_NUL_STRING, .len = 63, },
};

/* Ops table for nxquota */
const struct nxq_abi_nlop nxq_abi_nlops[NXQ_ABI_NR_NLOPS] = {
	{
		.cmd	= NXQUOTA_CMD_DEVICE_GET,
		.dumpit	= true,
		.flags	= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_ADD,
		.doit		= true,
		.policy		= nxquota_device_add_nl_policy,
		.maxattr	= NXQUOTA_A_DEVICE_DEVT,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_DEL,
		.doit		= true,
		.policy		= nxquota_device_del_nl_policy,
		.maxattr	= NXQUOTA_A_DEVICE_KEY,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= NXQUOTA_CMD_DEVICE_SET,
		.doit		= true,
		.policy		= nxquota_device_set_nl_policy,
		.maxattr	= NXQUOTA_A_DEVICE_DEFAULT_MAX,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_GET,
		.dumpit		= true,
		.policy		= nxquota_budget_get_nl_policy,
		.maxattr	= NXQUOTA_A_BUDGET_DEVICE,
		.flags		= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_SET,
		.doit		= true,
		.policy		= nxquota_budget_set_nl_policy,
		.maxattr	= NXQUOTA_A_BUDGET_OVERCOMMIT,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= NXQUOTA_CMD_BUDGET_CLEAR,
		.doit		= true,
		.policy		= nxquota_budget_clear_nl_policy,
		.maxattr	= NXQUOTA_A_BUDGET_CGROUP_PATH,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= NXQUOTA_CMD_HOLDER_GET,
		.dumpit		= true,
		.policy		= nxquota_holder_get_nl_policy,
		.maxattr	= NXQUOTA_A_HOLDER_DEVICE,
		.flags		= GENL_CMD_CAP_DUMP,
	},
};
/* END YNL-GEN nxquota kernel */

/**
 * nxq_abi_nlop() - an operation of the family
 * @cmd: NXQUOTA_CMD_*
 *
 * Context: any.
 * Return: its entry in nxq_abi_nlops[], or NULL (-EOPNOTSUPP).
 */
const struct nxq_abi_nlop *nxq_abi_nlop(u8 cmd)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nxq_abi_nlops); i++)
		if (nxq_abi_nlops[i].cmd == cmd)
			return &nxq_abi_nlops[i];
	return NULL;
}

/**
 * nxq_abi_event_type() - the family's name for a ledger event
 * @type: the ledger's
 *
 * Context: any.
 * Return: NXQUOTA_EVENT_TYPE_*, or 0 for the events that are not sent
 * (they only mark dumps spanning them).
 */
u32 nxq_abi_event_type(enum nxq_event_type type)
{
	switch (type) {
	case NXQ_EV_DEVICE_ADDED:
		return NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
	case NXQ_EV_DEVICE_REMOVED:
		return NXQUOTA_EVENT_TYPE_DEVICE_REMOVED;
	case NXQ_EV_BUDGET_CHANGED:
		return NXQUOTA_EVENT_TYPE_BUDGET_CHANGED;
	case NXQ_EV_DENIED:
		return NXQUOTA_EVENT_TYPE_DENIED;
	case NXQ_EV_TICKET_ISSUED:
		return NXQUOTA_EVENT_TYPE_TICKET_ISSUED;
	case NXQ_EV_TICKET_ANSWERED:
		return NXQUOTA_EVENT_TYPE_TICKET_ANSWERED;
	case NXQ_EV_KILLED:
		return NXQUOTA_EVENT_TYPE_KILLED;
	case NXQ_EV_HOLDER_ADDED:
	case NXQ_EV_HOLDER_REMOVED:
		return 0;
	}
	return 0;
}

static const unsigned int nxq_abi_limit_attr[NXQ_NR_LIMITS] = {
	[NXQ_LIM_HOLDERS]	= NXQUOTA_A_BUDGET_HOLDERS_MAX,
	[NXQ_LIM_WAITERS]	= NXQUOTA_A_BUDGET_WAITERS_MAX,
	[NXQ_LIM_PRIORITY]	= NXQUOTA_A_BUDGET_PRIORITY_MAX,
	[NXQ_LIM_WAIT_MS]	= NXQUOTA_A_BUDGET_WAIT_MAX_MS,
};

/**
 * nxq_abi_budget_req() - budget-set's attributes as a ledger request
 * @a: the request's attributes, validated against its policy
 * @r: filled in
 * @why: set when refused
 *
 * Context: any.
 * Return: 0, or -EINVAL for a limit out of range or nothing to set.
 */
int nxq_abi_budget_req(struct nlattr **a, struct nxq_budget_req *r,
		       struct nxq_abi_fail *why)
{
	int i;

	memset(r, 0, sizeof(*r));
	if (a[NXQUOTA_A_BUDGET_MAX]) {
		r->set_max = true;
		r->max = nla_get_u64(a[NXQUOTA_A_BUDGET_MAX]);
	}
	if (a[NXQUOTA_A_BUDGET_MIN]) {
		r->set_min = true;
		r->min = nla_get_u64(a[NXQUOTA_A_BUDGET_MIN]);
	}
	r->overcommit = !!a[NXQUOTA_A_BUDGET_OVERCOMMIT];
	if (a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]) {
		r->set_kill = true;
		r->kill_on_ignore =
			nla_get_u8(a[NXQUOTA_A_BUDGET_KILL_ON_IGNORE]);
	}
	for (i = 0; i < NXQ_NR_LIMITS; i++) {
		struct nlattr *la = a[nxq_abi_limit_attr[i]];

		if (!la)
			continue;
		r->lim[i] = nla_get_u32(la);
		if (!nxq_abi_limit_valid(i, r->lim[i])) {
			why->attr = la;
			why->msg = "out of range";
			return -EINVAL;
		}
		r->set_lim |= BIT(i);
	}
	if (!r->set_max && !r->set_min && !r->set_kill && !r->set_lim) {
		why->attr = NULL;
		why->msg = "nothing to set: give max, min, kill-on-ignore or a limit";
		return -EINVAL;
	}
	return 0;
}

/**
 * nxq_abi_device_set_check() - the rules of device-set's attributes
 * @a: the request's attributes, validated against its policy
 * @why: set when refused
 *
 * Context: any.
 * Return: 0, or -EINVAL for nothing to set or a ticket timeout out of
 * range.
 */
int nxq_abi_device_set_check(struct nlattr **a, struct nxq_abi_fail *why)
{
	struct nlattr *t = a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS];

	if (!a[NXQUOTA_A_DEVICE_CAPACITY] && !a[NXQUOTA_A_DEVICE_DEFAULT_MAX] &&
	    !t) {
		why->attr = NULL;
		why->msg = "nothing to set: give capacity, default-max or ticket-timeout-ms";
		return -EINVAL;
	}
	if (t && !nxq_abi_ticket_timeout_valid(nla_get_u32(t))) {
		why->attr = t;
		why->msg = "1 to 3600000 ms";
		return -EINVAL;
	}
	return 0;
}

/**
 * nxq_abi_device_add() - device-add's rules, then the device
 * @l: the ledger
 * @a: the request's attributes, validated against its policy, with the
 *	key and the capacity
 * @why: set when refused with a message (else its msg is NULL)
 *
 * The key's characters, the dev_t's "MAJOR:MINOR" (MKDEV(): each shell's
 * encoding), then nxq_device_add().
 *
 * Context: process; the ledger lock is not held.
 * Return: the device, or an ERR_PTR: -EINVAL, -EEXIST, -ENOMEM.
 */
struct nxq_device *nxq_abi_device_add(struct nxq_ledger *l, struct nlattr **a,
				      struct nxq_abi_fail *why)
{
	struct nlattr *key = a[NXQUOTA_A_DEVICE_KEY];
	struct nlattr *devt_attr = a[NXQUOTA_A_DEVICE_DEVT];
	struct nxq_device *dev;
	unsigned int maj, min;
	dev_t devt = 0;

	why->attr = NULL;
	why->msg = NULL;
	if (!nxq_device_key_valid(nla_data(key))) {
		why->attr = key;
		why->msg = NXQ_ABI_MSG_KEY;
		return ERR_PTR(-EINVAL);
	}
	if (devt_attr) {
		if (nxq_abi_parse_devt(nla_data(devt_attr), &maj, &min)) {
			why->attr = devt_attr;
			why->msg = NXQ_ABI_MSG_DEVT;
			return ERR_PTR(-EINVAL);
		}
		devt = MKDEV(maj, min);
	}
	dev = nxq_device_add(l, nla_data(key),
			     nla_get_u64(a[NXQUOTA_A_DEVICE_CAPACITY]), devt);
	if (IS_ERR(dev) && PTR_ERR(dev) == -EEXIST) {
		why->attr = key;
		why->msg = NXQ_ABI_MSG_DEV_EXISTS;
	}
	return dev;
}

/**
 * nxq_abi_device_del_err() - what device-del's refusal says
 * @a: the request's attributes
 * @err: nxq_device_remove()'s errno (0 passes through)
 * @why: set for the messages
 *
 * Return: @err, -ENOENT as -ENODEV.
 */
int nxq_abi_device_del_err(struct nlattr **a, int err,
			   struct nxq_abi_fail *why)
{
	why->attr = a[NXQUOTA_A_DEVICE_KEY];
	why->msg = NULL;
	if (err == -ENOENT) {
		why->msg = NXQ_ABI_MSG_NODEV;
		return -ENODEV;
	}
	if (err == -EBUSY)
		why->msg = NXQ_ABI_MSG_BUSY;
	return err;
}

static void nxq_abi_device_apply(struct nxq_device *dev,
				 const struct nxq_abi_device_vals *v,
				 struct nlattr **a)
{
	if (!a || a[NXQUOTA_A_DEVICE_CAPACITY])
		nxq_device_set_capacity(dev, a ?
			nla_get_u64(a[NXQUOTA_A_DEVICE_CAPACITY]) :
			v->capacity);
	if (!a || a[NXQUOTA_A_DEVICE_DEFAULT_MAX])
		nxq_device_set_default_max(dev, a ?
			nla_get_u64(a[NXQUOTA_A_DEVICE_DEFAULT_MAX]) :
			v->default_max);
	if (!a || a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS])
		nxq_device_set_ticket_timeout(dev, a ?
			nla_get_u32(a[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS]) :
			v->ticket_timeout_ms);
}

/**
 * nxq_abi_device_set() - device-set's rules, then the change
 * @l: the ledger
 * @a: the request's attributes, validated against its policy, with the key
 * @was: if not NULL, set to the values before the change
 * @why: set when refused
 *
 * Context: process; the ledger lock is not held.
 * Return: 0, -EINVAL (nothing to set, a timeout out of range) or -ENODEV.
 */
int nxq_abi_device_set(struct nxq_ledger *l, struct nlattr **a,
		       struct nxq_abi_device_vals *was,
		       struct nxq_abi_fail *why)
{
	struct nxq_device *dev;
	int err;

	err = nxq_abi_device_set_check(a, why);
	if (err)
		return err;
	mutex_lock(&l->lock);
	dev = nxq_device_find(l, nla_data(a[NXQUOTA_A_DEVICE_KEY]));
	if (dev && was) {
		spin_lock(&dev->lock);
		was->capacity = dev->capacity;
		was->default_max = dev->default_max;
		was->ticket_timeout_ms = dev->ticket_timeout_ms;
		spin_unlock(&dev->lock);
	}
	if (dev)
		nxq_abi_device_apply(dev, NULL, a);
	mutex_unlock(&l->lock);
	if (dev)
		return 0;
	why->attr = a[NXQUOTA_A_DEVICE_KEY];
	why->msg = NXQ_ABI_MSG_NODEV;
	return -ENODEV;
}

/**
 * nxq_abi_device_reset() - put back what nxq_abi_device_set() changed
 * @l: the ledger
 * @key: the device (gone meanwhile: nothing to do)
 * @v: the values it had
 *
 * Context: process; the ledger lock is not held.
 */
void nxq_abi_device_reset(struct nxq_ledger *l, const char *key,
			  const struct nxq_abi_device_vals *v)
{
	struct nxq_device *dev;

	mutex_lock(&l->lock);
	dev = nxq_device_find(l, key);
	if (dev)
		nxq_abi_device_apply(dev, v, NULL);
	mutex_unlock(&l->lock);
}

/**
 * nxq_abi_budget_path() - a budget's cgroup path is absolute
 * @a: budget-set's or budget-clear's attributes, with the path
 * @why: set when refused
 *
 * Return: 0 or -EINVAL.
 */
int nxq_abi_budget_path(struct nlattr **a, struct nxq_abi_fail *why)
{
	struct nlattr *path = a[NXQUOTA_A_BUDGET_CGROUP_PATH];

	if (*(char *)nla_data(path) == '/')
		return 0;
	why->attr = path;
	why->msg = NXQ_ABI_MSG_PATH;
	return -EINVAL;
}

/**
 * nxq_abi_budget_err() - what a budget change's refusal says
 * @a: the request's attributes
 * @err: nxq_budget_set()'s errno
 * @why: set for no such cgroup (-ENOENT) and no such device (-ENODEV);
 *	else its msg is NULL (the ledger's own message, if any, is the
 *	shell's to give)
 *
 * Return: @err.
 */
int nxq_abi_budget_err(struct nlattr **a, int err, struct nxq_abi_fail *why)
{
	why->attr = NULL;
	why->msg = NULL;
	if (err == -ENOENT) {
		why->attr = a[NXQUOTA_A_BUDGET_CGROUP_PATH];
		why->msg = NXQ_ABI_MSG_NOCGROUP;
	} else if (err == -ENODEV) {
		why->attr = a[NXQUOTA_A_BUDGET_DEVICE];
		why->msg = NXQ_ABI_MSG_NODEV;
	}
	return err;
}

static void nxq_abi_put(struct nxq_abi_msg *m, u16 type, u8 kind, u64 v)
{
	if (WARN_ON_ONCE(m->n >= ARRAY_SIZE(m->a)))
		return;
	m->a[m->n].type = type;
	m->a[m->n].kind = kind;
	m->a[m->n].s = NULL;
	m->a[m->n].v = v;
	m->n++;
}

static void nxq_abi_put_str(struct nxq_abi_msg *m, u16 type, const char *s)
{
	if (WARN_ON_ONCE(m->n >= ARRAY_SIZE(m->a)))
		return;
	m->a[m->n].type = type;
	m->a[m->n].kind = NXQ_ABI_STR;
	m->a[m->n].s = s;
	m->a[m->n].v = 0;
	m->n++;
}

/**
 * nxq_abi_device_msg() - a device-get dump's message for a device
 * @dev: the device
 * @devt: its node's "MAJOR:MINOR" as the shell formats it (NULL: none)
 * @ref: the authority's own counts, or NULL for none
 * @m: filled in; its strings point into @dev and @devt
 *
 * Context: the ledger lock is held (the holders count, the key); takes
 * the device lock for the counters, read at once.
 */
void nxq_abi_device_msg(struct nxq_device *dev, const char *devt,
			const struct nxq_abi_refusals *ref,
			struct nxq_abi_msg *m)
{
	static const struct nxq_abi_refusals none;
	u64 c[12];
	u32 timeout_ms, waiters, type;
	int i = 0, t;

	lockdep_assert_held(&dev->ledger->lock);
	if (!ref)
		ref = &none;
	spin_lock(&dev->lock);
	c[0] = dev->capacity;
	c[1] = dev->used;
	c[2] = dev->denials;
	c[3] = dev->capacity_hits;
	c[4] = dev->tickets;
	c[5] = dev->bytes_asked;
	c[6] = dev->bytes_released;
	c[7] = dev->kills;
	c[8] = dev->waits;
	c[9] = dev->timeouts;
	c[10] = dev->default_max;
	timeout_ms = dev->ticket_timeout_ms;
	waiters = dev->nr_waiters;
	spin_unlock(&dev->lock);
	c[11] = atomic64_read(&dev->events_dropped);

	m->pad = NXQUOTA_A_DEVICE_PAD;
	m->n = 0;
	nxq_abi_put_str(m, NXQUOTA_A_DEVICE_KEY, dev->key);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_CAPACITY, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_USED, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_HOLDERS, NXQ_ABI_U32, dev->nr_holders);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_DENIALS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_CAPACITY_HITS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_TICKETS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_BYTES_ASKED, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_BYTES_RELEASED, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_KILLS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_WAITS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_TIMEOUTS, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS, NXQ_ABI_U32,
		    timeout_ms);
	if (dev->devt && devt)
		nxq_abi_put_str(m, NXQUOTA_A_DEVICE_DEVT, devt);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_DEFAULT_MAX, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_EVENTS_DROPPED, NXQ_ABI_U64, c[i++]);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_WAITERS, NXQ_ABI_U32, waiters);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_CONNS_REFUSED, NXQ_ABI_U64, ref->conns);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_CREDS_REFUSED, NXQ_ABI_U64, ref->creds);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_RESTORED, NXQ_ABI_U64, ref->restored);
	nxq_abi_put(m, NXQUOTA_A_DEVICE_RESTORE_REFUSED, NXQ_ABI_U64,
		    ref->restore_refused);
	/* events-dropped-<type>, in the order of the event types */
	BUILD_BUG_ON(NXQUOTA_A_DEVICE_EVENTS_DROPPED_KILLED -
		     NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_ADDED !=
		     NXQUOTA_EVENT_TYPE_KILLED - NXQUOTA_EVENT_TYPE_DEVICE_ADDED);
	for (t = 1; t < NXQ_EV_NR; t++) {
		type = nxq_abi_event_type(t);
		if (!type)
			continue;
		nxq_abi_put(m, NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_ADDED +
			    type - NXQUOTA_EVENT_TYPE_DEVICE_ADDED, NXQ_ABI_U64,
			    atomic64_read(&dev->events_dropped_type[t]));
	}
}

/**
 * nxq_abi_budget_msg() - a budget-get dump's message for a node
 * @node: the node
 * @path: its cgroup's path as the caller may see it, or NULL to leave it
 *	out
 * @m: filled in; its strings point into @node and @path
 *
 * Context: the ledger lock is held; takes the device lock.
 */
void nxq_abi_budget_msg(struct nxq_node *node, const char *path,
			struct nxq_abi_msg *m)
{
	u64 tickets, asked, released, kills;
	u32 lim[NXQ_NR_LIMITS];
	struct nxq_budget b;
	bool kill;
	int i;

	lockdep_assert_held(&node->dev->ledger->lock);
	nxq_node_budget(node, &b);
	spin_lock(&node->dev->lock);
	tickets = node->tickets;
	asked = node->bytes_asked;
	released = node->bytes_released;
	kills = node->kills;
	kill = node->kill_on_ignore;
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		lim[i] = nxq_node_limit(node, i);
	spin_unlock(&node->dev->lock);

	m->pad = NXQUOTA_A_BUDGET_PAD;
	m->n = 0;
	nxq_abi_put_str(m, NXQUOTA_A_BUDGET_DEVICE, node->dev->key);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_CGROUP_ID, NXQ_ABI_U64, node->id);
	if (path)
		nxq_abi_put_str(m, NXQUOTA_A_BUDGET_CGROUP_PATH, path);
	if (node->parent)
		nxq_abi_put(m, NXQUOTA_A_BUDGET_PARENT_ID, NXQ_ABI_U64,
			    node->parent->id);
	if (b.max_set)
		nxq_abi_put(m, NXQUOTA_A_BUDGET_MAX, NXQ_ABI_U64, b.max);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_EFFECTIVE_MAX, NXQ_ABI_U64,
		    b.effective_max);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_MIN, NXQ_ABI_U64, b.min);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_CLAIMED, NXQ_ABI_U64, b.claimed);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_OVERCOMMITTED, NXQ_ABI_U8,
		    b.overcommitted);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_EFFECTIVE_MIN, NXQ_ABI_U64,
		    b.effective_min);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_CURRENT, NXQ_ABI_U64, b.current_bytes);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_BORROWED, NXQ_ABI_U64, b.borrowed);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_HEADROOM, NXQ_ABI_U64, b.headroom);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_MAX_HITS, NXQ_ABI_U64, b.max_hits);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_DENIALS, NXQ_ABI_U64, b.denials);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_HOLDERS, NXQ_ABI_U32, node->nr_holders);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_TICKETS, NXQ_ABI_U64, tickets);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_BYTES_ASKED, NXQ_ABI_U64, asked);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_BYTES_RELEASED, NXQ_ABI_U64, released);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_KILLS, NXQ_ABI_U64, kills);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, NXQ_ABI_U8, kill);
	for (i = 0; i < NXQ_NR_LIMITS; i++)
		nxq_abi_put(m, nxq_abi_limit_attr[i], NXQ_ABI_U32, lim[i]);
}

/**
 * nxq_abi_holder_msg() - a holder-get dump's message for a holder
 * @h: the holder
 * @pid: its process as the caller may see it (0: not visible)
 * @m: filled in; its strings point into @h's device
 *
 * Context: the device lock is held.
 */
void nxq_abi_holder_msg(struct nxq_holder *h, u32 pid, struct nxq_abi_msg *m)
{
	struct nxq_ticket_state *t = &h->ticket;

	lockdep_assert_held(&h->node->dev->lock);
	m->pad = NXQUOTA_A_HOLDER_PAD;
	m->n = 0;
	nxq_abi_put_str(m, NXQUOTA_A_HOLDER_DEVICE, h->node->dev->key);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_CGROUP_ID, NXQ_ABI_U64, h->node->id);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_PID, NXQ_ABI_U32, pid);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_PRIORITY, NXQ_ABI_U32, h->priority);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_CHARGE, NXQ_ABI_U64, h->charge);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_RECLAIMABLE, NXQ_ABI_U64,
		    h->reclaimable);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_OPEN, NXQ_ABI_U8, t->open);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_GENERATION, NXQ_ABI_U64,
		    t->generation);
	if (!t->open)
		return;
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_BYTES, NXQ_ABI_U64, t->bytes);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_REASON, NXQ_ABI_U32, t->reason);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_LEVEL, NXQ_ABI_U32, t->level);
	nxq_abi_put(m, NXQUOTA_A_HOLDER_TICKET_DEADLINE_NS, NXQ_ABI_U64,
		    t->deadline_ns);
}

/**
 * nxq_abi_event_msg() - an event's message for the "events" group
 * @ev: the ledger's event
 * @m: filled in; its strings point into @ev
 *
 * Context: any.
 * Return: the event's NXQUOTA_EVENT_TYPE_*, or 0 for an event that is not
 * sent (@m is then empty).
 */
u32 nxq_abi_event_msg(const struct nxq_event *ev, struct nxq_abi_msg *m)
{
	u32 type = nxq_abi_event_type(ev->type);

	m->pad = NXQUOTA_A_EVENT_PAD;
	m->n = 0;
	if (!type)
		return 0;
	nxq_abi_put(m, NXQUOTA_A_EVENT_TYPE, NXQ_ABI_U32, type);
	if (ev->device)
		nxq_abi_put_str(m, NXQUOTA_A_EVENT_DEVICE, ev->device);
	if (ev->cgroup_id)
		nxq_abi_put(m, NXQUOTA_A_EVENT_CGROUP_ID, NXQ_ABI_U64,
			    ev->cgroup_id);
	if (ev->tgid)
		nxq_abi_put(m, NXQUOTA_A_EVENT_PID, NXQ_ABI_U32, ev->tgid);
	nxq_abi_put(m, NXQUOTA_A_EVENT_BYTES, NXQ_ABI_U64, ev->bytes);
	nxq_abi_put(m, NXQUOTA_A_EVENT_VALUE, NXQ_ABI_U64, ev->value);
	nxq_abi_put(m, NXQUOTA_A_EVENT_REASON, NXQ_ABI_U32, ev->reason);
	nxq_abi_put(m, NXQUOTA_A_EVENT_TIMESTAMP_NS, NXQ_ABI_U64, ev->ts_ns);
	if (ev->type == NXQ_EV_DENIED)
		nxq_abi_put(m, NXQUOTA_A_EVENT_COUNT, NXQ_ABI_U64,
			    ev->count ? ev->count : 1);
	return type;
}

#endif /* CONFIG_NET */

/* ---- KUnit: the tables against the uapi header and the spec ---- */

#if IS_ENABLED(CONFIG_NXQUOTA_KUNIT_TEST)
#include <kunit/test.h>

/* Every command: its entry agrees with the header's definition of it. */
static void nxq_abi_test_cmds(struct kunit *test)
{
	static const struct {
		unsigned int cmd;
		u16 ver0;
		u32 flags;
		bool holder;
	} want[] = {
		{ NXQ_IOC_VERSION, NXQ_VERSION_SIZE_VER0, NXQ_ABI_NO_FLAGS,
		  false },
		{ NXQ_IOC_HOLDER_REGISTER, NXQ_HOLDER_REG_SIZE_VER0,
		  NXQ_HOLDER_FLAGS_ALL, false },
		{ NXQ_IOC_HOLDER_UNREGISTER, NXQ_HOLDER_ID_SIZE_VER0, 0, true },
		{ NXQ_IOC_CHARGE, NXQ_CHARGE_SIZE_VER0, NXQ_CHARGE_FLAGS_ALL,
		  true },
		{ NXQ_IOC_UNCHARGE, NXQ_CHARGE_SIZE_VER0, 0, true },
		{ NXQ_IOC_SET_RECLAIMABLE, NXQ_RECLAIMABLE_SIZE_VER0, 0, true },
		{ NXQ_IOC_STATUS, NXQ_STATUS_SIZE_VER0, 0, true },
		{ NXQ_IOC_TICKET_READ, NXQ_TICKET_SIZE_VER0, 0, true },
		{ NXQ_IOC_TICKET_ANSWER, NXQ_TICKET_ANSWER_SIZE_VER0, 0, true },
	};
	const struct nxq_abi_cmd *op;
	unsigned int i, n = 0;

	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(want), ARRAY_SIZE(nxq_abi_cmds));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		op = nxq_abi_cmd(want[i].cmd);
		KUNIT_ASSERT_NOT_NULL(test, op);
		KUNIT_EXPECT_EQ(test, op->cmd, want[i].cmd);
		KUNIT_EXPECT_EQ(test, op->ksize, _IOC_SIZE(want[i].cmd));
		KUNIT_EXPECT_EQ(test, op->ver0, want[i].ver0);
		KUNIT_EXPECT_LE(test, op->ver0, op->ksize);
		KUNIT_EXPECT_EQ(test, op->flags, want[i].flags);
		KUNIT_EXPECT_EQ(test, op->holder, want[i].holder);
		KUNIT_EXPECT_EQ(test, op->out,
				!!(_IOC_DIR(want[i].cmd) & _IOC_READ));
		KUNIT_EXPECT_LE(test, op->ksize, NXQ_ABI_ARG_MAX);
		/* the size bits do not matter; type and direction do */
		KUNIT_EXPECT_PTR_EQ(test, nxq_abi_cmd(NXQ_ABI_CMDNR(want[i].cmd)),
				    op);
		KUNIT_EXPECT_NULL(test, nxq_abi_cmd(want[i].cmd ^
						    (1U << _IOC_TYPESHIFT)));
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, NXQ_ABI_NR_CMDS);
	KUNIT_EXPECT_EQ(test, _IOC_NR(NXQ_IOC_TICKET_ANSWER) + 1,
			NXQ_ABI_NR_CMDS);
	KUNIT_EXPECT_NULL(test, nxq_abi_cmd(_IOWR(NXQ_IOC_MAGIC, NXQ_ABI_NR_CMDS,
						 struct nxq_version)));
	KUNIT_EXPECT_NULL(test, nxq_abi_cmd(_IOR(NXQ_IOC_MAGIC, 0,
						struct nxq_version)));
	KUNIT_EXPECT_EQ(test, NXQ_ABI_FEATURES,
			NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS |
			NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS |
			NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_PROBE);
}

/* The argument rules: sizes, flags, the charge's and registration's. */
static void nxq_abi_test_args(struct kunit *test)
{
	const struct nxq_abi_cmd *op = nxq_abi_cmd(NXQ_IOC_CHARGE);
	struct nxq_charge c = { .size = sizeof(c) };
	struct nxq_holder_reg r = { .size = sizeof(r), .eventfd = -1 };
	struct nxq_device *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, op);
	KUNIT_ASSERT_NOT_NULL(test, dev);
	dev->devt = 7;
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, NXQ_CHARGE_SIZE_VER0 - 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, PAGE_SIZE + 1), -E2BIG);
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	c.flags = 1U << 31;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = NXQ_CHARGE_WAIT;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.timeout_ns = 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	c.flags |= NXQ_CHARGE_PROBE;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = NXQ_CHARGE_NOWAIT | NXQ_CHARGE_WAIT;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(nxq_abi_cmd(NXQ_IOC_UNCHARGE), &c),
			-EINVAL);

	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	strscpy(r.device, "host0", sizeof(r.device));
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), 0);
	r.priority = NXQ_PRIORITY_MAX + 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.priority = 0;
	r.reserved = 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.reserved = 0;
	r.devfd = 3;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.flags = NXQ_HOLDER_DEVFD;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), 0);
	r.eventfd = -2;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EBADF);
	r.eventfd = -1;
	memset(r.device, 'a', sizeof(r.device));
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);

	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, true, 7), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, false, true, 7),
			-EACCES);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, false, 7),
			-EACCES);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, true, 8),
			-EACCES);
	dev->devt = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, false, false, 0), 0);
}

/* The administration's values. */
static void nxq_abi_test_values(struct kunit *test)
{
	unsigned int maj = 0, min = 0;

	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("195:0", &maj, &min), 0);
	KUNIT_EXPECT_EQ(test, maj, 195U);
	KUNIT_EXPECT_EQ(test, min, 0U);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("4095:1048575", &maj, &min),
			0);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("4096:0", &maj, &min),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:1048576", &maj, &min),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("0:0", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:2x", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt(":1", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("-1:1", &maj, &min), -EINVAL);
	KUNIT_EXPECT_TRUE(test, nxq_abi_limit_valid(NXQ_LIM_PRIORITY,
						    NXQ_PRIORITY_MAX));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_PRIORITY,
						     NXQ_PRIORITY_MAX + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_WAIT_MS,
						     3600 * 1000 + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_HOLDERS,
						     NXQ_LIMIT_UNSET));
	KUNIT_EXPECT_FALSE(test, nxq_abi_ticket_timeout_valid(0));
	KUNIT_EXPECT_TRUE(test, nxq_abi_ticket_timeout_valid(3600 * 1000));
	KUNIT_EXPECT_FALSE(test, nxq_abi_ticket_timeout_valid(3600 * 1000 + 1));
}

#if IS_ENABLED(CONFIG_NET)
/*
 * The operations: one per request command of the header, each a do or a
 * dump, the administration's among the do's, each policy as long as its
 * highest attribute and its strings as long as the header's limits.
 */
static void nxq_abi_test_nlops(struct kunit *test)
{
	unsigned int i, a, seen = 0;

	for (i = 0; i < ARRAY_SIZE(nxq_abi_nlops); i++) {
		const struct nxq_abi_nlop *op = &nxq_abi_nlops[i];

		KUNIT_EXPECT_PTR_EQ(test, nxq_abi_nlop(op->cmd), op);
		KUNIT_EXPECT_NE(test, op->doit, op->dumpit);
		KUNIT_EXPECT_EQ(test, !!(op->flags & GENL_CMD_CAP_DO), op->doit);
		KUNIT_EXPECT_EQ(test, !!(op->flags & GENL_CMD_CAP_DUMP),
				op->dumpit);
		KUNIT_EXPECT_TRUE(test, !(op->flags & GENL_ADMIN_PERM) ||
				  op->doit);
		KUNIT_EXPECT_EQ(test, !op->policy, !op->maxattr);
		KUNIT_EXPECT_GT(test, op->cmd, 0);
		KUNIT_EXPECT_LT(test, op->cmd, NXQUOTA_CMD_EVENT);
		seen |= BIT(op->cmd);
		for (a = 1; op->policy && a <= op->maxattr; a++) {
			const struct nla_policy *p = &op->policy[a];

			if (p->type != NLA_NUL_STRING)
				continue;
			KUNIT_EXPECT_TRUE(test, p->len == NXQ_DEVICE_KEY_MAX - 1 ||
					  p->len == PATH_MAX - 1 || p->len == 31);
		}
	}
	/* every command but the event, which is sent, never asked */
	KUNIT_EXPECT_EQ(test, seen, (u32)(GENMASK(NXQUOTA_CMD_MAX, 1) &
					 ~BIT(NXQUOTA_CMD_EVENT)));
	KUNIT_EXPECT_NULL(test, nxq_abi_nlop(NXQUOTA_CMD_EVENT));
	KUNIT_EXPECT_NULL(test, nxq_abi_nlop(0));
	/* the administration: every command that changes something */
	KUNIT_EXPECT_TRUE(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET)->flags &
			  GENL_ADMIN_PERM);
	KUNIT_EXPECT_FALSE(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_GET)->flags &
			   GENL_ADMIN_PERM);
	KUNIT_EXPECT_EQ(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET)->maxattr,
			(unsigned int)NXQUOTA_A_BUDGET_LAST);
}

/* Each ledger event is sent as the header names it, or not at all. */
static void nxq_abi_test_events(struct kunit *test)
{
	struct nxq_event ev = { .type = NXQ_EV_DENIED, .device = "d",
				.cgroup_id = 5, .tgid = 9, .bytes = 7,
				.count = 3 };
	struct nxq_abi_msg m;

	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_DEVICE_ADDED),
			NXQUOTA_EVENT_TYPE_DEVICE_ADDED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_KILLED),
			NXQUOTA_EVENT_TYPE_KILLED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_TICKET_ANSWERED),
			NXQUOTA_EVENT_TYPE_TICKET_ANSWERED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_HOLDER_ADDED), 0U);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m),
			NXQUOTA_EVENT_TYPE_DENIED);
	/* a denial carries the count it stands for, last */
	KUNIT_EXPECT_EQ(test, m.n, 9U);
	KUNIT_EXPECT_EQ(test, m.a[0].type, NXQUOTA_A_EVENT_TYPE);
	KUNIT_EXPECT_STREQ(test, m.a[1].s, "d");
	KUNIT_EXPECT_EQ(test, m.a[8].type, NXQUOTA_A_EVENT_COUNT);
	KUNIT_EXPECT_EQ(test, m.a[8].v, 3ULL);
	ev.type = NXQ_EV_KILLED;
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m),
			NXQUOTA_EVENT_TYPE_KILLED);
	KUNIT_EXPECT_EQ(test, m.n, 8U);
	ev.type = NXQ_EV_HOLDER_REMOVED;
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m), 0U);
	KUNIT_EXPECT_EQ(test, m.n, 0U);
}
#endif

static struct kunit_case nxq_abi_cases[] = {
	KUNIT_CASE(nxq_abi_test_cmds),
	KUNIT_CASE(nxq_abi_test_args),
	KUNIT_CASE(nxq_abi_test_values),
#if IS_ENABLED(CONFIG_NET)
	KUNIT_CASE(nxq_abi_test_nlops),
	KUNIT_CASE(nxq_abi_test_events),
#endif
	{}
};

static struct kunit_suite nxq_abi_suite = {
	.name = "nxquota-abi",
	.test_cases = nxq_abi_cases,
};

kunit_test_suite(nxq_abi_suite);
#endif /* CONFIG_NXQUOTA_KUNIT_TEST */
