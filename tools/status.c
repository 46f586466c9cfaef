// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl status: the ledger's devices, budget tree and holders, as a
 * table or one JSON object, with the unattributed bytes of unattr.c.
 * Owns nothing past the call: the ledger is read, printed and freed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "ledger.h"
#include "nxquotactl.h"

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

void tree_order(struct vec *v)
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

const char *node_path(struct ledger *l, const char *device,
			     uint64_t id)
{
	struct node *n = l->nodes.v;
	size_t i;

	for (i = 0; i < l->nodes.n; i++)
		if (n[i].id == id && !strcmp(n[i].device, device))
			return n[i].path;
	return NULL;
}

static void json_max(FILE *f, const char *name, uint64_t v)
{
	if (v == NXQ_UNLIMITED)
		fprintf(f, "\"%s\":null,", name);
	else
		json_u64(f, name, v, true);
}

static void status_json(struct ledger *l, const struct attribution *at)
{
	struct dev *d = l->devs.v;
	struct node *n = l->nodes.v;
	struct holder *h = l->holders.v;
	size_t i;

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
		json_u64(stdout, "events_dropped", d->events_dropped, false);
		printf("}");
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

int cmd_status(struct ctl *n, int argc, char **argv)
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
	if (opt_json)
		status_json(&l, &at);
	else
		status_table(&l, &at);
	attribution_free(&at);
	return EX_OK;
}
