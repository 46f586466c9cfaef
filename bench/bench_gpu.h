/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * What bench_gpu's figures share (bench/bench_gpu*.c, one program): the
 * driver table, the size mix, the stream and the primary context, set up
 * once by main() in bench_gpu.c and read by every figure; the timing and
 * median helpers; the warm alloc/free loop that figures 1 and 3 run.
 */
#ifndef NXQ_BENCH_GPU_H
#define NXQ_BENCH_GPU_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "cuda_api.h"

#define WINDOW	 32		/* live allocations in the warm loop */
#define NSIZES	 4096		/* entries of the size mix */

extern const struct nxq_cuda *cu;	/* the driver, loaded by main() */
extern size_t mix[NSIZES];		/* make_mix()'s sizes */
extern CUstream st;			/* setup_cuda()'s stream */
extern CUcontext pctx;			/* setup_cuda()'s primary context */
extern int short_run;			/* --short */

#define CU(call) do { CUresult _r = (call); if (_r) { \
	printf("FAIL %s: %s\n", #call, nxq__cuda_errname(_r)); exit(1); } } while (0)
#define NX(call) do { int _r = (call); if (_r < 0) { \
	printf("FAIL %s: %s\n", #call, nxq_errmsg()); exit(1); } } while (0)

static inline double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n); sorts v (the quartiles are then at hand). */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bench_gpu.c: set-up shared by the figures; they exit(1) on failure. */
void make_mix(void);
struct nxq_ctx *unmanaged(void);
struct nxq_arena *cuda_arena_min(struct nxq_ctx *c, uint64_t batch, uint64_t retain,
				 uint64_t pool, uint64_t gmin);
struct nxq_arena *cuda_arena(struct nxq_ctx *c, uint64_t batch, uint64_t retain,
			     uint64_t pool);
void raise_pool_threshold(CUdevice dev);
void setup_cuda(CUdevice *dev);

enum { M_NXQ, M_NXQ_ASYNC, M_CUMEM, M_CUMEM_ASYNC, M_NXQ_MIXED };

/* bench_gpu_warm.c: ops alloc+free pairs of method m (M_*), WINDOW live. */
void warm_loop(int m, struct nxq_arena *a, long ops);
/* PyTorch's pairs by bench/torch_peer beside self: median ns per pair, or < 0 and why. */
double torch_peer(const char *self, long ops, int reps, char *why, size_t whylen);

/* The figures, in the order main() prints them; each prints its lines. */
void count_syscalls(void);							/* 3 */
void warm_pairs(struct nxq_arena *a, const long ops[5], int reps, double torch_ns,
		const char *why);						/* 1 */
void growth_per_gib(struct nxq_ctx *c, CUdevice dev, uint64_t g, int reps);	/* 2 */
int charge_requests(uint64_t g);						/* 4 */
void peak_mapped(struct nxq_ctx *c);						/* 5 */

#endif /* NXQ_BENCH_GPU_H */
