// SPDX-License-Identifier: GPL-2.0
/*
 * The Prometheus text exposition of the ledger, shared by `nxquotactl
 * metrics` and nxquotad's /metrics (see prom.h): the series of devices,
 * budget nodes, holders and unattributed bytes, from one read of the
 * ledger the caller made, and the Kubernetes names of cgroups from the
 * OCI hook's records.  Owns the names it read (struct prom_k8s) until
 * prom_k8s_free(); nothing else past a call.
 *
 * Every series of a cgroup carries namespace, pod, container and
 * device_uuid labels where they are known, and leaves a label out where
 * it is not (Prometheus reads an absent label as empty): the names only
 * where a record gives them, device_uuid only where the device's key is
 * the UUID NVML gives (GPU-..., MIG-...: the CUDA devices' keys), never
 * guessed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <unistd.h>

#include <linux/nxquota.h>

#include "fmt.h"
#include "hook.h"
#include "hook_state.h"
#include "jsonout.h"
#include "ledger.h"
#include "nxquotactl.h"
#include "prom.h"

/* ---- the names of cgroups ------------------------------------------------- */

struct prom_k8s_row {
	char *cgroup;
	char ns[HOOK_K8S_NAME_MAX + 1], pod[HOOK_K8S_NAME_MAX + 1];
	char ctr[HOOK_K8S_NAME_MAX + 1];
};

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prom_k8s_row *)a)->cgroup,
		      ((const struct prom_k8s_row *)b)->cgroup);
}

static int row_add(struct prom_k8s *k, const char *cgroup, const char *ns,
		   const char *pod, const char *ctr)
{
	struct prom_k8s_row *r;

	if (!cgroup[0] || !(ns[0] || pod[0] || ctr[0]))
		return 0;
	r = vec_add(&k->rows);
	r->cgroup = strdup(cgroup);
	if (!r->cgroup) {
		k->rows.n--;
		return -ENOMEM;
	}
	strcpy(r->ns, ns);
	strcpy(r->pod, pod);
	strcpy(r->ctr, ctr);
	return 0;
}

/* Sort by cgroup; of rows of one cgroup keep one, unnamed if they differ. */
static void rows_merge(struct prom_k8s *k)
{
	struct prom_k8s_row *v = k->rows.v, *o;
	size_t i, n = 0;

	if (!k->rows.n)
		return;
	qsort(v, k->rows.n, sizeof(*v), row_cmp);
	for (i = 0; i < k->rows.n; i++) {
		o = n ? &v[n - 1] : NULL;
		if (!o || strcmp(o->cgroup, v[i].cgroup)) {
			v[n++] = v[i];
			continue;
		}
		if (strcmp(o->ns, v[i].ns) || strcmp(o->pod, v[i].pod) ||
		    strcmp(o->ctr, v[i].ctr))
			o->ns[0] = o->pod[0] = o->ctr[0] = '\0';
		free(v[i].cgroup);
	}
	k->rows.n = n;
}

int prom_k8s_read(struct prom_k8s *k)
{
	char err[HOOK_ERR_LEN];
	struct hook_record *r;
	struct dirent *de;
	int dfd, fd, rc = 0;
	unsigned int n = 0;
	DIR *d;

	memset(k, 0, sizeof(*k));
	k->rows.size = sizeof(struct prom_k8s_row);
	dfd = hook_state_dir(false, err);
	if (dfd < 0)	/* absent, or not ours: no names */
		return 0;
	r = malloc(sizeof(*r));
	fd = r ? dup(dfd) : -1;
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		rc = r ? -errno : -ENOMEM;
		if (fd >= 0)
			close(fd);
		goto out;
	}
	while (!rc && (de = readdir(d)) && n < PROM_RECORDS_MAX) {
		/* the locks and temporary files start with a dot, as . and .. */
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (hook_record_read(dfd, de->d_name, r, err)) {
			k->skipped++;
			continue;
		}
		rc = row_add(k, r->cgroup, r->k8s_namespace, r->k8s_pod,
			     r->k8s_container);
		if (!rc && r->pod[0])
			rc = row_add(k, r->pod, r->k8s_namespace, r->k8s_pod, "");
	}
	rows_merge(k);
out:
	free(r);
	if (d)
		closedir(d);
	close(dfd);
	return rc;
}

void prom_k8s_free(struct prom_k8s *k)
{
	struct prom_k8s_row *v = k->rows.v;
	size_t i;

	for (i = 0; i < k->rows.n; i++)
		free(v[i].cgroup);
	free(k->rows.v);
	memset(k, 0, sizeof(*k));
}

/* ,NAME="VALUE", or nothing for an unknown (empty) value: Prometheus
 * reads a label that is absent as one that is empty. */
static void opt_label(FILE *f, const char *name, const char *v)
{
	if (!v || !v[0])
		return;
	fprintf(f, ",%s=", name);
	nxq_prom_label(f, v);
}

/*
 * The labels of a cgroup's series after its device (and cgroup):
 * ,namespace=..,pod=..,container=..,device_uuid=.., each where known.
 */
static void cg_labels(FILE *f, const struct prom_k8s *k, const char *device,
		      const char *cgroup)
{
	const struct prom_k8s_row *r = NULL, key = { .cgroup = (char *)cgroup };
	bool uuid = !strncmp(device, "GPU-", 4) || !strncmp(device, "MIG-", 4);

	if (k && k->rows.n && cgroup)
		r = bsearch(&key, k->rows.v, k->rows.n, sizeof(*r), row_cmp);
	if (r) {
		opt_label(f, "namespace", r->ns);
		opt_label(f, "pod", r->pod);
		opt_label(f, "container", r->ctr);
	}
	opt_label(f, "device_uuid", uuid ? device : NULL);
}

/* ---- the series ----------------------------------------------------------- */

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
	NM("max_bytes", "gauge", field[NXQ_BF_MAX],
	   "Hard cap of the cgroup's own (+Inf: none).", true),
	NM("effective_max_bytes", "gauge", emax,
	   "The least limit a charge in the cgroup meets (+Inf: none).",
	   true),
	NM("min_bytes", "gauge", field[NXQ_BF_MIN],
	   "Guarantee of the cgroup, as set.",
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

static void head(FILE *f, const struct metric *m)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help,
		m->name, m->type);
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
static void render_attribution(FILE *f, const struct prom_k8s *k,
			       const struct attribution *at)
{
	const struct aseries *m;
	const struct vec *v;
	bool shown = at && at->shown;
	char val[32];
	size_t i;

	fprintf(f, "# HELP nxquota_nvml_available 1: the NVIDIA driver's "
		"per-process figures (NVML) were read and the unattributed "
		"series follow; 0: not available here or not shown to this "
		"caller.\n"
		"# TYPE nxquota_nvml_available gauge\n"
		"nxquota_nvml_available %d\n", shown);
	for (m = aseries; shown && m < aseries + sizeof(aseries) / sizeof(aseries[0]);
	     m++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", m->name, m->help,
			m->name);
		v = m->of == 'p' ? &at->rows : m->of == 'c' ? &at->cgroups :
		    &at->devices;
		for (i = 0; i < v->n; i++) {
			const void *o = (const char *)v->v + i * v->size;
			const struct arow *r = o;
			const struct asum *sm = o;
			const char *dev = m->of == 'p' ? r->device : sm->device;
			const char *cg = m->of == 'p' ? r->cgroup : sm->cgroup;

			if (!m->value(o, val, sizeof(val)))
				continue;
			fprintf(f, "%s{device=", m->name);
			nxq_prom_label(f, dev);
			if (m->of != 'd') {
				fputs(",cgroup=", f);
				nxq_prom_label(f, cg ? cg : "");
				cg_labels(f, k, dev, cg);
			}
			if (m->of == 'p')
				fprintf(f, ",pid=\"%u\"", r->pid);
			fprintf(f, "} %s\n", val);
		}
	}
}

/* A series of a budget node: its device, cgroup and names. */
static void node_series(FILE *f, const char *name, const struct prom_k8s *k,
			const struct node *nd)
{
	fprintf(f, "%s{device=", name);
	nxq_prom_label(f, nd->device);
	fputs(",cgroup=", f);
	nxq_prom_label(f, nd->path);
	cg_labels(f, k, nd->device, nd->path);
}

/* A series of a holder (index i of the dump). */
static void holder_series(FILE *f, const char *name, struct ledger *l,
			  const struct prom_k8s *k, const struct holder *h,
			  size_t i)
{
	const char *p = node_path(l, h->device, h->cgroup);
	char cg[32];

	snprintf(cg, sizeof(cg), "#%" PRIu64, h->cgroup);
	fprintf(f, "%s{device=", name);
	nxq_prom_label(f, h->device);
	fputs(",cgroup=", f);
	nxq_prom_label(f, p ? p : cg);
	cg_labels(f, k, h->device, p);
	fprintf(f, ",pid=\"%u\",holder=\"%zu\"}", h->pid, i);
}

void prom_render(FILE *f, struct ledger *l, const struct prom_k8s *k,
		 const struct attribution *at)
{
	struct holder *h;
	struct node *nd;
	struct dev *d;
	size_t i, j;
	int t;

	for (j = 0; j < sizeof(dev_metrics) / sizeof(dev_metrics[0]); j++) {
		head(f, &dev_metrics[j]);
		for (i = 0, d = l->devs.v; i < l->devs.n; i++, d++) {
			fprintf(f, "%s{device=", dev_metrics[j].name);
			nxq_prom_label(f, d->key);
			fprintf(f, "} %" PRIu64 "\n", field(d, &dev_metrics[j]));
		}
	}
	fprintf(f, "# HELP nxquota_device_events_dropped_type_total Of "
		"events_dropped, the events of one type.\n"
		"# TYPE nxquota_device_events_dropped_type_total counter\n");
	for (i = 0, d = l->devs.v; i < l->devs.n; i++, d++)
		for (t = NXQUOTA_EVENT_TYPE_DEVICE_ADDED;
		     t <= NXQUOTA_EVENT_TYPE_KILLED; t++) {
			fprintf(f, "nxquota_device_events_dropped_type_total"
				"{device=");
			nxq_prom_label(f, d->key);
			fprintf(f, ",type=\"%s\"} %" PRIu64 "\n",
				event_names[t], d->events_dropped_type[t]);
		}
	for (j = 0; j < sizeof(node_metrics) / sizeof(node_metrics[0]); j++) {
		head(f, &node_metrics[j]);
		for (i = 0, nd = l->nodes.v; i < l->nodes.n; i++, nd++) {
			uint64_t v = field(nd, &node_metrics[j]);

			node_series(f, node_metrics[j].name, k, nd);
			if (node_metrics[j].is_max && v == NXQ_UNLIMITED)
				fputs("} +Inf\n", f);
			else
				fprintf(f, "} %" PRIu64 "\n", v);
		}
	}
	/* nxquotad's backstop: only where it measured (not the module) */
	fprintf(f, "# HELP nxquota_budget_measured_bytes Device memory NVML "
		"gives the cgroup's processes (nxquotad -b; residency).\n"
		"# TYPE nxquota_budget_measured_bytes gauge\n");
	for (i = 0, nd = l->nodes.v; i < l->nodes.n; i++, nd++) {
		if (!nd->has_measured)
			continue;
		node_series(f, "nxquota_budget_measured_bytes", k, nd);
		fprintf(f, "} %" PRIu64 "\n", nd->measured);
	}
	fprintf(f, "# HELP nxquota_budget_escaped_total Processes nxquotad's "
		"backstop named in the cgroup (escaped events).\n"
		"# TYPE nxquota_budget_escaped_total counter\n");
	for (i = 0, nd = l->nodes.v; i < l->nodes.n; i++, nd++) {
		if (!nd->has_measured)
			continue;
		node_series(f, "nxquota_budget_escaped_total", k, nd);
		fprintf(f, "} %" PRIu64 "\n", nd->escaped);
	}
	fprintf(f, "# HELP nxquota_holder_charge_bytes Bytes charged to a "
		"holder (charge, not residency).\n"
		"# TYPE nxquota_holder_charge_bytes gauge\n");
	for (i = 0, h = l->holders.v; i < l->holders.n; i++, h++) {
		holder_series(f, "nxquota_holder_charge_bytes", l, k, h, i);
		fprintf(f, " %" PRIu64 "\n", h->charge);
	}
	fprintf(f, "# HELP nxquota_holder_reclaimable_bytes Bytes a holder "
		"reports it can release quickly.\n"
		"# TYPE nxquota_holder_reclaimable_bytes gauge\n");
	for (i = 0, h = l->holders.v; i < l->holders.n; i++, h++) {
		holder_series(f, "nxquota_holder_reclaimable_bytes", l, k, h, i);
		fprintf(f, " %" PRIu64 "\n", h->reclaimable);
	}
	render_attribution(f, k, at);
}
