// SPDX-License-Identifier: GPL-2.0
/*
 * The ledger as the authority's dumps give it, shared by nxquotactl and
 * nxquota-hook (see ledger.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "ledger.h"

void *vec_add(struct vec *v)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 16;
		v->v = realloc(v->v, v->cap * v->size);
		if (!v->v) {
			warnx_("out of memory");
			exit(EX_FAIL);
		}
	}
	return memset((char *)v->v + v->n++ * v->size, 0, v->size);
}

uint64_t u64_or(struct nlattr *a, uint64_t def)
{
	return a ? nla_get_u64(a) : def;
}

uint32_t u32_or(struct nlattr *a, uint32_t def)
{
	return a ? nla_get_u32(a) : def;
}

void str_to(char *dst, size_t size, struct nlattr *a)
{
	snprintf(dst, size, "%s", a ? nla_get_string(a) : "");
}

int dev_cb(struct nlattr **tb, void *arg)
{
	struct dev *d = vec_add(arg);
	int t;

	str_to(d->key, sizeof(d->key), tb[NXQUOTA_A_DEVICE_KEY]);
	d->capacity = u64_or(tb[NXQUOTA_A_DEVICE_CAPACITY], 0);
	d->used = u64_or(tb[NXQUOTA_A_DEVICE_USED], 0);
	d->holders = u32_or(tb[NXQUOTA_A_DEVICE_HOLDERS], 0);
	d->denials = u64_or(tb[NXQUOTA_A_DEVICE_DENIALS], 0);
	d->capacity_hits = u64_or(tb[NXQUOTA_A_DEVICE_CAPACITY_HITS], 0);
	d->tickets = u64_or(tb[NXQUOTA_A_DEVICE_TICKETS], 0);
	d->bytes_asked = u64_or(tb[NXQUOTA_A_DEVICE_BYTES_ASKED], 0);
	d->bytes_released = u64_or(tb[NXQUOTA_A_DEVICE_BYTES_RELEASED], 0);
	d->kills = u64_or(tb[NXQUOTA_A_DEVICE_KILLS], 0);
	d->waits = u64_or(tb[NXQUOTA_A_DEVICE_WAITS], 0);
	d->timeouts = u64_or(tb[NXQUOTA_A_DEVICE_TIMEOUTS], 0);
	d->ticket_timeout_ms = u32_or(tb[NXQUOTA_A_DEVICE_TICKET_TIMEOUT_MS], 0);
	str_to(d->devt, sizeof(d->devt), tb[NXQUOTA_A_DEVICE_DEVT]);
	d->default_max = u64_or(tb[NXQUOTA_A_DEVICE_DEFAULT_MAX], 0);
	d->events_dropped = u64_or(tb[NXQUOTA_A_DEVICE_EVENTS_DROPPED], 0);
	d->conns_refused = u64_or(tb[NXQUOTA_A_DEVICE_CONNS_REFUSED], 0);
	d->creds_refused = u64_or(tb[NXQUOTA_A_DEVICE_CREDS_REFUSED], 0);
	d->restored = u64_or(tb[NXQUOTA_A_DEVICE_RESTORED], 0);
	d->restore_refused = u64_or(tb[NXQUOTA_A_DEVICE_RESTORE_REFUSED], 0);
	/* absent from an authority that predates them: 0 */
	for (t = NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
	     t <= NXQUOTA_EVENT_TYPE_KILLED; t++)
		d->events_dropped_type[t] = u64_or(
			tb[NXQUOTA_A_DEVICE_EVENTS_DROPPED_DEVICE_ADDED + t -
			   NXQUOTA_EVENT_TYPE_DEVICE_ADDED], 0);
	return 0;
}

int node_cb(struct nlattr **tb, void *arg)
{
	struct node *n = vec_add(arg);
	int i;

	str_to(n->device, sizeof(n->device), tb[NXQUOTA_A_BUDGET_DEVICE]);
	str_to(n->path, sizeof(n->path), tb[NXQUOTA_A_BUDGET_CGROUP_PATH]);
	n->id = u64_or(tb[NXQUOTA_A_BUDGET_CGROUP_ID], 0);
	n->has_parent = tb[NXQUOTA_A_BUDGET_PARENT_ID] != NULL;
	n->parent = u64_or(tb[NXQUOTA_A_BUDGET_PARENT_ID], 0);
	/* the budget table's fields, by the types their units say */
	for (i = 0; i < NXQ_NR_BUDGET_FIELDS; i++) {
		struct nlattr *a = tb[field_defs[i].attr];

		n->has_field[i] = a && field_defs[i].kept;
		n->field[i] = !n->has_field[i] ? field_defs[i].dflt :
			      field_defs[i].unit == NXQ_UNIT_BYTES ?
			      nla_get_u64(a) : field_defs[i].unit ==
			      NXQ_UNIT_BOOL ? nla_get_u8(a) : nla_get_u32(a);
	}
	n->emax = u64_or(tb[NXQUOTA_A_BUDGET_EFFECTIVE_MAX],
			 n->field[NXQ_BF_MAX]);
	n->claimed = u64_or(tb[NXQUOTA_A_BUDGET_CLAIMED], 0);
	n->overcommitted = tb[NXQUOTA_A_BUDGET_OVERCOMMITTED] &&
			   nla_get_u8(tb[NXQUOTA_A_BUDGET_OVERCOMMITTED]);
	n->has_measured = tb[NXQUOTA_A_BUDGET_MEASURED] != NULL;
	n->measured = u64_or(tb[NXQUOTA_A_BUDGET_MEASURED], 0);
	n->escaped = u64_or(tb[NXQUOTA_A_BUDGET_ESCAPED], 0);
	n->emin = u64_or(tb[NXQUOTA_A_BUDGET_EFFECTIVE_MIN], 0);
	n->current = u64_or(tb[NXQUOTA_A_BUDGET_CURRENT], 0);
	n->borrowed = u64_or(tb[NXQUOTA_A_BUDGET_BORROWED], 0);
	n->headroom = u64_or(tb[NXQUOTA_A_BUDGET_HEADROOM], 0);
	n->max_hits = u64_or(tb[NXQUOTA_A_BUDGET_MAX_HITS], 0);
	n->denials = u64_or(tb[NXQUOTA_A_BUDGET_DENIALS], 0);
	n->holders = u32_or(tb[NXQUOTA_A_BUDGET_HOLDERS], 0);
	n->tickets = u64_or(tb[NXQUOTA_A_BUDGET_TICKETS], 0);
	n->bytes_asked = u64_or(tb[NXQUOTA_A_BUDGET_BYTES_ASKED], 0);
	n->bytes_released = u64_or(tb[NXQUOTA_A_BUDGET_BYTES_RELEASED], 0);
	n->kills = u64_or(tb[NXQUOTA_A_BUDGET_KILLS], 0);
	return 0;
}

int holder_cb(struct nlattr **tb, void *arg)
{
	struct holder *h = vec_add(arg);

	str_to(h->device, sizeof(h->device), tb[NXQUOTA_A_HOLDER_DEVICE]);
	h->cgroup = u64_or(tb[NXQUOTA_A_HOLDER_CGROUP_ID], 0);
	h->pid = u32_or(tb[NXQUOTA_A_HOLDER_PID], 0);
	h->priority = u32_or(tb[NXQUOTA_A_HOLDER_PRIORITY], 0);
	h->charge = u64_or(tb[NXQUOTA_A_HOLDER_CHARGE], 0);
	h->reclaimable = u64_or(tb[NXQUOTA_A_HOLDER_RECLAIMABLE], 0);
	h->topen = tb[NXQUOTA_A_HOLDER_TICKET_OPEN] &&
		   nla_get_u8(tb[NXQUOTA_A_HOLDER_TICKET_OPEN]);
	h->tgen = u64_or(tb[NXQUOTA_A_HOLDER_TICKET_GENERATION], 0);
	h->tbytes = u64_or(tb[NXQUOTA_A_HOLDER_TICKET_BYTES], 0);
	h->treason = u32_or(tb[NXQUOTA_A_HOLDER_TICKET_REASON], 0);
	h->tlevel = u32_or(tb[NXQUOTA_A_HOLDER_TICKET_LEVEL], 0);
	h->tdeadline = u64_or(tb[NXQUOTA_A_HOLDER_TICKET_DEADLINE_NS], 0);
	return 0;
}

int dump(struct ctl *n, uint8_t cmd, int maxattr, int filter_attr,
		const char *device, int (*fn)(struct nlattr **, void *),
		struct vec *v, bool *intr)
{
	struct reply r = { .data = fn, .arg = v, .maxattr = maxattr };
	struct nl_msg *msg = ctl_new(n, cmd, NLM_F_DUMP);

	if (device && filter_attr)
		nla_put_string(msg, filter_attr, device);
	ctl_request(n, msg, &r);
	*intr |= r.intr;
	if (r.error)
		return ctl_report("dump", &r);
	return EX_OK;
}

/* Dump everything; start again (three times at most) if interrupted. */
int read_ledger(struct ctl *n, const char *device, struct ledger *l)
{
	int tries, rc;
	bool intr;

	for (tries = 0; tries < 3; tries++) {
		intr = false;
		l->devs = (struct vec){ .size = sizeof(struct dev) };
		l->nodes = (struct vec){ .size = sizeof(struct node) };
		l->holders = (struct vec){ .size = sizeof(struct holder) };
		rc = dump(n, NXQUOTA_CMD_DEVICE_GET, NXQUOTA_A_DEVICE_MAX, 0,
			  NULL, dev_cb, &l->devs, &intr);
		if (!rc)
			rc = dump(n, NXQUOTA_CMD_BUDGET_GET, NXQUOTA_A_BUDGET_LAST,
				  NXQUOTA_A_BUDGET_DEVICE, device, node_cb,
				  &l->nodes, &intr);
		if (!rc)
			rc = dump(n, NXQUOTA_CMD_HOLDER_GET, NXQUOTA_A_HOLDER_MAX,
				  NXQUOTA_A_HOLDER_DEVICE, device, holder_cb,
				  &l->holders, &intr);
		if (rc || !intr)
			return rc;
		free(l->devs.v);
		free(l->nodes.v);
		free(l->holders.v);
	}
	warnx_("the ledger kept changing during the dump; try again");
	return EX_FAIL;
}

/* Free what read_ledger() filled in. */
void ledger_free(struct ledger *l)
{
	free(l->devs.v);
	free(l->nodes.v);
	free(l->holders.v);
	memset(l, 0, sizeof(*l));
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

const char *limits_text(const struct node *nd, char *buf, size_t n)
{
	size_t len = 0;
	int f, k = 0;

	buf[0] = 0;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS && len < n; f++)
		if (field_defs[f].lim >= 0)
			len += snprintf(buf + len, n - len, "%s%" PRIu64,
					k++ ? "/" : "", nd->field[f]);
	return buf;
}
