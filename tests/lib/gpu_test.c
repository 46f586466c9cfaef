// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * GPU test of the CUDA backend (make -C lib check-gpu).
 *
 * Prints "skipped: no GPU (reason)" and exits 0 where libcuda.so.1 or a
 * device is absent.  Otherwise, on device 0, through an unmanaged context
 * (a GPU machine without the nxquota module) and through a counting fake
 * kernel: allocations across many granules written and read back with
 * driver memset/copy; a stream-ordered free under queued work followed by
 * a trim that must wait for it (an early unmap would fault the stream);
 * trim returning device memory (cuMemGetInfo); teardown.  Exit 0 pass,
 * 1 fail.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "cuda_api.h"

static const struct nxq_cuda *cu;
static int failures;
/* The fake libcuda.so.1 (tests/fakecuda) when that is what was loaded. */
static void (*fake_hold)(CUstream, int);
static long (*fake_stat)(const char *);

#define CHECK(cond, ...) do { \
	if (cond) { printf("ok   "); } else { printf("FAIL "); failures++; } \
	printf(__VA_ARGS__); printf("\n"); \
} while (0)

#define CU(call) do { CUresult _r = (call); if (_r) { \
	printf("FAIL %s: %s\n", #call, nxq__cuda_errname(_r)); exit(1); } } while (0)

#include "counting_kops.h"

static void stats(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	if (nxq_arena_stats(a, s))
		exit(1);
}

static size_t dev_free(void)
{
	size_t f = 0, t = 0;

	CU(cu->cuMemGetInfo(&f, &t));
	return f;
}

static void run(struct nxq_ctx *ctx, const char *what)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA,
				    .cuda_device = 0, .grow_batch = 64 << 20 };
	struct nxq_arena *a;
	struct nxq_stats s;
	void *p[64];
	size_t sz[64], total = 0, free0, free1;
	unsigned char *buf;
	int bad = 0, r;
	CUstream st;

	printf("== %s context\n", what);
	free0 = dev_free();
	r = nxq_arena_create(ctx, &o, &a);
	CHECK(r == 0, "arena on device 0: %s", r ? nxq_errmsg() : "created");
	if (r)
		return;
	stats(a, &s);
	printf("     granule %llu bytes (cuMemGetAllocationGranularity), %s\n",
	       (unsigned long long)s.granule,
	       s.flags & NXQ_STATS_UNMANAGED ? "unmanaged: nothing charged to a module" :
	       "managed (counting fake kernel)");

	/* 1. many allocations across many granules: memset, read back */
	buf = malloc(96 << 20);
	for (int i = 0; i < 64; i++) {
		sz[i] = ((size_t)(i % 7) + 1) * (3 << 20) + (size_t)i * 4096 + 100;
		total += sz[i];
		if ((r = nxq_alloc(a, sz[i], 0, &p[i])) != 0) {
			CHECK(0, "alloc %zu: %s", sz[i], nxq_errmsg());
			return;
		}
		CU(cu->cuMemsetD8((CUdeviceptr)p[i], (unsigned char)(i + 1), sz[i]));
	}
	for (int i = 0; i < 64; i++) {
		CU(cu->cuMemcpyDtoH(buf, (CUdeviceptr)p[i], sz[i]));
		for (size_t k = 0; k < sz[i]; k += 4093)
			bad += buf[k] != (unsigned char)(i + 1);
		bad += buf[sz[i] - 1] != (unsigned char)(i + 1);
	}
	stats(a, &s);
	CHECK(bad == 0, "64 allocations, %zu MiB over %llu granules: memset/read back (%d bad)",
	      total >> 20, (unsigned long long)(s.mapped / s.granule), bad);
	CHECK(s.charged == s.mapped + s.retained, "charged %llu = mapped %llu + retained %llu",
	      (unsigned long long)s.charged, (unsigned long long)s.mapped,
	      (unsigned long long)s.retained);
	/* one allocation spanning many granules, host pattern round trip */
	{
		void *big;
		size_t n = 80 << 20;
		unsigned char *pat = malloc(n);

		for (size_t k = 0; k < n; k++)
			pat[k] = (unsigned char)(k * 131 + 7);
		CU(nxq_alloc(a, n, 2 << 20, &big) ? 1 : 0);
		CU(cu->cuMemcpyHtoD((CUdeviceptr)big, pat, n));
		memset(buf, 0, n);
		CU(cu->cuMemcpyDtoH(buf, (CUdeviceptr)big, n));
		CHECK(!memcmp(pat, buf, n), "80 MiB allocation (%zu granules): HtoD/DtoH identical",
		      n / s.granule);
		nxq_free(a, big);
		free(pat);
	}
	for (int i = 0; i < 64; i++)
		nxq_free(a, p[i]);

	/* 2. stream-ordered free under queued work */
	CU(cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	{
		void *q, *q2;
		size_t n = 256 << 20;
		CUresult sr;

		CU(nxq_alloc(a, n, 0, &q) ? 1 : 0);
		if (fake_hold)
			fake_hold(st, 1);		/* the fake's stream queues its work */
		for (int i = 0; i < (fake_hold ? 2 : 400); i++)	/* GPU: ~100 GB of writes */
			CU(cu->cuMemsetD8Async((CUdeviceptr)q, (unsigned char)i, n, st));
		CU(nxq_free_async(a, q, st) ? 1 : 0);
		stats(a, &s);
		CHECK(s.pending == n, "free_async with work queued: %llu bytes pending",
		      (unsigned long long)s.pending);
		CU(nxq_alloc(a, n, 0, &q2) ? 1 : 0);
		CHECK(q2 != q, "pending memory not handed out again before the stream is done");
		nxq_free(a, q2);
		r = (int)nxq_arena_trim(a, 0, NXQ_TRIM_WAIT);
		stats(a, &s);
		CHECK(s.pending == 0 && s.mapped == 0, "trim(0, WAIT): pending %llu, mapped %llu",
		      (unsigned long long)s.pending, (unsigned long long)s.mapped);
		sr = cu->cuStreamSynchronize(st);
		CHECK(sr == CUDA_SUCCESS, "stream completed without fault after unmap: %s",
		      nxq__cuda_errname(sr));
		if (fake_hold) {
			fake_hold(st, 0);
			CHECK(fake_stat("faults") == 0, "fake driver: %ld device faults",
			      fake_stat("faults"));
		}
	}
	/* 3. trim returns device memory */
	{
		void *q;
		size_t before, after;

		CU(nxq_alloc(a, 1ULL << 30, 0, &q) ? 1 : 0);
		CU(cu->cuMemsetD8Async((CUdeviceptr)q, 1, 1ULL << 30, st));
		before = dev_free();
		nxq_free(a, q);	/* retention unmaps: must wait for the memset */
		r = (int)nxq_arena_trim(a, 0, 0);
		after = dev_free();
		stats(a, &s);
		CHECK(s.charged == 0 && after >= before + (900u << 20),
		      "free + trim: trim released %d MiB, device free memory +%lld MiB", r >> 20,
		      ((long long)after - (long long)before) >> 20);
	}
	/* 4. teardown with a live allocation and a pending free */
	{
		void *q, *q2;

		CU(nxq_alloc(a, 64 << 20, 0, &q) ? 1 : 0);
		CU(nxq_alloc(a, 64 << 20, 0, &q2) ? 1 : 0);
		CU(cu->cuMemsetD8Async((CUdeviceptr)q2, 3, 64 << 20, st));
		CU(nxq_free_async(a, q2, st) ? 1 : 0);
		CHECK(nxq_arena_destroy(a) == 0, "destroy with a live allocation and a pending free");
		{
			CUresult sr = cu->cuStreamSynchronize(st);

			CHECK(sr == CUDA_SUCCESS, "stream after destroy: %s", nxq__cuda_errname(sr));
		}
		free1 = dev_free();
		CHECK(free1 + (64u << 20) >= free0, "device free memory back to start (%zd MiB diff)",
		      ((ssize_t)free1 - (ssize_t)free0) >> 20);
	}
	CU(cu->cuStreamDestroy(st));
	free(buf);
}

int main(void)
{
	struct nxq_ctx_opts un = { .size = sizeof(un), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_ctx *ctx;
	CUcontext pctx;
	CUdevice dev;
	int err = 0, n = 0;
	CUresult r;

	setvbuf(stdout, NULL, _IONBF, 0);
	cu = nxq__cuda_load(&err);
	if (!cu) {
		printf("skipped: no GPU (%s)\n", nxq_errmsg());
		return 0;
	}
	r = cu->cuInit(0);
	if (!r)
		r = cu->cuDeviceGetCount(&n);
	if (r || n == 0) {
		printf("skipped: no GPU (%s)\n", r ? nxq__cuda_errname(r) : "no CUDA device");
		return 0;
	}
	printf("libcuda: driver %d, entry points %s\n", cu->driver_version,
	       cu->via_getprocaddress ? "via cuGetProcAddress" : "via dlsym");
	{
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (lib && dlsym(lib, "fakecuda_hold")) {
			fake_hold = (void (*)(CUstream, int))dlsym(lib, "fakecuda_hold");
			fake_stat = (long (*)(const char *))dlsym(lib, "fakecuda_stat");
			printf("libcuda.so.1 is the fake driver (tests/fakecuda): host memory\n");
		}
	}
	CU(cu->cuDeviceGet(&dev, 0));
	CU(cu->cuDevicePrimaryCtxRetain(&pctx, dev));
	CU(cu->cuCtxSetCurrent(pctx));

	if (nxq_ctx_open(&un, &ctx)) {
		printf("FAIL unmanaged ctx: %s\n", nxq_errmsg());
		return 1;
	}
	run(ctx, "unmanaged");
	nxq_ctx_close(ctx);

	if (nxq__ctx_open_kops(NULL, &counting_kops, NULL, &ctx))
		return 1;
	run(ctx, "counting fake kernel");
	CHECK(k_charged == 0, "fake kernel: %llu charge calls, %llu uncharge calls, %llu bytes "
	      "left charged", (unsigned long long)k_calls, (unsigned long long)k_uncalls,
	      (unsigned long long)k_charged);
	nxq_ctx_close(ctx);
	cu->cuDevicePrimaryCtxRelease(dev);
	if (fake_stat) {
		CHECK(fake_stat("handles") == 0 && fake_stat("maps") == 0 &&
		      fake_stat("reservations") == 0 && fake_stat("retained") == 0,
		      "fake driver after teardown: %ld handles, %ld mappings, %ld reservations, "
		      "%ld primary-context references left", fake_stat("handles"),
		      fake_stat("maps"), fake_stat("reservations"), fake_stat("retained"));
	}
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
