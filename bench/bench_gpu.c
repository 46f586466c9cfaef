// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * GPU benchmark of libnxquota's CUDA backend (make -C lib bench-gpu):
 * main() and the set-up its figures share (the driver, the size mix, the
 * stream, arenas; declared in bench_gpu.h).  Figures, medians over
 * repetitions, all on device 0, in one run, one file each:
 *
 *  1. bench_gpu_warm.c: warm alloc/free pairs for a size mix, nxq plain
 *     and stream-ordered against cuMemAlloc/cuMemFree, cuMemAllocAsync/
 *     cuMemFreeAsync on the default pool and PyTorch's caching allocator
 *     (bench/torch_peer);
 *  2. bench_gpu_growth.c: growth per GiB, nxq growing an empty arena
 *     against one cuMemAlloc and one big handle (and more handle sizes);
 *     the one PASS/FAIL line, not with --short;
 *  3. bench_gpu_syscalls.c: system calls per warm allocation, counted with
 *     ptrace on the calling thread;
 *  4. bench_gpu_charges.c: charge requests per GiB grown, counted through
 *     the kernel ops table;
 *  5. bench_gpu_peak.c: peak mapped bytes of one random workload in plain
 *     and stream-ordered mode.
 *
 * main() runs the PyTorch peer and figure 3's traced child first, before
 * this process touches CUDA, so figure 3 prints first, then 1, 2, 4, 5.
 *
 * --short: fewer operations and repetitions (make check runs it on the
 * fake libcuda.so.1 to check that it runs; its figures mean nothing).
 *
 * The GPU machine cannot load the nxquota module: figures 1-3 and 5 use an
 * unmanaged context, figure 4 a fake-kernel ops table that counts calls.
 * Prints "skipped: no GPU (reason)" and exits 0 without libcuda/a device.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bench_gpu.h"

const struct nxq_cuda *cu;
size_t mix[NSIZES];
CUstream st;
int short_run;

/*
 * The size mix: 60% 256 B..64 KiB, 30% 64 KiB..2 MiB, 10% 2..32 MiB,
 * log-uniform inside each class (activations, workspaces, KV blocks).
 */
void make_mix(void)
{
	unsigned long long x = 88172645463325252ULL;

	for (int i = 0; i < NSIZES; i++) {
		double lo, hi, u;
		int c;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		c = (int)(x % 10);
		u = (double)((x >> 16) % 1000000) / 1e6;
		if (c < 6) { lo = 8; hi = 16; } else if (c < 9) { lo = 16; hi = 21; }
		else { lo = 21; hi = 25; }
		mix[i] = (size_t)__builtin_exp2(lo + (hi - lo) * u);
	}
}

struct nxq_ctx *unmanaged(void)
{
	struct nxq_ctx_opts o = { .size = sizeof(o), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_ctx *c;

	NX(nxq_ctx_open(&o, &c));
	return c;
}

struct nxq_arena *cuda_arena_min(struct nxq_ctx *c, uint64_t batch, uint64_t retain,
				 uint64_t pool, uint64_t gmin)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA,
				    .grow_batch = batch, .retain_idle = retain,
				    .handle_pool = pool, .grow_min = gmin };
	struct nxq_arena *a;

	NX(nxq_arena_create(c, &o, &a));
	return a;
}

struct nxq_arena *cuda_arena(struct nxq_ctx *c, uint64_t batch, uint64_t retain,
			     uint64_t pool)
{
	return cuda_arena_min(c, batch, retain, pool, 0);
}

typedef CUresult (*getpool_t)(void **, CUdevice);
typedef CUresult (*poolset_t)(void *, int, void *);

void raise_pool_threshold(CUdevice dev)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	getpool_t gp = lib ? (getpool_t)dlsym(lib, "cuDeviceGetDefaultMemPool") : NULL;
	poolset_t ps = lib ? (poolset_t)dlsym(lib, "cuMemPoolSetAttribute") : NULL;
	unsigned long long thr = ~0ULL;
	void *pool;

	/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 */
	if (gp && ps && !gp(&pool, dev) && !ps(pool, 4, &thr))
		printf("  cuMemAllocAsync: default pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = "
		       "UINT64_MAX\n");
	else
		printf("  cuMemAllocAsync: default pool, release threshold NOT raised\n");
}

CUcontext pctx;

void setup_cuda(CUdevice *dev)
{
	int err = 0;

	CU(cu->cuInit(0));
	CU(cu->cuDeviceGet(dev, 0));
	CU(cu->cuDevicePrimaryCtxRetain(&pctx, *dev));
	CU(cu->cuCtxSetCurrent(pctx));
	CU(cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	(void)err;
}

int main(int argc, char **argv)
{
	int reps = 7;
	double torch_ns;
	long ops[5] = { 200000, 200000, 2000, 200000, 200000 };
	char why[512];
	struct nxq_ctx *c;
	struct nxq_arena *a;
	CUdevice dev;
	int err = 0, n = 0;
	uint64_t g;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--short"))
			short_run = 1;
	if (short_run) {
		reps = 3;
		for (int m = 0; m < 5; m++)
			ops[m] /= 20;
	}
	cu = nxq__cuda_load(&err);
	if (!cu) {
		printf("skipped: no GPU (%s)\n", nxq_errmsg());
		return 0;
	}
	make_mix();
	{
		/* probe in a child: the parent must not touch CUDA before fork() */
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			CUresult r = cu->cuInit(0);

			if (!r)
				r = cu->cuDeviceGetCount(&n);
			_exit(r ? 2 : n ? 0 : 3);
		}
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("skipped: no GPU (%s)\n", WEXITSTATUS(status) == 3 ?
			       "no CUDA device" : "cuInit failed");
			return 0;
		}
	}
	printf("nxquota GPU benchmark, device 0; medians of %d repetitions%s\n", reps,
	       short_run ? " (--short)" : "");
	printf("contexts: unmanaged (no nxquota module on this machine) for 1-3 and 5; a "
	       "fake-kernel ops table counting calls for 4\n");
	printf("size mix: 60%% 256B-64KiB, 30%% 64KiB-2MiB, 10%% 2-32MiB (log-uniform), "
	       "%d live allocations\n", WINDOW);
	/* the PyTorch peer is its own process: run it before this one holds the GPU */
	torch_ns = torch_peer(argv[0], ops[0], reps, why, sizeof(why));
	count_syscalls();

	setup_cuda(&dev);
	raise_pool_threshold(dev);
	c = unmanaged();
	a = cuda_arena(c, 0, 1ULL << 34, 0);
	{
		struct nxq_stats s = { .size = sizeof(s) };

		nxq_arena_stats(a, &s);
		g = s.granule;
	}
	printf("  granule %llu bytes\n", (unsigned long long)g);

	warm_pairs(a, ops, reps, torch_ns, why);
	nxq_arena_destroy(a);
	growth_per_gib(c, dev, g, reps);
	if (charge_requests(g))
		return 1;
	peak_mapped(c);
	nxq_ctx_close(c);
	return 0;
}
