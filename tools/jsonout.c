// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl's --json documents (see jsonout.h), with json-c: one
 * library, already the hook's and `cdi generate`'s, writes every JSON
 * byte the tools print, so the escaping of strings (a cgroup path may
 * hold any byte but "/" and NUL) and the shape of numbers are json-c's,
 * not a hand-written printf's per field.  Owns the json_object trees it
 * builds, for the length of one call.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "jsonout.h"

/* Compact, and "/" as it is: paths read as paths. */
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static struct json_object *obj(void)
{
	struct json_object *o = json_object_new_object();

	if (!o) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return o;
}

static struct json_object *arr(void)
{
	struct json_object *a = json_object_new_array();

	if (!a) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return a;
}

static void u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void i64(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void boolean(struct json_object *o, const char *k, bool v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

/* s, or null for NULL */
static void str(struct json_object *o, const char *k, const char *s)
{
	json_object_object_add(o, k, s ? json_object_new_string(s) : NULL);
}

/* v, or null for NXQ_UNLIMITED */
static void max(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, v == NXQ_UNLIMITED ? NULL :
				 json_object_new_uint64(v));
}

/* Write the document and a newline, and free it. */
static void put(struct json_object *doc)
{
	const char *s = json_object_to_json_string_ext(doc, JSON_FLAGS);

	if (!s) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	puts(s);
	json_object_put(doc);
}

/* Event types' names, by NXQUOTA_EVENT_TYPE_*. */
const char *const event_names[NXQUOTA_EVENT_TYPE_ESCAPED + 1] = {
	[NXQUOTA_EVENT_TYPE_DEVICE_ADDED] = "device-added",
	[NXQUOTA_EVENT_TYPE_DEVICE_REMOVED] = "device-removed",
	[NXQUOTA_EVENT_TYPE_BUDGET_CHANGED] = "budget-changed",
	[NXQUOTA_EVENT_TYPE_DENIED] = "denied",
	[NXQUOTA_EVENT_TYPE_TICKET_ISSUED] = "ticket-issued",
	[NXQUOTA_EVENT_TYPE_TICKET_ANSWERED] = "ticket-answered",
	[NXQUOTA_EVENT_TYPE_KILLED] = "killed",
	[NXQUOTA_EVENT_TYPE_ESCAPED] = "escaped",
};

static struct json_object *device(const struct dev *d)
{
	struct json_object *o = obj(), *t;
	int i;

	str(o, "key", d->key);
	u64(o, "capacity", d->capacity);
	u64(o, "used", d->used);
	u64(o, "holders", d->holders);
	u64(o, "denials", d->denials);
	u64(o, "capacity_hits", d->capacity_hits);
	u64(o, "tickets", d->tickets);
	u64(o, "bytes_asked", d->bytes_asked);
	u64(o, "bytes_released", d->bytes_released);
	u64(o, "kills", d->kills);
	u64(o, "waits", d->waits);
	u64(o, "timeouts", d->timeouts);
	u64(o, "ticket_timeout_ms", d->ticket_timeout_ms);
	str(o, "devt", d->devt[0] ? d->devt : NULL);
	max(o, "default_max", d->default_max);
	u64(o, "events_dropped", d->events_dropped);
	t = obj();
	for (i = NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
	     i <= NXQUOTA_EVENT_TYPE_KILLED; i++)
		u64(t, event_names[i], d->events_dropped_type[i]);
	json_object_object_add(o, "events_dropped_type", t);
	return o;
}

static struct json_object *budget(const struct node *n)
{
	struct json_object *o = obj();
	int i;

	str(o, "device", n->device);
	str(o, "path", n->path);
	u64(o, "cgroup_id", n->id);
	if (n->has_parent)
		u64(o, "parent_id", n->parent);
	else
		str(o, "parent_id", NULL);
	/*
	 * The budget table's fields a node keeps, by their names: a size
	 * that reads "max" is null for none, with NAME_set saying whether
	 * it is the cgroup's own; a boolean true or false; the rest numbers
	 * (a limit: the one that binds the cgroup).
	 */
	for (i = 0; i < NXQ_NR_BUDGET_FIELDS; i++) {
		const struct field_def *d = &field_defs[i];
		char set[64];

		if (!d->kept)
			continue;
		if (d->parse == NXQ_PARSE_SIZE_MAX) {
			max(o, d->name, n->field[i]);
			snprintf(set, sizeof(set), "%s_set", d->name);
			boolean(o, set, n->has_field[i]);
		} else if (d->unit == NXQ_UNIT_BOOL) {
			boolean(o, d->name, n->field[i]);
		} else {
			u64(o, d->name, n->field[i]);
		}
	}
	max(o, "effective_max", n->emax);
	u64(o, "effective_min", n->emin);
	u64(o, "claimed", n->claimed);
	boolean(o, "overcommitted", n->overcommitted);
	u64(o, "current", n->current);
	u64(o, "borrowed", n->borrowed);
	u64(o, "headroom", n->headroom);
	u64(o, "max_hits", n->max_hits);
	u64(o, "denials", n->denials);
	u64(o, "holders", n->holders);
	u64(o, "tickets", n->tickets);
	u64(o, "bytes_asked", n->bytes_asked);
	u64(o, "bytes_released", n->bytes_released);
	u64(o, "kills", n->kills);
	if (n->has_measured) {	/* nxquotad's backstop only */
		u64(o, "measured", n->measured);
		u64(o, "escaped", n->escaped);
	}
	return o;
}

static struct json_object *holder(struct ledger *l, const struct holder *h)
{
	struct json_object *o = obj(), *t = obj();

	str(o, "device", h->device);
	u64(o, "cgroup_id", h->cgroup);
	str(o, "path", node_path(l, h->device, h->cgroup));
	u64(o, "pid", h->pid);
	u64(o, "priority", h->priority);
	u64(o, "charge", h->charge);
	u64(o, "reclaimable", h->reclaimable);
	boolean(t, "open", h->topen);
	u64(t, "generation", h->tgen);
	if (h->topen) {
		u64(t, "bytes", h->tbytes);
		u64(t, "reason", h->treason);
		u64(t, "level", h->tlevel);
		u64(t, "deadline_ns", h->tdeadline);
	}
	json_object_object_add(o, "ticket", t);
	return o;
}

/* A sum of unattr.c's, over a cgroup (cgroup set) or a device. */
static struct json_object *asum(const struct asum *s, bool cgroup)
{
	struct json_object *o = obj();

	if (cgroup) {
		str(o, "device", s->device);
		str(o, "cgroup", s->cgroup[0] ? s->cgroup : NULL);
	} else {
		str(o, "key", s->device);
		str(o, "error", s->error);
	}
	u64(o, "processes", s->procs);
	u64(o, "not_available", s->na);
	u64(o, "nvml_bytes", s->nvml);
	u64(o, "charged", s->charged);
	i64(o, "unattributed", s->unattributed);
	return o;
}

static struct json_object *attribution(const struct attribution *at)
{
	struct json_object *o = obj(), *procs, *cgs, *devs;
	const struct arow *r = at->rows.v;
	const struct asum *s;
	size_t i;

	boolean(o, "available", at->shown);
	if (!at->shown) {
		str(o, "reason", at->why);
		return o;
	}
	str(o, "api", at->api);
	procs = arr();
	for (i = 0; i < at->rows.n; i++, r++) {
		struct json_object *p = obj();
		bool na = r->nvml == NXQ_NVML_NA;

		str(p, "device", r->device);
		u64(p, "pid", r->pid);
		str(p, "cgroup", r->cgroup);
		str(p, "cgroup_source", r->cg_source);
		boolean(p, "listed", r->listed);
		json_object_object_add(p, "nvml_bytes", na ? NULL :
			json_object_new_int64((int64_t)r->nvml));
		u64(p, "charged", r->charged);
		u64(p, "holders", r->holders);
		json_object_object_add(p, "unattributed", na ? NULL :
			json_object_new_int64(arow_unattributed(r)));
		json_object_array_add(procs, p);
	}
	json_object_object_add(o, "processes", procs);
	cgs = arr();
	for (i = 0, s = at->cgroups.v; i < at->cgroups.n; i++, s++)
		json_object_array_add(cgs, asum(s, true));
	json_object_object_add(o, "cgroups", cgs);
	devs = arr();
	for (i = 0, s = at->devices.v; i < at->devices.n; i++, s++)
		json_object_array_add(devs, asum(s, false));
	json_object_object_add(o, "devices", devs);
	return o;
}

void json_status(struct ledger *l, const struct attribution *at)
{
	struct json_object *doc = obj(), *a;
	const struct dev *d = l->devs.v;
	const struct node *n = l->nodes.v;
	const struct holder *h = l->holders.v;
	size_t i;

	a = arr();
	for (i = 0; i < l->devs.n; i++)
		json_object_array_add(a, device(&d[i]));
	json_object_object_add(doc, "devices", a);
	a = arr();
	for (i = 0; i < l->nodes.n; i++)
		json_object_array_add(a, budget(&n[i]));
	json_object_object_add(doc, "budgets", a);
	a = arr();
	for (i = 0; i < l->holders.n; i++)
		json_object_array_add(a, holder(l, &h[i]));
	json_object_object_add(doc, "holders", a);
	json_object_object_add(doc, "nvml", attribution(at));
	put(doc);
}

void json_devices(const struct ledger *l)
{
	struct json_object *doc = arr();
	const struct dev *d = l->devs.v;
	size_t i;

	for (i = 0; i < l->devs.n; i++, d++) {
		struct json_object *o = obj();

		str(o, "key", d->key);
		u64(o, "capacity", d->capacity);
		u64(o, "used", d->used);
		u64(o, "holders", d->holders);
		json_object_array_add(doc, o);
	}
	put(doc);
}

void json_event(const struct json_event *e)
{
	struct json_object *o = obj();

	str(o, "time", e->time);
	str(o, "type", e->type);
	str(o, "device", e->device);
	u64(o, "cgroup_id", e->cgroup_id);
	str(o, "path", e->path);
	if (e->denied)
		u64(o, "count", e->count);
	if (e->denied)
		str(o, "refused_by", e->refused_by ? e->refused_by :
		    e->by_device ? "device" : NULL);
	u64(o, "pid", e->pid);
	u64(o, "bytes", e->bytes);
	u64(o, "value", e->value);
	u64(o, "reason", e->reason);
	u64(o, "timestamp_ns", e->timestamp_ns);
	put(o);
	fflush(stdout);
}
