// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of the CUDA backend against the fake libcuda.so.1
 * (tests/fakecuda), loaded by the library's own dlopen() through
 * LD_LIBRARY_PATH: failures injected into the driver (granularity query,
 * the n-th cuMemCreate, cuMemMap, cuMemSetAccess) leave nothing behind;
 * driver calls made from a thread with no current context still work (the
 * arena makes its context current); device work queued on a held stream
 * is never unmapped under it; cuCtxSynchronize is never called under the
 * arena lock; stream-ordered frees are reused at once on their stream and
 * by other streams only after their event.  Skipped without the fake.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "internal.h"
#include "cuda_api.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static const struct nxq_cuda *cu;
static void (*f_fail)(const char *, long, int);
static void (*f_hold)(CUstream, int);
static long (*f_stat)(const char *);
static long (*f_calls)(const char *);
static void (*f_on_sync)(void (*)(void));
static void (*f_reset_faults)(void);
static CUcontext pctx;

static struct nxq_ctx *ctx;

static int load(void)
{
	void *lib;
	int err = 0;
	CUdevice d;

	cu = nxq__cuda_load(&err);
	if (!cu)
		return -1;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib || !dlsym(lib, "fakecuda_fail"))
		return -1;
	f_fail = (void (*)(const char *, long, int))dlsym(lib, "fakecuda_fail");
	f_hold = (void (*)(CUstream, int))dlsym(lib, "fakecuda_hold");
	f_stat = (long (*)(const char *))dlsym(lib, "fakecuda_stat");
	f_calls = (long (*)(const char *))dlsym(lib, "fakecuda_calls");
	f_on_sync = (void (*)(void (*)(void)))dlsym(lib, "fakecuda_on_sync");
	f_reset_faults = (void (*)(void))dlsym(lib, "fakecuda_reset_faults");
	if (cu->cuInit(0) || cu->cuDeviceGet(&d, 0) || cu->cuDevicePrimaryCtxRetain(&pctx, d))
		return -1;
	return 0;
}

static int setup(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };

	if (!cu)
		return 0;
	f_reset_faults();
	return nxq_ctx_open(&co, &ctx);
}

static int teardown(void **state)
{
	if (!cu)
		return 0;
	assert_int_equal(nxq_ctx_close(ctx), 0);
	/* nothing left in the driver by any test */
	assert_int_equal(f_stat("handles"), 0);
	assert_int_equal(f_stat("maps"), 0);
	assert_int_equal(f_stat("reservations"), 0);
	assert_int_equal(f_stat("retained"), 1);	/* this test's own reference */
	assert_int_equal(f_stat("faults"), 0);
	return 0;
}

static struct nxq_arena *mk(uint64_t retain, uint64_t pool)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_CUDA, .va_size = 4ULL << 30,
		.retain_idle = retain ? retain : NXQ_OPT_ZERO,
		.handle_pool = pool ? pool : NXQ_OPT_ZERO,
	};
	struct nxq_arena *a = NULL;

	if (!cu)
		skip();
	assert_int_equal(nxq_arena_create(ctx, &o, &a), 0);
	return a;
}

static void st(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	assert_int_equal(nxq_arena_stats(a, s), 0);
}

/* The granularity query failing is an error, never a guessed granule. */
static void test_granularity_failure(void **state)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA };
	struct nxq_arena *a = NULL;
	int r;

	if (!cu)
		skip();
	f_fail("cuMemGetAllocationGranularity", 1, CUDA_ERROR_INVALID_VALUE);
	r = nxq_arena_create(ctx, &o, &a);
	assert_int_equal(r, -EINVAL);
	assert_null(a);
	assert_non_null(strstr(nxq_errmsg(), "cuMemGetAllocationGranularity"));
	assert_int_equal(f_stat("retained"), 1);	/* the arena's reference dropped */
	/* the next query works: so does the arena */
	assert_int_equal(nxq_arena_create(ctx, &o, &a), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
}

/* A driver failure during growth undoes everything; the next growth works. */
static void fail_growth(const char *call)
{
	struct nxq_arena *a = mk(0, 0);
	struct nxq_stats s0, s;
	long h0, m0;
	void *p = NULL, *q = NULL;

	assert_int_equal(nxq_alloc(a, 1 * MiB, 0, &p), 0);
	st(a, &s0);
	h0 = f_stat("handles");
	m0 = f_stat("maps");
	/* every call fails, retries too; more than is mapped: the arena must grow */
	f_fail(call, 0, CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(nxq_alloc(a, s0.mapped + 8 * MiB, 0, &q), -ENOMEM);
	f_fail(call, -1, 0);
	assert_null(q);
	if (!strstr(nxq_errmsg(), call))
		fail_msg("message: %s", nxq_errmsg());
	st(a, &s);
	assert_int_equal(s.mapped, s0.mapped);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(f_stat("handles"), h0);
	assert_int_equal(f_stat("maps"), m0);
	assert_int_equal(nxq_alloc(a, s0.mapped + 8 * MiB, 0, &q), 0);
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
}

static void test_create_failure(void **state) { fail_growth("cuMemCreate"); }
static void test_map_failure(void **state) { fail_growth("cuMemMap"); }
static void test_access_failure(void **state) { fail_growth("cuMemSetAccess"); }

/*
 * Calls from a thread with no current context: the arena pushes its own
 * around every driver call that needs one (the fake refuses them without).
 */
struct thr_arg {
	struct nxq_arena *a;
	CUstream st;
	int r[4];
};

static void *no_ctx_thread(void *p)
{
	struct thr_arg *t = p;
	void *x = NULL;

	t->r[0] = nxq_alloc(t->a, 64 * MiB, 0, &x);		/* growth */
	t->r[1] = nxq_free_async(t->a, x, t->st);		/* an event on the stream */
	t->r[2] = (int)nxq_arena_trim(t->a, 0, NXQ_TRIM_WAIT);	/* wait, unmap, release */
	t->r[3] = nxq_arena_report(t->a);
	return NULL;
}

static void test_no_current_context(void **state)
{
	struct nxq_arena *a = mk(0, 0);
	struct thr_arg t = { .a = a };
	pthread_t th;
	struct nxq_stats s;

	assert_int_equal(cu->cuCtxPushCurrent(pctx), 0);
	assert_int_equal(cu->cuStreamCreate(&t.st, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(pthread_create(&th, NULL, no_ctx_thread, &t), 0);
	pthread_join(th, NULL);
	assert_int_equal(t.r[0], 0);
	assert_int_equal(t.r[1], 0);
	assert_true(t.r[2] >= 0);
	assert_int_equal(t.r[3], 0);
	st(a, &s);
	assert_int_equal(s.mapped, 0);
	assert_int_equal(s.pending, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(cu->cuStreamDestroy(t.st), 0);
	assert_int_equal(cu->cuCtxPopCurrent(NULL), 0);
}

/*
 * A synchronous free of memory that queued device work still writes: the
 * arena unmaps it only after that work (cuCtxSynchronize), never under it.
 */
static void test_sync_free_waits_for_device(void **state)
{
	struct nxq_arena *a = mk(0, 0);	/* retain nothing: free unmaps at once */
	CUstream s;
	void *p;

	assert_int_equal(cu->cuCtxPushCurrent(pctx), 0);
	assert_int_equal(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(nxq_alloc(a, 32 * MiB, 0, &p), 0);
	f_hold(s, 1);
	assert_int_equal(cu->cuMemsetD8Async((CUdeviceptr)p, 7, 32 * MiB, s), 0);
	assert_int_equal(f_stat("queued"), 1);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(f_stat("queued"), 0);		/* the work ran first */
	assert_int_equal(f_stat("faults"), 0);
	f_hold(s, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(cu->cuStreamDestroy(s), 0);
	assert_int_equal(cu->cuCtxPopCurrent(NULL), 0);
}

/*
 * cuCtxSynchronize waits for the whole device: the arena must not hold its
 * lock meanwhile.  The fake runs a hook after each cuCtxSynchronize, in the
 * thread that called it; the hook asks another thread for the arena's
 * statistics (which takes the arena lock) and waits at most a second.
 */
static struct nxq_arena *hook_arena;
static int hook_calls, hook_blocked;
static pthread_t hook_th[64];
static int hook_nth;

static void *stats_thread(void *p)
{
	struct nxq_stats s = { .size = sizeof(s) };

	nxq_arena_stats(p, &s);
	return NULL;
}

static void sync_hook(void)
{
	pthread_t th;
	struct timespec ts;

	hook_calls++;
	if (pthread_create(&th, NULL, stats_thread, hook_arena))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	if (pthread_timedjoin_np(th, NULL, &ts)) {
		hook_blocked++;		/* it gets the lock once the caller drops it */
		if (hook_nth < 64)
			hook_th[hook_nth++] = th;
	}
}

static void test_no_sync_under_lock(void **state)
{
	struct nxq_arena *a = mk(0, 0);
	void *p;

	hook_arena = a;
	hook_calls = hook_blocked = 0;
	f_on_sync(sync_hook);
	assert_int_equal(nxq_alloc(a, 16 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free(a, p), 0);		/* retention 0: unmaps */
	assert_int_equal(nxq_alloc(a, 16 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free(a, p), 0);
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);
	f_on_sync(NULL);
	while (hook_nth)
		pthread_join(hook_th[--hook_nth], NULL);
	assert_true(hook_calls >= 2);
	assert_int_equal(hook_blocked, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
}

/* Work still queued behind a stream-ordered free: trim waits for it. */
static void test_async_free_trim(void **state)
{
	struct nxq_arena *a = mk(0, 0);
	struct nxq_stats s;
	CUstream t;
	void *p, *q;

	assert_int_equal(cu->cuCtxPushCurrent(pctx), 0);
	assert_int_equal(cu->cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(nxq_alloc(a, 8 * MiB, 0, &p), 0);
	f_hold(t, 1);
	assert_int_equal(cu->cuMemsetD8Async((CUdeviceptr)p, 1, 8 * MiB, t), 0);
	assert_int_equal(nxq_free_async(a, p, t), 0);
	st(a, &s);
	assert_int_equal(s.pending, 8 * MiB);
	/* a trim without WAIT leaves it mapped */
	assert_true(nxq_arena_trim(a, 0, 0) >= 0);
	st(a, &s);
	assert_int_equal(s.pending, 8 * MiB);
	assert_int_equal(s.mapped, 8 * MiB);
	assert_int_equal(f_stat("faults"), 0);
	/* not handed to a synchronous allocation while the stream runs */
	assert_int_equal(nxq_alloc(a, 8 * MiB, 0, &q), 0);
	assert_ptr_not_equal(q, p);
	assert_int_equal(nxq_free(a, q), 0);	/* a plain free: trim quiesces */
	/* WAIT: the work runs, then the memory goes */
	assert_true(nxq_arena_trim(a, 0, NXQ_TRIM_WAIT) >= 0);
	st(a, &s);
	assert_int_equal(s.mapped, 0);
	assert_int_equal(f_stat("faults"), 0);
	f_hold(t, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(cu->cuStreamDestroy(t), 0);
	assert_int_equal(cu->cuCtxPopCurrent(NULL), 0);
}

/*
 * Handles per GiB grown, counted at the fake driver (cuMemCreate): an
 * arena grown in 16 MiB allocations from empty up to gibs GiB with
 * grow_batch batch (0: the default); per[i] the handles created while
 * the i-th GiB was mapped.  Every growth is one handle, mapped and made
 * accessible once.
 */
static void grow_counts(uint64_t batch, int gibs, long *per)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_CUDA, .va_size = 16 * GiB,
		.grow_batch = batch, .retain_idle = NXQ_OPT_ZERO, .handle_pool = NXQ_OPT_ZERO,
	};
	long c0 = f_calls("cuMemCreate"), m0 = f_calls("cuMemMap"), s0;
	long a0 = f_calls("cuMemSetAccess");
	uint64_t n = (uint64_t)gibs * 64;
	void **p = calloc(n, sizeof(*p));
	struct nxq_arena *a = NULL;
	struct nxq_stats s;
	int gib = 0;

	assert_non_null(p);
	assert_int_equal(nxq_arena_create(ctx, &o, &a), 0);
	s0 = c0;
	for (uint64_t i = 0; i < n; i++) {
		assert_int_equal(nxq_alloc(a, 16 * MiB, 0, &p[i]), 0);
		st(a, &s);
		while (gib < gibs && s.mapped >= (uint64_t)(gib + 1) * GiB) {
			per[gib++] = f_calls("cuMemCreate") - s0;
			s0 = f_calls("cuMemCreate");
		}
	}
	assert_int_equal(gib, gibs);
	assert_int_equal(f_calls("cuMemMap") - m0, f_calls("cuMemCreate") - c0);
	assert_int_equal(f_calls("cuMemSetAccess") - a0, f_calls("cuMemCreate") - c0);
	st(a, &s);
	assert_int_equal(s.grows, f_calls("cuMemCreate") - c0);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(nxq_free(a, p[i]), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	free(p);
}

/*
 * Handles grow with the arena: a quarter of what is mapped, up to
 * grow_batch; NXQ_GROW_MIN makes the first growth that large.  The
 * counts are exact (the policy is deterministic): a change that makes
 * handles stop growing (one size for all) or grow slower fails here.
 */
static void test_handles_per_gib(void **state)
{
	long per[6];

	if (!cu)
		skip();
	unsetenv("NXQ_GROW_MIN");
	/* default grow_batch (64 MiB): 16 MiB handles up to 128 MiB mapped,
	 * then 32, then 64 MiB ones: 8 + 4 + 4 + 8 in the first GiB, 16 in
	 * the second (64 MiB each) */
	grow_counts(0, 2, per);
	print_message("handles per GiB, grow_batch 64 MiB: %ld, %ld\n", per[0], per[1]);
	assert_int_equal(per[0], 24);
	assert_int_equal(per[1], 16);
	/* grow_batch 1 GiB: the same quarter-of-mapped ramp, then larger
	 * handles: by the sixth GiB at most two */
	grow_counts(GiB, 6, per);
	print_message("handles per GiB, grow_batch 1 GiB: %ld %ld %ld %ld %ld %ld\n",
		      per[0], per[1], per[2], per[3], per[4], per[5]);
	assert_true(per[0] <= 20);
	assert_true(per[1] <= 4);
	assert_true(per[5] <= 2);
	for (int i = 1; i < 6; i++)
		assert_true(per[i] <= per[i - 1]);
	/* NXQ_GROW_MIN=1G: one handle for the whole first GiB */
	setenv("NXQ_GROW_MIN", "1G", 1);
	grow_counts(GiB, 1, per);
	unsetenv("NXQ_GROW_MIN");
	print_message("handles per GiB, grow_batch 1 GiB, NXQ_GROW_MIN 1 GiB: %ld\n", per[0]);
	assert_int_equal(per[0], 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_granularity_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_current_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_free_waits_for_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_sync_under_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_free_trim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handles_per_gib, setup, teardown),
	};

	if (load()) {
		printf("skipped: the fake libcuda.so.1 is not what loads (set LD_LIBRARY_PATH "
		       "to tests/fakecuda): %s\n", nxq_errmsg());
		return 0;
	}
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests_name("libnxquota_cuda", tests, NULL, NULL);
}
