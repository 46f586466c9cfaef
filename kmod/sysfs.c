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
 * ledger lock is dropped (nxq_device_remove() calls the hook unlocked).
 * Handlers of node-level files take only the device spinlock, so a node's
 * directory may be deleted under the ledger lock: kobject_del() waits for
 * running handlers, and none starts after it, so neither wrapper nor node
 * is used once deleted.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/err.h>

#include "internal.h"

static struct kobject *nxq_root_kobj;
static struct kobject *nxq_devices_kobj;

struct nxq_dev_kobj {
	struct kobject kobj;
	struct kobject *nodes;
	struct nxq_device *dev;
};

struct nxq_node_kobj {
	struct kobject kobj;
	struct nxq_node *node;
};

#define to_dev(k)	(container_of(k, struct nxq_dev_kobj, kobj)->dev)
#define to_node(k)	(container_of(k, struct nxq_node_kobj, kobj)->node)

/*
 * Parse a size: decimal bytes with an optional K/M/G/T suffix (powers of
 * 1024), or "max" when @allow_max.  The token ends at NUL.
 */
static int nxq_parse_size(const char *s, bool allow_max, u64 *out)
{
	char buf[32];
	unsigned int shift = 0;
	size_t n = strlen(s);
	u64 v;
	int err;

	if (allow_max && !strcmp(s, "max")) {
		*out = NXQ_UNLIMITED;
		return 0;
	}
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	switch (buf[n - 1]) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 'T':
	case 't':
		shift = 40;
		break;
	}
	if (shift)
		buf[--n] = '\0';
	err = kstrtou64(buf, 10, &v);
	if (err)
		return -EINVAL;
	if (shift && v > (U64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

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

static ssize_t nxq_emit_u64(char *buf, u64 v, bool is_max)
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

/* ---- devices/register, devices/unregister ---- */

static ssize_t register_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	struct nxq_device *dev;
	char *line, *w[2];
	u64 capacity;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &err);
	if (IS_ERR(line))
		return PTR_ERR(line);
	if (err != 2)
		err = -EINVAL;
	else
		err = nxq_parse_size(w[1], false, &capacity);
	if (!err) {
		dev = nxq_device_add(&nxq_ledger, w[0], capacity);
		err = PTR_ERR_OR_ZERO(dev);
	}
	kfree(line);
	return err ? err : count;
}

static struct kobj_attribute nxq_register_attr = __ATTR_WO(register);

static ssize_t unregister_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	char *line, *w[1];
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &err);
	if (IS_ERR(line))
		return PTR_ERR(line);
	if (err != 1) {
		err = -EINVAL;
		goto out;
	}
	err = nxq_device_remove(&nxq_ledger, w[0]);
out:
	kfree(line);
	return err ? err : count;
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

static ssize_t capacity_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct nxq_device *dev = to_dev(kobj);
	u64 v;

	spin_lock(&dev->lock);
	v = dev->capacity;
	spin_unlock(&dev->lock);
	return nxq_emit_u64(buf, v, false);
}

static ssize_t capacity_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	char *line, *w[1];
	u64 v;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &err);
	if (IS_ERR(line))
		return PTR_ERR(line);
	err = err == 1 ? nxq_parse_size(w[0], false, &v) : -EINVAL;
	kfree(line);
	if (err)
		return err;
	nxq_device_set_capacity(to_dev(kobj), v);
	return count;
}

static struct kobj_attribute nxq_capacity_attr = __ATTR_RW(capacity);

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
	struct list_head *p;
	unsigned int n = 0;

	spin_lock(&dev->lock);
	list_for_each(p, &dev->waiters)
		n++;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", n);
}

static struct kobj_attribute nxq_dev_waiters_attr = __ATTR_RO(waiters);

static ssize_t ticket_timeout_ms_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	struct nxq_device *dev = to_dev(kobj);
	u32 v;

	spin_lock(&dev->lock);
	v = dev->ticket_timeout_ms;
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t ticket_timeout_ms_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t count)
{
	struct nxq_device *dev = to_dev(kobj);
	u32 v;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtou32(buf, 10, &v);
	if (err || !v || v > 3600 * 1000)
		return -EINVAL;
	spin_lock(&dev->lock);
	dev->ticket_timeout_ms = v;
	spin_unlock(&dev->lock);
	return count;
}

static struct kobj_attribute nxq_ticket_timeout_ms_attr =
	__ATTR_RW(ticket_timeout_ms);

static ssize_t dev_holders_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	/* Informational; the ledger lock guards it, a stale read is fine. */
	return sysfs_emit(buf, "%u\n", data_race(to_dev(kobj)->nr_holders));
}

static struct kobj_attribute nxq_dev_holders_attr =
	__ATTR(holders, 0444, dev_holders_show, NULL);

/*
 * Resolve PATH to a cgroup and run @fn on its node with the ledger lock
 * held; @create makes the node chain if it is missing.
 */
static int nxq_with_node(struct nxq_device *dev, const char *path,
			 bool create, u64 max, u64 min, bool set_max,
			 bool set_min)
{
	struct nxq_node *node;
	struct cgroup *cgrp;
	int err = 0;

	cgrp = cgroup_get_from_path(path);
	if (IS_ERR(cgrp))	/* a file (ENOTDIR) is no cgroup either */
		return PTR_ERR(cgrp) == -ENOMEM ? -ENOMEM : -ENOENT;

	mutex_lock(&nxq_ledger.lock);
	if (dev->dead) {
		err = -ENODEV;
		goto out;
	}
	nxq_device_prune(dev);
	if (create) {
		node = nxq_node_for_cgroup(dev, cgrp);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
			goto out;
		}
		if (set_max)
			nxq_node_set_max(node, max);
		if (set_min)
			nxq_node_set_min(node, min);
		nxq_node_put(node);
	} else {
		node = nxq_node_find(dev, cgroup_id(cgrp));
		if (node)
			nxq_node_clear_budget(node);
	}
out:
	mutex_unlock(&nxq_ledger.lock);
	cgroup_put(cgrp);
	return err;
}

static ssize_t set_budget_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	bool set_max = false, set_min = false;
	u64 max = NXQ_UNLIMITED, min = 0;
	char *line, *w[3];
	int i, n, err = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &n);
	if (IS_ERR(line))
		return PTR_ERR(line);
	if (n < 2 || w[0][0] != '/')
		err = -EINVAL;
	for (i = 1; !err && i < n; i++) {
		if (!strncmp(w[i], "max=", 4) && !set_max) {
			err = nxq_parse_size(w[i] + 4, true, &max);
			set_max = true;
		} else if (!strncmp(w[i], "min=", 4) && !set_min) {
			err = nxq_parse_size(w[i] + 4, false, &min);
			set_min = true;
		} else {
			err = -EINVAL;
		}
	}
	if (!err)
		err = nxq_with_node(to_dev(kobj), w[0], true, max, min,
				    set_max, set_min);
	kfree(line);
	return err ? err : count;
}

static struct kobj_attribute nxq_set_budget_attr = __ATTR_WO(set_budget);

static ssize_t clear_budget_store(struct kobject *kobj,
				  struct kobj_attribute *attr, const char *buf,
				  size_t count)
{
	char *line, *w[1];
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &err);
	if (IS_ERR(line))
		return PTR_ERR(line);
	if (err != 1 || w[0][0] != '/')
		err = -EINVAL;
	else
		err = nxq_with_node(to_dev(kobj), w[0], false, 0, 0, false,
				    false);
	kfree(line);
	return err ? err : count;
}

static struct kobj_attribute nxq_clear_budget_attr = __ATTR_WO(clear_budget);

static struct attribute *nxq_dev_attrs[] = {
	&nxq_capacity_attr.attr,
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
	&nxq_ticket_timeout_ms_attr.attr,
	&nxq_set_budget_attr.attr,
	&nxq_clear_budget_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(nxq_dev);

static void nxq_dev_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct nxq_dev_kobj, kobj));
}

static const struct kobj_type nxq_dev_ktype = {
	.release	= nxq_dev_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= nxq_dev_groups,
};

/* ---- devices/<KEY>/nodes/<ID>/ ---- */

static ssize_t path_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct cgroup *cgrp = to_node(kobj)->key;
	int len;

	len = cgroup_path(cgrp, buf, PAGE_SIZE - 1);
	if (len < 0)
		return len;
	if (len >= PAGE_SIZE - 1)
		return -ENAMETOOLONG;
	len = strlen(buf);
	return len + sysfs_emit_at(buf, len, "\n");
}

static struct kobj_attribute nxq_path_attr = __ATTR_RO(path);

#define NXQ_NODE_BUDGET(name, field, is_max)				\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	struct nxq_budget b;						\
									\
	nxq_node_budget(to_node(kobj), &b);				\
	return nxq_emit_u64(buf, b.field, is_max);			\
}

NXQ_NODE_BUDGET(max, max, true)
NXQ_NODE_BUDGET(min, min, false)
NXQ_NODE_BUDGET(effective_min, effective_min, false)
NXQ_NODE_BUDGET(node_current, current_bytes, false)
NXQ_NODE_BUDGET(borrowed, borrowed, false)
NXQ_NODE_BUDGET(max_hits, max_hits, false)
NXQ_NODE_BUDGET(node_denials, denials, false)

#define NXQ_NODE_COUNTER(name)						\
static ssize_t node_##name##_show(struct kobject *kobj,			\
				  struct kobj_attribute *attr, char *buf) \
{									\
	struct nxq_node *node = to_node(kobj);				\
	u64 v;								\
									\
	spin_lock(&node->dev->lock);					\
	v = node->name;							\
	spin_unlock(&node->dev->lock);					\
	return nxq_emit_u64(buf, v, false);				\
}									\
static struct kobj_attribute nxq_node_##name##_attr =			\
	__ATTR(name, 0444, node_##name##_show, NULL)

NXQ_NODE_COUNTER(tickets);
NXQ_NODE_COUNTER(bytes_asked);
NXQ_NODE_COUNTER(bytes_released);
NXQ_NODE_COUNTER(kills);

static ssize_t kill_on_ignore_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct nxq_node *node = to_node(kobj);
	bool on;

	spin_lock(&node->dev->lock);
	on = node->kill_on_ignore;
	spin_unlock(&node->dev->lock);
	return sysfs_emit(buf, "%d\n", on);
}

static ssize_t kill_on_ignore_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	bool on;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (kstrtobool(buf, &on))
		return -EINVAL;
	nxq_node_set_kill_on_ignore(to_node(kobj), on);
	return count;
}

static struct kobj_attribute nxq_kill_on_ignore_attr =
	__ATTR_RW(kill_on_ignore);

static ssize_t nxq_node_store(struct kobject *kobj, const char *buf,
			      size_t count, bool is_max)
{
	char *line, *w[1];
	u64 v;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	line = nxq_words(buf, count, w, ARRAY_SIZE(w), &err);
	if (IS_ERR(line))
		return PTR_ERR(line);
	err = err == 1 ? nxq_parse_size(w[0], is_max, &v) : -EINVAL;
	kfree(line);
	if (err)
		return err;
	if (is_max)
		nxq_node_set_max(to_node(kobj), v);
	else
		nxq_node_set_min(to_node(kobj), v);
	return count;
}

static ssize_t max_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	return nxq_node_store(kobj, buf, count, true);
}

static ssize_t min_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	return nxq_node_store(kobj, buf, count, false);
}

static ssize_t node_holders_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	/* Informational; the ledger lock guards it, a stale read is fine. */
	return sysfs_emit(buf, "%u\n", data_race(to_node(kobj)->nr_holders));
}

static struct kobj_attribute nxq_max_attr = __ATTR_RW(max);
static struct kobj_attribute nxq_min_attr = __ATTR_RW(min);
static struct kobj_attribute nxq_effective_min_attr = __ATTR_RO(effective_min);
/* Not __ATTR_RO(current): the name would expand as the current macro. */
static struct kobj_attribute nxq_current_attr = {
	.attr = { .name = "current", .mode = 0444 },
	.show = node_current_show,
};
static struct kobj_attribute nxq_borrowed_attr = __ATTR_RO(borrowed);
static struct kobj_attribute nxq_max_hits_attr = __ATTR_RO(max_hits);
static struct kobj_attribute nxq_node_denials_attr =
	__ATTR(denials, 0444, node_denials_show, NULL);
static struct kobj_attribute nxq_node_holders_attr =
	__ATTR(holders, 0444, node_holders_show, NULL);

static struct attribute *nxq_node_attrs[] = {
	&nxq_path_attr.attr,
	&nxq_max_attr.attr,
	&nxq_min_attr.attr,
	&nxq_effective_min_attr.attr,
	&nxq_current_attr.attr,
	&nxq_borrowed_attr.attr,
	&nxq_max_hits_attr.attr,
	&nxq_node_denials_attr.attr,
	&nxq_node_holders_attr.attr,
	&nxq_node_tickets_attr.attr,
	&nxq_node_bytes_asked_attr.attr,
	&nxq_node_bytes_released_attr.attr,
	&nxq_node_kills_attr.attr,
	&nxq_kill_on_ignore_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(nxq_node);

static void nxq_node_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct nxq_node_kobj, kobj));
}

static const struct kobj_type nxq_node_ktype = {
	.release	= nxq_node_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= nxq_node_groups,
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
 * nxq_sysfs_node_added() - create nodes/<ID>/
 * @node: the new node; the ledger lock is held
 *
 * Return: 0, -ENOMEM, or kobject_add()'s error.
 */
int nxq_sysfs_node_added(struct nxq_node *node)
{
	struct nxq_dev_kobj *dk = node->dev->priv;
	struct nxq_node_kobj *nk;
	int err;

	if (!dk)
		return 0;
	nk = kzalloc(sizeof(*nk), GFP_KERNEL);
	if (!nk)
		return -ENOMEM;
	nk->node = node;
	err = kobject_init_and_add(&nk->kobj, &nxq_node_ktype, dk->nodes,
				   "%llu", node->id);
	if (err) {
		kobject_put(&nk->kobj);
		return err;
	}
	node->priv = nk;
	return 0;
}

/**
 * nxq_sysfs_node_removed() - delete nodes/<ID>/
 * @node: the node about to be freed; the ledger lock is held
 */
void nxq_sysfs_node_removed(struct nxq_node *node)
{
	struct nxq_node_kobj *nk = node->priv;

	if (!nk)
		return;
	kobject_del(&nk->kobj);
	kobject_put(&nk->kobj);
	node->priv = NULL;
}

/**
 * nxq_sysfs_init() - create /sys/kernel/nxquota and devices/
 *
 * Return: 0 or a negative errno.
 */
int nxq_sysfs_init(void)
{
	int err;

	nxq_root_kobj = kobject_create_and_add("nxquota", kernel_kobj);
	if (!nxq_root_kobj)
		return -ENOMEM;
	err = sysfs_create_file(nxq_root_kobj, &nxq_abi_version_attr.attr);
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
