/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus text exposition of the ledger (prom.c), one renderer for
 * `nxquotactl metrics` (metrics.c) and nxquotad's /metrics endpoint
 * (daemon/metrics.c): devices, budgets, holders and unattributed bytes,
 * and the Kubernetes names the OCI hook recorded for each cgroup.
 */
#ifndef NXQ_TOOLS_PROM_H
#define NXQ_TOOLS_PROM_H

#include <stdio.h>

#include "ledger.h"
#include "nxquotactl.h"

/* Records read at most (one per container on the node). */
#define PROM_RECORDS_MAX	8192

/*
 * The names of the cgroups the hook recorded (/run/nxquota/hooks): a
 * container's cgroup gets its namespace, pod and container, its pod's
 * cgroup the namespace and pod.  Two records that name one cgroup
 * differently leave it unnamed: a name is never guessed.
 */
struct prom_k8s {
	struct vec rows;	/* struct prom_k8s_row, in the order read */
	unsigned int skipped;	/* records that did not read */
};

/* Read the records: 0 (none when the directory is absent or not this
 * user's to read; records that do not read are counted, skipped), or a
 * negative errno. */
int prom_k8s_read(struct prom_k8s *k);
void prom_k8s_free(struct prom_k8s *k);

/*
 * Write the exposition of ledger l to f: at's unattributed bytes when
 * at->shown (at may be NULL: not read), k's names (NULL: none).
 */
void prom_render(FILE *f, struct ledger *l, const struct prom_k8s *k,
		 const struct attribution *at);

#endif /* NXQ_TOOLS_PROM_H */
