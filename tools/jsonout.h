/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotactl's --json documents (jsonout.c), built with json-c and
 * written compact -- no spaces, "/" not escaped -- one document per line
 * on stdout.  Each function builds its tree, writes it and frees it; the
 * ledger and the attribution stay the caller's.
 */
#ifndef NXQ_TOOLS_JSONOUT_H
#define NXQ_TOOLS_JSONOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "ledger.h"
#include "nxquotactl.h"

/*
 * status --json: {"devices":[...],"budgets":[...],"holders":[...],
 * "nvml":{...}}, nxquotactl.8 says what each member means.
 */
void json_status(struct ledger *l, const struct attribution *at);

/* devices --json: [{"key":...,"capacity":N,"used":N,"holders":N},...] */
void json_devices(const struct ledger *l);

/* Event types' names, by NXQUOTA_EVENT_TYPE_* (the text, JSON and
 * metrics outputs all name them so). */
extern const char *const event_names[NXQUOTA_EVENT_TYPE_ESCAPED + 1];

/* One event of events --json, as on_event() read it. */
struct json_event {
	const char *time;	/* "2026-12-02T06:25:50.123", local time */
	const char *type;	/* "denied", ... */
	const char *device;
	uint64_t cgroup_id;
	const char *path;	/* the cgroup's path, or NULL: null */
	bool denied;		/* a denial: count and refused_by follow */
	uint64_t count;		/* a denial: how many it stands for */
	const char *refused_by;	/* the limiting cgroup's path, or NULL */
	bool by_device;		/* NULL refused_by: the device refused */
	uint32_t pid, reason;
	uint64_t bytes, value, timestamp_ns;
};
void json_event(const struct json_event *e);

#endif /* NXQ_TOOLS_JSONOUT_H */
