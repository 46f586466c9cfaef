// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: the budget and device tables' rules (see abi.h), compiled by
 * both authorities as abi.c is.  The tables, NXQ_BUDGET_FIELDS and
 * NXQ_DEVICE_FIELDS in the uapi header, are generated from
 * Documentation/netlink/specs/nxquota.yaml by daemon/ynl-gen.sh: each
 * attribute of budget-set's request, and each setting of device-add and
 * device-set, with its name, unit, bounds, default, who may set it and
 * how its text is read.  Here
 * are the one reading of a value's text, the one check of its bounds and
 * the one translation between a field and the ledger's request (struct
 * nxq_budget_req) and node, for every front door: sysfs's set_budget and
 * node files, netlink's budget-set and dumps (the module's and nxquotad's
 * control socket), nxquotad's state file; and likewise for a device's
 * settings (sysfs's register and device files, device-add, device-set,
 * the state file's device lines).  Nothing here owns an object
 * or takes a lock; its KUnit cases are in abi.c's suite.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/limits.h>

#include "ledger.h"

#define NXQ_ABI_FIELD(n, N, a, u, p, l, h, d, w, li, k)			\
	[NXQ_BF_##N] = { .name = #n, .attr = (a), .unit = (u), .parse = (p), \
			 .lo = (l), .hi = (h), .dflt = (d), .who = (w),	\
			 .lim = (li), .kept = (k) },
const struct nxq_abi_field nxq_abi_fields[NXQ_NR_BUDGET_FIELDS] = {
	NXQ_BUDGET_FIELDS(NXQ_ABI_FIELD)
};
#undef NXQ_ABI_FIELD

/**
 * nxq_abi_field_find() - a field of the budget table by its name
 * @name: "max", "kill_on_ignore", ...; the first @len bytes count
 * @len: its length
 *
 * Context: any.
 * Return: its enum nxq_budget_field, or -EINVAL.
 */
int nxq_abi_field_find(const char *name, size_t len)
{
	int f;

	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++)
		if (strlen(nxq_abi_fields[f].name) == len &&
		    !strncmp(name, nxq_abi_fields[f].name, len))
			return f;
	return -EINVAL;
}

/* Decimal digits, nothing else, at most @max: 0 or -EINVAL. */
static int nxq_abi_parse_dec(const char *s, u64 max, u64 *out)
{
	u64 v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (max - (*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

/**
 * nxq_abi_parse_size() - read a size (NXQ_PARSE_SIZE, NXQ_PARSE_SIZE_MAX)
 * @s: decimal digits, then optionally one of K, M, G, T, P or E, any case
 *	(powers of 1024, as memparse() and memory.max read them), which
 *	may be followed by "i" ("4Gi" is "4G"); or "max" when @allow_max;
 *	NUL-terminated, nothing else
 * @allow_max: "max" is accepted, as NXQ_UNLIMITED
 * @out: set on success
 *
 * Context: any.
 * Return: 0, or -EINVAL (also for a value past 64 bits).
 */
int nxq_abi_parse_size(const char *s, bool allow_max, u64 *out)
{
	static const char sfx[] = "KMGTPE";
	unsigned int shift = 0;
	char num[24];
	size_t n = 0;
	int i;
	u64 v;

	if (allow_max && !strcmp(s, "max")) {
		*out = NXQ_UNLIMITED;
		return 0;
	}
	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (!n || n >= sizeof(num))
		return -EINVAL;
	if (s[n]) {
		for (i = 0; sfx[i] && (s[n] & ~0x20) != sfx[i]; i++)
			;
		if (!sfx[i])
			return -EINVAL;
		shift = 10 * (i + 1);
		if (s[n + 1] && strcmp(s + n + 1, "i"))
			return -EINVAL;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (nxq_abi_parse_dec(num, U64_MAX, &v) || v > (U64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static int nxq_abi_parse(u8 parse, const char *s, u64 *v);

/**
 * nxq_abi_field_parse() - read a field's value from its text
 * @f: enum nxq_budget_field
 * @s: the text, NUL-terminated: as the field's parse column says
 * @v: set on success
 *
 * A flag has no text: only its name is written.
 *
 * Context: any.
 * Return: 0, or -EINVAL.
 */
int nxq_abi_field_parse(enum nxq_budget_field f, const char *s, u64 *v)
{
	return nxq_abi_parse(nxq_abi_fields[f].parse, s, v);
}

/* A value's text by a parse column (enum nxq_parse): 0 or -EINVAL. */
static int nxq_abi_parse(u8 parse, const char *s, u64 *v)
{
	switch (parse) {
	case NXQ_PARSE_SIZE:
	case NXQ_PARSE_SIZE_MAX:
		return nxq_abi_parse_size(s, parse == NXQ_PARSE_SIZE_MAX, v);
	case NXQ_PARSE_BOOL:
		if ((s[0] != '0' && s[0] != '1') || s[1])
			return -EINVAL;
		*v = s[0] - '0';
		return 0;
	case NXQ_PARSE_U32:
		return nxq_abi_parse_dec(s, U32_MAX, v);
	default:
		return -EINVAL;
	}
}

/**
 * nxq_abi_field_valid() - may root set a field to a value?
 * @f: enum nxq_budget_field
 * @v: the value
 *
 * Within the table's lo..hi, save for a size: a size's bound is the
 * ledger's to check (NXQ_BYTES_MAX: its own errno and refusal), and "max"
 * is all ones.
 *
 * Context: any.
 * Return: true if root may set it.
 */
bool nxq_abi_field_valid(enum nxq_budget_field f, u64 v)
{
	const struct nxq_abi_field *d = &nxq_abi_fields[f];

	if (d->unit == NXQ_UNIT_BYTES)
		return true;
	return v >= d->lo && v <= d->hi;
}

/**
 * nxq_abi_req_get() - a field's value in a ledger request
 * @r: the request
 * @f: enum nxq_budget_field
 * @v: set to the value (also when it is not set)
 *
 * Context: any.
 * Return: whether @r sets @f.
 */
bool nxq_abi_req_get(const struct nxq_budget_req *r, enum nxq_budget_field f,
		     u64 *v)
{
	int lim = nxq_abi_fields[f].lim;

	if (lim >= 0) {
		*v = r->lim[lim];
		return r->set_lim & BIT(lim);
	}
	switch (f) {
	case NXQ_BF_MAX:
		*v = r->max;
		return r->set_max;
	case NXQ_BF_MIN:
		*v = r->min;
		return r->set_min;
	case NXQ_BF_KILL_ON_IGNORE:
		*v = r->kill_on_ignore;
		return r->set_kill;
	case NXQ_BF_OVERCOMMIT:
		*v = r->overcommit;
		return r->overcommit;
	default:
		*v = 0;
		return false;
	}
}

/**
 * nxq_abi_req_put() - set a field in a ledger request
 * @r: the request
 * @f: enum nxq_budget_field
 * @v: its value, nxq_abi_field_valid()
 *
 * Context: any.
 * Return: 0, or -EINVAL when @r sets @f already or the ledger has no
 * such field (the spec has one the ledger was not taught).
 */
int nxq_abi_req_put(struct nxq_budget_req *r, enum nxq_budget_field f, u64 v)
{
	int lim = nxq_abi_fields[f].lim;
	u64 old;

	if (nxq_abi_req_get(r, f, &old))
		return -EINVAL;
	if (lim >= 0) {
		r->lim[lim] = v;
		r->set_lim |= BIT(lim);
		return 0;
	}
	switch (f) {
	case NXQ_BF_MAX:
		r->set_max = true;
		r->max = v;
		return 0;
	case NXQ_BF_MIN:
		r->set_min = true;
		r->min = v;
		return 0;
	case NXQ_BF_KILL_ON_IGNORE:
		r->set_kill = true;
		r->kill_on_ignore = v;
		return 0;
	case NXQ_BF_OVERCOMMIT:
		r->overcommit = v;
		return 0;
	default:
		return -EINVAL;
	}
}

/**
 * nxq_abi_budget_word() - one word of a budget line into a request
 * @word: "NAME=VALUE" (the budget table's name and parse), or a flag's
 *	NAME alone; NUL-terminated
 * @r: the request
 *
 * sysfs's set_budget and nxquotad's state file read their words with it.
 *
 * Context: any.
 * Return: 0, or -EINVAL: no such field, a value that does not read or is
 * out of bounds, a field given twice.
 */
int nxq_abi_budget_word(const char *word, struct nxq_budget_req *r)
{
	const char *eq = strchr(word, '=');
	int f = nxq_abi_field_find(word, eq ? eq - word : strlen(word));
	u64 v = 1;

	if (f < 0)
		return -EINVAL;
	if (nxq_abi_fields[f].parse == NXQ_PARSE_FLAG ? !!eq :
	    !eq || nxq_abi_field_parse(f, eq + 1, &v) ||
	    !nxq_abi_field_valid(f, v))
		return -EINVAL;
	return nxq_abi_req_put(r, f, v);
}

/**
 * nxq_abi_node_req() - a node's own settings, as the request that sets them
 * @node: the node
 * @r: filled in: its max when it has one of its own, its min and kill
 *	policy, its own limits, and overcommit (what was accepted once is
 *	put back as it was)
 *
 * nxquotad's state file and its undo of a change it could not save.
 *
 * Context: the device lock is held.
 * Return: whether the node has anything of its own (a max, a min, a kill
 * policy or a limit).
 */
bool nxq_abi_node_req(struct nxq_node *node, struct nxq_budget_req *r)
{
	int i;

	lockdep_assert_held(&node->dev->lock);
	memset(r, 0, sizeof(*r));
	r->set_max = node->max_set;
	r->max = node->max;
	r->set_min = true;
	r->min = node->min;
	r->set_kill = true;
	r->kill_on_ignore = node->kill_on_ignore;
	r->overcommit = true;
	for (i = 0; i < NXQ_NR_LIMITS; i++) {
		r->lim[i] = node->lim[i];
		if (node->lim[i] != NXQ_LIMIT_UNSET)
			r->set_lim |= BIT(i);
	}
	return node->max_set || node->min || node->kill_on_ignore ||
	       r->set_lim;
}

/**
 * nxq_abi_node_field() - what a node reports of a field
 * @node: the node
 * @f: enum nxq_budget_field, a kept one
 * @v: set to the value
 *
 * A limit reports the one that binds the node (its own, inherited or
 * the default: nxq_node_limit()); the others the node's own value.
 *
 * Context: the device lock is held.
 * Return: whether there is a value to report (a node without a max of
 * its own reports none; a request's modifier is never kept).
 */
bool nxq_abi_node_field(struct nxq_node *node, enum nxq_budget_field f,
			u64 *v)
{
	struct nxq_budget_req r;

	lockdep_assert_held(&node->dev->lock);
	if (nxq_abi_fields[f].lim >= 0) {
		*v = nxq_node_limit(node, nxq_abi_fields[f].lim);
		return true;
	}
	nxq_abi_node_req(node, &r);
	return nxq_abi_fields[f].kept && nxq_abi_req_get(&r, f, v);
}

/* ---- the device table ---- */

#define NXQ_ABI_DFIELD(n, N, a, u, p, l, h, d, w, ad, se)		\
	[NXQ_DF_##N] = { .name = #n, .attr = (a), .unit = (u), .parse = (p), \
			 .lo = (l), .hi = (h), .dflt = (d), .who = (w),	\
			 .add = (ad), .set = (se) },
const struct nxq_abi_dfield nxq_abi_dfields[NXQ_NR_DEVICE_FIELDS] = {
	NXQ_DEVICE_FIELDS(NXQ_ABI_DFIELD)
};
#undef NXQ_ABI_DFIELD

/**
 * nxq_abi_dfield_find() - a field of the device table by its name
 * @name: "capacity", "default_max", ...; the first @len bytes count
 * @len: its length
 *
 * Context: any.
 * Return: its enum nxq_device_field, or -EINVAL.
 */
int nxq_abi_dfield_find(const char *name, size_t len)
{
	int f;

	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		if (strlen(nxq_abi_dfields[f].name) == len &&
		    !strncmp(name, nxq_abi_dfields[f].name, len))
			return f;
	return -EINVAL;
}

/**
 * nxq_abi_dfield_valid() - may root set a device's field to a value?
 * @f: enum nxq_device_field
 * @v: the value
 *
 * Within the table's lo..hi, save for a size, which no door bounds (as
 * before the table: a capacity is taken as given, "max" is all ones).
 *
 * Context: any.
 * Return: true if root may set it.
 */
bool nxq_abi_dfield_valid(enum nxq_device_field f, u64 v)
{
	const struct nxq_abi_dfield *d = &nxq_abi_dfields[f];

	if (d->unit == NXQ_UNIT_BYTES)
		return true;
	return v >= d->lo && v <= d->hi;
}

/**
 * nxq_abi_dfield_parse() - read a device's field from its text
 * @f: enum nxq_device_field
 * @s: the text, NUL-terminated, as the field's parse column says
 * @v: set on success
 *
 * Context: any.
 * Return: 0, or -EINVAL: a text that does not read, a value out of the
 * field's bounds (nxq_abi_dfield_valid()).
 */
int nxq_abi_dfield_parse(enum nxq_device_field f, const char *s, u64 *v)
{
	int err = nxq_abi_parse(nxq_abi_dfields[f].parse, s, v);

	if (!err && !nxq_abi_dfield_valid(f, *v))
		err = -EINVAL;
	return err;
}

/**
 * nxq_abi_dev_get() - a device's field
 * @dev: the device
 * @f: enum nxq_device_field
 *
 * Context: the device lock is held.
 * Return: its value.
 */
u64 nxq_abi_dev_get(struct nxq_device *dev, enum nxq_device_field f)
{
	lockdep_assert_held(&dev->lock);
	switch (f) {
	case NXQ_DF_CAPACITY:
		return dev->capacity;
	case NXQ_DF_DEFAULT_MAX:
		return dev->default_max;
	case NXQ_DF_TICKET_TIMEOUT_MS:
		return dev->ticket_timeout_ms;
	default:
		return 0;
	}
}

/**
 * nxq_abi_dev_put() - set a device's field
 * @dev: the device
 * @f: enum nxq_device_field
 * @v: its value, nxq_abi_dfield_valid()
 *
 * Context: the device lock is not held (the ledger's setters take it).
 * Return: 0, or -EINVAL: out of bounds, or a field the ledger was not
 * taught (the spec has one it lacks).
 */
int nxq_abi_dev_put(struct nxq_device *dev, enum nxq_device_field f, u64 v)
{
	if (!nxq_abi_dfield_valid(f, v))
		return -EINVAL;
	switch (f) {
	case NXQ_DF_CAPACITY:
		nxq_device_set_capacity(dev, v);
		return 0;
	case NXQ_DF_DEFAULT_MAX:
		nxq_device_set_default_max(dev, v);
		return 0;
	case NXQ_DF_TICKET_TIMEOUT_MS:
		return nxq_device_set_ticket_timeout(dev, v);
	default:
		return -EINVAL;
	}
}
