// SPDX-License-Identifier: GPL-2.0
/*
 * Unattributed bytes: what NVML (nvml.c) attributes to each process
 * against what the ledger charged it, per process, per (device, cgroup)
 * and per device, for status (its table here, its JSON in jsonout.c)
 * and metrics.  Owns the rows
 * and sums of a struct attribution, from attribute() to
 * attribution_free().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "ledger.h"
#include "nxquotactl.h"
#include "nvml.h"

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
void attribute(struct ledger *l, const char *device,
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

void attribution_table(const struct attribution *at)
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

void attribution_free(struct attribution *at)
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
