// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl metrics: the Prometheus text exposition of devices, budgets,
 * holders and unattributed bytes, from one read of the ledger.  Owns
 * nothing past the call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "jsonout.h"
#include "ledger.h"
#include "nxquotactl.h"

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

int cmd_metrics(struct ctl *n, int argc)
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
	/* nxquotad's backstop: only where it measured (not the module) */
	printf("# HELP nxquota_budget_measured_bytes Device memory NVML gives "
	       "the cgroup's processes (nxquotad -b; residency).\n"
	       "# TYPE nxquota_budget_measured_bytes gauge\n");
	for (i = 0, nd = l.nodes.v; i < l.nodes.n; i++, nd++) {
		if (!nd->has_measured)
			continue;
		printf("nxquota_budget_measured_bytes{device=");
		nxq_prom_label(stdout, nd->device);
		printf(",cgroup=");
		nxq_prom_label(stdout, nd->path);
		printf("} %" PRIu64 "\n", nd->measured);
	}
	printf("# HELP nxquota_budget_escaped_total Processes nxquotad's "
	       "backstop named in the cgroup (escaped events).\n"
	       "# TYPE nxquota_budget_escaped_total counter\n");
	for (i = 0, nd = l.nodes.v; i < l.nodes.n; i++, nd++) {
		if (!nd->has_measured)
			continue;
		printf("nxquota_budget_escaped_total{device=");
		nxq_prom_label(stdout, nd->device);
		printf(",cgroup=");
		nxq_prom_label(stdout, nd->path);
		printf("} %" PRIu64 "\n", nd->escaped);
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
