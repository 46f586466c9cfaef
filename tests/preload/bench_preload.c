// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An unmodified CUDA driver-API program for the shim's figures and the
 * SIGKILL test; it resolves everything as the CUDA runtime does
 * (dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2"), then
 * cuGetProcAddress), so that it runs the same with and without
 * libnxquota-preload.so in LD_PRELOAD.
 *
 *   bench_preload pairs N SIZE   N cuMemAlloc/cuMemFree pairs of SIZE bytes,
 *                                then N cuMemAllocAsync/cuMemFreeAsync
 *                                pairs (stream 0, one sync at the end):
 *                                "pairs: ... ns/pair" lines; under the
 *                                shim each says how many charges and
 *                                uncharges reached the authority per pair
 *                                (its nxquota_preload_authority_trips())
 *   bench_preload churn MIB      forever: allocate MIB 1 MiB blocks, free
 *                                them (for kill -9 at random points);
 *                                "ready" once the context is up
 *   bench_preload plain MIB      MIB 1 MiB cuMemAlloc blocks (stop at the
 *                                first refusal): "plain N error E", then
 *                                holds them until a line on stdin
 *   bench_preload pool MIB       the same with cuMemAllocAsync, then
 *                                cuMemFreeAsync of all (no sync: the pool
 *                                keeps its reservation): "pool N error E",
 *                                then waits for a line on stdin
 *   bench_preload key            the GPU-<uuid> key of device 0
 *   bench_preload cycle MIB HOLD_MS
 *                                until a line on stdin: one cuMemAlloc of
 *                                MIB, held HOLD_MS, freed, HOLD_MS pause;
 *                                then "cycle: N granted, M refused"
 *   bench_preload inter N SIZE ROUNDS
 *                                in one process, ROUNDS alternating batches
 *                                (ABBA) of N pairs through the driver's own
 *                                entry points (resolved between
 *                                nxquota_preload_exempt(1) and (0): the
 *                                shim's cuGetProcAddress and dlsym then give
 *                                the driver's) and through the shim's: for
 *                                cuMemAlloc and cuMemAllocAsync pairs, an
 *                                "inter: ..." line with the median ns/pair of
 *                                each, the median of the per-round ratios,
 *                                authority trips and (on the fake driver)
 *                                driver calls per pair.  Without the shim
 *                                both sides are the driver ("no shim").
 *   bench_preload med N SIZE ROUNDS
 *                                ROUNDS batches of N pairs: "med: KIND SIZE
 *                                B: X ns/pair" (the median batch) for
 *                                cuMemAlloc and cuMemAllocAsync pairs (for
 *                                bare/shim processes alternated by gpu.sh)
 *   bench_preload rt N SIZE ROUNDS LIBCUDART
 *                                the same for cudaMalloc/cudaFree pairs of
 *                                the CUDA runtime (dlopen(LIBCUDART)), which
 *                                reaches the driver through cuGetProcAddress
 *
 *   bench_preload info N ROUNDS  cuMemGetInfo: ROUNDS alternating batches of N
 *                                calls, the driver's (through the exemption) and
 *                                the shim's (issue 20: a STATUS round trip to the
 *                                authority each): "info: driver X ns/call, shim
 *                                Y ns/call" (medians), and what the shim reports
 *
 * On tests/fakecuda (make -C preload bench-fake) it only shows that it runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_api.h"

static CUresult (*gpa)(const char *, void **, int, uint64_t, int *);
static void *libcuda;

static void *get(const char *name)
{
	void *fn = NULL;

	if (gpa(name, &fn, 12000, 0, NULL) || !fn) {
		fprintf(stderr, "bench_preload: no %s\n", name);
		exit(1);
	}
	return fn;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "bench_preload: %s: %d\n", #x, r_); exit(1); } } while (0)

struct side {
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	CUresult (*aalloc)(CUdeviceptr *, size_t, CUstream);
	CUresult (*afree)(CUdeviceptr, CUstream);
	CUresult (*ssync)(CUstream);
};

/* n pairs of kind k (0 cuMemAlloc, 1 cuMemAllocAsync) through sd: ns per pair. */
static double batch(const struct side *sd, int k, long n, size_t size)
{
	CUdeviceptr p;
	double t = now();

	if (!k) {
		for (long i = 0; i < n; i++) {
			CK(sd->alloc(&p, size));
			CK(sd->fr(p));
		}
	} else {
		for (long i = 0; i < n; i++) {
			CK(sd->aalloc(&p, size, NULL));
			CK(sd->afree(p, NULL));
		}
		CK(sd->ssync(NULL));
	}
	return (now() - t) / n * 1e9;
}

/*
 * The driver's side: with the shim loaded, its exemption makes this
 * thread's dlsym() and cuGetProcAddress() give the driver's entry points.
 */
static int real_side(struct side *sd)
{
	void (*ex)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "nxquota_preload_exempt");
	CUresult (*g)(const char *, void **, int, uint64_t, int *);
	CUresult (*keep)(const char *, void **, int, uint64_t, int *) = gpa;

	if (!ex)
		return 0;
	ex(1);
	g = (CUresult (*)(const char *, void **, int, uint64_t, int *))
		dlsym(libcuda, "cuGetProcAddress_v2");
	gpa = g;
	sd->alloc = get("cuMemAlloc");
	sd->fr = get("cuMemFree");
	sd->aalloc = get("cuMemAllocAsync");
	sd->afree = get("cuMemFreeAsync");
	sd->ssync = get("cuStreamSynchronize");
	gpa = keep;
	ex(0);
	return 1;
}

/* cuMemGetInfo, the driver's and the program's (the shim's when it is there). */
static int info(long n, int rounds)
{
	void (*ex)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "nxquota_preload_exempt");
	CUresult (*f[2])(size_t *, size_t *);
	CUresult (*keep)(const char *, void **, int, uint64_t, int *) = gpa;
	double *v[2];
	size_t fr[2], tot[2];

	if (n <= 0 || rounds <= 0)
		return 2;
	f[1] = get("cuMemGetInfo");
	f[0] = f[1];
	if (ex) {
		ex(1);
		gpa = (CUresult (*)(const char *, void **, int, uint64_t, int *))
			dlsym(libcuda, "cuGetProcAddress_v2");
		f[0] = get("cuMemGetInfo");
		gpa = keep;
		ex(0);
	}
	for (int i = 0; i < 2; i++)
		if (!(v[i] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			int w = (r & 1) ^ j;
			double t = now();

			for (long i = 0; i < n; i++)
				CK(f[w](&fr[w], &tot[w]));
			v[w][r] = (now() - t) / n * 1e9;
		}
	printf("info: cuMemGetInfo: driver %.0f ns/call (free %zu of %zu), %s %.0f ns/call "
	       "(free %zu of %zu) (medians of %d rounds of %ld)\n", median(v[0], rounds), fr[0],
	       tot[0], ex ? "shim" : "no shim", median(v[1], rounds), fr[1], tot[1], rounds, n);
	return 0;
}

static int inter(long n, size_t size, int rounds,
		 CUresult (*alloc)(CUdeviceptr *, size_t), CUresult (*fr)(CUdeviceptr),
		 CUresult (*aalloc)(CUdeviceptr *, size_t, CUstream),
		 CUresult (*afree)(CUdeviceptr, CUstream), CUresult (*ssync)(CUstream))
{
	struct side sd[2] = { { alloc, fr, aalloc, afree, ssync }, { alloc, fr, aalloc, afree,
								     ssync } };
	uint64_t (*trips)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT,
					"nxquota_preload_authority_trips");
	long (*calls)(void) = (long (*)(void))dlsym(libcuda, "fakecuda_calls_total");
	double *v[3];
	int shim = real_side(&sd[0]);	/* sd[0]: the driver's, sd[1]: as the program gets them */

	if (n <= 0 || rounds <= 0)
		return 2;
	for (int i = 0; i < 3; i++)
		if (!(v[i] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	for (int k = 0; k < 2; k++) {
		uint64_t tr = 0;
		long c[2] = { 0, 0 };

		batch(&sd[0], k, 100, size);	/* warm up both */
		batch(&sd[1], k, 100, size);
		for (int r = 0; r < rounds; r++) {
			for (int j = 0; j < 2; j++) {
				int w = (r & 1) ^ j;	/* ABBA: alternate who goes first */
				uint64_t t0 = w && trips ? trips() : 0;
				long c0 = calls ? calls() : 0;

				v[w][r] = batch(&sd[w], k, n, size);
				if (w && trips)
					tr += trips() - t0;
				if (calls)
					c[w] += calls() - c0;
			}
			v[2][r] = v[1][r] / v[0][r];
		}
		printf("inter: %s %zu B: driver %.0f ns/pair, %s %.0f ns/pair, x%.3f (median of %d "
		       "per-round ratios; %d rounds of %ld)", k ? "cuMemAllocAsync+cuMemFreeAsync"
		       : "cuMemAlloc+cuMemFree", size, median(v[0], rounds),
		       shim ? "shim" : "no shim", median(v[1], rounds), median(v[2], rounds),
		       rounds, rounds, n);
		if (trips)
			printf(", %.3f authority trips/pair", (double)tr / ((double)n * rounds));
		if (calls)
			printf(", driver calls/pair %.2f vs %.2f", (double)c[1] / ((double)n * rounds),
			       (double)c[0] / ((double)n * rounds));
		printf("\n");
	}
	return 0;
}

/* cudaMalloc/cudaFree pairs through the CUDA runtime. */
static int rt(long n, size_t size, int rounds, const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW);
	int (*setdev)(int), (*mal)(void **, size_t), (*fre)(void *);
	double *v = calloc((size_t)rounds + 1, sizeof(double));
	void *p;

	if (!h || !v || n <= 0 || rounds <= 0) {
		fprintf(stderr, "bench_preload: %s\n", h ? "bad arguments" : dlerror());
		return 1;
	}
	setdev = (int (*)(int))dlsym(h, "cudaSetDevice");
	mal = (int (*)(void **, size_t))dlsym(h, "cudaMalloc");
	fre = (int (*)(void *))dlsym(h, "cudaFree");
	if (!setdev || !mal || !fre || setdev(0)) {
		fprintf(stderr, "bench_preload: no cudaSetDevice/cudaMalloc/cudaFree in %s\n", lib);
		return 1;
	}
	for (int i = 0; i < 100; i++)
		if (mal(&p, size) || fre(p))
			return 1;
	for (int r = 0; r < rounds; r++) {
		double t = now();

		for (long i = 0; i < n; i++)
			if (mal(&p, size) || fre(p)) {
				fprintf(stderr, "bench_preload: cudaMalloc/cudaFree failed\n");
				return 1;
			}
		v[r] = (now() - t) / n * 1e9;
	}
	printf("rt: cudaMalloc+cudaFree %zu B: %.0f ns/pair (median of %d batches of %ld)\n", size,
	       median(v, rounds), rounds, n);
	return 0;
}

int main(int argc, char **argv)
{
	CUresult (*init)(unsigned int);
	CUresult (*devget)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*fr)(CUdeviceptr);
	CUresult (*aalloc)(CUdeviceptr *, size_t, CUstream);
	CUresult (*afree)(CUdeviceptr, CUstream);
	CUresult (*ssync)(CUstream);
	CUdevice dev;
	CUcontext ctx;
	void *h;

	if (argc < 2 || (strcmp(argv[1], "key") && (argc < 3 ||
	    (strcmp(argv[1], "pairs") && strcmp(argv[1], "churn") && strcmp(argv[1], "plain") &&
	     strcmp(argv[1], "pool") && strcmp(argv[1], "inter") && strcmp(argv[1], "med") &&
	     strcmp(argv[1], "cycle") && strcmp(argv[1], "info") &&
	     strcmp(argv[1], "rt")))) ||
	    ((!strcmp(argv[1], "inter") || !strcmp(argv[1], "med")) && argc < 5) ||
	    (!strcmp(argv[1], "info") && argc < 4) ||
	    (!strcmp(argv[1], "rt") && argc < 6)) {
		fprintf(stderr, "usage: bench_preload pairs N SIZE | churn MIB | plain MIB | "
			"pool MIB | key | inter N SIZE ROUNDS | med N SIZE ROUNDS | "
			"info N ROUNDS | rt N SIZE ROUNDS LIBCUDART\n");
		return 2;
	}
	if (!strcmp(argv[1], "rt"))
		return rt(atol(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]), argv[5]);
	h = libcuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "bench_preload: %s\n", dlerror());
		return 1;
	}
	gpa = (CUresult (*)(const char *, void **, int, uint64_t, int *))
		dlsym(h, "cuGetProcAddress_v2");
	if (!gpa) {
		fprintf(stderr, "bench_preload: no cuGetProcAddress_v2\n");
		return 1;
	}
	init = get("cuInit");
	devget = get("cuDeviceGet");
	retain = get("cuDevicePrimaryCtxRetain");
	setcur = get("cuCtxSetCurrent");
	alloc = get("cuMemAlloc");
	fr = get("cuMemFree");
	aalloc = get("cuMemAllocAsync");
	afree = get("cuMemFreeAsync");
	ssync = get("cuStreamSynchronize");
	CK(init(0));
	CK(devget(&dev, 0));
	if (!strcmp(argv[1], "key")) {
		CUresult (*uuid)(CUuuid *, CUdevice) = get("cuDeviceGetUuid");
		CUuuid u;
		const unsigned char *b = (const unsigned char *)u.bytes;

		CK(uuid(&u, dev));
		printf("GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
		       b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		       b[12], b[13], b[14], b[15]);
		return 0;
	}
	CK(retain(&ctx, dev));
	CK(setcur(ctx));

	if (!strcmp(argv[1], "plain") || !strcmp(argv[1], "pool")) {
		int pool = !strcmp(argv[1], "pool");
		long n = atol(argv[2]), k;
		CUdeviceptr *p = calloc((size_t)n + 1, sizeof(*p));
		CUresult e = 0;
		char line[16];

		if (!p || n <= 0)
			return 2;
		for (k = 0; k < n; k++) {
			e = pool ? aalloc(&p[k], 1 << 20, NULL) : alloc(&p[k], 1 << 20);
			if (e)
				break;
		}
		if (pool)
			for (long i = 0; i < k; i++)
				CK(afree(p[i], NULL));
		printf("%s %ld error %d\n", argv[1], k, e);
		fflush(stdout);
		return fgets(line, sizeof(line), stdin) ? 0 : 1;
	}

	if (!strcmp(argv[1], "info"))
		return info(atol(argv[2]), atoi(argv[3]));
	if (!strcmp(argv[1], "inter"))
		return inter(atol(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]), alloc, fr,
			     aalloc, afree, ssync);
	if (!strcmp(argv[1], "med")) {
		long n = atol(argv[2]);
		size_t size = strtoull(argv[3], NULL, 0);
		int rounds = atoi(argv[4]);
		struct side sd = { alloc, fr, aalloc, afree, ssync };
		double *v = calloc((size_t)rounds + 1, sizeof(double));

		if (!v || n <= 0 || rounds <= 0)
			return 2;
		for (int k = 0; k < 2; k++) {
			batch(&sd, k, 100, size);	/* warm up */
			for (int r = 0; r < rounds; r++)
				v[r] = batch(&sd, k, n, size);
			printf("med: %s %zu B: %.0f ns/pair (median of %d batches of %ld)\n",
			       k ? "cuMemAllocAsync+cuMemFreeAsync" : "cuMemAlloc+cuMemFree", size,
			       median(v, rounds), rounds, n);
		}
		return 0;
	}
	if (!strcmp(argv[1], "cycle") && argc >= 4) {
		size_t size = strtoull(argv[2], NULL, 0) << 20;
		struct timespec hold = { 0, atol(argv[3]) * 1000000L };
		long ok = 0, no = 0;
		CUdeviceptr p;
		struct pollfd pfd = { .fd = 0, .events = POLLIN };

		printf("cycle ready\n");
		fflush(stdout);
		while (poll(&pfd, 1, 0) == 0) {
			if (alloc(&p, size)) {
				no++;
			} else {
				ok++;
				nanosleep(&hold, NULL);
				CK(fr(p));
			}
			nanosleep(&hold, NULL);
		}
		printf("cycle: %ld granted, %ld refused\n", ok, no);
		return 0;
	}
	if (!strcmp(argv[1], "churn")) {
		long n = atol(argv[2]);
		CUdeviceptr *p = calloc((size_t)n, sizeof(*p));

		if (!p || n <= 0)
			return 2;
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			long k;

			for (k = 0; k < n && !alloc(&p[k], 1 << 20); k++)
				;
			while (k--)
				CK(fr(p[k]));
		}
	}
	if (argc < 4)
		return 2;
	{
		long n = atol(argv[2]);
		size_t size = strtoull(argv[3], NULL, 0);
		uint64_t (*trips)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT,
						"nxquota_preload_authority_trips");
		uint64_t t0 = 0;
		char tr[64] = "";
		CUdeviceptr p;
		double t;

		for (int i = 0; i < 100; i++) {	/* warm up */
			CK(alloc(&p, size));
			CK(fr(p));
		}
#define TRIPS_START() (t0 = trips ? trips() : 0)
#define TRIPS_END() (trips ? snprintf(tr, sizeof(tr), ", %.3f authority trips/pair", \
				       (double)(trips() - t0) / n) : 0)
		TRIPS_START();
		t = now();
		for (long i = 0; i < n; i++) {
			CK(alloc(&p, size));
			CK(fr(p));
		}
		t = now() - t;
		TRIPS_END();
		printf("pairs: cuMemAlloc+cuMemFree %zu B: %ld in %.3f s, %.0f ns/pair%s\n", size,
		       n, t, t / n * 1e9, tr);
		TRIPS_START();
		t = now();
		for (long i = 0; i < n; i++) {
			CK(aalloc(&p, size, NULL));
			CK(afree(p, NULL));
		}
		CK(ssync(NULL));
		t = now() - t;
		TRIPS_END();
		printf("pairs: cuMemAllocAsync+cuMemFreeAsync %zu B: %ld in %.3f s, %.0f ns/pair%s\n",
		       size, n, t, t / n * 1e9, tr);
	}
	return 0;
}
