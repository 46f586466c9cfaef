// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * GPU benchmark of libnxquota's CUDA backend (make -C lib bench-gpu).
 * Figures, medians over repetitions, all on device 0:
 *
 *  1. warm alloc/free throughput for a size mix, against the driver API's
 *     cuMemAlloc/cuMemFree (what cudaMalloc/cudaFree call) and
 *     cuMemAllocAsync/cuMemFreeAsync on the default pool with its release
 *     threshold raised (what cudaMallocAsync/cudaFreeAsync call); the
 *     driver API needs no toolkit, so no libcudart is used;
 *  2. cost per granule of growth against raw cuMemCreate + cuMemMap (per
 *     granule) + cuMemSetAccess (per batch) of the same granules;
 *  3. system calls per warm allocation, counted with ptrace on the calling
 *     thread (PTRACE_SYSCALL entry stops between two marker syscalls);
 *  4. charge requests per GiB grown, counted through the kernel ops table.
 *
 * The GPU machine cannot load the nxquota module: figures 1-3 use an
 * unmanaged context, figure 4 a fake-kernel ops table that counts calls.
 * Prints "skipped: no GPU (reason)" and exits 0 without libcuda/a device.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "internal.h"
#include "cuda_api.h"

#define MARK_NR	 10000		/* an unused syscall number: ENOSYS, our marker */
#define WINDOW	 32
#define NSIZES	 4096

static const struct nxq_cuda *cu;
static size_t mix[NSIZES];
static CUstream st;

#define CU(call) do { CUresult _r = (call); if (_r) { \
	printf("FAIL %s: %s\n", #call, nxq__cuda_errname(_r)); exit(1); } } while (0)
#define NX(call) do { int _r = (call); if (_r < 0) { \
	printf("FAIL %s: %s\n", #call, nxq_errmsg()); exit(1); } } while (0)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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

/*
 * The size mix: 60% 256 B..64 KiB, 30% 64 KiB..2 MiB, 10% 2..32 MiB,
 * log-uniform inside each class (activations, workspaces, KV blocks).
 */
static void make_mix(void)
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

static struct nxq_arena *cuda_arena(struct nxq_ctx *c, uint64_t batch, uint64_t retain,
				    uint64_t pool)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA,
				    .grow_batch = batch, .retain_idle = retain,
				    .handle_pool = pool };
	struct nxq_arena *a;

	NX(nxq_arena_create(c, &o, &a));
	return a;
}

enum { M_NXQ, M_NXQ_ASYNC, M_CUMEM, M_CUMEM_ASYNC };

/* ops alloc+free pairs, a window of WINDOW live allocations. */
static void warm_loop(int m, struct nxq_arena *a, long ops)
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

typedef CUresult (*getpool_t)(void **, CUdevice);
typedef CUresult (*poolset_t)(void *, int, void *);

static void raise_pool_threshold(CUdevice dev)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	getpool_t gp = lib ? (getpool_t)dlsym(lib, "cuDeviceGetDefaultMemPool") : NULL;
	poolset_t ps = lib ? (poolset_t)dlsym(lib, "cuMemPoolSetAttribute") : NULL;
	unsigned long long thr = ~0ULL;
	void *pool;

	/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 */
	if (gp && ps && !gp(&pool, dev) && !ps(pool, 4, &thr))
		printf("  cuMemAllocAsync: default pool, release threshold raised to max\n");
	else
		printf("  cuMemAllocAsync: default pool, release threshold NOT raised\n");
}

static void setup_cuda(CUdevice *dev)
{
	CUcontext pctx;
	int err = 0;

	CU(cu->cuInit(0));
	CU(cu->cuDeviceGet(dev, 0));
	CU(cu->cuDevicePrimaryCtxRetain(&pctx, *dev));
	CU(cu->cuCtxSetCurrent(pctx));
	CU(cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	(void)err;
}

/* ---- 3. system calls per warm allocation (ptrace) ---- */

static void syscalls_child(void)
{
	struct nxq_ctx *c;
	struct nxq_arena *a;
	CUdevice dev;
	const long n = 20000;

	setup_cuda(&dev);
	raise_pool_threshold(dev);
	c = unmanaged();
	a = cuda_arena(c, 0, 1ULL << 34, 0);
	warm_loop(M_NXQ, a, n);			/* warm everything untraced */
	warm_loop(M_NXQ_ASYNC, a, n);
	CU(cu->cuStreamSynchronize(st));
	warm_loop(M_CUMEM_ASYNC, NULL, n);
	warm_loop(M_CUMEM, NULL, 200);
	CU(cu->cuStreamSynchronize(st));
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(3);
	raise(SIGSTOP);
	syscall(MARK_NR, 1);
	warm_loop(M_NXQ, a, n);
	syscall(MARK_NR, 2);
	warm_loop(M_NXQ_ASYNC, a, n);
	syscall(MARK_NR, 3);
	warm_loop(M_CUMEM_ASYNC, NULL, n);
	syscall(MARK_NR, 4);
	warm_loop(M_CUMEM, NULL, 200);
	syscall(MARK_NR, 5);
	_exit(0);
}

static void count_syscalls(void)
{
	long counts[8] = { 0 }, phase = 0;
	int status, entering = 1, sig = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		syscalls_child();
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		printf("  syscalls: not measured (child did not stop: ptrace unavailable?)\n");
		return;
	}
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, sig))
			break;
		sig = 0;
		if (waitpid(pid, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (entering) {
				struct user_regs_struct r;

				ptrace(PTRACE_GETREGS, pid, 0, &r);
				if (r.orig_rax == MARK_NR)
					phase = (long)r.rdi;
				else if (phase > 0 && phase < 8)
					counts[phase]++;
			}
			entering = !entering;
		} else {
			sig = WSTOPSIG(status);
			if (sig == SIGSTOP)
				sig = 0;
		}
	}
	if (phase != 5) {
		printf("  syscalls: not measured (tracing ended in phase %ld)\n", phase);
		return;
	}
	printf("  3. system calls per warm alloc+free pair (ptrace, calling thread, size mix):\n");
	printf("     nxq_alloc+nxq_free              %8.4f  (%ld in 20000 pairs)\n",
	       counts[1] / 20000.0, counts[1]);
	printf("     nxq_alloc+nxq_free_async        %8.4f  (%ld in 20000 pairs)\n",
	       counts[2] / 20000.0, counts[2]);
	printf("     cuMemAllocAsync+cuMemFreeAsync  %8.4f  (%ld in 20000 pairs)\n",
	       counts[3] / 20000.0, counts[3]);
	printf("     cuMemAlloc+cuMemFree            %8.4f  (%ld in 200 pairs)\n",
	       counts[4] / 200.0, counts[4]);
}

/* ---- 4. charge requests per GiB grown (counting fake kernel) ---- */

static uint64_t kc, kcb;
static int k_version(struct nxq_ctx *c, struct nxq_version *v)
{ v->abi_version = NXQ_ABI_VERSION; v->features = 0xf; return 0; }
static int k_reg(struct nxq_ctx *c, struct nxq_holder_reg *r) { r->holder_id = 1; return 0; }
static int k_unreg(struct nxq_ctx *c, uint64_t h) { return 0; }
static int k_charge(struct nxq_ctx *c, uint64_t h, uint64_t b) { kc++; kcb += b; return 0; }
static int k_uncharge(struct nxq_ctx *c, uint64_t h, uint64_t b) { return 0; }
static int k_recl(struct nxq_ctx *c, uint64_t h, uint64_t b) { return 0; }
static void k_close(struct nxq_ctx *c) { }
static const struct nxq_kops counting_kops = {
	"counting", k_version, k_reg, k_unreg, k_charge, k_uncharge, k_recl, k_close,
};

int main(int argc, char **argv)
{
	const int reps = 7;
	double v[4][16], t;
	long ops[4] = { 200000, 200000, 2000, 200000 };
	static const char *names[4] = { "nxq_alloc + nxq_free", "nxq_alloc + nxq_free_async",
					"cuMemAlloc + cuMemFree", "cuMemAllocAsync + cuMemFreeAsync" };
	struct nxq_ctx *c;
	struct nxq_arena *a;
	CUdevice dev;
	int err = 0, n = 0;
	uint64_t g;

	setvbuf(stdout, NULL, _IOLBF, 0);
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
	printf("nxquota GPU benchmark, device 0; medians of %d repetitions\n", reps);
	printf("contexts: unmanaged (no nxquota module on this machine) for 1-3; a fake-kernel "
	       "ops table counting calls for 4\n");
	printf("size mix: 60%% 256B-64KiB, 30%% 64KiB-2MiB, 10%% 2-32MiB (log-uniform), "
	       "%d live allocations\n", WINDOW);
	count_syscalls();

	setup_cuda(&dev);
	raise_pool_threshold(dev);
	c = unmanaged();
	a = cuda_arena(c, 0, 1ULL << 34, 0);
	g = 0;
	{
		struct nxq_stats s = { .size = sizeof(s) };

		nxq_arena_stats(a, &s);
		g = s.granule;
	}
	printf("  granule %llu bytes\n", (unsigned long long)g);

	/* 1. warm throughput */
	for (int m = 0; m < 4; m++) {
		warm_loop(m, a, ops[m] / 4 + 1000);	/* warm up: pools filled */
		CU(cu->cuStreamSynchronize(st));
		for (int r = 0; r < reps; r++) {
			t = now();
			warm_loop(m, a, ops[m]);
			v[m][r] = (now() - t) / (double)ops[m];
			CU(cu->cuStreamSynchronize(st));
		}
	}
	printf("  1. warm alloc+free pairs (host time per pair, median):\n");
	for (int m = 0; m < 4; m++) {
		double med = median(v[m], reps);

		printf("     %-36s %10.1f ns  %12.0f pairs/s\n", names[m], med * 1e9, 1.0 / med);
	}
	nxq_arena_destroy(a);

	/* 2. growth cost per granule */
	{
		const uint64_t total = 1ULL << 30;
		uint64_t ng;
		double vl[16], vr[16], vc[16];
		CUmemAllocationProp prop = { 0 };
		CUmemAccessDesc acc = { 0 };
		CUmemGenericAllocationHandle *h;
		CUdeviceptr base;
		struct nxq_ctx *fc;

		ng = total / g;
		a = cuda_arena(c, 64ULL << 20, NXQ_OPT_ZERO, NXQ_OPT_ZERO);
		for (int r = 0; r < reps + 1; r++) {
			void *p;

			t = now();
			NX(nxq_alloc(a, total, 0, &p));
			if (r)
				vl[r - 1] = (now() - t) / (double)ng;
			NX(nxq_free(a, p));	/* retention 0: all unmapped and released */
		}
		nxq_arena_destroy(a);
		if (nxq__ctx_open_kops(NULL, &counting_kops, NULL, &fc))
			return 1;
		a = cuda_arena(fc, 64ULL << 20, NXQ_OPT_ZERO, NXQ_OPT_ZERO);
		for (int r = 0; r < reps + 1; r++) {
			void *p;

			t = now();
			NX(nxq_alloc(a, total, 0, &p));
			if (r)
				vc[r - 1] = (now() - t) / (double)ng;
			NX(nxq_free(a, p));
		}
		nxq_arena_destroy(a);
		nxq_ctx_close(fc);
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = dev;
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		h = calloc(ng, sizeof(*h));
		CU(cu->cuMemAddressReserve(&base, total, g, 0, 0));
		for (int r = 0; r < reps + 1; r++) {
			uint64_t per = (64ULL << 20) / g;

			t = now();
			for (uint64_t i = 0; i < ng; i++) {
				CU(cu->cuMemCreate(&h[i], g, &prop, 0));
				CU(cu->cuMemMap(base + i * g, g, 0, h[i], 0));
				if ((i + 1) % per == 0)
					CU(cu->cuMemSetAccess(base + (i + 1 - per) * g, per * g, &acc, 1));
			}
			if (r)
				vr[r - 1] = (now() - t) / (double)ng;
			for (uint64_t i = 0; i < ng; i++) {
				CU(cu->cuMemUnmap(base + i * g, g));
				CU(cu->cuMemRelease(h[i]));
			}
		}
		CU(cu->cuMemAddressFree(base, total));
		free(h);
		printf("  2. growth cost per granule (1 GiB = %llu granules, batches of 64 MiB):\n",
		       (unsigned long long)ng);
		printf("     raw cuMemCreate+cuMemMap (+cuMemSetAccess per batch) %8.2f us\n",
		       median(vr, reps) * 1e6);
		printf("     nxq_alloc growth, unmanaged context                  %8.2f us\n",
		       median(vl, reps) * 1e6);
		printf("     nxq_alloc growth, counting fake kernel               %8.2f us\n",
		       median(vc, reps) * 1e6);
		printf("     (the real NXQ_IOC_CHARGE cost is not in these: no module here;\n"
		       "      it is paid once per 64 MiB batch, see 4.)\n");
	}

	/* 4. charge requests per GiB grown */
	{
		struct nxq_ctx *fc;
		struct nxq_stats s = { .size = sizeof(s) };
		void **ps = calloc(100000, sizeof(*ps));
		int np = 0;

		if (nxq__ctx_open_kops(NULL, &counting_kops, NULL, &fc))
			return 1;
		kc = kcb = 0;
		a = cuda_arena(fc, 0, 0, 0);	/* defaults: 32 MiB batches */
		for (int i = 0; np < 100000; i++) {
			NX(nxq_alloc(a, mix[i % NSIZES], 0, &ps[np++]));
			nxq_arena_stats(a, &s);
			if (s.mapped >= (8ULL << 30))
				break;
		}
		printf("  4. charge requests while growing to %.2f GiB with the size mix "
		       "(default grow_batch): %llu, %.1f per GiB (%llu granules: one request "
		       "per %.1f granules)\n", (double)s.mapped / (1 << 30),
		       (unsigned long long)kc, (double)kc / ((double)s.mapped / (1 << 30)),
		       (unsigned long long)(s.mapped / g), (double)(s.mapped / g) / (double)kc);
		for (int i = 0; i < np; i++)
			nxq_free(a, ps[i]);
		nxq_arena_destroy(a);
		nxq_ctx_close(fc);
		free(ps);
	}
	nxq_ctx_close(c);
	(void)argc; (void)argv;
	return 0;
}
