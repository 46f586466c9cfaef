// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl status: the ledger's devices, budget tree and holders, as a
 * table or one JSON object (jsonout.c), with the unattributed bytes of
 * unattr.c.
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
#include "jsonout.h"
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

/* The name of node n as the budget table shows it: indented, its base. */
static const char *node_label(const struct node *n, char *buf, size_t size)
{
	const char *base = strrchr(n->path, '/');

	snprintf(buf, size, "%*s%s", 2 * n->depth, "",
		 n->depth && base && base[1] ? base + 1 : n->path);
	return buf;
}

/*
 * The budget table's fields a node keeps that have no column (MAX, MIN)
 * nor a place in LIMITS: "  kill-on-ignore" for a boolean that is on,
 * "  NAME=VALUE" for another away from its default.
 */
static const char *other_fields(const struct node *n, char *buf, size_t size)
{
	char w[64], v[NXQ_FMT_SIZE_LEN];
	size_t len = 0;
	int f;

	buf[0] = 0;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS && len < size; f++) {
		const struct field_def *d = &field_defs[f];

		if (!d->kept || d->lim >= 0 || f == NXQ_BF_MAX ||
		    f == NXQ_BF_MIN || n->field[f] == d->dflt)
			continue;
		if (d->unit == NXQ_UNIT_BOOL)
			len += snprintf(buf + len, size - len, "  %s",
					field_word(f, w, sizeof(w)));
		else
			len += snprintf(buf + len, size - len, "  %s=%s",
					field_word(f, w, sizeof(w)),
					field_text(f, n->field[f], v));
	}
	return buf;
}

static int widest(int w, const char *s)
{
	int len = (int)strlen(s);

	return len > w ? len : w;
}

static void status_table(struct ledger *l, const struct attribution *at)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN], c[NXQ_FMT_SIZE_LEN];
	char d2[NXQ_FMT_SIZE_LEN], e[NXQ_FMT_SIZE_LEN], f[NXQ_FMT_SIZE_LEN];
	char g[NXQ_FMT_SIZE_LEN], oc[128], lt[128], lh[160], of[256];
	struct dev *d = l->devs.v;
	struct node *n = l->nodes.v;
	struct holder *h = l->holders.v;
	char indented[4200];
	int dw = 16, cw = 28;
	size_t i, k;

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

	/*
	 * The budget and holder tables' DEVICE and CGROUP columns: 16 and 28
	 * wide, or as wide as their widest entry (a GPU's key is 40), so the
	 * columns after them line up.
	 */
	tree_order(&l->nodes);
	for (i = 0, n = l->nodes.v; i < l->nodes.n; i++, n++) {
		dw = widest(dw, n->device);
		cw = widest(cw, node_label(n, indented, sizeof(indented)));
	}
	for (i = 0; i < l->holders.n; i++, h++) {
		const char *p = node_path(l, h->device, h->cgroup);

		dw = widest(dw, h->device);
		cw = widest(cw, p ? p : "#18446744073709551615");
	}
	h = l->holders.v;

	/* the limits' heading: the spec's names, in its order */
	snprintf(lh, sizeof(lh), "LIMITS(");
	for (i = 0, k = 0; i < NXQ_NR_BUDGET_FIELDS; i++)
		if (field_defs[i].lim >= 0)
			snprintf(lh + strlen(lh), sizeof(lh) - strlen(lh),
				 "%s%s", k++ ? "/" : "", field_defs[i].name);
	snprintf(lh + strlen(lh), sizeof(lh) - strlen(lh), ")");
	printf("\nBUDGETS (bytes are charge, not residency; - : none of its own)\n");
	printf("%-*s %-*s %8s %8s %8s %8s %8s %8s %7s %7s %s\n", dw, "DEVICE",
	       cw, "CGROUP", "MAX", "EFF.MAX", "MIN", "EFF.MIN", "CURRENT",
	       "BORROWED", "HOLDERS", "DENIALS", lh);
	n = l->nodes.v;
	for (i = 0; i < l->nodes.n; i++, n++) {
		node_label(n, indented, sizeof(indented));
		other_fields(n, of, sizeof(of));
		if (n->overcommitted)
			snprintf(oc, sizeof(oc), "  overcommitted (claimed %s)",
				 nxq_format_size(n->claimed, false, f));
		else
			oc[0] = 0;
		/* nxquotad's backstop: what NVML measures there */
		if (n->has_measured)
			snprintf(oc + strlen(oc), sizeof(oc) - strlen(oc),
				 "  measured %s, %" PRIu64 " escaped",
				 nxq_format_size(n->measured, false, f),
				 n->escaped);
		printf("%-*s %-*s %8s %8s %8s %8s %8s %8s %7u %7" PRIu64
		       " %s%s%s\n",
		       dw, n->device, cw, indented,
		       n->has_field[NXQ_BF_MAX] ?
		       field_text(NXQ_BF_MAX, n->field[NXQ_BF_MAX], a) : "-",
		       nxq_format_size(n->emax, true, g),
		       n->field[NXQ_BF_MIN] ?
		       field_text(NXQ_BF_MIN, n->field[NXQ_BF_MIN], b) : "-",
		       nxq_format_size(n->emin, false, c),
		       nxq_format_size(n->current, false, d2),
		       nxq_format_size(n->borrowed, false, e), n->holders,
		       n->denials, limits_text(n, lt, sizeof(lt)), of, oc);
	}

	printf("\nHOLDERS\n");
	printf("%-*s %-*s %8s %5s %8s %11s %s\n", dw, "DEVICE", cw, "CGROUP", "PID",
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
		printf("%-*s %-*s %8u %5u %8s %11s %s\n", dw, h->device,
		       cw, p ? p : cg, h->pid, h->priority,
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
		json_status(&l, &at);
	else
		status_table(&l, &at);
	attribution_free(&at);
	return EX_OK;
}
