// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl - the operator's tool for nxquota, over the generic netlink
 * family "nxquota" (libnl-genl-3).  See nxquotactl.8.
 *
 *   nxquotactl [--json] status [DEVICE]
 *   nxquotactl set CGROUP DEVICE [max=SIZE] [min=SIZE] [kill-on-ignore=0|1]
 *   nxquotactl clear CGROUP DEVICE
 *   nxquotactl [--json] devices
 *   nxquotactl devices register KEY SIZE | unregister KEY | capacity KEY SIZE
 *   nxquotactl devices sync [--dry-run]
 *   nxquotactl [--json] events
 *   nxquotactl metrics
 *
 * The authority: the module's generic netlink family if it resolves,
 * else nxquotad's control socket ($NXQUOTA_CONTROL, default
 * /run/nxquota/control.sock), which speaks the same family, one netlink
 * message per SOCK_SEQPACKET message (daemon/proto.h).  --control PATH
 * asks the daemon at PATH only.  The messages are the same libnl ones
 * either way, and the replies go through the same callbacks.
 *
 * Exit status: 0 success, 1 the request failed, 2 usage, 3 neither the
 * module nor the daemon is there, 4 permission denied.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "cdi.h"
#include "ctl.h"
#include "fmt.h"
#include "ledger.h"
#include "gpu_node.h"
#include "nvml.h"

static bool json;

/* Order nodes as a tree (depth-first, by cgroup id) and set their depth. */
static int cmp_node(const void *a, const void *b)
{
	const struct node *x = a, *y = b;
	int c = strcmp(x->device, y->device);

	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void tree_visit(struct node *in, size_t n, size_t i, int depth,
		       struct node *out, size_t *k, char *placed)
{
	size_t j;

	placed[i] = 1;
	in[i].depth = depth;
	out[(*k)++] = in[i];
	for (j = 0; j < n; j++)
		if (!placed[j] && in[j].has_parent &&
		    in[j].parent == in[i].id &&
		    !strcmp(in[j].device, in[i].device))
			tree_visit(in, n, j, depth + 1, out, k, placed);
}

static void tree_order(struct vec *v)
{
	struct node *in = v->v, *out;
	size_t i, j, k = 0;
	char *placed;

	if (!v->n)
		return;
	qsort(in, v->n, sizeof(*in), cmp_node);
	out = calloc(v->n, sizeof(*out));
	placed = calloc(v->n, 1);
	if (!out || !placed) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	/* Roots: no parent, or a parent the caller may not see. */
	for (i = 0; i < v->n; i++) {
		bool parent_seen = false;

		for (j = 0; j < v->n && in[i].has_parent; j++)
			if (in[j].id == in[i].parent &&
			    !strcmp(in[j].device, in[i].device))
				parent_seen = true;
		if (!placed[i] && !parent_seen)
			tree_visit(in, v->n, i, 0, out, &k, placed);
	}
	for (i = 0; i < v->n; i++)	/* cycles cannot happen; be safe */
		if (!placed[i])
			tree_visit(in, v->n, i, 0, out, &k, placed);
	memcpy(in, out, v->n * sizeof(*in));
	free(out);
	free(placed);
}

static const char *node_path(struct ledger *l, const char *device,
			     uint64_t id)
{
	struct node *n = l->nodes.v;
	size_t i;

	for (i = 0; i < l->nodes.n; i++)
		if (n[i].id == id && !strcmp(n[i].device, device))
			return n[i].path;
	return NULL;
}

static void json_u64(FILE *f, const char *name, uint64_t v, bool comma)
{
	fprintf(f, "\"%s\":%" PRIu64 "%s", name, v, comma ? "," : "");
}

/* ---- unattributed bytes (NVML) ----------------------------------------- */

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

static int64_t arow_unattributed(const struct arow *r)
{
	return (int64_t)(r->nvml - r->charged);
}

/*
 * NVML lists every tenant's processes: only an administrator of the node
 * sees them (CAP_SYS_ADMIN, the module's test for every change and for
 * the events group, in the initial user namespace).  0, or -1 with why.
 */
static int nvml_allowed(char *why, size_t size)
{
	char line[256];
	bool admin = false, init_ns = false;
	unsigned long long eff;
	unsigned int a, b, c;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			admin = eff & (1ULL << 21);	/* CAP_SYS_ADMIN */
	if (f)
		fclose(f);
	f = fopen("/proc/self/uid_map", "re");
	if (f && fgets(line, sizeof(line), f) &&
	    sscanf(line, "%u %u %u", &a, &b, &c) == 3)
		init_ns = a == 0 && b == 0 && c == UINT32_MAX &&
			  !fgets(line, sizeof(line), f);
	if (f)
		fclose(f);
	if (admin && init_ns)
		return 0;
	snprintf(why, size, "not shown: needs CAP_SYS_ADMIN in the initial "
		 "user namespace (the driver lists every tenant's processes)");
	return -1;
}

/* The cgroup2 path of pid from /proc (the reader's cgroup namespace). */
static char *proc_cgroup(uint32_t pid)
{
	char path[64], line[4200], *p = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			p = strdup(line + 3);
			break;
		}
	fclose(f);
	return p;
}

static struct arow *arow_get(struct vec *rows, const char *device,
			     uint32_t pid)
{
	struct arow *r = rows->v;
	size_t i;

	for (i = 0; i < rows->n; i++)
		if (r[i].pid == pid && !strcmp(r[i].device, device))
			return &r[i];
	r = vec_add(rows);
	r->device = device;
	r->pid = pid;
	return r;
}

static int cmp_arow(const void *a, const void *b)
{
	const struct arow *x = a, *y = b;
	int c = strcmp(x->device, y->device);

	if (c)
		return c;
	c = strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
	if (c)
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void asum_add(struct asum *s, const struct arow *r)
{
	s->procs++;
	s->charged += r->charged;
	if (r->nvml == NXQ_NVML_NA) {
		s->na++;
		return;
	}
	s->nvml += r->nvml;
	s->unattributed += arow_unattributed(r);
}

/* Read NVML (if allowed and there) and match it against the ledger. */
static void attribute(struct ledger *l, const char *device,
		      struct attribution *at)
{
	struct nxq_nvml *nv = &at->nv;
	struct holder *h = l->holders.v;
	const char *e;
	struct arow *r;
	struct asum *s;
	size_t i, j;

	memset(at, 0, sizeof(*at));
	at->rows = (struct vec){ .size = sizeof(struct arow) };
	at->cgroups = (struct vec){ .size = sizeof(struct asum) };
	at->devices = (struct vec){ .size = sizeof(struct asum) };
	e = getenv("NXQUOTA_NVML");
	if (e && !strcmp(e, "0")) {
		snprintf(at->why, sizeof(at->why), "not read (NXQUOTA_NVML=0)");
		return;
	}
	if (nvml_allowed(at->why, sizeof(at->why)))
		return;
	if (nxq_nvml_read(nv, at->why, sizeof(at->why)))
		return;
	at->shown = true;
	at->api = nv->api;
	for (i = 0; i < nv->nprocs; i++) {
		const char *key = nv->devs[nv->procs[i].dev].uuid;

		if (device && strcmp(device, key))
			continue;
		r = arow_get(&at->rows, key, nv->procs[i].pid);
		/* listed twice (MIG instances): the sum, n/a if either is */
		if (!r->listed || nv->procs[i].bytes == NXQ_NVML_NA)
			r->nvml = nv->procs[i].bytes;
		else if (r->nvml != NXQ_NVML_NA)
			r->nvml += nv->procs[i].bytes;
		r->listed = true;
	}
	for (i = 0; i < l->holders.n; i++, h++) {
		const char *key = NULL, *p;

		for (j = 0; j < nv->ndevs; j++)
			if (!strcmp(nv->devs[j].uuid, h->device))
				key = nv->devs[j].uuid;
		if (!key || (device && strcmp(device, key)))
			continue;	/* not a device NVML knows */
		r = arow_get(&at->rows, key, h->pid);
		r->charged += h->charge;
		r->holders++;
		if (!r->cgroup) {
			p = node_path(l, h->device, h->cgroup);
			if (p) {
				r->cgroup = strdup(p);
			} else if (asprintf(&r->cgroup, "#%" PRIu64,
					    h->cgroup) < 0) {
				r->cgroup = NULL;
			}
			r->cg_source = "ledger";
		}
	}
	for (i = 0, r = at->rows.v; i < at->rows.n; i++, r++)
		if (!r->cgroup && r->pid) {
			r->cgroup = proc_cgroup(r->pid);
			r->cg_source = r->cgroup ? "proc" : NULL;
		}
	if (at->rows.n)
		qsort(at->rows.v, at->rows.n, sizeof(struct arow), cmp_arow);
	/* per device: every NVML device, with or without processes */
	for (j = 0; j < nv->ndevs; j++) {
		if (device && strcmp(device, nv->devs[j].uuid))
			continue;
		s = vec_add(&at->devices);
		s->device = nv->devs[j].uuid;
		s->error = nv->devs[j].error[0] ? nv->devs[j].error : NULL;
		for (i = 0, r = at->rows.v; i < at->rows.n; i++, r++)
			if (r->device == s->device)
				asum_add(s, r);
	}
	/* per cgroup: rows are sorted by device, then cgroup */
	for (i = 0, r = at->rows.v, s = NULL; i < at->rows.n; i++, r++) {
		const char *cg = r->cgroup ? r->cgroup : "";

		if (!s || s->device != r->device || strcmp(s->cgroup, cg)) {
			s = vec_add(&at->cgroups);
			s->device = r->device;
			s->cgroup = cg;
		}
		asum_add(s, r);
	}
}

static void json_i64_or_null(const char *name, uint64_t nvml, int64_t v,
			     bool comma)
{
	if (nvml == NXQ_NVML_NA)
		printf("\"%s\":null%s", name, comma ? "," : "");
	else
		printf("\"%s\":%" PRId64 "%s", name, v, comma ? "," : "");
}

static void json_str_or_null(const char *s)
{
	if (s)
		nxq_json_string(stdout, s);
	else
		printf("null");
}

static void attribution_json(const struct attribution *at)
{
	const struct arow *r = at->rows.v;
	const struct asum *s;
	size_t i;

	printf(",\"nvml\":{\"available\":%s", at->shown ? "true" : "false");
	if (!at->shown) {
		printf(",\"reason\":");
		nxq_json_string(stdout, at->why);
		printf("}");
		return;
	}
	printf(",\"api\":");
	nxq_json_string(stdout, at->api);
	printf(",\"processes\":[");
	for (i = 0; i < at->rows.n; i++, r++) {
		printf("%s{\"device\":", i ? "," : "");
		nxq_json_string(stdout, r->device);
		printf(",\"pid\":%u,\"cgroup\":", r->pid);
		json_str_or_null(r->cgroup);
		printf(",\"cgroup_source\":");
		json_str_or_null(r->cg_source);
		printf(",\"listed\":%s,", r->listed ? "true" : "false");
		json_i64_or_null("nvml_bytes", r->nvml, (int64_t)r->nvml, true);
		json_u64(stdout, "charged", r->charged, true);
		json_u64(stdout, "holders", r->holders, true);
		json_i64_or_null("unattributed", r->nvml, arow_unattributed(r),
				 false);
		printf("}");
	}
	printf("],\"cgroups\":[");
	for (i = 0, s = at->cgroups.v; i < at->cgroups.n; i++, s++) {
		printf("%s{\"device\":", i ? "," : "");
		nxq_json_string(stdout, s->device);
		printf(",\"cgroup\":");
		json_str_or_null(s->cgroup[0] ? s->cgroup : NULL);
		printf(",\"processes\":%u,\"not_available\":%u,", s->procs,
		       s->na);
		json_u64(stdout, "nvml_bytes", s->nvml, true);
		json_u64(stdout, "charged", s->charged, true);
		printf("\"unattributed\":%" PRId64 "}", s->unattributed);
	}
	printf("],\"devices\":[");
	for (i = 0, s = at->devices.v; i < at->devices.n; i++, s++) {
		printf("%s{\"key\":", i ? "," : "");
		nxq_json_string(stdout, s->device);
		printf(",\"error\":");
		json_str_or_null(s->error);
		printf(",\"processes\":%u,\"not_available\":%u,", s->procs,
		       s->na);
		json_u64(stdout, "nvml_bytes", s->nvml, true);
		json_u64(stdout, "charged", s->charged, true);
		printf("\"unattributed\":%" PRId64 "}", s->unattributed);
	}
	printf("]}");
}

/* "520M", or "520M+2n/a" when some processes' figures are not available */
static const char *sum_size(const struct asum *s, uint64_t v, bool is_signed,
			    int64_t sv, char *buf)
{
	char t[NXQ_FMT_SIZE_LEN];

	if (is_signed)
		nxq_format_ssize(sv, t);
	else
		nxq_format_size(v, false, t);
	if (s->na)
		snprintf(buf, 64, "%s+%un/a", t, s->na);
	else
		snprintf(buf, 64, "%s", t);
	return buf;
}

static void attribution_table(const struct attribution *at)
{
	char a[64], b[64], c[64];
	const struct arow *r = at->rows.v;
	const struct asum *s;
	size_t i;

	if (!at->shown) {
		printf("\nnvml: %s%s\n",
		       strncmp(at->why, "not ", 4) ? "not available: " : "",
		       at->why);
		return;
	}
	printf("\nUNATTRIBUTED BYTES (NVML: device memory the NVIDIA driver "
	       "attributes to the process;\n"
	       "CHARGED: what the ledger charged its holders; UNATTRIBUTED = "
	       "NVML - CHARGED: its\n"
	       "context, module images and whatever it mapped that no holder "
	       "was charged for;\n"
	       "negative: charged ahead of what it has mapped; \"unlisted\": "
	       "NVML does not list the pid)\n");
	printf("%-16s %-28s %8s %9s %9s %12s %7s\n", "DEVICE", "CGROUP", "PID",
	       "NVML", "CHARGED", "UNATTRIBUTED", "HOLDERS");
	for (i = 0; i < at->rows.n; i++, r++) {
		if (!r->listed)
			snprintf(a, sizeof(a), "unlisted");
		else if (r->nvml == NXQ_NVML_NA)
			snprintf(a, sizeof(a), "n/a");
		else
			nxq_format_size(r->nvml, false, a);
		if (r->nvml == NXQ_NVML_NA)
			snprintf(c, sizeof(c), "n/a");
		else
			nxq_format_ssize(arow_unattributed(r), c);
		printf("%-16s %-28s %8u %9s %9s %12s %7u\n", r->device,
		       r->cgroup ? r->cgroup : "-", r->pid, a,
		       nxq_format_size(r->charged, false, b), c, r->holders);
	}
	if (!at->rows.n)
		printf("(no process on an NVML device)\n");
	printf("\nUNATTRIBUTED BY CGROUP (the processes in the cgroup itself)\n");
	printf("%-16s %-28s %8s %9s %9s %12s\n", "DEVICE", "CGROUP", "PROCS",
	       "NVML", "CHARGED", "UNATTRIBUTED");
	for (i = 0, s = at->cgroups.v; i < at->cgroups.n; i++, s++)
		printf("%-16s %-28s %8u %9s %9s %12s\n", s->device,
		       s->cgroup[0] ? s->cgroup : "-", s->procs,
		       sum_size(s, s->nvml, false, 0, a),
		       nxq_format_size(s->charged, false, b),
		       sum_size(s, 0, true, s->unattributed, c));
	printf("\nUNATTRIBUTED BY DEVICE (%s)\n", at->api);
	printf("%-40s %8s %9s %9s %12s\n", "DEVICE", "PROCS", "NVML", "CHARGED",
	       "UNATTRIBUTED");
	for (i = 0, s = at->devices.v; i < at->devices.n; i++, s++) {
		if (s->error) {
			printf("%-40s processes not readable: %s\n", s->device,
			       s->error);
			continue;
		}
		printf("%-40s %8u %9s %9s %12s\n", s->device, s->procs,
		       sum_size(s, s->nvml, false, 0, a),
		       nxq_format_size(s->charged, false, b),
		       sum_size(s, 0, true, s->unattributed, c));
	}
	if (!at->devices.n)
		printf("(NVML lists no device)\n");
}

static void attribution_free(struct attribution *at)
{
	struct arow *r = at->rows.v;
	size_t i;

	for (i = 0; i < at->rows.n; i++)
		free(r[i].cgroup);
	free(at->rows.v);
	free(at->cgroups.v);
	free(at->devices.v);
	nxq_nvml_free(&at->nv);
}

/* ---- status ------------------------------------------------------------- */

static void json_max(FILE *f, const char *name, uint64_t v)
{
	if (v == NXQ_UNLIMITED)
		fprintf(f, "\"%s\":null,", name);
	else
		json_u64(f, name, v, true);
}

/* Event types' names, by NXQUOTA_EVENT_TYPE_*. */
static const char *const event_names[] = {
	[NXQUOTA_EVENT_TYPE_DEVICE_ADDED] = "device-added",
	[NXQUOTA_EVENT_TYPE_DEVICE_REMOVED] = "device-removed",
	[NXQUOTA_EVENT_TYPE_BUDGET_CHANGED] = "budget-changed",
	[NXQUOTA_EVENT_TYPE_DENIED] = "denied",
	[NXQUOTA_EVENT_TYPE_TICKET_ISSUED] = "ticket-issued",
	[NXQUOTA_EVENT_TYPE_TICKET_ANSWERED] = "ticket-answered",
	[NXQUOTA_EVENT_TYPE_KILLED] = "killed",
};

static void status_json(struct ledger *l, const struct attribution *at)
{
	struct dev *d = l->devs.v;
	struct node *n = l->nodes.v;
	struct holder *h = l->holders.v;
	size_t i;
	int t;

	printf("{\"devices\":[");
	for (i = 0; i < l->devs.n; i++, d++) {
		printf("%s{\"key\":", i ? "," : "");
		nxq_json_string(stdout, d->key);
		printf(",");
		json_u64(stdout, "capacity", d->capacity, true);
		json_u64(stdout, "used", d->used, true);
		json_u64(stdout, "holders", d->holders, true);
		json_u64(stdout, "denials", d->denials, true);
		json_u64(stdout, "capacity_hits", d->capacity_hits, true);
		json_u64(stdout, "tickets", d->tickets, true);
		json_u64(stdout, "bytes_asked", d->bytes_asked, true);
		json_u64(stdout, "bytes_released", d->bytes_released, true);
		json_u64(stdout, "kills", d->kills, true);
		json_u64(stdout, "waits", d->waits, true);
		json_u64(stdout, "timeouts", d->timeouts, true);
		json_u64(stdout, "ticket_timeout_ms", d->ticket_timeout_ms,
			 true);
		printf("\"devt\":");
		if (d->devt[0])
			nxq_json_string(stdout, d->devt);
		else
			printf("null");
		printf(",");
		json_max(stdout, "default_max", d->default_max);
		json_u64(stdout, "events_dropped", d->events_dropped, true);
		printf("\"events_dropped_type\":{");
		for (t = NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
		     t <= NXQUOTA_EVENT_TYPE_KILLED; t++)
			json_u64(stdout, event_names[t],
				 d->events_dropped_type[t],
				 t < NXQUOTA_EVENT_TYPE_KILLED);
		printf("}}");
	}
	printf("],\"budgets\":[");
	for (i = 0; i < l->nodes.n; i++, n++) {
		printf("%s{\"device\":", i ? "," : "");
		nxq_json_string(stdout, n->device);
		printf(",\"path\":");
		nxq_json_string(stdout, n->path);
		printf(",");
		json_u64(stdout, "cgroup_id", n->id, true);
		if (n->has_parent)
			json_u64(stdout, "parent_id", n->parent, true);
		else
			printf("\"parent_id\":null,");
		json_max(stdout, "max", n->max);
		printf("\"max_set\":%s,", n->max_set ? "true" : "false");
		json_max(stdout, "effective_max", n->emax);
		json_u64(stdout, "min", n->min, true);
		json_u64(stdout, "effective_min", n->emin, true);
		json_u64(stdout, "claimed", n->claimed, true);
		printf("\"overcommitted\":%s,",
		       n->overcommitted ? "true" : "false");
		json_u64(stdout, "current", n->current, true);
		json_u64(stdout, "borrowed", n->borrowed, true);
		json_u64(stdout, "headroom", n->headroom, true);
		json_u64(stdout, "max_hits", n->max_hits, true);
		json_u64(stdout, "denials", n->denials, true);
		json_u64(stdout, "holders", n->holders, true);
		json_u64(stdout, "tickets", n->tickets, true);
		json_u64(stdout, "bytes_asked", n->bytes_asked, true);
		json_u64(stdout, "bytes_released", n->bytes_released, true);
		json_u64(stdout, "kills", n->kills, true);
		printf("\"kill_on_ignore\":%s,",
		       n->kill_on_ignore ? "true" : "false");
		json_u64(stdout, "holders_max", n->holders_max, true);
		json_u64(stdout, "waiters_max", n->waiters_max, true);
		json_u64(stdout, "priority_max", n->priority_max, true);
		json_u64(stdout, "wait_max_ms", n->wait_max_ms, false);
		printf("}");
	}
	printf("],\"holders\":[");
	for (i = 0; i < l->holders.n; i++, h++) {
		const char *p = node_path(l, h->device, h->cgroup);

		printf("%s{\"device\":", i ? "," : "");
		nxq_json_string(stdout, h->device);
		printf(",");
		json_u64(stdout, "cgroup_id", h->cgroup, true);
		printf("\"path\":");
		if (p)
			nxq_json_string(stdout, p);
		else
			printf("null");
		printf(",");
		json_u64(stdout, "pid", h->pid, true);
		json_u64(stdout, "priority", h->priority, true);
		json_u64(stdout, "charge", h->charge, true);
		json_u64(stdout, "reclaimable", h->reclaimable, true);
		printf("\"ticket\":{\"open\":%s,", h->topen ? "true" : "false");
		json_u64(stdout, "generation", h->tgen, h->topen);
		if (h->topen) {
			json_u64(stdout, "bytes", h->tbytes, true);
			json_u64(stdout, "reason", h->treason, true);
			json_u64(stdout, "level", h->tlevel, true);
			json_u64(stdout, "deadline_ns", h->tdeadline, false);
		}
		printf("}}");
	}
	printf("]");
	attribution_json(at);
	printf("}\n");
}

static void status_table(struct ledger *l, const struct attribution *at)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN], c[NXQ_FMT_SIZE_LEN];
	char d2[NXQ_FMT_SIZE_LEN], e[NXQ_FMT_SIZE_LEN], f[NXQ_FMT_SIZE_LEN];
	char g[NXQ_FMT_SIZE_LEN], oc[64];
	struct dev *d = l->devs.v;
	struct node *n = l->nodes.v;
	struct holder *h = l->holders.v;
	char indented[4200];
	size_t i;

	printf("%-40s %9s %9s %7s %8s %8s %11s %9s %8s\n", "DEVICE",
	       "CAPACITY", "USED", "HOLDERS", "DENIALS", "TICKETS", "DEVT",
	       "DEF.MAX", "EV.DROP");
	for (i = 0; i < l->devs.n; i++, d++)
		printf("%-40s %9s %9s %7u %8" PRIu64 " %8" PRIu64 " %11s %9s %8"
		       PRIu64 "\n", d->key,
		       nxq_format_size(d->capacity, false, a),
		       nxq_format_size(d->used, false, b), d->holders,
		       d->denials, d->tickets, d->devt[0] ? d->devt : "-",
		       nxq_format_size(d->default_max, true, c),
		       d->events_dropped);
	if (!l->devs.n)
		printf("(no device registered)\n");

	printf("\nBUDGETS (bytes are charge, not residency; - : none of its own)\n");
	printf("%-16s %-28s %8s %8s %8s %8s %8s %8s %7s %7s %s\n", "DEVICE",
	       "CGROUP", "MAX", "EFF.MAX", "MIN", "EFF.MIN", "CURRENT",
	       "BORROWED", "HOLDERS", "DENIALS",
	       "LIMITS(holders/waiters/prio/wait ms)");
	tree_order(&l->nodes);
	n = l->nodes.v;
	for (i = 0; i < l->nodes.n; i++, n++) {
		const char *base = strrchr(n->path, '/');

		snprintf(indented, sizeof(indented), "%*s%s", 2 * n->depth, "",
			 n->depth && base && base[1] ? base + 1 : n->path);
		if (n->overcommitted)
			snprintf(oc, sizeof(oc), "  overcommitted (claimed %s)",
				 nxq_format_size(n->claimed, false, f));
		else
			oc[0] = 0;
		printf("%-16s %-28s %8s %8s %8s %8s %8s %8s %7u %7" PRIu64
		       " %u/%u/%u/%u%s%s\n",
		       n->device, indented,
		       n->max_set ? nxq_format_size(n->max, true, a) : "-",
		       nxq_format_size(n->emax, true, g),
		       n->min ? nxq_format_size(n->min, false, b) : "-",
		       nxq_format_size(n->emin, false, c),
		       nxq_format_size(n->current, false, d2),
		       nxq_format_size(n->borrowed, false, e), n->holders,
		       n->denials, n->holders_max, n->waiters_max,
		       n->priority_max, n->wait_max_ms,
		       n->kill_on_ignore ? "  kill-on-ignore" : "", oc);
	}

	printf("\nHOLDERS\n");
	printf("%-16s %-28s %8s %5s %8s %11s %s\n", "DEVICE", "CGROUP", "PID",
	       "PRIO", "CHARGE", "RECLAIMABLE", "TICKET");
	for (i = 0; i < l->holders.n; i++, h++) {
		const char *p = node_path(l, h->device, h->cgroup);
		char cg[32], t[64];

		snprintf(cg, sizeof(cg), "#%" PRIu64, h->cgroup);
		if (h->topen)
			snprintf(t, sizeof(t), "open: %s asked (gen %" PRIu64 ")",
				 nxq_format_size(h->tbytes, false, c), h->tgen);
		else
			snprintf(t, sizeof(t), "-");
		printf("%-16s %-28s %8u %5u %8s %11s %s\n", h->device,
		       p ? p : cg, h->pid, h->priority,
		       nxq_format_size(h->charge, false, a),
		       nxq_format_size(h->reclaimable, false, b), t);
	}
	attribution_table(at);
}

static int cmd_status(struct ctl *n, int argc, char **argv)
{
	struct attribution at;
	struct ledger l;
	int rc;

	if (argc > 1) {
		warnx_("usage: status [DEVICE]");
		return EX_USAGE;
	}
	rc = read_ledger(n, argc ? argv[0] : NULL, &l);
	if (rc)
		return rc;
	attribute(&l, argc ? argv[0] : NULL, &at);
	if (json)
		status_json(&l, &at);
	else
		status_table(&l, &at);
	attribution_free(&at);
	return EX_OK;
}

/* ---- set, clear ----------------------------------------------------------- */

/* The attribute of a "holders-max=N"-style word, or 0. */
static int limit_attr(const char *w)
{
	static const struct {
		const char *name;
		int attr;
	} lims[] = {
		{ "holders-max=", NXQUOTA_A_BUDGET_HOLDERS_MAX },
		{ "waiters-max=", NXQUOTA_A_BUDGET_WAITERS_MAX },
		{ "priority-max=", NXQUOTA_A_BUDGET_PRIORITY_MAX },
		{ "wait-max-ms=", NXQUOTA_A_BUDGET_WAIT_MAX_MS },
	};
	size_t i;

	for (i = 0; i < sizeof(lims) / sizeof(lims[0]); i++)
		if (!strncmp(w, lims[i].name, strlen(lims[i].name)))
			return lims[i].attr;
	return 0;
}

/* The budget node of @path on @device as a dump shows it, or NULL. */
static struct node *find_node(struct ctl *n, const char *device,
			      const char *path, struct vec *v)
{
	struct reply r = { .data = node_cb, .arg = v,
			   .maxattr = NXQUOTA_A_BUDGET_LAST };
	struct nl_msg *msg = ctl_new(n, NXQUOTA_CMD_BUDGET_GET, NLM_F_DUMP);
	struct node *nd;
	size_t i;

	/* Quiet: a missing device is the set's own error to report. */
	*v = (struct vec){ .size = sizeof(struct node) };
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, device);
	if (ctl_request(n, msg, &r))
		return NULL;
	for (i = 0, nd = v->v; i < v->n; i++, nd++)
		if (!strcmp(nd->path, path))
			return nd;
	return NULL;
}

static const char *own_max(const struct node *nd, char *buf)
{
	return nd && nd->max_set ? nxq_format_size(nd->max, true, buf) : "-";
}

static const char *own_min(const struct node *nd, char *buf)
{
	return nd && nd->min ? nxq_format_size(nd->min, false, buf) : "-";
}

/*
 * What a set or clear changed, on stdout: each field before and after,
 * then what binds the cgroup now.  Sizes as status shows them.
 */
static void say_changed(const char *path, const char *device,
			const struct node *was, const struct node *now,
			bool lim_given)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN];
	bool any = false;

	printf("%s on %s:", path, device);
	if (strcmp(own_max(was, a), own_max(now, b))) {
		printf(" max %s -> %s", own_max(was, a), own_max(now, b));
		any = true;
	}
	if (strcmp(own_min(was, a), own_min(now, b))) {
		printf("%s min %s -> %s", any ? "," : "", own_min(was, a),
		       own_min(now, b));
		any = true;
	}
	if ((was && was->kill_on_ignore) != (now && now->kill_on_ignore)) {
		printf("%s kill-on-ignore %d -> %d", any ? "," : "",
		       was && was->kill_on_ignore, now && now->kill_on_ignore);
		any = true;
	}
	if (was && now && (was->holders_max != now->holders_max ||
			   was->waiters_max != now->waiters_max ||
			   was->priority_max != now->priority_max ||
			   was->wait_max_ms != now->wait_max_ms)) {
		printf("%s limits %u/%u/%u/%u -> %u/%u/%u/%u", any ? "," : "",
		       was->holders_max, was->waiters_max, was->priority_max,
		       was->wait_max_ms, now->holders_max, now->waiters_max,
		       now->priority_max, now->wait_max_ms);
		any = true;
	} else if (!was && now && lim_given) {
		printf("%s limits %u/%u/%u/%u", any ? "," : "",
		       now->holders_max, now->waiters_max, now->priority_max,
		       now->wait_max_ms);
		any = true;
	}
	if (!any)
		printf(" unchanged");
	if (now)
		printf("; effective max %s, effective min %s%s",
		       nxq_format_size(now->emax, true, a),
		       nxq_format_size(now->emin, false, b),
		       now->overcommitted ? "; its children overcommit it" :
		       "");
	else
		printf("; no budget node left");
	printf("\n");
}

static int cmd_budget(struct ctl *n, bool set, int argc, char **argv)
{
	struct vec before = { 0 }, after = { 0 };
	struct node *was, *now;
	bool lim_given = false;
	struct reply r = { 0 };
	struct nl_msg *msg;
	uint64_t v;
	int i, err;

	if (argc < 2 || (set && argc < 3) || (!set && argc != 2)) {
		warnx_(set ? "usage: set CGROUP DEVICE [max=SIZE] [min=SIZE] "
			     "[kill-on-ignore=0|1] [holders-max=N] "
			     "[waiters-max=N] [priority-max=N] [wait-max-ms=N] "
			     "[overcommit]"
			   : "usage: clear CGROUP DEVICE");
		return EX_USAGE;
	}
	if (argv[0][0] != '/') {
		warnx_("%s: a cgroup is a path from the cgroup2 root, such as "
		       "/kubepods/pod1", argv[0]);
		return EX_USAGE;
	}
	msg = ctl_new(n, set ? NXQUOTA_CMD_BUDGET_SET : NXQUOTA_CMD_BUDGET_CLEAR,
		     0);
	nla_put_string(msg, NXQUOTA_A_BUDGET_CGROUP_PATH, argv[0]);
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, argv[1]);
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		bool is_max = !strncmp(argv[i], "max=", 4);
		bool is_kill = !strncmp(argv[i], "kill-on-ignore=", 15);
		int lim = limit_attr(argv[i]);

		if (!strcmp(argv[i], "overcommit") ||
		    !strcmp(argv[i], "--overcommit")) {
			nla_put_flag(msg, NXQUOTA_A_BUDGET_OVERCOMMIT);
			continue;
		}
		if (lim) {
			char *end;
			unsigned long long x = strtoull(eq + 1, &end, 10);

			if (eq[1] < '0' || eq[1] > '9' || *end ||
			    x >= UINT32_MAX) {
				warnx_("%s: not a number", argv[i]);
				nlmsg_free(msg);
				return EX_USAGE;
			}
			nla_put_u32(msg, lim, (uint32_t)x);
			lim_given = true;
			continue;
		}
		if (!eq || (!is_max && !is_kill && strncmp(argv[i], "min=", 4))) {
			warnx_("%s: expected max=SIZE, min=SIZE, "
			       "kill-on-ignore=0|1, a limit or overcommit",
			       argv[i]);
			nlmsg_free(msg);
			return EX_USAGE;
		}
		if (is_kill) {
			if (strcmp(eq + 1, "0") && strcmp(eq + 1, "1")) {
				warnx_("%s: kill-on-ignore is 0 or 1", argv[i]);
				nlmsg_free(msg);
				return EX_USAGE;
			}
			nla_put_u8(msg, NXQUOTA_A_BUDGET_KILL_ON_IGNORE,
				   eq[1] == '1');
			continue;
		}
		err = nxq_parse_size(eq + 1, is_max, &v);
		if (err) {
			warnx_("%s: not a size (bytes, or with a K, M, G, T, P "
			       "or E suffix, also Ki..Ei: powers of 1024%s)",
			       argv[i], is_max ? "; or max" : "");
			nlmsg_free(msg);
			return EX_USAGE;
		}
		nla_put_u64(msg, is_max ? NXQUOTA_A_BUDGET_MAX :
			    NXQUOTA_A_BUDGET_MIN, v);
	}
	was = find_node(n, argv[1], argv[0], &before);
	if (ctl_request(n, msg, &r)) {
		free(before.v);
		return ctl_report(set ? "set" : "clear", &r);
	}
	now = find_node(n, argv[1], argv[0], &after);
	say_changed(argv[0], argv[1], was, now, lim_given);
	free(before.v);
	free(after.v);
	return EX_OK;
}

/* ---- devices ---------------------------------------------------------------- */

static int device_cmd(struct ctl *n, uint8_t cmd, const char *key,
		      const uint64_t *capacity, const char *devt,
		      const uint64_t *default_max, struct reply *r)
{
	struct nl_msg *msg = ctl_new(n, cmd, 0);

	memset(r, 0, sizeof(*r));
	nla_put_string(msg, NXQUOTA_A_DEVICE_KEY, key);
	if (capacity)
		nla_put_u64(msg, NXQUOTA_A_DEVICE_CAPACITY, *capacity);
	if (devt && devt[0])
		nla_put_string(msg, NXQUOTA_A_DEVICE_DEVT, devt);
	if (default_max)
		nla_put_u64(msg, NXQUOTA_A_DEVICE_DEFAULT_MAX, *default_max);
	return ctl_request(n, msg, r);
}

/*
 * "MAJOR:MINOR" of the NVIDIA node of "GPU-<uuid>" (the Device Minor of
 * the /proc/driver/nvidia/gpus entry whose GPU UUID is the key), or "".
 */
static void gpu_devt(const char *key, char *out, size_t size)
{
	int minor = nxq__gpu_minor(key);
	char path[64];
	struct stat st;

	out[0] = '\0';
	if (minor < 0)
		return;
	snprintf(path, sizeof(path), "/dev/nvidia%d", minor);
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
		snprintf(out, size, "%u:%u", major(st.st_rdev),
			 minor(st.st_rdev));
}

/* The CUDA driver API, loaded at run time: no toolkit needed to build. */
typedef int (*cu_init_t)(unsigned int);
typedef int (*cu_count_t)(int *);
typedef int (*cu_get_t)(int *, int);
typedef int (*cu_uuid_t)(unsigned char *, int);
typedef int (*cu_mem_t)(size_t *, int);

static int devices_sync(struct ctl *n, bool dry_run)
{
	cu_init_t cu_init;
	cu_count_t cu_count;
	cu_get_t cu_get;
	cu_uuid_t cu_uuid;
	cu_mem_t cu_mem;
	int i, count = 0, rc = EX_OK, err;
	void *lib;

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		warnx_("devices sync: cannot load the CUDA driver "
		       "(libcuda.so.1): %s; is the NVIDIA driver installed?",
		       dlerror());
		return EX_FAIL;
	}
	cu_init = (cu_init_t)dlsym(lib, "cuInit");
	cu_count = (cu_count_t)dlsym(lib, "cuDeviceGetCount");
	cu_get = (cu_get_t)dlsym(lib, "cuDeviceGet");
	cu_uuid = (cu_uuid_t)dlsym(lib, "cuDeviceGetUuid_v2");
	if (!cu_uuid)
		cu_uuid = (cu_uuid_t)dlsym(lib, "cuDeviceGetUuid");
	cu_mem = (cu_mem_t)dlsym(lib, "cuDeviceTotalMem_v2");
	if (!cu_init || !cu_count || !cu_get || !cu_uuid || !cu_mem) {
		warnx_("devices sync: libcuda.so.1 lacks cuInit, "
		       "cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid or "
		       "cuDeviceTotalMem_v2 (driver too old?)");
		dlclose(lib);
		return EX_FAIL;
	}
	err = cu_init(0);
	if (!err)
		err = cu_count(&count);
	if (err) {
		warnx_("devices sync: cuInit/cuDeviceGetCount failed: CUDA "
		       "error %d%s", err, err == 100 ? " (no CUDA device)" : "");
		dlclose(lib);
		return EX_FAIL;
	}
	for (i = 0; i < count; i++) {
		unsigned char u[16];
		char key[NXQ_DEVICE_KEY_MAX], size[NXQ_FMT_SIZE_LEN];
		char devt[32];
		struct reply r;
		size_t total = 0;
		uint64_t cap;
		int dev;

		if (cu_get(&dev, i) || cu_uuid(u, dev) || cu_mem(&total, dev)) {
			warnx_("devices sync: cannot read device %d", i);
			rc = EX_FAIL;
			continue;
		}
		snprintf(key, sizeof(key),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
			 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
		cap = total;
		nxq_format_size(cap, false, size);
		if (dry_run) {
			printf("%s %" PRIu64 " (%s) would be registered\n", key,
			       cap, size);
			continue;
		}
		gpu_devt(key, devt, sizeof(devt));
		if (!device_cmd(n, NXQUOTA_CMD_DEVICE_ADD, key, &cap, devt,
				NULL, &r)) {
			printf("%s %s registered%s%s\n", key, size,
			       devt[0] ? " devt " : "", devt);
		} else if (r.error == -EEXIST &&
			   !device_cmd(n, NXQUOTA_CMD_DEVICE_SET, key, &cap,
					NULL, NULL, &r)) {
			printf("%s %s capacity updated\n", key, size);
		} else {
			rc = ctl_report(key, &r);
		}
	}
	if (!count)
		printf("no CUDA device\n");
	dlclose(lib);
	return rc;
}

static int cmd_devices(struct ctl *n, int argc, char **argv)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN];
	struct reply r;
	struct ledger l;
	struct dev *d;
	uint64_t cap;
	size_t i;
	int rc;

	if (argc == 0) {
		bool intr = false;

		l.devs = (struct vec){ .size = sizeof(struct dev) };
		rc = dump(n, NXQUOTA_CMD_DEVICE_GET, NXQUOTA_A_DEVICE_MAX, 0,
			  NULL, dev_cb, &l.devs, &intr);
		if (rc)
			return rc;
		d = l.devs.v;
		if (json)
			printf("[");
		else
			printf("%-40s %9s %9s %7s\n", "DEVICE", "CAPACITY",
			       "USED", "HOLDERS");
		for (i = 0; i < l.devs.n; i++, d++) {
			if (json) {
				printf("%s{\"key\":", i ? "," : "");
				nxq_json_string(stdout, d->key);
				printf(",\"capacity\":%" PRIu64 ",\"used\":%"
				       PRIu64 ",\"holders\":%u}", d->capacity,
				       d->used, d->holders);
			} else {
				printf("%-40s %9s %9s %7u\n", d->key,
				       nxq_format_size(d->capacity, false, a),
				       nxq_format_size(d->used, false, b),
				       d->holders);
			}
		}
		if (json)
			printf("]\n");
		return EX_OK;
	}
	if (!strcmp(argv[0], "sync")) {
		if (argc > 2 || (argc == 2 && strcmp(argv[1], "--dry-run")))
			goto usage;
		return devices_sync(n, argc == 2);
	}
	if ((!strcmp(argv[0], "register") && (argc == 3 || argc == 4)) ||
	    (!strcmp(argv[0], "capacity") && argc == 3)) {
		bool reg = argv[0][0] == 'r';

		if (nxq_parse_size(argv[2], false, &cap)) {
			warnx_("%s: not a size", argv[2]);
			return EX_USAGE;
		}
		if (device_cmd(n, reg ? NXQUOTA_CMD_DEVICE_ADD :
			       NXQUOTA_CMD_DEVICE_SET, argv[1], &cap,
			       argc == 4 ? argv[3] : NULL, NULL, &r))
			return ctl_report(argv[0], &r);
		return EX_OK;
	}
	if (!strcmp(argv[0], "default-max") && argc == 3) {
		if (nxq_parse_size(argv[2], true, &cap)) {
			warnx_("%s: not a size (or max)", argv[2]);
			return EX_USAGE;
		}
		if (device_cmd(n, NXQUOTA_CMD_DEVICE_SET, argv[1], NULL, NULL,
			       &cap, &r))
			return ctl_report(argv[0], &r);
		return EX_OK;
	}
	if (!strcmp(argv[0], "unregister") && argc == 2) {
		if (device_cmd(n, NXQUOTA_CMD_DEVICE_DEL, argv[1], NULL, NULL,
			       NULL, &r))
			return ctl_report("unregister", &r);
		return EX_OK;
	}
usage:
	warnx_("usage: devices [register KEY SIZE [MAJOR:MINOR] | "
	       "unregister KEY | capacity KEY SIZE | default-max KEY SIZE|max "
	       "| sync [--dry-run]]");
	return EX_USAGE;
}

/* ---- events ----------------------------------------------------------------- */


/*
 * Events name cgroups by id; a second connection's dumps name them by
 * path (as the caller's cgroup namespace shows them), looked up again, at
 * most every 200 ms, when an id is not known yet.
 */
static struct ctl ev_look;
static bool ev_look_ok;
static struct vec ev_nodes = { .size = sizeof(struct node) };
static struct timespec ev_dumped;

static const char *ev_find(const char *dev, uint64_t id)
{
	const struct node *n = ev_nodes.v;
	size_t i;

	for (i = 0; i < ev_nodes.n; i++)
		if (n[i].id == id && !strcmp(n[i].device, dev))
			return n[i].path;
	return NULL;
}

static const char *ev_path(const char *dev, uint64_t id)
{
	struct reply r = { .data = node_cb, .maxattr = NXQUOTA_A_BUDGET_LAST };
	const char *p = ev_find(dev, id);
	struct timespec now;
	struct vec v = { .size = sizeof(struct node) };

	if (p || !ev_look_ok)
		return p;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - ev_dumped.tv_sec) * 1000 +
	    (now.tv_nsec - ev_dumped.tv_nsec) / 1000000 < 200)
		return NULL;
	ev_dumped = now;
	r.arg = &v;
	if (ctl_request(&ev_look, ctl_new(&ev_look, NXQUOTA_CMD_BUDGET_GET,
					  NLM_F_DUMP), &r)) {
		free(v.v);
		return NULL;
	}
	free(ev_nodes.v);
	ev_nodes = v;
	return ev_find(dev, id);
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[NXQUOTA_A_EVENT_MAX + 1];
	char when[64], a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN];
	const char *name = "unknown", *dev = "", *path, *by = NULL;
	uint64_t cg, bytes, value;
	uint32_t type, pid, reason;
	struct timespec ts;
	struct tm tm;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, NXQUOTA_A_EVENT_MAX, NULL) ||
	    !tb[NXQUOTA_A_EVENT_TYPE])
		return NL_OK;
	type = nla_get_u32(tb[NXQUOTA_A_EVENT_TYPE]);
	if (type < sizeof(event_names) / sizeof(event_names[0]) &&
	    event_names[type])
		name = event_names[type];
	if (tb[NXQUOTA_A_EVENT_DEVICE])
		dev = nla_get_string(tb[NXQUOTA_A_EVENT_DEVICE]);
	cg = u64_or(tb[NXQUOTA_A_EVENT_CGROUP_ID], 0);
	pid = u32_or(tb[NXQUOTA_A_EVENT_PID], 0);
	bytes = u64_or(tb[NXQUOTA_A_EVENT_BYTES], 0);
	value = u64_or(tb[NXQUOTA_A_EVENT_VALUE], 0);
	reason = u32_or(tb[NXQUOTA_A_EVENT_REASON], 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

	path = cg ? ev_path(dev, cg) : NULL;
	if (type == NXQUOTA_EVENT_TYPE_DENIED && value)
		by = ev_path(dev, value);
	if (json) {
		printf("{\"time\":\"%s.%03ld\",\"type\":\"%s\",\"device\":",
		       when, ts.tv_nsec / 1000000, name);
		nxq_json_string(stdout, dev);
		printf(",\"cgroup_id\":%" PRIu64 ",\"path\":", cg);
		if (path)
			nxq_json_string(stdout, path);
		else
			printf("null");
		if (type == NXQUOTA_EVENT_TYPE_DENIED) {
			printf(",\"count\":%" PRIu64 ",\"refused_by\":",
			       u64_or(tb[NXQUOTA_A_EVENT_COUNT], 1));
			if (by)
				nxq_json_string(stdout, by);
			else
				printf(value ? "null" : "\"device\"");
		}
		printf(",\"pid\":%u,\"bytes\":%"
		       PRIu64 ",\"value\":%" PRIu64 ",\"reason\":%u,"
		       "\"timestamp_ns\":%" PRIu64 "}\n", pid, bytes, value,
		       reason, u64_or(tb[NXQUOTA_A_EVENT_TIMESTAMP_NS], 0));
		fflush(stdout);
		return NL_OK;
	}
	printf("%s.%03ld %-15s device=%s", when, ts.tv_nsec / 1000000, name,
	       dev);
	if (path)
		printf(" cgroup=%s", path);
	else if (cg)
		printf(" cgroup=#%" PRIu64, cg);
	if (pid)
		printf(" pid=%u", pid);
	switch (type) {
	case NXQUOTA_EVENT_TYPE_DEVICE_ADDED:
		printf(" capacity=%s", nxq_format_size(bytes, false, a));
		break;
	case NXQUOTA_EVENT_TYPE_BUDGET_CHANGED:
		printf(" max=%s min=%s", nxq_format_size(bytes, true, a),
		       nxq_format_size(value, false, b));
		break;
	case NXQUOTA_EVENT_TYPE_DENIED:
		printf(" bytes=%s error=%s", nxq_format_size(bytes, false, a),
		       nxq_errno_name((int)reason));
		if (by)
			printf(" refused-by=%s", by);
		else if (value)
			printf(" refused-by=#%" PRIu64, value);
		else if (reason == ENOSPC)
			printf(" refused-by=device");
		/* coalesced: the latest of count denials */
		if (u64_or(tb[NXQUOTA_A_EVENT_COUNT], 1) != 1)
			printf(" count=%" PRIu64,
			       u64_or(tb[NXQUOTA_A_EVENT_COUNT], 1));
		break;
	case NXQUOTA_EVENT_TYPE_TICKET_ISSUED:
		printf(" asked=%s generation=%" PRIu64 " reason=%u",
		       nxq_format_size(bytes, false, a), value, reason);
		break;
	case NXQUOTA_EVENT_TYPE_TICKET_ANSWERED:
		printf(" released=%s generation=%" PRIu64,
		       nxq_format_size(bytes, false, a), value);
		break;
	case NXQUOTA_EVENT_TYPE_KILLED:
		printf(" charge=%s", nxq_format_size(bytes, false, a));
		break;
	}
	printf("\n");
	fflush(stdout);
	return NL_OK;
}

static int cmd_events(struct ctl *n, int argc)
{
	int grp, err;

	if (argc) {
		warnx_("usage: events");
		return EX_USAGE;
	}
	/* the connection for paths; without it, events show ids */
	ev_look.control = n->control;
	ev_look_ok = ctl_connect(&ev_look) == EX_OK;
	if (n->ufd >= 0) {
		/* The daemon: an EVENT request subscribes the connection. */
		struct reply r = { 0 };

		if (ctl_request(n, ctl_new(n, NXQUOTA_CMD_EVENT, 0), &r))
			return ctl_report("events", &r);
		nl_socket_disable_seq_check(n->sk);
		nl_socket_modify_cb(n->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event,
				    NULL);
		setsockopt(n->ufd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 },
			   sizeof(int));
		goto listen;
	}
	grp = genl_ctrl_resolve_grp(n->sk, NXQUOTA_FAMILY_NAME,
				    NXQUOTA_MCGRP_EVENTS);
	if (grp < 0) {
		warnx_("events: the module has no \"%s\" group: %s",
		       NXQUOTA_MCGRP_EVENTS, nl_geterror(grp));
		return EX_FAIL;
	}
	nl_socket_disable_seq_check(n->sk);
	nl_socket_modify_cb(n->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, NULL);
	err = nl_socket_add_membership(n->sk, grp);
	if (err < 0) {
		if (err == -NLE_PERM) {
			warnx_("events: permission denied (joining the events "
			       "group needs CAP_SYS_ADMIN)");
			return EX_PERM;
		}
		warnx_("events: cannot join the group: %s", nl_geterror(err));
		return EX_FAIL;
	}
	nl_socket_set_buffer_size(n->sk, 4 << 20, 0);
listen:
	for (;;) {
		err = nl_recvmsgs_default(n->sk);
		if (err == -NLE_NOMEM) {	/* ENOBUFS: the kernel dropped */
			warnx_("events lost (receive buffer overrun); "
			       "continuing");
			continue;
		}
		if (err < 0 && err != -NLE_INTR && err != -NLE_AGAIN) {
			warnx_("events: %s", nl_geterror(err));
			return EX_FAIL;
		}
	}
}

/* ---- metrics ---------------------------------------------------------------- */

struct metric {
	const char *name, *type, *help;
	size_t off;		/* in struct dev or struct node */
	bool is32, is_max;
};

#define DM(n, t, f, h) { "nxquota_device_" n, t, h, offsetof(struct dev, f), \
			 sizeof(((struct dev *)0)->f) == 4, false }
#define NM(n, t, f, h, m) { "nxquota_budget_" n, t, h, \
			    offsetof(struct node, f), \
			    sizeof(((struct node *)0)->f) == 4, m }

static const struct metric dev_metrics[] = {
	DM("capacity_bytes", "gauge", capacity, "Bytes the device offers."),
	DM("used_bytes", "gauge", used,
	   "Bytes charged on the device (charge, not residency)."),
	DM("holders", "gauge", holders, "Holders registered on the device."),
	DM("denials_total", "counter", denials, "Charges refused."),
	DM("capacity_hits_total", "counter", capacity_hits,
	   "Charges refused because the device was full."),
	DM("tickets_total", "counter", tickets,
	   "Pressure tickets opened or raised."),
	DM("asked_bytes_total", "counter", bytes_asked,
	   "Bytes asked back by pressure tickets."),
	DM("released_bytes_total", "counter", bytes_released,
	   "Bytes released in answers to tickets."),
	DM("kills_total", "counter", kills,
	   "Holders killed for ignoring tickets."),
	DM("waits_total", "counter", waits, "Charges that had to wait."),
	DM("timeouts_total", "counter", timeouts, "Waits that ran out."),
	DM("events_dropped_total", "counter", events_dropped,
	   "Events no listener received (out of memory or a full socket)."),
	DM("conns_refused_total", "counter", conns_refused,
	   "Connections nxquotad closed over a bound (0 for the module)."),
	DM("creds_refused_total", "counter", creds_refused,
	   "Requests nxquotad refused for their sender (0 for the module)."),
	DM("restored_bytes_total", "counter", restored,
	   "Bytes restored after nxquotad's last restart (0 for the module)."),
	DM("restore_refused_bytes_total", "counter", restore_refused,
	   "Bytes of restores refused after nxquotad's last restart."),
};

static const struct metric node_metrics[] = {
	NM("max_bytes", "gauge", max,
	   "Hard cap of the cgroup's own (+Inf: none).", true),
	NM("effective_max_bytes", "gauge", emax,
	   "The least limit a charge in the cgroup meets (+Inf: none).",
	   true),
	NM("min_bytes", "gauge", min, "Guarantee of the cgroup, as set.",
	   false),
	NM("effective_min_bytes", "gauge", emin,
	   "The cgroup's share of the guarantees.", false),
	NM("claimed_bytes", "gauge", claimed,
	   "Guarantees the cgroup's children claim.", false),
	NM("overcommitted", "gauge", overcommitted,
	   "1 when the children claim more than the cgroup's min.", false),
	NM("current_bytes", "gauge", current,
	   "Bytes charged in the cgroup and below.", false),
	NM("borrowed_bytes", "gauge", borrowed,
	   "Current above the effective guarantee.", false),
	NM("holders", "gauge", holders, "Holders in the cgroup.", false),
	NM("max_hits_total", "counter", max_hits,
	   "Charges refused at this cgroup's max.", false),
	NM("denials_total", "counter", denials,
	   "Charges refused at or below this cgroup.", false),
	NM("tickets_total", "counter", tickets,
	   "Tickets opened for holders at or below.", false),
	NM("asked_bytes_total", "counter", bytes_asked,
	   "Bytes asked of holders at or below.", false),
	NM("released_bytes_total", "counter", bytes_released,
	   "Bytes released by holders at or below.", false),
	NM("kills_total", "counter", kills,
	   "Holders at or below killed for ignoring tickets.", false),
};

static uint64_t field(const void *obj, const struct metric *m)
{
	const char *p = (const char *)obj + m->off;
	uint32_t v32;
	uint64_t v;

	if (m->is32) {
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
	memcpy(&v, p, sizeof(v));
	return v;
}

static void head(const struct metric *m)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
	       m->type);
}

/*
 * One series of the unattributed bytes: its name, help, what it is per
 * (a process row, a cgroup's sum or a device's sum) and its sample, or
 * false when it has none (NVML gives no figure).
 */
struct aseries {
	const char *name, *help;
	char of;	/* 'p' process (struct arow), 'c' cgroup, 'd' device */
	bool (*value)(const void *o, char *buf, size_t size);
};

static bool av_p_nvml(const void *o, char *b, size_t n)
{
	const struct arow *r = o;

	return r->nvml != NXQ_NVML_NA &&
	       snprintf(b, n, "%" PRIu64, r->nvml) > 0;
}

static bool av_p_charged(const void *o, char *b, size_t n)
{
	return snprintf(b, n, "%" PRIu64, ((const struct arow *)o)->charged) > 0;
}

static bool av_p_unattr(const void *o, char *b, size_t n)
{
	const struct arow *r = o;

	return r->nvml != NXQ_NVML_NA &&
	       snprintf(b, n, "%" PRId64, arow_unattributed(r)) > 0;
}

static bool av_s_nvml(const void *o, char *b, size_t n)
{
	return snprintf(b, n, "%" PRIu64, ((const struct asum *)o)->nvml) > 0;
}

static bool av_s_unattr(const void *o, char *b, size_t n)
{
	return snprintf(b, n, "%" PRId64,
			((const struct asum *)o)->unattributed) > 0;
}

static bool av_s_na(const void *o, char *b, size_t n)
{
	return snprintf(b, n, "%u", ((const struct asum *)o)->na) > 0;
}

static const struct aseries aseries[] = {
	{ "nxquota_process_nvml_bytes", "Device memory the NVIDIA driver "
	  "(NVML) attributes to the process, charged or not (absent: NVML "
	  "does not say).", 'p', av_p_nvml },
	{ "nxquota_process_charged_bytes", "Bytes the ledger charged the "
	  "process's holders on the device.", 'p', av_p_charged },
	{ "nxquota_process_unattributed_bytes", "NVML's figure minus the "
	  "ledger's charge: memory the process holds that no holder was "
	  "charged for (context, module images, what the shim does not see); "
	  "negative: charged ahead of what it has mapped.", 'p', av_p_unattr },
	{ "nxquota_cgroup_nvml_bytes", "NVML's figures summed over the "
	  "processes in the cgroup itself (not below).", 'c', av_s_nvml },
	{ "nxquota_cgroup_unattributed_bytes", "Unattributed bytes summed "
	  "over the processes in the cgroup itself (not below).", 'c',
	  av_s_unattr },
	{ "nxquota_device_nvml_bytes", "NVML's figures summed over the "
	  "device's processes.", 'd', av_s_nvml },
	{ "nxquota_device_unattributed_bytes", "Unattributed bytes summed "
	  "over the device's processes.", 'd', av_s_unattr },
	{ "nxquota_device_nvml_unavailable_processes", "Processes whose "
	  "memory NVML does not give (left out of the sums).", 'd',
	  av_s_na },
};

/* The unattributed series: absent when NVML is not there or not shown. */
static void metrics_attribution(struct ledger *l)
{
	struct attribution at;
	const struct aseries *m;
	const struct vec *v;
	char val[32];
	size_t i;

	attribute(l, NULL, &at);
	printf("# HELP nxquota_nvml_available 1: the NVIDIA driver's per-process "
	       "figures (NVML) were read and the unattributed series follow; "
	       "0: not available here or not shown to this caller.\n"
	       "# TYPE nxquota_nvml_available gauge\n"
	       "nxquota_nvml_available %d\n", at.shown);
	for (m = aseries; at.shown && m < aseries + sizeof(aseries) / sizeof(aseries[0]);
	     m++) {
		printf("# HELP %s %s\n# TYPE %s gauge\n", m->name, m->help,
		       m->name);
		v = m->of == 'p' ? &at.rows : m->of == 'c' ? &at.cgroups :
		    &at.devices;
		for (i = 0; i < v->n; i++) {
			const void *o = (const char *)v->v + i * v->size;
			const struct arow *r = o;
			const struct asum *sm = o;

			if (!m->value(o, val, sizeof(val)))
				continue;
			printf("%s{device=", m->name);
			nxq_prom_label(stdout, m->of == 'p' ? r->device :
				       sm->device);
			if (m->of != 'd') {
				printf(",cgroup=");
				nxq_prom_label(stdout, m->of == 'p' ?
					       (r->cgroup ? r->cgroup : "") :
					       sm->cgroup);
			}
			if (m->of == 'p')
				printf(",pid=\"%u\"", r->pid);
			printf("} %s\n", val);
		}
	}
	attribution_free(&at);
}

static int cmd_metrics(struct ctl *n, int argc)
{
	struct ledger l;
	struct holder *h;
	struct node *nd;
	struct dev *d;
	size_t i, j;
	int rc, t;

	if (argc) {
		warnx_("usage: metrics");
		return EX_USAGE;
	}
	rc = read_ledger(n, NULL, &l);
	if (rc)
		return rc;
	for (j = 0; j < sizeof(dev_metrics) / sizeof(dev_metrics[0]); j++) {
		head(&dev_metrics[j]);
		for (i = 0, d = l.devs.v; i < l.devs.n; i++, d++) {
			printf("%s{device=", dev_metrics[j].name);
			nxq_prom_label(stdout, d->key);
			printf("} %" PRIu64 "\n", field(d, &dev_metrics[j]));
		}
	}
	printf("# HELP nxquota_device_events_dropped_type_total Of "
	       "events_dropped, the events of one type.\n"
	       "# TYPE nxquota_device_events_dropped_type_total counter\n");
	for (i = 0, d = l.devs.v; i < l.devs.n; i++, d++)
		for (t = NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
		     t <= NXQUOTA_EVENT_TYPE_KILLED; t++) {
			printf("nxquota_device_events_dropped_type_total"
			       "{device=");
			nxq_prom_label(stdout, d->key);
			printf(",type=\"%s\"} %" PRIu64 "\n", event_names[t],
			       d->events_dropped_type[t]);
		}
	for (j = 0; j < sizeof(node_metrics) / sizeof(node_metrics[0]); j++) {
		head(&node_metrics[j]);
		for (i = 0, nd = l.nodes.v; i < l.nodes.n; i++, nd++) {
			uint64_t v = field(nd, &node_metrics[j]);

			printf("%s{device=", node_metrics[j].name);
			nxq_prom_label(stdout, nd->device);
			printf(",cgroup=");
			nxq_prom_label(stdout, nd->path);
			if (node_metrics[j].is_max && v == NXQ_UNLIMITED)
				printf("} +Inf\n");
			else
				printf("} %" PRIu64 "\n", v);
		}
	}
	printf("# HELP nxquota_holder_charge_bytes Bytes charged to a holder "
	       "(charge, not residency).\n"
	       "# TYPE nxquota_holder_charge_bytes gauge\n");
	for (i = 0, h = l.holders.v; i < l.holders.n; i++, h++) {
		const char *p = node_path(&l, h->device, h->cgroup);
		char cg[32];

		snprintf(cg, sizeof(cg), "#%" PRIu64, h->cgroup);
		printf("nxquota_holder_charge_bytes{device=");
		nxq_prom_label(stdout, h->device);
		printf(",cgroup=");
		nxq_prom_label(stdout, p ? p : cg);
		printf(",pid=\"%u\",holder=\"%zu\"} %" PRIu64 "\n", h->pid, i,
		       h->charge);
	}
	printf("# HELP nxquota_holder_reclaimable_bytes Bytes a holder "
	       "reports it can release quickly.\n"
	       "# TYPE nxquota_holder_reclaimable_bytes gauge\n");
	for (i = 0, h = l.holders.v; i < l.holders.n; i++, h++) {
		const char *p = node_path(&l, h->device, h->cgroup);
		char cg[32];

		snprintf(cg, sizeof(cg), "#%" PRIu64, h->cgroup);
		printf("nxquota_holder_reclaimable_bytes{device=");
		nxq_prom_label(stdout, h->device);
		printf(",cgroup=");
		nxq_prom_label(stdout, p ? p : cg);
		printf(",pid=\"%u\",holder=\"%zu\"} %" PRIu64 "\n", h->pid, i,
		       h->reclaimable);
	}
	metrics_attribution(&l);
	return EX_OK;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] [--control PATH] COMMAND [ARGS]\n"
		"  status [DEVICE]                   devices, budget tree, holders;\n"
		"                                    for root, NVML's bytes per process\n"
		"                                    against the ledger's (unattributed)\n"
		"  set CGROUP DEVICE [max=SIZE] [min=SIZE] [kill-on-ignore=0|1]\n"
		"  clear CGROUP DEVICE               drop a cgroup's budget\n"
		"  devices                           list devices\n"
		"  devices register KEY SIZE [MAJ:MIN]  register a device\n"
		"                                    (with its node's dev_t)\n"
		"  devices default-max KEY SIZE|max  max of unbudgeted cgroups\n"
		"  devices unregister KEY            unregister a device\n"
		"  devices capacity KEY SIZE         change its capacity\n"
		"  devices sync [--dry-run]          register every CUDA GPU\n"
		"  events                            follow ledger events\n"
		"  metrics                           Prometheus text exposition\n"
		"  cdi generate [--output FILE]      a CDI spec (nxquota.io/gpu) that\n"
		"                                    gives containers the authority,\n"
		"                                    the shim and nxquota-hook\n"
		"SIZE: bytes, or with a K, M, G, T, P or E suffix, also Ki..Ei (powers of\n"
		"1024, as memory.max reads them); max= also takes \"max\".\n"
		"Bytes are charge, not residency.\n"
		"Authority: the module if loaded, else nxquotad's control socket\n"
		"(NXQUOTA_CONTROL, default " NXQD_CONTROL_PATH ");\n"
		"--control PATH: the daemon at PATH only.  NXQUOTA_NVML=0: no NVML.\n",
		prog);
}

int main(int argc, char **argv)
{
	struct ctl n = { 0 };
	const char *cmd;
	int rc;

	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "--json") || !strcmp(argv[1], "-j")) {
			json = true;
		} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return EX_OK;
		} else if (!strcmp(argv[1], "--control") && argc > 2) {
			n.control = argv[2];
			argc--;
			argv++;
		} else if (!strncmp(argv[1], "--control=", 10)) {
			n.control = argv[1] + 10;
		} else if (!strcmp(argv[1], "--version")) {
			printf("nxquotactl %s\n", NXQ_VERSION);
			return EX_OK;
		} else {
			usage(stderr);
			return EX_USAGE;
		}
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "status") && strcmp(cmd, "set") && strcmp(cmd, "clear") &&
	    strcmp(cmd, "devices") && strcmp(cmd, "events") &&
	    strcmp(cmd, "metrics") && strcmp(cmd, "cdi")) {
		warnx_("unknown command \"%s\"", cmd);
		usage(stderr);
		return EX_USAGE;
	}
	rc = ctl_connect(&n);
	if (rc)
		return rc;
	if (!strcmp(cmd, "status"))
		rc = cmd_status(&n, argc, argv);
	else if (!strcmp(cmd, "set"))
		rc = cmd_budget(&n, true, argc, argv);
	else if (!strcmp(cmd, "clear"))
		rc = cmd_budget(&n, false, argc, argv);
	else if (!strcmp(cmd, "devices"))
		rc = cmd_devices(&n, argc, argv);
	else if (!strcmp(cmd, "events"))
		rc = cmd_events(&n, argc);
	else if (!strcmp(cmd, "cdi"))
		rc = cmd_cdi(&n, argc, argv);
	else
		rc = cmd_metrics(&n, argc);
	ctl_close(&n);
	return rc;
}
