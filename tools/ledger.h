/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ledger as the authority's dumps give it (ledger.c): devices, budget
 * nodes and holders, read with DEVICE_GET, BUDGET_GET and HOLDER_GET
 * dumps over ctl.h's transport.
 */
#ifndef NXQ_TOOLS_LEDGER_H
#define NXQ_TOOLS_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fields.h"

struct dev {
	char key[NXQ_DEVICE_KEY_MAX];
	uint64_t capacity, used, denials, capacity_hits, tickets, bytes_asked;
	uint64_t bytes_released, kills, waits, timeouts;
	uint64_t default_max, events_dropped;
	/* of events_dropped, by NXQUOTA_EVENT_TYPE_* (0 unused) */
	uint64_t events_dropped_type[NXQUOTA_EVENT_TYPE_KILLED + 1];
	/* nxquotad's alone (the module has no such bounds or restarts: 0) */
	uint64_t conns_refused, creds_refused, restored, restore_refused;
	uint32_t holders, ticket_timeout_ms;
	char devt[32];		/* "MAJOR:MINOR", or "" for none */
};

struct node {
	char device[NXQ_DEVICE_KEY_MAX];
	char path[4096];
	uint64_t id, parent, emin, current, borrowed, headroom;
	uint64_t emax, claimed;	/* effective max, children's guarantees */
	uint32_t overcommitted;	/* 0 or 1 (a metric's 32-bit field) */
	/*
	 * The budget table's fields (field_defs): as the dump gives them
	 * (has_field), else their default; a max is the cgroup's own when
	 * the dump has it, a limit the one that binds the cgroup.
	 */
	uint64_t field[NXQ_NR_BUDGET_FIELDS];
	bool has_field[NXQ_NR_BUDGET_FIELDS];
	uint64_t max_hits, denials, tickets, bytes_asked, bytes_released, kills;
	uint32_t holders;
	bool has_parent;
	int depth;
	/* nxquotad's backstop: NVML's measure of the subtree, named */
	bool has_measured;
	uint64_t measured, escaped;
};

struct holder {
	char device[NXQ_DEVICE_KEY_MAX];
	uint64_t cgroup, charge, reclaimable, tgen, tbytes, tdeadline;
	uint32_t pid, priority, treason, tlevel;
	bool topen;
};

struct vec {
	void *v;
	size_t n, cap, size;
};

struct ledger {
	struct vec devs, nodes, holders;
};

/* Append a zeroed element (exits on ENOMEM). */
void *vec_add(struct vec *v);
uint64_t u64_or(struct nlattr *a, uint64_t def);
uint32_t u32_or(struct nlattr *a, uint32_t def);
void str_to(char *dst, size_t size, struct nlattr *a);
/* Dump callbacks: append one device, node or holder to the vec @arg. */
int dev_cb(struct nlattr **tb, void *arg);
int node_cb(struct nlattr **tb, void *arg);
int holder_cb(struct nlattr **tb, void *arg);
/* One dump of @cmd (filtered by @device when set): EX_*; *intr set if
 * the authority flagged it interrupted. */
int dump(struct ctl *n, uint8_t cmd, int maxattr, int filter_attr,
	 const char *device, int (*fn)(struct nlattr **, void *),
	 struct vec *v, bool *intr);
/* Devices, nodes and holders (of @device, or all): EX_*. */
int read_ledger(struct ctl *n, const char *device, struct ledger *l);
void ledger_free(struct ledger *l);
/* The path of node id on device, or NULL when the ledger has none. */
const char *node_path(struct ledger *l, const char *device, uint64_t id);

/* "a/b/c/d": a node's limits in the table's order, into buf. */
const char *limits_text(const struct node *nd, char *buf, size_t n);

#endif /* NXQ_TOOLS_LEDGER_H */
