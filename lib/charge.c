// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An arena's calls to its authority (the context's kernel ops): charge,
 * uncharge, and the reclaimable bytes reported.  The counters they keep
 * (charged, reported, charge_calls...) are the arena's, under
 * arena->lock, which every caller holds.
 *
 * Layer: below mapping.c (which charges a growth and uncharges a
 * release) and ledger.c (tickets); calls only the kernel ops.
 */
#include "arena.h"

int nxq__k_charge(struct nxq_arena *a, uint64_t bytes)
{
	int r;

	a->charge_calls++;
	r = a->ctx->kops->charge(a->ctx, a->holder, bytes, 0, NULL);
	if (r) {
		a->charge_denied++;
		return r;
	}
	a->charged += bytes;
	return 0;
}

void nxq__k_uncharge(struct nxq_arena *a, uint64_t bytes)
{
	int r;

	if (!bytes)
		return;
	a->uncharge_calls++;
	r = a->ctx->kops->uncharge(a->ctx, a->holder, bytes);
	if (r)
		a->kernel_errors++;	/* the module kept it; nothing else to do */
	a->charged -= bytes;
}

void nxq__report_reclaimable(struct nxq_arena *a)
{
	uint64_t v = a->idle + a->pool_bytes;

	if (v > a->charged)
		v = a->charged;
	if (v == a->reported)
		return;
	a->reports++;
	if (a->ctx->kops->set_reclaimable(a->ctx, a->holder, v) == 0)
		a->reported = v;
	else
		a->kernel_errors++;
}
