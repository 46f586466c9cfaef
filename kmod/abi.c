// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: the ABI's transport-free rules (see abi.h), compiled by the
 * module (cdev.c, netlink.c) and by nxquotad (daemon/client.c, ctl.c), so
 * that both authorities apply one copy of them.  Nothing here owns an
 * object or takes a reference; the ledger calls take their own locks.
 *
 * This file: the ioctl table with registration's checks and the device
 * proof, the administration's values, and the KUnit suite of both halves;
 * the generic netlink half (ops, policies generated from the YAML spec,
 * messages) is abi_genl.c.
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
 * NXQ_CHARGE_WAIT is; a path buffer has a size and a size has a buffer.
 * The out fields' values coming in do not matter: they are set.
 *
 * Context: any.
 * Return: 0, or -EINVAL.
 */
int nxq_abi_charge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	if (!a->path != !a->path_size)
		return -EINVAL;
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
 * Return: 0, or -EINVAL for a timeout (an uncharge never waits) or any
 * field of version 1 (a charge's refusal) that is not 0.
 */
int nxq_abi_uncharge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	if (a->path || a->path_size || a->refused_reason ||
	    a->refused_level || a->path_len || a->refused_id ||
	    a->refused_limit || a->refused_min || a->refused_usage)
		return -EINVAL;
	return a->timeout_ns ? -EINVAL : 0;
}

#define NXQ_ABI_CMD(c, type, v0, fl, hold, o, chk)			\
	[_IOC_NR(c)] = { .cmd = (c), .ksize = sizeof(type), .ver0 = (v0),	\
	  .flags = (fl), .holder = (hold), .out = (o), .check = (chk) }
/* A command whose failure in its handler is copied back from size @eo. */
#define NXQ_ABI_CMD_EO(c, type, v0, eo, fl, hold, o, chk)		\
	[_IOC_NR(c)] = { .cmd = (c), .ksize = sizeof(type), .ver0 = (v0),	\
	  .err_out = (eo), .flags = (fl), .holder = (hold), .out = (o),	\
	  .check = (chk) }

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
	NXQ_ABI_CMD_EO(NXQ_IOC_CHARGE, struct nxq_charge, NXQ_CHARGE_SIZE_VER0,
		       NXQ_CHARGE_SIZE_VER1, NXQ_CHARGE_FLAGS_ALL, true, true,
		       nxq_abi_charge_check),
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
 * nxq_abi_charge() - carry out NXQ_IOC_CHARGE, refusal included
 * @h: the caller's holder
 * @a: the argument; charged and the refusal's fields are set (path_len
 *	is the shell's: it is set to 0 here)
 * @timeout_ns: the wait, 0 for none (a shell may shorten the caller's)
 *
 * Context: process context; sleeps only when waiting.
 * Return: nxq_charge_slow()'s.
 */
int nxq_abi_charge(struct nxq_holder *h, struct nxq_charge *a, u64 timeout_ns)
{
	struct nxq_refusal_rec r;
	int err;

	err = nxq_charge_why(h, a->bytes, timeout_ns,
			     a->flags & NXQ_CHARGE_PROBE, &a->charged, &r);
	nxq_abi_charge_refused(a, &r);
	return err;
}

/**
 * nxq_abi_charge_refused() - set a charge's refusal fields (version 1)
 * @a: the argument
 * @r: the ledger's refusal, or NULL for none (a charge that failed before
 *	the ledger decided it)
 *
 * path_len is the shell's to set once it wrote the path: 0 here.
 *
 * Context: any.
 */
void nxq_abi_charge_refused(struct nxq_charge *a,
			    const struct nxq_refusal_rec *r)
{
	a->path_len = 0;
	if (!r) {
		a->refused_reason = a->refused_level = 0;
		a->refused_id = a->refused_limit = 0;
		a->refused_min = a->refused_usage = 0;
		return;
	}
	a->refused_reason = r->reason;
	a->refused_level = r->level;
	a->refused_id = r->id;
	a->refused_limit = r->limit;
	a->refused_min = r->min;
	a->refused_usage = r->usage;
}

/**
 * nxq_abi_err_out() - is a failed command's argument copied back?
 * @op: the command
 * @usize: the size the caller gave
 * @err: what its handler returned
 *
 * Context: any.
 * Return: true for a failure in the handler of a command that says what
 * failed, to a caller whose struct has room for it (@op->err_out).
 */
bool nxq_abi_err_out(const struct nxq_abi_cmd *op, u32 usize, int err)
{
	return err < 0 && op->err_out && usize >= op->err_out;
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

/* ---- KUnit: the tables against the uapi header and the spec ---- */

#if IS_ENABLED(CONFIG_NXQUOTA_KUNIT_TEST)
#include "abi_test.c"
#endif
