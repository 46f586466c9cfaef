/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What nxquotactl's files share: the --json flag, one function per
 * command (status.c, budget.c, devices.c, events.c, metrics.c, cdi.c),
 * the budget tree's order (status.c) and the unattributed bytes
 * (unattr.c).  The transport and its errors are ctl.h's, the dumps
 * ledger.h's, the JSON documents jsonout.h's, sizes and labels fmt.h's.
 */
#ifndef NXQ_TOOLS_NXQUOTACTL_H
#define NXQ_TOOLS_NXQUOTACTL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "ledger.h"
#include "nvml.h"

/* --json (or -j) was given */
extern bool opt_json;

int cmd_status(struct ctl *n, int argc, char **argv);
int cmd_budget(struct ctl *n, bool set, int argc, char **argv);
int cmd_devices(struct ctl *n, int argc, char **argv);
/* A usage line for each field of the device table devices can set. */
void devices_usage(FILE *f);
int cmd_events(struct ctl *n, int argc);
int cmd_metrics(struct ctl *n, int argc);

/* Order nodes as a tree (depth-first, by cgroup id) and set their depth. */
void tree_order(struct vec *v);

/* Unattributed bytes (unattr.c). */

/*
 * What the NVIDIA driver attributes to each process (NVML) against what
 * the ledger charged it: the difference is what the ledger does not see
 * (the CUDA context, module images, allocations no holder was charged
 * for).  One row per (device, pid) of an NVML device: every process NVML
 * lists there, and every holder's process on it that NVML does not list.
 */
struct arow {
	const char *device;	/* an NVML device's uuid (the ledger's key) */
	char *cgroup;		/* path, "#ID" (a node not visible), or NULL */
	const char *cg_source;	/* "ledger", "proc" or NULL */
	uint32_t pid;
	bool listed;		/* NVML lists the process */
	uint64_t nvml;		/* NXQ_NVML_NA: the driver does not say */
	uint64_t charged;
	uint32_t holders;
};

/* Sums over rows, per device or per (device, cgroup). */
struct asum {
	const char *device;
	const char *cgroup;	/* NULL for a device's sum */
	const char *error;	/* a device NVML could not read, or NULL */
	uint32_t procs, na;	/* rows; rows whose NVML figure is n/a */
	uint64_t nvml, charged;	/* nvml: over the rows that have one */
	int64_t unattributed;	/* likewise */
};

struct attribution {
	bool shown;
	char why[512];		/* why not, when !shown */
	const char *api;
	struct nxq_nvml nv;
	struct vec rows, cgroups, devices;
};

static inline int64_t arow_unattributed(const struct arow *r)
{
	return (int64_t)(r->nvml - r->charged);
}

/* Read NVML (if allowed and there) and match it against the ledger l. */
void attribute(struct ledger *l, const char *device, struct attribution *at);
/* Status's table of unattributed bytes. */
void attribution_table(const struct attribution *at);
void attribution_free(struct attribution *at);

#endif /* NXQ_TOOLS_NXQUOTACTL_H */
