// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * bench_gpu, figure 4: charge requests per GiB grown.  An arena with the
 * default options, on a fake-kernel ops table that grants everything and
 * counts calls (tests/lib/counting_kops.h; the GPU machine cannot load
 * the nxquota module), grows with the size mix to 8 GiB (512 MiB with
 * --short); printed: the requests, per GiB, and the granules mapped per
 * request.  Beside it, the granules mapped: the requests one per granule
 * would make.  No verdict.
 */
#include <errno.h>		/* counting_kops.h's -EAGAIN, -ESTALE */

#include "bench_gpu.h"

#include "../tests/lib/counting_kops.h"

/* Figure 4 (g: the device's granule); 1 where the counting context does not open. */
int charge_requests(uint64_t g)
{
	struct nxq_ctx *fc;
	struct nxq_arena *a;
	struct nxq_stats s = { .size = sizeof(s) };
	uint64_t upto = short_run ? (512ULL << 20) : (8ULL << 30);
	void **ps = calloc(100000, sizeof(*ps));
	int np = 0;

	if (nxq__ctx_open_kops(NULL, &counting_kops, NULL, &fc))
		return 1;
	k_calls = k_charged = k_uncalls = 0;
	a = cuda_arena(fc, 0, 0, 0);	/* defaults */
	for (int i = 0; np < 100000; i++) {
		NX(nxq_alloc(a, mix[i % NSIZES], 0, &ps[np++]));
		nxq_arena_stats(a, &s);
		if (s.mapped >= upto)
			break;
	}
	printf("  4. charge requests while growing to %.2f GiB with the size mix "
	       "(defaults): %llu, %.1f per GiB (%llu granules: one request "
	       "per %.1f granules)\n", (double)s.mapped / (1 << 30),
	       (unsigned long long)k_calls, (double)k_calls / ((double)s.mapped / (1 << 30)),
	       (unsigned long long)(s.mapped / g), (double)(s.mapped / g) / (double)k_calls);
	for (int i = 0; i < np; i++)
		nxq_free(a, ps[i]);
	nxq_arena_destroy(a);
	nxq_ctx_close(fc);
	free(ps);
	return 0;
}
