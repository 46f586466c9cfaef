// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The preload shim against the fake driver (drv/libcuda.so.1) and a fake
 * authority.  The shim is linked into this program and exported
 * (-rdynamic), so calling cuMemAlloc_v2 here is what an application bound
 * to libcuda gets under LD_PRELOAD, and the fake driver's calls to its own
 * exported entry points reach the wrappers too.
 *
 * Every intercepted entry point, directly, through cuGetProcAddress_v2
 * (and the v1 form) and through dlsym() on the driver's handle: charged
 * before the driver is called, uncharged after the free; a refusal is
 * CUDA_ERROR_OUT_OF_MEMORY with the driver not called and nothing
 * charged or remembered; entry points that call each other charge once;
 * no authority passes everything through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"
#include "preload.h"

#define MiB (1ULL << 20)
#define CHUNK (32 * MiB)	/* the fake pool's reservation step */

/* ---- a fake authority ---- */

#define KH 16
struct kh {
	int live, evfd;
	uint64_t id, charged;
	char dev[NXQ_DEVICE_KEY_MAX];
	int open;
	uint64_t gen, bytes;
};

static struct {
	uint64_t cap, charged;
	int regs, charges, uncharges, errors, answers, stale_next;
	int reg_err;			/* registration fails with this */
	uint64_t answered;
	uint64_t gen;
	struct kh h[KH];
} K;
static pthread_mutex_t kmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kcv = PTHREAD_COND_INITIALIZER;

static struct kh *kfind(uint64_t id)
{
	for (int i = 0; i < KH; i++)
		if (K.h[i].live && K.h[i].id == id)
			return &K.h[i];
	K.errors++;
	return NULL;
}

static int k_version(struct nxq_ctx *c, struct nxq_version *v)
{
	v->abi_version = NXQ_ABI_VERSION;
	v->features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_TICKETS;
	return 0;
}

static int k_reg(struct nxq_ctx *c, struct nxq_holder_reg *r)
{
	int ret = 0;

	pthread_mutex_lock(&kmu);
	if (K.reg_err) {
		ret = K.reg_err;
		goto out;
	}
	for (int i = 0; i < KH; i++)
		if (!K.h[i].live) {
			K.h[i] = (struct kh){ .live = 1, .evfd = r->eventfd,
					      .id = 1000 + (uint64_t)++K.regs };
			memcpy(K.h[i].dev, r->device, sizeof(K.h[i].dev));
			r->holder_id = K.h[i].id;
			goto out;
		}
	ret = -ENOSPC;
out:
	pthread_mutex_unlock(&kmu);
	return ret;
}

static int k_unreg(struct nxq_ctx *c, uint64_t id) { return 0; }

static int k_charge(struct nxq_ctx *c, uint64_t id, uint64_t b, uint64_t t)
{
	struct kh *h;
	int r = 0;

	pthread_mutex_lock(&kmu);
	h = kfind(id);
	if (!b || !h)
		K.errors++;
	if (K.cap && K.charged + b > K.cap) {
		r = -EDQUOT;
	} else if (h) {
		K.charges++;
		K.charged += b;
		h->charged += b;
	}
	pthread_mutex_unlock(&kmu);
	return r;
}

static int k_uncharge(struct nxq_ctx *c, uint64_t id, uint64_t b)
{
	struct kh *h;

	pthread_mutex_lock(&kmu);
	h = kfind(id);
	if (!h || !b || b > h->charged) {
		K.errors++;
	} else {
		K.uncharges++;
		K.charged -= b;
		h->charged -= b;
	}
	pthread_mutex_unlock(&kmu);
	return 0;
}

static int k_recl(struct nxq_ctx *c, uint64_t id, uint64_t b) { return 0; }

static int k_tread(struct nxq_ctx *c, uint64_t id, struct nxq_ticket *t)
{
	struct kh *h;
	int r = -EAGAIN;

	pthread_mutex_lock(&kmu);
	h = kfind(id);
	if (h && h->open) {
		memset(t, 0, sizeof(*t));
		t->holder_id = id;
		t->generation = h->gen;
		t->bytes = h->bytes;
		r = 0;
		if (K.stale_next) {	/* the ticket is raised right after the read */
			K.stale_next = 0;
			h->gen = ++K.gen;
		}
	}
	pthread_mutex_unlock(&kmu);
	return r;
}

static int k_tanswer(struct nxq_ctx *c, uint64_t id, uint64_t gen, uint64_t rel,
		     uint64_t *charged)
{
	struct kh *h;
	int r = 0;

	pthread_mutex_lock(&kmu);
	h = kfind(id);
	if (!h || !h->open || gen != h->gen) {
		r = -ESTALE;
	} else if (rel > h->charged) {
		K.errors++;
		r = -EINVAL;
	} else {
		h->open = 0;
		h->charged -= rel;
		K.charged -= rel;
		K.answers++;
		K.answered += rel;
		pthread_cond_broadcast(&kcv);
	}
	pthread_mutex_unlock(&kmu);
	return r;
}

static void k_close(struct nxq_ctx *c) { }

static const struct nxq_kops kops = {
	.name = "test", .version = k_version, .holder_register = k_reg,
	.holder_unregister = k_unreg, .charge = k_charge, .uncharge = k_uncharge,
	.set_reclaimable = k_recl, .ticket_read = k_tread, .ticket_answer = k_tanswer,
	.close = k_close,
};

static struct kh *kholder_of(const char *dev, int with_evfd)
{
	for (int i = 0; i < KH; i++)
		if (K.h[i].live && !strcmp(K.h[i].dev, dev) && (K.h[i].evfd >= 0) == with_evfd)
			return &K.h[i];
	return NULL;
}

/* ---- the fake driver's controls ---- */

static void *drv;
static long (*d_calls)(const char *);
static void (*d_fail)(const char *, long);
static void (*d_reset)(void);
static void (*d_setdev)(int);
static void *(*d_proc)(const char *, int, uint64_t);
static void (*d_pool)(CUmemoryPool, uint64_t *, uint64_t *);
static CUresult (*d_freeasync)(CUdeviceptr, CUstream);
static CUresult (*d_getpool)(CUmemoryPool *, CUdevice);
static void (*d_sync)(void);
static CUresult (*d_setattr)(CUmemoryPool, int, void *);

static const char DEV0[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";
static const char DEV1[] = "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f";

static int group_setup(void **st)
{
	drv = dlopen("libcuda.so.1", RTLD_NOW);
	if (!drv) {
		fprintf(stderr, "test_preload: %s (LD_LIBRARY_PATH=tests/preload/drv)\n",
			dlerror());
		return -1;
	}
	d_calls = (long (*)(const char *))dlsym(drv, "fakedrv_calls");
	d_fail = (void (*)(const char *, long))dlsym(drv, "fakedrv_fail");
	d_reset = (void (*)(void))dlsym(drv, "fakedrv_reset");
	d_setdev = (void (*)(int))dlsym(drv, "fakedrv_set_device");
	d_proc = (void *(*)(const char *, int, uint64_t))dlsym(drv, "fakedrv_proc");
	d_pool = (void (*)(CUmemoryPool, uint64_t *, uint64_t *))dlsym(drv, "fakedrv_pool");
	d_freeasync = (CUresult (*)(CUdeviceptr, CUstream))dlsym(drv, "cuMemFreeAsync");
	d_getpool = (CUresult (*)(CUmemoryPool *, CUdevice))dlsym(drv, "cuDeviceGetMemPool");
	d_sync = (void (*)(void))dlsym(drv, "fakedrv_sync");
	d_setattr = (CUresult (*)(CUmemoryPool, int, void *))dlsym(drv, "cuMemPoolSetAttribute");
	/* exact charges, so that the counts below say what each call did; test_batch turns it on */
	setenv("NXQ_PRELOAD_BATCH", "0", 1);
	return d_calls && d_fail && d_reset && d_setdev && d_proc && d_pool && d_freeasync &&
	       d_getpool && d_sync && d_setattr ? 0 : -1;
}

static int setup(void **st)
{
	nxqp__test_authority(&kops, NULL);	/* stops the shim's thread first */
	pthread_mutex_lock(&kmu);
	memset(&K, 0, sizeof(K));
	pthread_mutex_unlock(&kmu);
	d_reset();
	return 0;
}

static int teardown(void **st)
{
	nxqp__test_authority(&kops, NULL);
	assert_int_equal(K.errors, 0);
	return 0;
}

static struct nxqp_counters counters(void)
{
	struct nxqp_counters c;

	nxqp__test_counters(&c);
	return c;
}

/* ---- one allocation of each kind, through each path ---- */

enum kind { A_ALLOC, A_PITCH, A_MANAGED, A_CREATE, A_ASYNC, A_ASYNC_PTSZ, A_POOL,
	    A_POOL_PTSZ, NKIND };
enum path { P_DIRECT, P_GPA2, P_GPA1, P_DLSYM, NPATH };

static const char *const kname[NKIND] = {
	"cuMemAlloc", "cuMemAllocPitch", "cuMemAllocManaged", "cuMemCreate", "cuMemAllocAsync",
	"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync",
};
/* the driver's exported entry point each kind ends in (its call count) */
static const char *const kreal[NKIND] = {
	"cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemCreate",
	"cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
	"cuMemAllocFromPoolAsync_ptsz",
};
/* what each kind charges (pools: what they reserve for a 1 MiB block) */
static const uint64_t kbytes[NKIND] = {
	1 * MiB, 1024 * 100, 3 * MiB, 4 * MiB, CHUNK, CHUNK, CHUNK, CHUNK,
};

static int is_pool(enum kind k) { return k >= A_ASYNC; }

/* The entry point for name as path gives it; NULL on failure. */
static void *entry(enum path p, const char *name, uint64_t flags)
{
	void *fn = NULL;
	CUresult (*gpa2)(const char *, void **, int, uint64_t, int *);
	CUresult (*gpa1)(const char *, void **, int, uint64_t);
	int status = -1;

	switch (p) {
	case P_DIRECT:
		return NULL;	/* the caller calls the symbol */
	case P_GPA2:
		assert_int_equal(cuGetProcAddress_v2(name, &fn, 12000, flags, &status), 0);
		assert_int_equal(status, 0);
		return fn;
	case P_GPA1:
		assert_int_equal(cuGetProcAddress(name, &fn, 11080, flags), 0);
		return fn;
	case P_DLSYM:
		/* as the CUDA runtime does: cuGetProcAddress from its own handle */
		gpa2 = (CUresult (*)(const char *, void **, int, uint64_t, int *))
			dlsym(drv, "cuGetProcAddress_v2");
		assert_ptr_equal((void *)gpa2, (void *)cuGetProcAddress_v2);
		gpa1 = (CUresult (*)(const char *, void **, int, uint64_t))
			dlsym(drv, "cuGetProcAddress");
		assert_ptr_equal((void *)gpa1, (void *)cuGetProcAddress);
		assert_int_equal(gpa2(name, &fn, 12020, flags, NULL), 0);
		return fn;
	default:
		return NULL;
	}
}

static CUmemoryPool dev1_pool;

static CUresult do_alloc(enum kind k, enum path p, unsigned long long *key)
{
	uint64_t flags = (k == A_ASYNC_PTSZ || k == A_POOL_PTSZ) ? 2 : 0;
	void *fn = entry(p, kname[k], flags);
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 1 } };
	size_t pitch = 0;
	CUresult r;

	if (p != P_DIRECT) {
		/* the wrapper, not the driver's own code */
		assert_non_null(fn);
		assert_ptr_not_equal(fn, d_proc(kname[k], 12000, flags));
	}
	switch (k) {
	case A_ALLOC:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t))fn)(key, MiB)
			  : cuMemAlloc_v2(key, MiB);
	case A_PITCH:
		r = fn ? ((CUresult (*)(CUdeviceptr *, size_t *, size_t, size_t,
					unsigned int))fn)(key, &pitch, 1000, 100, 4)
		       : cuMemAllocPitch_v2(key, &pitch, 1000, 100, 4);
		if (!r)
			assert_int_equal(pitch, 1024);
		return r;
	case A_MANAGED:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t, unsigned int))fn)(key, 3 * MiB, 1)
			  : cuMemAllocManaged(key, 3 * MiB, 1);
	case A_CREATE:
		return fn ? ((CUresult (*)(CUmemGenericAllocationHandle *, size_t,
					   const CUmemAllocationProp *,
					   unsigned long long))fn)(key, 4 * MiB, &prop, 0)
			  : cuMemCreate(key, 4 * MiB, &prop, 0);
	case A_ASYNC:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t, CUstream))fn)(key, MiB, NULL)
			  : cuMemAllocAsync(key, MiB, NULL);
	case A_ASYNC_PTSZ:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t, CUstream))fn)(key, MiB, NULL)
			  : cuMemAllocAsync_ptsz(key, MiB, NULL);
	case A_POOL:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool,
					   CUstream))fn)(key, MiB, dev1_pool, NULL)
			  : cuMemAllocFromPoolAsync(key, MiB, dev1_pool, NULL);
	case A_POOL_PTSZ:
		return fn ? ((CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool,
					   CUstream))fn)(key, MiB, dev1_pool, NULL)
			  : cuMemAllocFromPoolAsync_ptsz(key, MiB, dev1_pool, NULL);
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUmemoryPool pool_of(enum kind k)
{
	CUmemoryPool p = NULL;

	if (k == A_POOL || k == A_POOL_PTSZ)
		return dev1_pool;
	assert_int_equal(d_getpool(&p, 0), 0);
	return p;
}

/* Free what do_alloc made; pools: the block back, a synchronisation, a trim to 0. */
static CUresult do_free(enum kind k, enum path p, unsigned long long key)
{
	void *fn;
	CUresult r;

	switch (k) {
	case A_ALLOC: case A_PITCH: case A_MANAGED:
		fn = entry(p, "cuMemFree", 0);
		return fn ? ((CUresult (*)(CUdeviceptr))fn)(key) : cuMemFree_v2(key);
	case A_CREATE:
		fn = entry(p, "cuMemRelease", 0);
		return fn ? ((CUresult (*)(CUmemGenericAllocationHandle))fn)(key)
			  : cuMemRelease(key);
	default:
		r = d_freeasync(key, NULL);
		if (r)
			return r;
		d_sync();
		fn = entry(p, "cuMemPoolTrimTo", 0);
		return fn ? ((CUresult (*)(CUmemoryPool, size_t))fn)(pool_of(k), 0)
			  : cuMemPoolTrimTo(pool_of(k), 0);
	}
}

static void make_dev1_pool(enum path p)
{
	nxqp_pool_props_head props[8] = { { .allocType = 1,
					    .location = { CU_MEM_LOCATION_TYPE_DEVICE, 1 } } };
	void *fn = entry(p, "cuMemPoolCreate", 0);

	assert_int_equal(fn ? ((CUresult (*)(CUmemoryPool *, const nxqp_pool_props_head *))fn)(
				     &dev1_pool, props)
			    : cuMemPoolCreate(&dev1_pool, props), 0);
}

static void destroy_dev1_pool(enum path p)
{
	void *fn = entry(p, "cuMemPoolDestroy", 0);

	assert_int_equal(fn ? ((CUresult (*)(CUmemoryPool))fn)(dev1_pool)
			    : cuMemPoolDestroy(dev1_pool), 0);
}

/* Each kind through path p: charge on allocation (before the driver), uncharge on free. */
static void each_kind(enum path p)
{
	make_dev1_pool(p);
	for (int k = 0; k < NKIND; k++) {
		long calls = d_calls(kreal[k]);
		struct nxqp_counters c0 = counters();
		unsigned long long key = 0;
		const char *dev = (k == A_CREATE || k == A_POOL || k == A_POOL_PTSZ) ? DEV1 : DEV0;
		struct kh *h;

		assert_int_equal(do_alloc((enum kind)k, p, &key), CUDA_SUCCESS);
		assert_int_equal(d_calls(kreal[k]), calls + 1);
		assert_int_equal(K.charged, kbytes[k]);
		h = kholder_of(dev, is_pool((enum kind)k));
		assert_non_null(h);
		assert_int_equal(h->charged, kbytes[k]);
		assert_int_equal(counters().tracked, c0.tracked + !is_pool((enum kind)k));
		assert_int_equal(do_free((enum kind)k, p, key), CUDA_SUCCESS);
		assert_int_equal(K.charged, 0);
		assert_int_equal(h->charged, 0);
		assert_int_equal(counters().tracked, c0.tracked);
	}
	/* a destroyed pool gives back what it still reserved */
	{
		unsigned long long key;

		assert_int_equal(do_alloc(A_POOL, p, &key), CUDA_SUCCESS);
		assert_int_equal(K.charged, CHUNK);
		assert_int_equal(d_freeasync(key, NULL), 0);
		destroy_dev1_pool(p);
		assert_int_equal(K.charged, 0);
	}
	/* plain holders have no eventfd, pool holders have one */
	assert_non_null(kholder_of(DEV0, 0));
	assert_non_null(kholder_of(DEV0, 1));
	assert_non_null(kholder_of(DEV1, 0));
	assert_non_null(kholder_of(DEV1, 1));
	assert_int_equal(K.regs, 4);
}

static void test_direct(void **st) { each_kind(P_DIRECT); }
static void test_getprocaddress_v2(void **st) { each_kind(P_GPA2); }
static void test_getprocaddress_v1(void **st) { each_kind(P_GPA1); }
static void test_dlsym_handle(void **st) { each_kind(P_DLSYM); }

/* Charged ahead in batches: small pairs ask the authority once; a refusal is still exact. */
static void ticket(int stale);

static void test_batch(void **st)
{
	unsigned long long p, q;
	uint64_t t0;

	setenv("NXQ_PRELOAD_BATCH", "2M", 1);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, 4096), 0);
		assert_int_equal(cuMemFree_v2(p), 0);
	}
	assert_int_equal(K.charges, 1);			/* 4096 + the batch, once */
	assert_int_equal(K.uncharges, 0);
	assert_int_equal(K.charged, 2 * MiB + 4096);	/* the credit */
	assert_int_equal(counters().trips, 1);
	/* a large one takes the credit, charges the rest and a batch; its free keeps it all */
	assert_int_equal(cuMemAlloc_v2(&p, 8 * MiB), 0);
	assert_int_equal(K.charged, 10 * MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 10 * MiB);		/* a batch + the last size */
	/* a warm loop of 64 MiB pairs: one trip to warm up, then none */
	t0 = counters().trips;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, 64 * MiB), 0);
		assert_int_equal(cuMemFree_v2(p), 0);
	}
	assert_int_equal(counters().trips, t0 + 1);
	assert_int_equal(K.charged, 66 * MiB);
	/* a small one after: the excess beyond a batch + its size goes back at its free */
	assert_int_equal(cuMemAlloc_v2(&p, 4096), 0);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 2 * MiB + 4096);
	/* at the cap: the batch is refused, the exact rest granted, then nothing more */
	K.cap = 3 * MiB;
	assert_int_equal(cuMemAlloc_v2(&p, 3 * MiB), 0);
	assert_int_equal(K.charged, 3 * MiB);
	assert_int_equal(cuMemAlloc_v2(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 3 * MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 3 * MiB);		/* a batch + the last size: kept */
	assert_int_equal(cuMemAlloc_v2(&p, 3 * MiB), 0);	/* from the credit alone */
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 3 * MiB);
	/* a ticket to the device's pool holder: the whole credit goes back too */
	K.cap = 0;
	assert_int_equal(cuMemAllocAsync(&q, MiB, NULL), 0);
	assert_int_equal(d_freeasync(q, NULL), 0);
	assert_int_equal(K.charged, 3 * MiB + CHUNK);
	ticket(0);
	assert_int_equal(K.answered, CHUNK);
	assert_int_equal(K.charged, 0);
	setenv("NXQ_PRELOAD_BATCH", "0", 1);
}

/*
 * Stream-ordered pairs of one size on one stream: the block freed is
 * reused at once, but the pool counts it used until a synchronisation;
 * the charge ahead of one allocation stays, so a warm loop asks nothing.
 */
static void test_pool_pairs(void **st)
{
	unsigned long long p;
	uint64_t t0, res, used;

	assert_int_equal(cuMemAllocAsync(&p, 64 * MiB, NULL), 0);
	assert_int_equal(d_freeasync(p, NULL), 0);
	t0 = counters().trips;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(cuMemAllocAsync(&p, 64 * MiB, NULL), 0);
		assert_int_equal(d_freeasync(p, NULL), 0);
	}
	assert_int_equal(counters().trips, t0 + 1);	/* the first charge ahead */
	d_pool(pool_of(A_ASYNC), &res, &used);
	assert_int_equal(res, 64 * MiB);
	assert_int_equal(K.charged, 128 * MiB);		/* at most one allocation above */
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);
	assert_int_equal(K.charged, 0);
}

/* A library that charges its own mappings gets the driver's entry points while exempt. */
static void test_exempt(void **st)
{
	void *fn = NULL, *gpa;

	nxquota_preload_exempt(1);
	gpa = dlsym(drv, "cuGetProcAddress_v2");
	assert_ptr_not_equal(gpa, (void *)cuGetProcAddress_v2);
	assert_int_equal(cuGetProcAddress_v2("cuMemCreate", &fn, 12000, 0, NULL), 0);
	assert_ptr_equal(fn, d_proc("cuMemCreate", 12000, 0));
	assert_ptr_not_equal(dlsym(drv, "cuMemAlloc_v2"), (void *)cuMemAlloc_v2);
	nxquota_preload_exempt(0);
	assert_ptr_equal(dlsym(drv, "cuGetProcAddress_v2"), (void *)cuGetProcAddress_v2);
	assert_int_equal(cuGetProcAddress_v2("cuMemCreate", &fn, 12000, 0, NULL), 0);
	assert_ptr_equal(fn, (void *)cuMemCreate);
	assert_int_equal(K.charges, 0);
}

/* A refused charge: CUDA_ERROR_OUT_OF_MEMORY, the driver not called, nothing changed. */
static void test_refused(void **st)
{
	for (int p = 0; p < NPATH; p++) {
		make_dev1_pool((enum path)p);
		for (int k = 0; k < NKIND; k++) {
			long calls = d_calls(kreal[k]);
			struct nxqp_counters c0 = counters();
			unsigned long long key = 0;
			uint64_t res, used;

			K.cap = kbytes[k] - 1;
			assert_int_equal(do_alloc((enum kind)k, (enum path)p, &key),
					 CUDA_ERROR_OUT_OF_MEMORY);
			if (!is_pool((enum kind)k))	/* a pool grows after its charge */
				assert_int_equal(d_calls(kreal[k]), calls);
			assert_int_equal(K.charged, 0);
			assert_int_equal(counters().tracked, c0.tracked);
			assert_int_equal(counters().refused, c0.refused + 1);
			d_pool(pool_of((enum kind)k), &res, &used);
			assert_int_equal(used, 0);	/* nothing left allocated */
			assert_int_equal(res, 0);
		}
		K.cap = 0;
		destroy_dev1_pool((enum path)p);
	}
}

/* The charge ahead of a pool growth is refused: the driver is not called. */
static void test_pool_refused_ahead(void **st)
{
	long calls = d_calls("cuMemAllocFromPoolAsync");
	unsigned long long key;

	K.cap = MiB;	/* below the 2 MiB charged ahead of a 1 MiB block */
	assert_int_equal(cuMemAllocAsync(&key, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(d_calls("cuMemAllocFromPoolAsync"), calls);
	assert_int_equal(K.charged, 0);
}

/* One entry point calling another charges once. */
static void test_nested(void **st)
{
	unsigned long long p, key;
	uint64_t res, used;
	size_t pitch;
	long inner = d_calls("cuMemAlloc_v2");

	/* pitch 1024 for width 1000: exactly what the shim charges ahead */
	assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4), 0);
	assert_int_equal(d_calls("cuMemAlloc_v2"), inner + 1);	/* the driver nested */
	assert_int_equal(K.charged, 1024 * 100);
	assert_int_equal(K.charges, 1);
	assert_int_equal(counters().tracked, 1);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);

	/* wider than the guess: charged ahead, then the rest: still pitch * height */
	assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 1100, 10, 4), 0);
	assert_int_equal(pitch, 2048);
	assert_int_equal(K.charged, 2048 * 10);
	assert_int_equal(counters().tracked, 1);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);

	/* cuMemAllocAsync -> cuMemAllocFromPoolAsync -> one reservation charged */
	inner = d_calls("cuMemAllocFromPoolAsync");
	assert_int_equal(cuMemAllocAsync_ptsz(&key, MiB, NULL), 0);
	assert_int_equal(d_calls("cuMemAllocFromPoolAsync"), inner + 1);
	d_pool(pool_of(A_ASYNC), &res, &used);
	assert_int_equal(res, CHUNK);
	assert_int_equal(K.charged, CHUNK);
	assert_int_equal(d_freeasync(key, NULL), 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);
	assert_int_equal(K.charged, 0);
}

/* The driver refuses: what was charged ahead is given back. */
static void test_driver_fails(void **st)
{
	unsigned long long p, h;
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };

	d_fail("cuMemAlloc_v2", 1);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	assert_int_equal(K.charges, 1);
	assert_int_equal(K.uncharges, 1);
	d_fail("cuMemCreate", 1);
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	d_fail("cuMemAllocFromPoolAsync", 1);
	assert_int_equal(cuMemAllocAsync(&p, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().tracked, 0);

	/* a free the driver refuses keeps the charge; the next one uncharges */
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	d_fail("cuMemFree_v2", 1);
	assert_int_equal(cuMemFree_v2(p), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);
	/* a pointer the shim never saw: nothing uncharged */
	assert_int_equal(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(K.uncharges, 4);	/* the failed pool growth settled down too */
}

/* Host locations and no current context: the driver decides, nothing charged. */
static void test_not_device_memory(void **st)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { 2 /* HOST */, 0 } };
	unsigned long long h, p;

	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(cuMemRelease(h), 0);
	d_setdev(-1);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 201 /* INVALID_CONTEXT */);
	assert_int_equal(K.charges, 0);
	d_setdev(0);
}

/* A device the authority does not know passes; one it refuses is refused. */
static void test_registration(void **st)
{
	unsigned long long p;
	long calls;

	K.reg_err = -ENOENT;
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(K.charges, 0);
	assert_int_equal(cuMemFree_v2(p), 0);

	setup(st);
	K.reg_err = -EACCES;
	calls = d_calls("cuMemAlloc_v2");
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls);
	assert_int_equal(counters().refused, 1);
}

/* No authority: everything passes through, said once on stderr. */
static void test_no_authority(void **st)
{
	char path[] = "/tmp/nxqp-stderr.XXXXXX", buf[4096];
	int fd = mkstemp(path), saved = dup(2), n = 0;
	unsigned long long p, key;
	long calls = d_calls("cuMemAlloc_v2");
	ssize_t len;

	assert_true(fd >= 0 && saved >= 0);
	unlink(path);	/* read through fd; nothing left behind if an assertion fails */
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);
	setenv("NXQUOTA_SOCKET", "", 1);	/* and no daemon either */
	nxqp__test_authority(NULL, NULL);	/* the library's own choice */
	dup2(fd, 2);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
		assert_int_equal(cuMemFree_v2(p), 0);
		assert_int_equal(cuMemAllocAsync(&key, MiB, NULL), 0);
		assert_int_equal(d_freeasync(key, NULL), 0);
	}
	dup2(saved, 2);
	close(saved);
	unsetenv("NXQ_DEV");
	unsetenv("NXQUOTA_SOCKET");
	assert_int_equal(nxqp__test_state(), -1);
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls + 3);
	assert_int_equal(counters().charges, 0);
	assert_int_equal(counters().tracked, 0);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	assert_true(len > 0);
	buf[len] = 0;
	for (char *s = buf; (s = strstr(s, "no nxquota authority")); s++)
		n++;
	assert_int_equal(n, 1);
	assert_non_null(strstr(buf, "not charged"));
}

/* Open a ticket on the pool holder of DEV0 and wait for an answer. */
static void ticket(int stale)
{
	struct timespec ts;
	uint64_t one = 1;
	struct kh *h;
	int n;

	pthread_mutex_lock(&kmu);
	n = K.answers;
	h = kholder_of(DEV0, 1);
	assert_non_null(h);
	h->open = 1;
	h->gen = ++K.gen;
	h->bytes = CHUNK;
	K.stale_next = stale;
	assert_int_equal(write(h->evfd, &one, sizeof(one)), sizeof(one));
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (K.answers == n && pthread_cond_timedwait(&kcv, &kmu, &ts) == 0)
		;
	pthread_mutex_unlock(&kmu);
	assert_int_equal(K.answers, n + 1);
}

/*
 * A ticket to the pool holder: the shim trims and answers with what it gave
 * back.  The pool is PyTorch's cudaMallocAsync backend's: release threshold
 * UINT64_MAX, blocks freed with cuMemFreeAsync and never synchronised by
 * the application, so a trim alone gives back nothing (the H200's share
 * failure); the ticket thread, which has no context of its own, must make
 * the frees complete first.
 */
static void test_ticket(void **st)
{
	unsigned long long key, key2;
	uint64_t res, used, inf = UINT64_MAX;

	assert_int_equal(d_setattr(pool_of(A_ASYNC), 4 /* RELEASE_THRESHOLD */, &inf), 0);
	assert_int_equal(cuMemAllocAsync(&key, MiB, NULL), 0);
	assert_int_equal(d_freeasync(key, NULL), 0);
	assert_int_equal(K.charged, CHUNK);		/* reserved, unused */
	d_pool(pool_of(A_ASYNC), &res, &used);
	assert_int_equal(used, MiB);			/* the free is not complete yet */
	ticket(0);
	assert_int_equal(K.answered, CHUNK);
	assert_int_equal(K.charged, 0);
	d_pool(pool_of(A_ASYNC), &res, &used);
	assert_int_equal(res, 0);
	assert_int_equal(counters().tickets, 1);

	/* in use: nothing to give back, the answer says 0 and the charge stays */
	assert_int_equal(cuMemAllocAsync(&key, MiB, NULL), 0);
	ticket(0);
	assert_int_equal(K.answered, CHUNK);
	assert_int_equal(K.charged, CHUNK);

	/* raised between read and answer: read again; the bytes uncharged once */
	assert_int_equal(cuMemAllocAsync(&key2, 40 * MiB, NULL), 0);
	assert_int_equal(K.charged, 2 * CHUNK);
	assert_int_equal(d_freeasync(key2, NULL), 0);
	ticket(1);
	assert_int_equal(K.charged, CHUNK);
	d_pool(pool_of(A_ASYNC), &res, &used);
	assert_int_equal(res, CHUNK);
	assert_int_equal(counters().tickets, 4);
	assert_int_equal(d_freeasync(key, NULL), 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);
	assert_int_equal(K.charged, 0);
}

/* A forked child charges through its own holders; the parent's stay as they were. */
/*
 * A process that sees one device: no driver call per allocation to find
 * it (cuCtxGetDevice); a warm stream-ordered pair whose pool is charged
 * one allocation above its reservation asks the pool once (its
 * reservation after the allocation), not what it uses before.  Two devices: the
 * current context's device is asked, and device 1's allocation is charged
 * to device 1.
 */
static void test_one_device(void **st)
{
	unsigned long long p;
	long c, a;

	setenv("FAKEDRV_NDEV", "1", 1);
	setup(st);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(cuMemFree_v2(p), 0);
	for (int i = 0; i < 2; i++) {	/* the second charges one allocation ahead */
		assert_int_equal(cuMemAllocAsync(&p, 64 * MiB, NULL), 0);
		assert_int_equal(d_freeasync(p, NULL), 0);
	}
	c = d_calls("cuCtxGetDevice");
	a = d_calls("cuMemPoolGetAttribute");
	for (int i = 0; i < 10; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
		assert_int_equal(cuMemFree_v2(p), 0);
		assert_int_equal(cuMemAllocAsync(&p, 64 * MiB, NULL), 0);
		assert_int_equal(d_freeasync(p, NULL), 0);
	}
	assert_int_equal(d_calls("cuCtxGetDevice"), c);
	assert_int_equal(d_calls("cuMemPoolGetAttribute"), a + 10);
	assert_non_null(kholder_of(DEV0, 0));
	assert_int_equal(kholder_of(DEV0, 0)->charged, 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);

	unsetenv("FAKEDRV_NDEV");
	setup(st);
	d_setdev(1);
	c = d_calls("cuCtxGetDevice");
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(d_calls("cuCtxGetDevice"), c + 1);
	assert_non_null(kholder_of(DEV1, 0));
	assert_int_equal(kholder_of(DEV1, 0)->charged, MiB);
	assert_null(kholder_of(DEV0, 0));
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);
	d_setdev(0);
}

static void test_fork(void **st)
{
	unsigned long long p;
	pid_t pid;
	int status;

	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(K.regs, 1);
	pid = fork();
	if (!pid) {
		unsigned long long q;
		int ok;

		ok = counters().tracked == 0 && nxqp__test_state() == 0;
		ok = ok && cuMemAlloc_v2(&q, 2 * MiB) == 0 && K.regs == 2 &&
		     counters().tracked == 1 && K.charged == 3 * MiB;
		ok = ok && cuMemFree_v2(q) == 0 && K.charged == MiB;
		_exit(ok ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);
}

/* Threads allocating and freeing at once: every byte comes back. */
static void *hammer(void *arg)
{
	for (int i = 0; i < 2000; i++) {
		unsigned long long p;

		if (cuMemAlloc_v2(&p, 4096 + (size_t)(i % 7) * 512) == 0)
			cuMemFree_v2(p);
	}
	return arg;
}

static void test_threads(void **st)
{
	pthread_t t[8];

	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(K.charged, 0);
	assert_int_equal(K.charges, K.uncharges);
	assert_int_equal(K.charges, 16000);
	assert_int_equal(counters().tracked, 0);
	assert_int_equal(K.regs, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_getprocaddress_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_getprocaddress_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dlsym_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exempt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_refused_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_device_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_registration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_authority, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ticket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_pairs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
