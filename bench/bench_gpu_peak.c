// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * bench_gpu, figure 5: peak mapped bytes of one random workload (the size
 * mix with shapes x1-4, 4 * WINDOW slots, every allocation written by the
 * stream, frees of both kinds), run in plain mode (nxq_alloc + nxq_free),
 * the baseline, in stream-ordered mode (nxq_alloc_async + nxq_free_async)
 * and with plain allocations and stream frees, each in a fresh arena.
 * Target, printed beside the ratio and not judged: stream-ordered / plain
 * <= 1.05.
 */
#include "bench_gpu.h"

/* async 0: plain; 1: alloc_async + free_async; 2: plain alloc + free_async. */
static uint64_t peak_run(struct nxq_ctx *c, int async, long ops)
{
	struct nxq_arena *a = cuda_arena(c, 0, NXQ_OPT_ZERO, NXQ_OPT_ZERO);
	struct nxq_stats s = { .size = sizeof(s) };
	void *live[WINDOW * 4] = { 0 };
	unsigned long long x = 0x9E3779B97F4A7C15ULL;
	uint64_t peak = 0;

	for (long i = 0; i < ops; i++) {
		int k;
		size_t sz;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		k = (int)(x % (WINDOW * 4));
		sz = mix[(x >> 20) % NSIZES] * (1 + (x >> 40) % 4);	/* shapes vary */
		if (live[k]) {
			if (async)
				NX(nxq_free_async(a, live[k], st));
			else
				NX(nxq_free(a, live[k]));
		}
		if (async == 1)
			NX(nxq_alloc_async(a, sz, 0, st, &live[k]));
		else
			NX(nxq_alloc(a, sz, 0, &live[k]));
		CU(cu->cuMemsetD8Async((CUdeviceptr)live[k], 1, sz < 4096 ? sz : 4096, st));
		nxq_arena_stats(a, &s);
		if (s.mapped > peak)
			peak = s.mapped;
	}
	CU(cu->cuStreamSynchronize(st));
	for (int k = 0; k < WINDOW * 4; k++)
		if (live[k])
			NX(nxq_free(a, live[k]));
	nxq_arena_destroy(a);
	return peak;
}

/* Figure 5 in arenas of context c. */
void peak_mapped(struct nxq_ctx *c)
{
	long pops = short_run ? 5000 : 100000;
	uint64_t ps = peak_run(c, 0, pops), pa = peak_run(c, 1, pops);
	uint64_t pm = peak_run(c, 2, pops);

	printf("  5. peak mapped on one random workload (%ld ops, %d live, shapes x1-4, "
	       "one stream): plain %.1f MiB, stream-ordered %.1f MiB: %.3fx (target <= "
	       "1.05); plain allocations with stream frees %.1f MiB: %.3fx\n", pops,
	       WINDOW * 4, (double)ps / (1 << 20), (double)pa / (1 << 20),
	       (double)pa / (double)ps, (double)pm / (1 << 20), (double)pm / (double)ps);
}
