// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: per-cgroup device-memory budgets for GPU nodes.
 *
 * The module owns one ledger (ledger.h) and thin shells over it:
 * /dev/nxquota (cdev.c), /sys/kernel/nxquota (sysfs.c), the generic
 * netlink family "nxquota" (netlink.c) and the cgroup glue (cgroup.c).
 * Init builds them inside out, exit tears them down outside in; exit runs
 * only once no file is open (the files pin the module), so no holder
 * exists when the ledger is destroyed.
 */
#include <linux/module.h>
#include <linux/init.h>

#include "internal.h"
#include "netlink.h"

struct nxq_ledger nxq_ledger;

/*
 * The shells behind the ledger's hooks (as nxquotad's nxquotad.c has its
 * own): cgroups as node keys (cgroup.c), the sysfs directories of devices
 * and nodes (sysfs.c, sysfs_node.c), a holder's kill, ticket signal and
 * cgroup move (cdev.c), events and whether anyone listens (netlink.c).
 */
static const struct nxq_ledger_ops nxq_ledger_ops = {
	.key_put	= nxq_cgroup_key_put,
	.key_dead	= nxq_cgroup_key_dead,
	.key_path	= nxq_cgroup_key_path,
	.device_added	= nxq_sysfs_device_added,
	.device_removed	= nxq_sysfs_device_removed,
	.node_added	= nxq_sysfs_node_added,
	.node_removed	= nxq_sysfs_node_removed,
	.holder_kill	= nxq_holder_kill,
	.holder_signal	= nxq_holder_signal,
	.holder_follow	= nxq_holder_follow,
	.changed	= nxq_nl_changed,
	.event		= nxq_nl_event,
	.listening	= nxq_nl_listening,
};

static int __init nxq_init(void)
{
	int err;

	nxq_ledger_init(&nxq_ledger, &nxq_ledger_ops);
	err = nxq_sysfs_init();
	if (err)
		return err;
	err = nxq_nl_init();
	if (err) {
		nxq_sysfs_exit();
		return err;
	}
	err = nxq_cdev_init();
	if (err) {
		nxq_nl_exit();
		nxq_sysfs_exit();
		return err;
	}
	return 0;
}

static void __exit nxq_exit(void)
{
	nxq_cdev_exit();
	nxq_nl_exit();
	nxq_ledger_destroy(&nxq_ledger);
	nxq_sysfs_exit();
}

module_init(nxq_init);
module_exit(nxq_exit);

MODULE_DESCRIPTION("nxquota: per-cgroup device-memory budgets");
MODULE_LICENSE("GPL");
MODULE_VERSION(NXQ_VERSION);
