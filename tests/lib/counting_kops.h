/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A counting fake kernel for the GPU programs (tests/lib/gpu_test.c,
 * bench/bench_gpu_charges.c): it grants everything and counts what the module
 * would have been asked.  Include once, after nxquota's internal.h.
 */
#ifndef NXQ_TESTS_LIB_COUNTING_KOPS_H
#define NXQ_TESTS_LIB_COUNTING_KOPS_H

static uint64_t k_charged, k_calls, k_uncalls;
static int k_version(struct nxq_ctx *c, struct nxq_version *v)
{ v->abi_version = NXQ_ABI_VERSION; v->features = 0xf; return 0; }
static int k_reg(struct nxq_ctx *c, struct nxq_holder_reg *r) { r->holder_id = 1; return 0; }
static int k_unreg(struct nxq_ctx *c, uint64_t h) { return 0; }
static int k_charge(struct nxq_ctx *c, uint64_t h, uint64_t b, uint64_t timeout_ns,
		    struct nxq_refusal *why) { k_calls++; k_charged += b; return 0; }
static int k_uncharge(struct nxq_ctx *c, uint64_t h, uint64_t b) { k_uncalls++; k_charged -= b; return 0; }
static int k_recl(struct nxq_ctx *c, uint64_t h, uint64_t b) { return 0; }
static void k_close(struct nxq_ctx *c) { }
static int k_tread(struct nxq_ctx *c, uint64_t h, struct nxq_ticket *t) { return -EAGAIN; }
static int k_tanswer(struct nxq_ctx *c, uint64_t h, uint64_t gen, uint64_t released,
		     uint64_t *charged) { return -ESTALE; }
static const struct nxq_kops counting_kops = {
	.name = "counting",
	.version = k_version,
	.holder_register = k_reg,
	.holder_unregister = k_unreg,
	.charge = k_charge,
	.uncharge = k_uncharge,
	.set_reclaimable = k_recl,
	.ticket_read = k_tread,
	.ticket_answer = k_tanswer,
	.close = k_close,
};

#endif /* NXQ_TESTS_LIB_COUNTING_KOPS_H */
