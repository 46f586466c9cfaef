// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota sysfs: /sys/kernel/nxquota, documented in
 * Documentation/ABI/testing/sysfs-kernel-nxquota.
 *
 * Objects: the root and devices/ kobjects live from init to exit.  Each
 * device has a struct nxq_dev_kobj (its directory and nodes/), each budget
 * node a struct nxq_node_kobj, created and deleted by the ledger's hooks;
 * the wrappers are freed by their kobject release.
 *
 * Locking: handlers of device-level files (set_budget, clear_budget) take
 * the ledger lock, so a device's directory is deleted only after the
 * ledger lock is dropped (nxq_device_remove() calls the hook without it,
 * but under the ledger's reg_lock, so the key is not registered again
 * before the directory is gone).
 *
 * Access: every write needs CAP_SYS_ADMIN (as netlink's administration
 * does).  Device-level files are world-readable aggregates; the files of
 * a budget node name a cgroup and its usage, and are root's only (0400,
 * 0600 where writable).
 * Handlers of node-level files take only the device spinlock, so a node's
 * directory may be deleted under the ledger lock: kobject_del() waits for
 * running handlers, and none starts after it, so neither wrapper nor node
 * is used once deleted.
 *
 * This file has the root, devices/ and devices/<KEY>/; a budget node's
 * directory, devices/<KEY>/nodes/<ID>/, is sysfs_node.c's (the two share
 * sysfs.h).  tests/sysfs-doc.sh holds both to Documentation.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/kdev_t.h>

#include "internal.h"
#include "sysfs.h"

static struct kobject *nxq_root_kobj;
static struct kobject *nxq_devices_kobj;


/* Split a written line into at most @max whitespace-separated words. */
static int nxq_split(char *line, char **words, int max)
{
	int n = 0;
	char *w;

	while ((w = strsep(&line, " \t\n")) != NULL) {
		if (!*w)
			continue;
		if (n == max)
			return -EINVAL;
		words[n++] = w;
	}
	return n;
}

/*
 * Copy a written line and split it into at most @max words.  Returns the
 * copy, which holds the words and which the caller kfree()s, with *@n set
 * to the number of words or to -EINVAL for too many; or ERR_PTR(-ENOMEM).
 */
static char *nxq_words(const char *buf, size_t count, char **words, int max,
		       int *n)
{
	char *line = kstrndup(buf, count, GFP_KERNEL);

	if (!line)
		return ERR_PTR(-ENOMEM);
	*n = nxq_split(line, words, max);
	return line;
}

/* The most words a command file takes: set_budget's, a path and each field. */
#define NXQ_STORE_WORDS	(1 + NXQ_NR_BUDGET_FIELDS)

/*
 * A root-only command file: the written line copied and split into at
 * most @max words, @cmd called with them and their number (-EINVAL for
 * too many, which every @cmd refuses), the copy freed.  Returns what a
 * store returns: @count, or @cmd's -errno.
 */
static ssize_t nxq_store_words(struct kobject *kobj, const char *buf,
			       size_t count, int max,
			       int (*cmd)(struct kobject *kobj, char **w, int n))
{
	char *line, *w[NXQ_STORE_WORDS];
	int n, err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, min(max, NXQ_STORE_WORDS), &n);
	if (IS_ERR(line))
		return PTR_ERR(line);
	err = cmd(kobj, w, n);
	kfree(line);
	return err ? err : count;
}

/**
 * nxq_store_field() - a write of one field of the budget table
 * @buf: what was written: one word, as the field's parse column reads it
 * @count: its length
 * @f: enum nxq_budget_field
 * @v: set on success
 *
 * Who may write it is the table's (NXQ_WHO_ADMIN: CAP_SYS_ADMIN).
 *
 * Return: 0, -EPERM, -EINVAL (a word that does not read, or a value out
 * of the field's bounds), -ENOMEM.
 */
int nxq_store_field(const char *buf, size_t count, enum nxq_budget_field f,
		    u64 *v)
{
	char *line, *w[1];
	int n, err;

	if (nxq_abi_fields[f].who == NXQ_WHO_ADMIN && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &n);
	if (IS_ERR(line))
		return PTR_ERR(line);
	err = n == 1 ? nxq_abi_field_parse(f, w[0], v) : -EINVAL;
	if (!err && !nxq_abi_field_valid(f, *v))
		err = -EINVAL;
	kfree(line);
	return err;
}

/**
 * nxq_emit_u64() - show a number, "max" for NXQ_UNLIMITED where @is_max
 * @buf: the sysfs page
 * @v: the number
 * @is_max: a max: NXQ_UNLIMITED reads "max"
 *
 * Return: the bytes written.
 */
ssize_t nxq_emit_u64(char *buf, u64 v, bool is_max)
{
	if (is_max && v == NXQ_UNLIMITED)
		return sysfs_emit(buf, "max\n");
	return sysfs_emit(buf, "%llu\n", v);
}

/* ---- /sys/kernel/nxquota ---- */

static ssize_t abi_version_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", NXQ_ABI_VERSION);
}

static struct kobj_attribute nxq_abi_version_attr = __ATTR_RO(abi_version);

/*
 * Processes watched for exit on open files (nxq_cdev_owners()): root's,
 * as the count of other tenants' processes is not a tenant's business.
 */
static ssize_t owners_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%ld\n", nxq_cdev_owners());
}

static struct kobj_attribute nxq_owners_attr = __ATTR(owners, 0400,
						      owners_show, NULL);

static struct attribute *nxq_root_attrs[] = {
	&nxq_abi_version_attr.attr,
	&nxq_owners_attr.attr,
	NULL,
};

static const struct attribute_group nxq_root_group = {
	.attrs = nxq_root_attrs,
};

/* ---- devices/register, devices/unregister ---- */

/**
 * nxq_parse_devt() - parse "MAJOR:MINOR" (decimal) into a dev_t
 * @s: the text
 * @devt: set on success; never 0
 *
 * Return: 0 or -EINVAL.
 */
int nxq_parse_devt(const char *s, dev_t *devt)
{
	unsigned int maj, min;
	char tail;

	if (sscanf(s, "%u:%u%c", &maj, &min, &tail) != 2)
		return -EINVAL;
	if (maj >= (1U << (32 - MINORBITS)) || min > MINORMASK ||
	    (!maj && !min))
		return -EINVAL;
	*devt = MKDEV(maj, min);
	return 0;
}

/* "KEY CAPACITY [MAJOR:MINOR]" */
static int nxq_register_cmd(struct kobject *kobj, char **w, int n)
{
	struct nxq_device *dev;
	dev_t devt = 0;
	u64 capacity;
	int err;

	if (n != 2 && n != 3)
		return -EINVAL;
	if (n == 3 && nxq_parse_devt(w[2], &devt))
		return -EINVAL;
	err = nxq_abi_dfield_parse(NXQ_DF_CAPACITY, w[1], &capacity);
	if (err)
		return err;
	dev = nxq_device_add(&nxq_ledger, w[0], capacity, devt);
	return PTR_ERR_OR_ZERO(dev);
}

static ssize_t register_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	return nxq_store_words(kobj, buf, count, 3, nxq_register_cmd);
}

static struct kobj_attribute nxq_register_attr = __ATTR_WO(register);

/* "KEY" */
static int nxq_unregister_cmd(struct kobject *kobj, char **w, int n)
{
	return n == 1 ? nxq_device_remove(&nxq_ledger, w[0]) : -EINVAL;
}

static ssize_t unregister_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	return nxq_store_words(kobj, buf, count, 1, nxq_unregister_cmd);
}

static struct kobj_attribute nxq_unregister_attr = __ATTR_WO(unregister);

static struct attribute *nxq_devices_attrs[] = {
	&nxq_register_attr.attr,
	&nxq_unregister_attr.attr,
	NULL,
};

static const struct attribute_group nxq_devices_group = {
	.attrs = nxq_devices_attrs,
};

/* ---- devices/<KEY>/ ---- */

/*
 * One file per field of the device table (nxq_abi_dfields, the spec's
 * settings of device-add and device-set, named as it names them): read by
 * anyone (a size as a number, "max" for NXQ_UNLIMITED where the field
 * reads it), written as the table reads it by whom it says.
 */
static struct kobj_attribute nxq_dev_field_attrs[NXQ_NR_DEVICE_FIELDS];

static ssize_t dev_field_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	enum nxq_device_field f = attr - nxq_dev_field_attrs;
	struct nxq_device *dev = to_dev(kobj);
	u64 v;

	spin_lock(&dev->lock);
	v = nxq_abi_dev_get(dev, f);
	spin_unlock(&dev->lock);
	return nxq_emit_u64(buf, v,
			    nxq_abi_dfields[f].parse == NXQ_PARSE_SIZE_MAX);
}

static ssize_t dev_field_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	enum nxq_device_field f = attr - nxq_dev_field_attrs;
	char *line, *w[1];
	int n, err;
	u64 v;

	if (nxq_abi_dfields[f].who == NXQ_WHO_ADMIN && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &n);
	if (IS_ERR(line))
		return PTR_ERR(line);
	err = n == 1 ? nxq_abi_dfield_parse(f, w[0], &v) : -EINVAL;
	kfree(line);
	if (!err)
		err = nxq_abi_dev_put(to_dev(kobj), f, v);
	return err ? err : count;
}

#define NXQ_DEV_FIELD_ATTR(n, N, ...)					\
	[NXQ_DF_##N] = __ATTR(n, 0644, dev_field_show, dev_field_store),
static struct kobj_attribute nxq_dev_field_attrs[NXQ_NR_DEVICE_FIELDS] = {
	NXQ_DEVICE_FIELDS(NXQ_DEV_FIELD_ATTR)
};
#undef NXQ_DEV_FIELD_ATTR

#define NXQ_DEV_COUNTER(name)						\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	struct nxq_device *dev = to_dev(kobj);				\
	u64 v;								\
									\
	spin_lock(&dev->lock);						\
	v = dev->name;							\
	spin_unlock(&dev->lock);					\
	return nxq_emit_u64(buf, v, false);				\
}									\
static struct kobj_attribute nxq_dev_##name##_attr = __ATTR_RO(name)

NXQ_DEV_COUNTER(used);
NXQ_DEV_COUNTER(denials);
NXQ_DEV_COUNTER(capacity_hits);
NXQ_DEV_COUNTER(tickets);
NXQ_DEV_COUNTER(bytes_asked);
NXQ_DEV_COUNTER(bytes_released);
NXQ_DEV_COUNTER(kills);
NXQ_DEV_COUNTER(waits);
NXQ_DEV_COUNTER(timeouts);

static ssize_t waiters_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct nxq_device *dev = to_dev(kobj);
	unsigned int n;

	spin_lock(&dev->lock);
	n = dev->nr_waiters;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", n);
}

static struct kobj_attribute nxq_dev_waiters_attr = __ATTR_RO(waiters);

static ssize_t devt_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	dev_t devt = to_dev(kobj)->devt;

	if (!devt)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%u:%u\n", MAJOR(devt), MINOR(devt));
}

static struct kobj_attribute nxq_devt_attr = __ATTR_RO(devt);

static ssize_t events_dropped_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (long long)atomic64_read(&to_dev(kobj)->events_dropped));
}

static struct kobj_attribute nxq_events_dropped_attr =
	__ATTR_RO(events_dropped);

/*
 * events_dropped_by_type: of events_dropped, the events of each type
 * multicast, one "TYPE COUNT" line a type, as memory.events keys its
 * counts (the netlink events' names, lower case).
 */
static const char *const nxq_ev_names[NXQ_EV_NR] = {
	[NXQ_EV_DEVICE_ADDED] = "device_added",
	[NXQ_EV_DEVICE_REMOVED] = "device_removed",
	[NXQ_EV_BUDGET_CHANGED] = "budget_changed",
	[NXQ_EV_DENIED] = "denied",
	[NXQ_EV_TICKET_ISSUED] = "ticket_issued",
	[NXQ_EV_TICKET_ANSWERED] = "ticket_answered",
	[NXQ_EV_KILLED] = "killed",
};

static ssize_t events_dropped_by_type_show(struct kobject *kobj,
					   struct kobj_attribute *attr,
					   char *buf)
{
	struct nxq_device *dev = to_dev(kobj);
	int t, len = 0;

	for (t = 0; t < NXQ_EV_NR; t++)
		if (nxq_ev_names[t])
			len += sysfs_emit_at(buf, len, "%s %lld\n",
					     nxq_ev_names[t], (long long)
					     atomic64_read(&dev->events_dropped_type[t]));
	return len;
}

static struct kobj_attribute nxq_events_dropped_by_type_attr =
	__ATTR_RO(events_dropped_by_type);

static ssize_t dev_holders_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	/* Informational; the ledger lock guards it, a stale read is fine. */
	return sysfs_emit(buf, "%u\n", data_race(to_dev(kobj)->nr_holders));
}

static struct kobj_attribute nxq_dev_holders_attr =
	__ATTR(holders, 0444, dev_holders_show, NULL);

/*
 * "/CGROUP WORD...": each word a field of the budget table, NAME=VALUE or a
 * flag's NAME (nxq_abi_budget_word()).
 */
static int nxq_set_budget_cmd(struct kobject *kobj, char **w, int n)
{
	struct nxq_budget_req r = {};
	int i, err = 0;

	if (n < 2 || w[0][0] != '/')
		return -EINVAL;
	for (i = 1; !err && i < n; i++)
		err = nxq_abi_budget_word(w[i], &r);
	return err ? err : nxq_budget_set(to_dev(kobj)->key, w[0], &r, NULL, 0);
}

static ssize_t set_budget_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	return nxq_store_words(kobj, buf, count, NXQ_STORE_WORDS,
			       nxq_set_budget_cmd);
}

static struct kobj_attribute nxq_set_budget_attr = __ATTR_WO(set_budget);

/* "/CGROUP" */
static int nxq_clear_budget_cmd(struct kobject *kobj, char **w, int n)
{
	if (n != 1 || w[0][0] != '/')
		return -EINVAL;
	return nxq_budget_set(to_dev(kobj)->key, w[0], NULL, NULL, 0);
}

static ssize_t clear_budget_store(struct kobject *kobj,
				  struct kobj_attribute *attr, const char *buf,
				  size_t count)
{
	return nxq_store_words(kobj, buf, count, 1, nxq_clear_budget_cmd);
}

static struct kobj_attribute nxq_clear_budget_attr = __ATTR_WO(clear_budget);

static struct attribute *nxq_dev_attrs[] = {
	&nxq_dev_used_attr.attr,
	&nxq_dev_denials_attr.attr,
	&nxq_dev_capacity_hits_attr.attr,
	&nxq_dev_holders_attr.attr,
	&nxq_dev_tickets_attr.attr,
	&nxq_dev_bytes_asked_attr.attr,
	&nxq_dev_bytes_released_attr.attr,
	&nxq_dev_kills_attr.attr,
	&nxq_dev_waits_attr.attr,
	&nxq_dev_timeouts_attr.attr,
	&nxq_dev_waiters_attr.attr,
	&nxq_devt_attr.attr,
	&nxq_events_dropped_attr.attr,
	&nxq_events_dropped_by_type_attr.attr,
	&nxq_set_budget_attr.attr,
	&nxq_clear_budget_attr.attr,
	NULL,
};

static const struct attribute_group nxq_dev_group = {
	.attrs = nxq_dev_attrs,
};

/* The device table's files: filled in by nxq_sysfs_init(). */
static struct attribute *nxq_dev_field_list[NXQ_NR_DEVICE_FIELDS + 1];

static const struct attribute_group nxq_dev_field_group = {
	.attrs = nxq_dev_field_list,
};

static const struct attribute_group *nxq_dev_groups[] = {
	&nxq_dev_group,
	&nxq_dev_field_group,
	NULL,
};

static void nxq_dev_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct nxq_dev_kobj, kobj));
}

static const struct kobj_type nxq_dev_ktype = {
	.release	= nxq_dev_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= nxq_dev_groups,
};

/* ---- ledger hooks ---- */

/**
 * nxq_sysfs_device_added() - create devices/<KEY>/ and its nodes/
 * @dev: the new device; the ledger lock is held
 *
 * Return: 0, -ENOMEM, or kobject_add()'s error.
 */
int nxq_sysfs_device_added(struct nxq_device *dev)
{
	struct nxq_dev_kobj *dk;
	int err;

	dk = kzalloc(sizeof(*dk), GFP_KERNEL);
	if (!dk)
		return -ENOMEM;
	dk->dev = dev;
	err = kobject_init_and_add(&dk->kobj, &nxq_dev_ktype, nxq_devices_kobj,
				   "%s", dev->key);
	if (err)
		goto fail;
	dk->nodes = kobject_create_and_add("nodes", &dk->kobj);
	if (!dk->nodes) {
		err = -ENOMEM;
		goto fail;
	}
	dev->priv = dk;
	return 0;
fail:
	kobject_put(&dk->kobj);
	return err;
}

/**
 * nxq_sysfs_device_removed() - delete devices/<KEY>/
 * @dev: the removed device; the ledger lock is NOT held
 */
void nxq_sysfs_device_removed(struct nxq_device *dev)
{
	struct nxq_dev_kobj *dk = dev->priv;

	if (!dk)
		return;
	kobject_put(dk->nodes);
	kobject_del(&dk->kobj);
	kobject_put(&dk->kobj);
	dev->priv = NULL;
}

/**
 * nxq_sysfs_init() - create /sys/kernel/nxquota and devices/
 *
 * Return: 0 or a negative errno.
 */
int nxq_sysfs_init(void)
{
	int f, err;

	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++)
		nxq_dev_field_list[f] = &nxq_dev_field_attrs[f].attr;
	nxq_sysfs_node_init();
	nxq_root_kobj = kobject_create_and_add("nxquota", kernel_kobj);
	if (!nxq_root_kobj)
		return -ENOMEM;
	err = sysfs_create_group(nxq_root_kobj, &nxq_root_group);
	if (err)
		goto fail;
	nxq_devices_kobj = kobject_create_and_add("devices", nxq_root_kobj);
	if (!nxq_devices_kobj) {
		err = -ENOMEM;
		goto fail;
	}
	err = sysfs_create_group(nxq_devices_kobj, &nxq_devices_group);
	if (err)
		goto fail_devices;
	return 0;
fail_devices:
	kobject_put(nxq_devices_kobj);
fail:
	kobject_put(nxq_root_kobj);
	return err;
}

/**
 * nxq_sysfs_exit() - remove /sys/kernel/nxquota; every device is gone
 */
void nxq_sysfs_exit(void)
{
	kobject_put(nxq_devices_kobj);
	kobject_put(nxq_root_kobj);
}
