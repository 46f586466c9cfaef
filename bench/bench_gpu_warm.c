// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * bench_gpu, figure 1: warm alloc/free pairs on the size mix, WINDOW
 * live, host time per pair (median of the repetitions, after a warm-up
 * that fills the pools), side by side: nxq plain (nxq_alloc + nxq_free),
 * nxq stream-ordered (nxq_alloc_async + nxq_free_async on one stream),
 * and plain allocations with stream frees; the baselines: the driver
 * API's cuMemAlloc/cuMemFree (what cudaMalloc/cudaFree call),
 * cuMemAllocAsync/cuMemFreeAsync on the default pool with its release
 * threshold raised to UINT64_MAX (what cudaMallocAsync does), and
 * PyTorch's caching allocator (c10::cuda::CUDACachingAllocator::raw_alloc/
 * raw_delete, timed by bench/torch_peer, a C++ program built against the
 * installed PyTorch, on the same mix and window; "not measured" where it
 * is absent).  Target, printed beside the ratio and not judged:
 * stream-ordered / plain nxq pair <= 2.
 *
 * warm_loop() is figure 3's workload too.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bench_gpu.h"

/* ops alloc+free pairs, a window of WINDOW live allocations. */
void warm_loop(int m, struct nxq_arena *a, long ops)
{
	void *live[WINDOW] = { 0 };
	CUdeviceptr dl[WINDOW] = { 0 };

	for (long i = 0; i < ops + WINDOW; i++) {
		int k = (int)(i % WINDOW);
		size_t sz = mix[i % NSIZES];

		switch (m) {
		case M_NXQ:
			if (live[k])
				nxq_free(a, live[k]);
			if (i < ops && nxq_alloc(a, sz, 0, &live[k]))
				exit(1);
			if (i >= ops)
				live[k] = NULL;
			break;
		case M_NXQ_ASYNC:
			if (live[k])
				nxq_free_async(a, live[k], st);
			if (i < ops && nxq_alloc_async(a, sz, 0, st, &live[k]))
				exit(1);
			if (i >= ops)
				live[k] = NULL;
			break;
		case M_NXQ_MIXED:
			if (live[k])
				nxq_free_async(a, live[k], st);
			if (i < ops && nxq_alloc(a, sz, 0, &live[k]))
				exit(1);
			if (i >= ops)
				live[k] = NULL;
			break;
		case M_CUMEM:
			if (dl[k])
				cu->cuMemFree(dl[k]);
			dl[k] = 0;
			if (i < ops)
				CU(cu->cuMemAlloc(&dl[k], sz));
			break;
		case M_CUMEM_ASYNC:
			if (dl[k])
				cu->cuMemFreeAsync(dl[k], st);
			dl[k] = 0;
			if (i < ops)
				CU(cu->cuMemAllocAsync(&dl[k], sz, st));
			break;
		}
	}
}

/* Runs the peer (same mix, window and pair count); its median ns per pair, or < 0. */
double torch_peer(const char *self, long ops, int reps, char *why, size_t whylen)
{
	char path[4096], cmd[4400], line[512];
	const char *slash = strrchr(self, '/');
	double v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%.*storch_peer", slash ? (int)(slash - self + 1) : 0, self);
	if (access(path, X_OK)) {
		snprintf(why, whylen, "%.400s not built: PyTorch with its C++ headers absent "
			 "(see bench/build-torch-peer.sh)", path);
		return -1;
	}
	fflush(stdout);
	snprintf(cmd, sizeof(cmd), "%s %ld %d %d 2>&1", path, ops, reps, WINDOW);
	f = popen(cmd, "r");
	if (!f) {
		snprintf(why, whylen, "popen: %s", strerror(errno));
		return -1;
	}
	snprintf(why, whylen, "%.400s printed no figure", path);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "torch_peer median_ns_per_pair %lf", &v) == 1)
			continue;
		if (!strncmp(line, "torch_peer:", 11)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(why, whylen, "%s", line + 11);
		}
	}
	if (pclose(f) != 0)
		v = -1;
	return v;
}

/*
 * Figure 1 in arena a: ops[m] pairs of each of the five methods (M_*),
 * reps times; torch_ns and why: torch_peer()'s figure, run earlier.
 */
void warm_pairs(struct nxq_arena *a, const long ops[5], int reps, double torch_ns,
		const char *why)
{
	double v[5][16], t;
	static const char *names[5] = { "nxq_alloc + nxq_free", "nxq_alloc_async + nxq_free_async",
					"cuMemAlloc + cuMemFree", "cuMemAllocAsync + cuMemFreeAsync",
					"nxq_alloc + nxq_free_async (no stream)" };

	for (int m = 0; m < 5; m++) {
		warm_loop(m, a, ops[m] / 4 + 1000);	/* warm up: pools filled */
		CU(cu->cuStreamSynchronize(st));
		for (int r = 0; r < reps; r++) {
			t = now();
			warm_loop(m, a, ops[m]);
			v[m][r] = (now() - t) / (double)ops[m];
			CU(cu->cuStreamSynchronize(st));
		}
	}
	printf("  1. warm alloc+free pairs (host time per pair, median; %d live):\n", WINDOW);
	{
		double med[5];

		for (int m = 0; m < 5; m++) {
			med[m] = median(v[m], reps);
			printf("     %-44s %10.1f ns  %12.0f pairs/s\n", names[m], med[m] * 1e9,
			       1.0 / med[m]);
		}
		if (torch_ns > 0)
			printf("     %-44s %10.1f ns  %12.0f pairs/s\n",
			       "PyTorch raw_alloc + raw_delete (torch_peer)", torch_ns,
			       1e9 / torch_ns);
		else
			printf("     %-44s not measured: %s\n", "PyTorch raw_alloc + raw_delete", why);
		printf("     ratio stream-ordered / plain nxq pair: %.2f (target <= 2)\n",
		       med[1] / med[0]);
	}
}
