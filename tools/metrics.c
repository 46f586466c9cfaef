// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl metrics: the Prometheus text exposition of devices, budgets,
 * holders and unattributed bytes, from one read of the ledger, rendered
 * by prom.c (nxquotad's /metrics renders it the same way).  Owns nothing
 * past the call.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "ctl.h"
#include "ledger.h"
#include "nxquotactl.h"
#include "prom.h"

int cmd_metrics(struct ctl *n, int argc)
{
	struct attribution at;
	struct prom_k8s k;
	struct ledger l;
	int rc;

	if (argc) {
		warnx_("usage: metrics");
		return EX_USAGE;
	}
	rc = read_ledger(n, NULL, &l);
	if (rc)
		return rc;
	/* the hook's records are root's: another user's series are unnamed */
	if (prom_k8s_read(&k))
		warnx_("the hook's records: out of memory; series unnamed");
	attribute(&l, NULL, &at);
	prom_render(stdout, &l, &k, &at);
	attribution_free(&at);
	prom_k8s_free(&k);
	ledger_free(&l);
	return fflush(stdout) ? EX_FAIL : EX_OK;
}
