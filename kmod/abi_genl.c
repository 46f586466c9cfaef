// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: the ABI's generic netlink half (see abi.h), compiled by both
 * authorities as abi.c is: the request policies and the ops table
 * (generated from Documentation/netlink/specs/nxquota.yaml by
 * daemon/ynl-gen.sh, between its markers), the requests' checks and the
 * messages of the dumps and events.  Nothing here owns an object or takes
 * a reference; the ledger calls take their own locks.  Its KUnit cases
 * are in abi.c's suite.
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

/* ---- the generic netlink family ---- */

#if IS_ENABLED(CONFIG_NET)

/* BEGIN YNL-GEN nxquota kernel (daemon/ynl-gen.sh) */
/* Integer value ranges */
static struct netlink_range_validation nxquota_a_device_ticket_timeout_ms_range = {
	.min	= 1ULL,
	.max	= 3600000ULL,
};

static struct netlink_range_validation nxquota_a_budget_holders_max_range = {
	.max	= 4294967294ULL,
};

static struct netlink_range_validation nxquota_a_budget_waiters_max_range = {
	.max	= 4294967294ULL,
};

static struct netlink_range_validation nxquota_a_budget_wait_max_ms_range = {
	.max	= 3600000ULL,
};

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
	[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &nxquota_a_device_ticket_timeout_ms_range),
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
	[NXQUOTA_A_BUDGET_HOLDERS_MAX] = NLA_POLICY_FULL_RANGE(NLA_U32, &nxquota_a_budget_holders_max_range),
	[NXQUOTA_A_BUDGET_WAITERS_MAX] = NLA_POLICY_FULL_RANGE(NLA_U32, &nxquota_a_budget_waiters_max_range),
	[NXQUOTA_A_BUDGET_PRIORITY_MAX] = NLA_POLICY_MAX(NLA_U32, 1000),
	[NXQUOTA_A_BUDGET_WAIT_MAX_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &nxquota_a_budget_wait_max_ms_range),
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

/*
 * A field's attribute type, as the spec gives it and the table's unit
 * says: a u64 for bytes, a u8 for a boolean, a u32 for the rest (a flag,
 * which has no value, is not read with it).
 */
static enum nxq_abi_kind nxq_abi_field_kind(enum nxq_budget_field f)
{
	switch (nxq_abi_fields[f].unit) {
	case NXQ_UNIT_BYTES:
		return NXQ_ABI_U64;
	case NXQ_UNIT_BOOL:
		return NXQ_ABI_U8;
	default:
		return NXQ_ABI_U32;
	}
}

/* A field's attribute, validated by the policy, as a number. */
static u64 nxq_abi_field_get(const struct nlattr *a, enum nxq_budget_field f)
{
	if (nxq_abi_fields[f].unit == NXQ_UNIT_FLAG)
		return 1;
	switch (nxq_abi_field_kind(f)) {
	case NXQ_ABI_U64:
		return nla_get_u64(a);
	case NXQ_ABI_U8:
		return nla_get_u8(a);
	default:
		return nla_get_u32(a);
	}
}

/**
 * nxq_abi_budget_req() - budget-set's attributes as a ledger request
 * @a: the request's attributes, validated against its policy
 * @r: filled in
 * @why: set when refused
 *
 * Each field of the budget table whose attribute is there
 * (nxq_abi_fields: the policy checked its type and the spec's bounds).
 *
 * Context: any.
 * Return: 0, or -EINVAL for a value out of bounds or nothing to set.
 */
int nxq_abi_budget_req(struct nlattr **a, struct nxq_budget_req *r,
		       struct nxq_abi_fail *why)
{
	bool any = false;
	u64 v;
	int f;

	memset(r, 0, sizeof(*r));
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		struct nlattr *fa = a[nxq_abi_fields[f].attr];

		if (!fa)
			continue;
		v = nxq_abi_field_get(fa, f);
		if (!nxq_abi_field_valid(f, v) || nxq_abi_req_put(r, f, v)) {
			why->attr = fa;
			why->msg = "out of range";
			return -EINVAL;
		}
		any |= nxq_abi_fields[f].kept;
	}
	if (!any) {
		why->attr = NULL;
		why->msg = "nothing to set: give a field of the budget table";
		return -EINVAL;
	}
	return 0;
}

/* A device's field from its attribute, read by the table's unit. */
static u64 nxq_abi_dattr(const struct nlattr *a, enum nxq_device_field f)
{
	return nxq_abi_dfields[f].unit == NXQ_UNIT_BYTES ? nla_get_u64(a) :
							    nla_get_u32(a);
}

/*
 * device-set's rule: a field of the device table to set.  Each one's
 * bounds are its policy's (the spec's checks; ERANGE).
 */
static int nxq_abi_device_set_check(struct nlattr **a,
				    struct nxq_abi_fail *why)
{
	int f;

	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		if (nxq_abi_dfields[f].set && a[nxq_abi_dfields[f].attr])
			return 0;
	why->attr = NULL;
	why->msg = "nothing to set: give a field of the device table";
	return -EINVAL;
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
			     nxq_abi_dattr(a[NXQUOTA_A_DEVICE_CAPACITY],
					   NXQ_DF_CAPACITY), devt);
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

/* Each field device-set changes: from @a's attributes, else from @v. */
static void nxq_abi_device_apply(struct nxq_device *dev,
				 const struct nxq_abi_device_vals *v,
				 struct nlattr **a)
{
	const struct nxq_abi_dfield *d;
	int f;

	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		d = &nxq_abi_dfields[f];
		if (!d->set || (a && !a[d->attr]))
			continue;
		/* within bounds: the policy's, or what the device had */
		WARN_ON_ONCE(nxq_abi_dev_put(dev, f, a ?
					     nxq_abi_dattr(a[d->attr], f) :
					     v->v[f]));
	}
}

/**
 * nxq_abi_device_set() - device-set's rules, then the change
 * @l: the ledger
 * @a: the request's attributes, validated against its policy, with the key
 * @was: if not NULL, set to the values before the change
 * @why: set when refused
 *
 * Context: process; the ledger lock is not held.
 * Return: 0, -EINVAL (nothing to set) or -ENODEV.
 */
int nxq_abi_device_set(struct nxq_ledger *l, struct nlattr **a,
		       struct nxq_abi_device_vals *was,
		       struct nxq_abi_fail *why)
{
	struct nxq_device *dev;
	int f, err;

	err = nxq_abi_device_set_check(a, why);
	if (err)
		return err;
	mutex_lock(&l->lock);
	dev = nxq_device_find(l, nla_data(a[NXQUOTA_A_DEVICE_KEY]));
	if (dev && was) {
		spin_lock(&dev->lock);
		for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
			was->v[f] = nxq_abi_dev_get(dev, f);
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
	u64 tickets, asked, released, kills, fv[NXQ_NR_BUDGET_FIELDS];
	bool has[NXQ_NR_BUDGET_FIELDS];
	struct nxq_budget b;
	int f;

	lockdep_assert_held(&node->dev->ledger->lock);
	nxq_node_budget(node, &b);
	spin_lock(&node->dev->lock);
	tickets = node->tickets;
	asked = node->bytes_asked;
	released = node->bytes_released;
	kills = node->kills;
	/* the budget table's fields the node keeps: max, min, the limits... */
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++)
		has[f] = nxq_abi_node_field(node, f, &fv[f]);
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
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++)
		if (has[f])
			nxq_abi_put(m, nxq_abi_fields[f].attr,
				    nxq_abi_field_kind(f), fv[f]);
	nxq_abi_put(m, NXQUOTA_A_BUDGET_EFFECTIVE_MAX, NXQ_ABI_U64,
		    b.effective_max);
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
