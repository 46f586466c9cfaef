// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The preload shim against the fake driver (tests/fakecuda) and a fake
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
	/* STATUS and the charge's refusal (version 1 unless no_v1) */
	int no_v1, statuses;
	char path[256];			/* the refusing node's path, as named */
	int enospc;			/* refuse with ENOSPC, at the device */
	uint32_t level;			/* the refusing node, levels up */
	uint64_t emax, min;		/* node_effective_max (0: the cap), the node's min */
	int limit0;			/* a refusal's limit is 0 (no guarantee), not the cap */
	uint32_t last_err;
	uint64_t last_bytes, last_limit, last_usage;
	uint64_t waits;			/* charges asked with a timeout */
	int version_err;		/* NXQ_IOC_VERSION fails with this: no authority */
	int no_probe;			/* no NXQ_FEAT_CHARGE_PROBE */
	int probes, denials;		/* probe charges; refusals counted */
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
	if (K.version_err)
		return K.version_err;
	v->abi_version = NXQ_ABI_VERSION;
	v->features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_TICKETS | NXQ_FEAT_STATUS |
		      (K.no_v1 ? 0 : NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_V1) |
		      (K.no_probe ? 0 : NXQ_FEAT_CHARGE_PROBE);
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

/*
 * A charge; a probe's refusal is neither counted nor recorded (as the
 * module).  A refusal says what refused into *why (as struct nxq_charge
 * version 1): the device (K.enospc), else the node K.level up, at its
 * guarantee when its limit is below K.emax, named K.path.
 */
static int k_charge_probe(uint64_t id, uint64_t b, uint64_t t, int probe,
			  struct nxq_refusal *why)
{
	struct kh *h;
	int r = 0;

	if (why)
		memset(why, 0, sizeof(*why));
	pthread_mutex_lock(&kmu);
	h = kfind(id);
	if (!b || !h)
		K.errors++;
	if (t)
		K.waits++;
	K.probes += probe;
	if (K.cap && K.charged + b > K.cap && probe) {
		r = K.enospc ? -ENOSPC : -EDQUOT;
	} else if (K.cap && K.charged + b > K.cap) {
		r = K.enospc ? -ENOSPC : -EDQUOT;
		K.denials++;
		K.last_err = (uint32_t)-r;
		K.last_bytes = b;
		K.last_limit = K.limit0 ? 0 : K.cap;
		K.last_usage = K.charged;
		if (why && !K.no_v1) {
			why->reason = K.enospc ? NXQ_REFUSED_CAPACITY :
				      K.emax && K.last_limit < K.emax ? NXQ_REFUSED_MIN :
				      NXQ_REFUSED_MAX;
			why->level = K.enospc ? NXQ_LEVEL_DEVICE : K.level;
			why->limit = K.last_limit;
			why->min = K.enospc ? 0 : K.min;
			why->usage = K.last_usage;
			if (!K.enospc)
				snprintf(why->path, sizeof(why->path), "%s", K.path);
		}
	} else if (h) {
		K.charges++;
		K.charged += b;
		h->charged += b;
	}
	pthread_mutex_unlock(&kmu);
	return r;
}

static int k_charge(struct nxq_ctx *c, uint64_t id, uint64_t b, uint64_t t,
		    struct nxq_refusal *why)
{
	return k_charge_probe(id, b, t, 0, why);
}

static int k_probe(struct nxq_ctx *c, uint64_t id, uint64_t b)
{
	return k_charge_probe(id, b, 0, 1, NULL);
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

/* One node under K.cap (unlimited without), its last refusal as k_charge() kept it. */
static int k_status(struct nxq_ctx *c, uint64_t id, struct nxq_status *st)
{
	uint64_t lim;
	int r = -ENOENT;

	pthread_mutex_lock(&kmu);
	K.statuses++;
	for (int i = 0; i < KH; i++)
		if (K.h[i].live && K.h[i].id == id) {
			lim = K.cap ? K.cap : NXQ_UNLIMITED;
			memset(st, 0, sizeof(*st));
			st->size = sizeof(*st);
			st->holder_id = id;
			st->holder_charge = K.h[i].charged;
			st->node_current = K.charged;
			st->device_capacity = lim;
			st->room = lim - K.charged;
			st->limit = lim;
			st->node_effective_max = K.emax ? K.emax : lim;
			st->last_error = K.last_err;
			st->last_level = K.enospc ? NXQ_LEVEL_DEVICE : K.level;
			st->last_bytes = K.last_bytes;
			st->last_limit = K.last_limit;
			st->last_min = K.min;
			st->last_usage = K.last_usage;
			r = 0;
		}
	pthread_mutex_unlock(&kmu);
	return r;
}

static const struct nxq_kops kops = {
	.name = "test", .version = k_version, .holder_register = k_reg,
	.holder_unregister = k_unreg, .charge = k_charge, .uncharge = k_uncharge,
	.set_reclaimable = k_recl, .ticket_read = k_tread, .ticket_answer = k_tanswer,
	.close = k_close, .status = k_status, .probe = k_probe,
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
static void (*d_fail)(const char *, long, int);
static void (*d_reset)(void);
static void (*d_setdev)(int);
static void (*d_setdevs)(int);
static void *(*d_proc)(const char *, int, uint64_t);
static void (*d_pool)(CUmemoryPool, uint64_t *, uint64_t *);
static CUresult (*d_freeasync)(CUdeviceptr, CUstream);
static CUresult (*d_getpool)(CUmemoryPool *, CUdevice);
static void (*d_sync)(void);
static CUresult (*d_setattr)(CUmemoryPool, int, void *);
static long (*d_stat)(const char *);
static void (*d_ctxmb)(uint64_t);
static void (*d_noise)(uint64_t);
static CUresult (*d_getstate)(CUdevice, unsigned int *, int *);
static CUresult (*d_stream)(CUstream *, unsigned int);
static CUdeviceptr vmm_va;	/* 64 MiB of address space reserved for mappings */
static void *nvml;
static int (*n_init)(void);
static int (*n_index)(unsigned int, void **);
static long (*n_calls)(const char *);
static void (*n_procs)(int);

static const char DEV0[] = "GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0";
static const char DEV1[] = "GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f1";

static int group_setup(void **st)
{
	CUresult (*init)(unsigned int);
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);

	drv = dlopen("libcuda.so.1", RTLD_NOW);
	if (!drv) {
		fprintf(stderr, "test_preload: %s (LD_LIBRARY_PATH=tests/fakecuda)\n", dlerror());
		return -1;
	}
	d_calls = (long (*)(const char *))dlsym(drv, "fakecuda_calls");
	d_fail = (void (*)(const char *, long, int))dlsym(drv, "fakecuda_fail");
	d_reset = (void (*)(void))dlsym(drv, "fakecuda_reset");
	d_setdev = (void (*)(int))dlsym(drv, "fakecuda_set_device");
	d_setdevs = (void (*)(int))dlsym(drv, "fakecuda_set_devices");
	d_proc = (void *(*)(const char *, int, uint64_t))dlsym(drv, "fakecuda_proc");
	d_pool = (void (*)(CUmemoryPool, uint64_t *, uint64_t *))dlsym(drv, "fakecuda_pool");
	d_freeasync = (CUresult (*)(CUdeviceptr, CUstream))dlsym(drv, "cuMemFreeAsync");
	d_getpool = (CUresult (*)(CUmemoryPool *, CUdevice))dlsym(drv, "cuDeviceGetMemPool");
	d_sync = (void (*)(void))dlsym(drv, "fakecuda_sync");
	d_setattr = (CUresult (*)(CUmemoryPool, int, void *))dlsym(drv, "cuMemPoolSetAttribute");
	d_stat = (long (*)(const char *))dlsym(drv, "fakecuda_stat");
	d_ctxmb = (void (*)(uint64_t))dlsym(drv, "fakecuda_ctx_mb");
	d_noise = (void (*)(uint64_t))dlsym(drv, "fakecuda_ctx_noise_mb");
	d_getstate = (CUresult (*)(CUdevice, unsigned int *, int *))dlsym(drv,
		"cuDevicePrimaryCtxGetState");
	d_stream = (CUresult (*)(CUstream *, unsigned int))dlsym(drv, "cuStreamCreate");
	init = (CUresult (*)(unsigned int))dlsym(drv, "cuInit");
	reserve = (CUresult (*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))
		dlsym(drv, "cuMemAddressReserve");
	/* as a program does first: the driver initialised, a device current; two devices */
	if (!init || !reserve || !d_setdevs || !d_setdev || init(0))
		return -1;
	d_setdevs(2);
	d_setdev(0);
	if (reserve(&vmm_va, 64 * MiB, 0, 0, 0))
		return -1;
	/* the fake NVML (tests/preload/nvml): its devices are the fake driver's */
	nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!nvml) {
		fprintf(stderr, "test_preload: %s (LD_LIBRARY_PATH=tests/preload/nvml)\n",
			dlerror());
		return -1;
	}
	n_init = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
	n_index = (int (*)(unsigned int, void **))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
	n_calls = (long (*)(const char *))dlsym(nvml, "fakenvml_calls");
	n_procs = (void (*)(int))dlsym(nvml, "fakenvml_procs");
	if (!n_init || !n_index || !n_calls || !n_procs || !d_noise || n_init())
		return -1;
	/* exact charges, so that the counts below say what each call did; test_batch turns it on */
	setenv("NXQ_PRELOAD_BATCH", "0", 1);
	return d_calls && d_fail && d_reset && d_proc && d_pool && d_freeasync && d_getpool &&
	       d_sync && d_setattr && d_stat && d_ctxmb && d_getstate && d_stream ? 0 : -1;
}

static int setup(void **st)
{
	unsetenv("NXQUOTA_REQUIRE");
	unsetenv("NXQUOTA_QUIET");
	unsetenv("NXQUOTA_CHARGE_CONTEXT");
	unsetenv("NXQUOTA_CONTEXT_MAX");
	n_procs(1);
	unsetenv("NXQ_PRELOAD_WAIT_MS");
	unsetenv("NXQ_PRELOAD");
	setenv("NXQUOTA_CONNECT_WAIT_MS", "0", 1);	/* the tests of the wait set it */
	nxqp__test_no_nvml(0);
	nxqp__test_gap(1000000000ULL);
	nxqp__test_authority(&kops, NULL);	/* stops the shim's thread first */
	pthread_mutex_lock(&kmu);
	memset(&K, 0, sizeof(K));
	pthread_mutex_unlock(&kmu);
	d_reset();
	return 0;
}

static int teardown(void **st)
{
	setenv("NXQ_PRELOAD_BATCH", "0", 1);	/* a failed test may have left it */
	d_setdevs(2);				/* and one device (test_one_device) */
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
			if (!p && !k) {	/* a limit of 1 MiB - 1: rounded down, never "1024.0 KiB" */
				const char *l = nxqp__test_last_said();

				assert_non_null(strstr(l, "refused an allocation of 1 MiB on "));
				assert_non_null(strstr(l, "limit 1023.9 KiB, min 0 B, in use 0 B;"));
			}
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

	d_fail("cuMemAlloc_v2", 1, 0);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	assert_int_equal(K.charges, 1);
	assert_int_equal(K.uncharges, 1);
	d_fail("cuMemCreate", 1, 0);
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	d_fail("cuMemAllocFromPoolAsync", 1, 0);
	assert_int_equal(cuMemAllocAsync(&p, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().tracked, 0);

	/* a free the driver refuses keeps the charge; the next one uncharges */
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	d_fail("cuMemFree_v2", 1, 0);
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
	assert_int_equal(nxqp__test_state(), -2);	/* down: looked for in the background */
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls + 3);
	assert_int_equal(counters().charges, 0);
	assert_int_equal(counters().tracked, 0);	/* remembered while held, forgotten once freed */
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

	d_setdevs(1);
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

	d_setdevs(2);
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
	d_setdev(0);	/* a thread of its own has no context */
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

/* ---- issue 20: the budget is what the application sees ---- */

#define GiB (1ULL << 30)

static void meminfo(uint64_t *fr, uint64_t *tot)
{
	size_t f = 0, t = 0;

	assert_int_equal(cuMemGetInfo_v2(&f, &t), 0);
	*fr = f;
	*tot = t;
}

/*
 * cuMemGetInfo under a budget: total its limit, free what the process
 * could be granted (room), both at most the driver's (8 GiB here); a
 * program that sizes itself as vLLM does (0.9 x total in one allocation)
 * gets it, within the budget; every way in (the symbol, cuGetProcAddress
 * by version, dlsym) is wrapped.  Unchanged without STATUS version 1 or
 * for a device not under nxquota.
 */
static void test_meminfo(void **st)
{
	CUresult (*v2)(size_t *, size_t *) = NULL;
	CUresult (*v1)(unsigned int *, unsigned int *) = NULL;
	unsigned long long p, q;
	unsigned int f1, t1;
	uint64_t fr, tot;
	size_t f, t;

	K.cap = 4 * GiB;
	meminfo(&fr, &tot);
	assert_int_equal(tot, 4 * GiB);
	assert_int_equal(fr, 4 * GiB);
	assert_int_equal(counters().clamped, 1);
	assert_int_equal(K.statuses, 1);
	/* sized as vLLM sizes itself: 0.9 x total, granted, within the budget */
	assert_int_equal(cuMemAlloc_v2(&p, (size_t)(tot / 10 * 9)), 0);
	assert_true(K.charged <= 4 * GiB);
	meminfo(&fr, &tot);
	assert_int_equal(tot, 4 * GiB);
	assert_int_equal(fr, 4 * GiB - tot / 10 * 9);
	/* ... and a second such program in the same budget is refused */
	assert_int_equal(cuMemAlloc_v2(&q, (size_t)(tot / 10 * 9)), CUDA_ERROR_OUT_OF_MEMORY);
	/* the driver's free memory bounds it too: 7 of its 8 GiB taken, uncharged */
	K.cap = 0;
	assert_int_equal(cuMemFree_v2(p), 0);
	K.reg_err = -ENOENT;			/* device 1: not under nxquota */
	d_setdev(1);
	assert_int_equal(cuMemAlloc_v2(&q, 7 * GiB), 0);
	d_setdev(0);
	K.reg_err = 0;
	K.cap = 4 * GiB;
	d_setdev(1);
	meminfo(&fr, &tot);			/* not under nxquota: the driver's */
	assert_int_equal(tot, 8 * GiB);
	assert_int_equal(fr, 1 * GiB);
	assert_int_equal(cuMemFree_v2(q), 0);
	d_setdev(0);

	/* cuGetProcAddress: _v2 from 3.2, the 32-bit one before; dlsym on the driver */
	assert_int_equal(cuGetProcAddress_v2("cuMemGetInfo", (void **)&v2, 12000, 0, NULL), 0);
	assert_ptr_equal((void *)v2, (void *)cuMemGetInfo_v2);
	assert_int_equal(cuGetProcAddress("cuMemGetInfo", (void **)&v1, 3010, 0), 0);
	assert_ptr_equal((void *)v1, (void *)cuMemGetInfo);
	assert_ptr_equal(dlsym(drv, "cuMemGetInfo_v2"), (void *)cuMemGetInfo_v2);
	assert_ptr_equal(dlsym(drv, "cuMemGetInfo"), (void *)cuMemGetInfo);
	K.cap = 1 * GiB;
	assert_int_equal(v2(&f, &t), 0);
	assert_int_equal(t, 1 * GiB);
	assert_int_equal(v1(&f1, &t1), 0);	/* the driver says 4 GiB - 1 */
	assert_int_equal(t1, 1 * GiB);
	assert_int_equal(f1, 1 * GiB);

	/* bytes charged ahead (the credit: NXQ_PRELOAD_BATCH) are the process's: free */
	setenv("NXQ_PRELOAD_BATCH", "2M", 1);
	setup(st);
	K.cap = 64 * MiB;
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 3 * MiB);		/* a batch + the last size, kept */
	meminfo(&fr, &tot);
	assert_int_equal(fr, 64 * MiB);
	assert_int_equal(tot, 64 * MiB);
	setenv("NXQ_PRELOAD_BATCH", "0", 1);

	/* an authority without STATUS version 1: the driver's numbers */
	setup(st);
	K.no_v1 = 1;
	K.cap = 1 * GiB;
	meminfo(&fr, &tot);
	assert_int_equal(tot, 8 * GiB);
	assert_int_equal(fr, 8 * GiB);
	assert_int_equal(counters().clamped, 0);
	assert_int_equal(K.statuses, 0);
}

/* NVML (the application's libnvidia-ml.so.1): the same budget, both versions. */
static void test_nvml(void **st)
{
	int (*info)(void *, nvmlMemory_t *) = (int (*)(void *, nvmlMemory_t *))
		dlsym(nvml, "nvmlDeviceGetMemoryInfo");
	int (*info2)(void *, nvmlMemory_v2_t *) = (int (*)(void *, nvmlMemory_v2_t *))
		dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2");
	nvmlMemory_v2_t m2 = { .version = NXQP_NVML_MEMORY_V2 };
	unsigned long long p;
	nvmlMemory_t m;
	void *h0, *h1;

	/* dlsym on NVML's handle gives the wrappers, as on libcuda's */
	assert_ptr_equal((void *)info, (void *)nvmlDeviceGetMemoryInfo);
	assert_ptr_equal((void *)info2, (void *)nvmlDeviceGetMemoryInfo_v2);
	assert_int_equal(n_index(0, &h0), 0);
	assert_int_equal(n_index(1, &h1), 0);
	K.cap = 4 * GiB;
	assert_int_equal(cuMemAlloc_v2(&p, GiB), 0);	/* CUDA in use in this process */
	assert_int_equal(info(h0, &m), 0);
	assert_int_equal(m.total, 4 * GiB);
	assert_int_equal(m.free, 3 * GiB);
	assert_int_equal(m.used, GiB);
	assert_int_equal(info2(h0, &m2), 0);
	assert_int_equal(m2.total, 4 * GiB);
	assert_int_equal(m2.free, 3 * GiB);
	assert_int_equal(m2.reserved + m2.used, GiB);
	/* device 1 is found by its UUID: its own holder and budget */
	K.cap = 3 * GiB;
	assert_int_equal(info(h1, &m), 0);
	assert_int_equal(m.total, 3 * GiB);
	assert_int_equal(m.free, 2 * GiB);		/* the cap is the device-wide fake's */
	assert_int_equal(counters().clamped, 3);
	assert_int_equal(cuMemFree_v2(p), 0);
	/* an authority without STATUS version 1: NVML's numbers */
	setup(st);
	K.no_v1 = 1;
	K.cap = GiB;
	assert_int_equal(cuMemAlloc_v2(&p, 1024), 0);
	assert_int_equal(info(h0, &m), 0);
	assert_int_equal(m.total, 8 * GiB);
	assert_int_equal(cuMemFree_v2(p), 0);
}

/*
 * cuDeviceTotalMem (what cudaGetDeviceProperties() puts in totalGlobalMem,
 * torch.cuda.get_device_properties().total_memory): under a budget its
 * limit, as cuMemGetInfo's total; of the device it is given, with or
 * without a current context; the driver's without a budget, for a device
 * not under nxquota, without STATUS version 1 or without an authority;
 * every way in (the symbol, cuGetProcAddress by version, dlsym).
 */
static void test_totalmem(void **st)
{
	CUresult (*v2)(size_t *, CUdevice) = NULL;
	CUresult (*v1)(unsigned int *, CUdevice) = NULL;
	long calls;
	unsigned int t1;
	size_t t;

	K.cap = 4 * GiB;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 4 * GiB);
	assert_int_equal(counters().clamped, 1);
	assert_int_equal(K.statuses, 1);
	/* no current context: the device given is the one asked */
	d_setdev(-1);
	K.cap = 3 * GiB;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 3 * GiB);
	d_setdev(0);
	/* device 1, not under nxquota, asked while device 0 is current: the driver's */
	K.reg_err = -ENOENT;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 1), 0);
	assert_int_equal(t, 8 * GiB);
	K.reg_err = 0;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 3 * GiB);
	/* no budget (no limit): the driver's */
	K.cap = 0;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 8 * GiB);
	/* the driver's error passes, nothing asked */
	calls = K.statuses;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 7), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(K.statuses, calls);

	/* cuGetProcAddress: _v2 from 3.2, the 32-bit one before; dlsym on the driver */
	assert_int_equal(cuGetProcAddress_v2("cuDeviceTotalMem", (void **)&v2, 12000, 0, NULL), 0);
	assert_ptr_equal((void *)v2, (void *)cuDeviceTotalMem_v2);
	assert_int_equal(cuGetProcAddress("cuDeviceTotalMem", (void **)&v2, 3020, 0), 0);
	assert_ptr_equal((void *)v2, (void *)cuDeviceTotalMem_v2);
	assert_int_equal(cuGetProcAddress("cuDeviceTotalMem", (void **)&v1, 3010, 0), 0);
	assert_ptr_equal((void *)v1, (void *)cuDeviceTotalMem);
	assert_ptr_equal(dlsym(drv, "cuDeviceTotalMem_v2"), (void *)cuDeviceTotalMem_v2);
	assert_ptr_equal(dlsym(drv, "cuDeviceTotalMem"), (void *)cuDeviceTotalMem);
	K.cap = 1 * GiB;
	calls = d_calls("cuDeviceTotalMem");
	assert_int_equal(v2(&t, 0), 0);
	assert_int_equal(t, 1 * GiB);
	assert_int_equal(v1(&t1, 0), 0);	/* the driver says 4 GiB - 1 */
	assert_int_equal(t1, 1 * GiB);
	assert_int_equal(d_calls("cuDeviceTotalMem"), calls + 1);

	/* an authority without STATUS version 1: the driver's numbers */
	setup(st);
	K.no_v1 = 1;
	K.cap = 1 * GiB;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 8 * GiB);
	assert_int_equal(counters().clamped, 0);
	/* no authority (a process not under nxquota): the driver's */
	setup(st);
	K.version_err = -ECONNREFUSED;
	K.cap = 1 * GiB;
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);
	assert_int_equal(t, 8 * GiB);
	assert_int_equal(nxqp__test_state(), -2);
}

/* stderr of the calls in between, read back (the caller checks it) */
static int err_fd = -1, err_saved = -1;

static void err_begin(void)
{
	char path[] = "/tmp/nxqp-stderr.XXXXXX";

	fflush(stderr);
	err_fd = mkstemp(path);
	err_saved = dup(2);
	assert_true(err_fd >= 0 && err_saved >= 0);
	unlink(path);
	dup2(err_fd, 2);
}

static char *err_end(void)
{
	static char buf[8192];
	ssize_t n;

	fflush(stderr);
	dup2(err_saved, 2);
	close(err_saved);
	n = pread(err_fd, buf, sizeof(buf) - 1, 0);
	close(err_fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Wait up to ms for what err_begin() captures to hold needle (a line another thread says). */
static void err_wait(const char *needle, int ms)
{
	static char buf[8192];
	ssize_t n = 0;

	for (int i = 0; i < ms; i++) {
		fflush(stderr);
		n = pread(err_fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		if (strstr(buf, needle))
			return;
		usleep(1000);
	}
}

/* This process's cgroup, as /proc/self/cgroup says it. */
static void my_cgroup(char *cg, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[200];

	snprintf(cg, n, "?");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(cg, n, "%s", line + 3);
		}
	if (f)
		fclose(f);
}

/*
 * A refusal says why, once per device per second: the device, the
 * process's cgroup, the node that refused (levels up), its limit, min
 * and usage, and what would help; NXQUOTA_QUIET silences it.
 */
/*
 * A refused allocation is one denial: the batch the shim asks on top is a
 * probe, which the authority does not count (or report, or ask for); the
 * exact charge after it is the denial.  Without CHARGE_PROBE (an older
 * authority) the batch's refusal counts too.
 */
static void test_probe(void **st)
{
	unsigned long long p, q;

	setenv("NXQ_PRELOAD_BATCH", "2M", 1);
	K.cap = 16 * MiB;
	assert_int_equal(cuMemAlloc_v2(&p, 12 * MiB), 0);	/* 12M + the batch */
	assert_int_equal(K.probes, 1);
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.probes, 2);
	assert_int_equal(K.denials, 1);
	assert_int_equal(K.last_bytes, 6 * MiB);	/* 8M less the 2M of credit */
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 12 * MiB + 2 * MiB);	/* a batch + the last size */

	nxqp__test_authority(&kops, NULL);
	pthread_mutex_lock(&kmu);
	memset(&K, 0, sizeof(K));
	K.no_probe = 1;
	K.cap = 16 * MiB;
	pthread_mutex_unlock(&kmu);
	assert_int_equal(cuMemAlloc_v2(&p, 12 * MiB), 0);
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.probes, 0);
	assert_int_equal(K.denials, 2);
	assert_int_equal(cuMemFree_v2(p), 0);
	setenv("NXQ_PRELOAD_BATCH", "0", 1);
	(void)st;
}

static void test_refusal_said(void **st)
{
	char cg[256], want[1400];
	const char *parent = "/pod-a";	/* what the authority names */
	unsigned long long p, q;
	const char *line;
	char *out;
	int statuses;

	my_cgroup(cg, sizeof(cg));
	/* at the parent's max, a holder that cannot give back: raise max and min */
	K.cap = 16 * MiB;
	K.level = 1;
	K.min = 8 * MiB;
	snprintf(K.path, sizeof(K.path), "%s", parent);
	err_begin();
	assert_int_equal(cuMemAlloc_v2(&p, 12 * MiB), 0);
	statuses = K.statuses;
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	/* one round trip: the refusal came with its node; no STATUS after it */
	assert_int_equal(K.statuses, statuses);
	assert_int_equal(cuMemAlloc_v2(&q, 6 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	out = err_end();
	assert_int_equal(counters().said, 1);		/* the second within the second: counted */
	assert_int_equal(count(out, "refused an allocation"), 1);
	line = nxqp__test_last_said();
	snprintf(want, sizeof(want), "refused an allocation of 8 MiB on %s for cgroup %s: ", DEV0,
		 cg);
	assert_non_null(strstr(line, want));
	snprintf(want, sizeof(want), "%s (1 level up) is at its limit: limit 16 MiB, min 8 MiB, "
		 "in use 12 MiB; raise the max of %s (and its min", parent, parent);
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(out, line));

	/* a gap later (1 s; 50 ms here): said again, with what was not said */
	nxqp__test_gap(50000000ULL);
	usleep(60000);
	K.level = 0;
	K.emax = 64 * MiB;	/* the limit met is below the node's max: its guarantee */
	snprintf(K.path, sizeof(K.path), "%s", cg);
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(counters().said, 2);
	line = nxqp__test_last_said();
	snprintf(want, sizeof(want), "%s (0 levels up) is at its guarantee: limit 16 MiB", cg);
	assert_non_null(strstr(line, want));
	snprintf(want, sizeof(want), "cannot give memory back, so it may charge only within its "
		 "guarantee: raise the min of %s or use a runtime that answers tickets", cg);
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(line, "(and 1 more refused since the last line)"));

	/*
	 * A node the authority does not name (above this process's cgroup
	 * namespace's root): its level, and nothing made up from
	 * /proc/self/cgroup.
	 */
	usleep(60000);
	K.level = 2;
	K.emax = 0;
	K.path[0] = 0;
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	line = nxqp__test_last_said();
	assert_non_null(strstr(line, "the cgroup 2 levels up (not named: outside this cgroup "
			       "namespace) (2 levels up) is at its limit: limit 16 MiB"));
	assert_int_equal(cuMemFree_v2(p), 0);

	/* the device full; a waiting charge refused at once says waiting cannot help */
	setenv("NXQ_PRELOAD_WAIT_MS", "2000", 1);
	setup(st);
	setenv("NXQ_PRELOAD_WAIT_MS", "2000", 1);
	K.cap = 16 * MiB;
	K.enospc = 1;
	assert_int_equal(cuMemAlloc_v2(&q, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.waits, 1);
	line = nxqp__test_last_said();
	assert_non_null(strstr(line, "at once, although it may wait 2000 ms (NXQ_PRELOAD_WAIT_MS)"));
	assert_non_null(strstr(line, "the GPU is full (capacity 16 MiB, charged 0 B)"));
	unsetenv("NXQ_PRELOAD_WAIT_MS");

	/* the credit (NXQ_PRELOAD_BATCH) covers part of it: said */
	setenv("NXQ_PRELOAD_BATCH", "2M", 1);
	setup(st);
	K.cap = 4 * MiB;
	assert_int_equal(cuMemAlloc_v2(&q, MiB), 0);
	assert_int_equal(cuMemFree_v2(q), 0);		/* 3 MiB kept as credit */
	assert_int_equal(cuMemAlloc_v2(&q, 8 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_non_null(strstr(nxqp__test_last_said(),
			       "refused an allocation of 8 MiB (5 MiB of it to charge) on"));
	setenv("NXQ_PRELOAD_BATCH", "0", 1);

	/* an authority without the charge's version 1: said all the same, without the node */
	setup(st);
	K.no_v1 = 1;
	K.cap = MiB;
	assert_int_equal(cuMemAlloc_v2(&q, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_non_null(strstr(nxqp__test_last_said(), "no NXQ_FEAT_CHARGE_V1"));

	/* NXQUOTA_QUIET: nothing */
	setenv("NXQUOTA_QUIET", "1", 1);
	setup(st);
	setenv("NXQUOTA_QUIET", "1", 1);
	K.cap = MiB;
	err_begin();
	assert_int_equal(cuMemAlloc_v2(&q, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	out = err_end();
	assert_int_equal(counters().said, 0);
	assert_null(strstr(out, "refused"));
	unsetenv("NXQUOTA_QUIET");
}

/*
 * A container given only a max (issue 28): a holder that cannot give back
 * has no guarantee, so it gets nothing, and the line names the missing
 * min -- not "no budget", which sent operators looking for a max that was
 * there.  Without the fix: "nothing may be charged there (no budget: ...".
 */
static void test_refusal_no_min(void **st)
{
	char cg[256], want[1400];
	unsigned long long p;
	const char *line;
	char *out;

	my_cgroup(cg, sizeof(cg));
	snprintf(K.path, sizeof(K.path), "%s", cg);
	K.cap = MiB;
	K.limit0 = 1;		/* limit 0: the node's effective min */
	K.min = 0;		/* no min of its own, none above */
	K.emax = 4096 * MiB;	/* its max: 4Gi */
	K.level = 0;
	err_begin();
	assert_int_equal(cuMemAlloc_v2(&p, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	out = err_end();
	line = nxqp__test_last_said();
	snprintf(want, sizeof(want), "%s (0 levels up) is at its guarantee: limit 0 B, min 0 B", cg);
	assert_non_null(strstr(line, want));
	/* the missing min first: a line cut short still names it */
	snprintf(want, sizeof(want), "in use 0 B; no min is set there or above it: set one "
		 "(annotation nxquota.io/min=SIZE beside nxquota.io/max, "
		 "NVIDIA_GPU_MEMORY_REQUEST, or nxquotactl set %s %s min=SIZE); a max alone "
		 "gives nothing to this process", cg, DEV0);
	assert_non_null(strstr(line, want));
	assert_null(strstr(line, "no budget"));
	assert_non_null(strstr(out, line));	/* said whole on stderr */
	(void)st;
}

/*
 * VMM: a handle's memory lives until it is released and its last mapping
 * is unmapped (the driver's rule): CUDA's VMM samples create, map,
 * release, use, then unmap.  The ordinary order, two mappings of one
 * handle, one unmap over two handles, an unmap the driver refuses.
 */
static void test_vmm(void **st)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			unsigned long long) = NULL;
	CUresult (*unmap)(CUdeviceptr, size_t) = NULL;
	unsigned long long h, h2;
	const CUdeviceptr va = vmm_va;

	/* the samples' order: create, map, release, (use), unmap */
	assert_int_equal(cuMemCreate(&h, 4 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemMap(va, 4 * MiB, 0, h, 0), 0);
	assert_int_equal(cuMemRelease(h), 0);
	assert_int_equal(K.charged, 4 * MiB);		/* mapped: the memory lives */
	assert_int_equal(d_stat("used"), 4 * MiB);
	assert_int_equal(cuMemUnmap(va, 4 * MiB), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(d_stat("used"), 0);
	assert_int_equal(counters().tracked, 0);

	/* the ordinary order: create, map, unmap, release */
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemMap(va, 2 * MiB, 0, h, 0), 0);
	assert_int_equal(cuMemUnmap(va, 2 * MiB), 0);
	assert_int_equal(K.charged, 2 * MiB);		/* not released */
	assert_int_equal(cuMemRelease(h), 0);
	assert_int_equal(K.charged, 0);

	/* one handle mapped twice (through cuGetProcAddress): the last unmap frees */
	assert_int_equal(cuGetProcAddress_v2("cuMemMap", (void **)&map, 12000, 0, NULL), 0);
	assert_int_equal(cuGetProcAddress_v2("cuMemUnmap", (void **)&unmap, 12000, 0, NULL), 0);
	assert_ptr_equal((void *)map, (void *)cuMemMap);
	assert_ptr_equal((void *)unmap, (void *)cuMemUnmap);
	assert_int_equal(cuMemCreate(&h, 4 * MiB, &prop, 0), 0);
	assert_int_equal(map(va, 2 * MiB, 0, h, 0), 0);
	assert_int_equal(map(va + 16 * MiB, 4 * MiB, 0, h, 0), 0);
	assert_int_equal(cuMemRelease(h), 0);
	assert_int_equal(unmap(va + 16 * MiB, 4 * MiB), 0);
	assert_int_equal(K.charged, 4 * MiB);
	/* the driver refuses an unmap: still mapped, still charged */
	d_fail("cuMemUnmap", 1, 0);
	assert_int_equal(unmap(va, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(K.charged, 4 * MiB);
	assert_int_equal(unmap(va, 2 * MiB), 0);
	assert_int_equal(K.charged, 0);

	/* one unmap over two handles' mappings, both released */
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemCreate(&h2, 4 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemMap(va, 2 * MiB, 0, h, 0), 0);
	assert_int_equal(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h2, 0), 0);
	assert_int_equal(cuMemRelease(h), 0);
	assert_int_equal(cuMemRelease(h2), 0);
	assert_int_equal(K.charged, 6 * MiB);
	assert_int_equal(cuMemUnmap(va, 6 * MiB), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(d_stat("used"), 0);
	assert_int_equal(d_stat("maps"), 0);
	assert_int_equal(counters().tracked, 0);

	/* a handle the shim did not charge (a host location) is not followed */
	prop.location.type = 2;
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemMap(va, 2 * MiB, 0, h, 0), 0);
	assert_int_equal(counters().tracked, 0);
	assert_int_equal(cuMemRelease(h), 0);
	assert_int_equal(cuMemUnmap(va, 2 * MiB), 0);
	assert_int_equal(K.charges, 5);
	assert_int_equal(K.uncharges, 5);
}

/* one regression program per shim defect (its header says what broke) */
#include "regress/map_track_leak.c"
#include "regress/pool_stream_device.c"

static int prim_active(int d)
{
	unsigned int fl;
	int a = -1;

	assert_int_equal(d_getstate(d, &fl, &a), 0);
	return a;
}

/*
 * A context's memory (8 MiB a context here), measured on the device
 * (NVML's free memory before and after it comes up) and charged to a
 * holder of its own: the primary context at the retain that brings it up,
 * given back at the release that takes it down; a cuCtxCreate'd one until
 * cuCtxDestroy; refused: the creation fails, the context is gone again.
 */
static void test_context(void **st)
{
	CUresult (*create)(CUcontext *, void *, unsigned int, CUdevice) = NULL;
	unsigned long long p;
	CUcontext c, c2;
	long nvml_calls;

	d_ctxmb(8);
	assert_int_equal(prim_active(0), 0);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_int_equal(counters().ctx_bytes, 8 * MiB);
	assert_int_equal(K.regs, 1);			/* the context's holder */
	nvml_calls = n_calls("nvmlDeviceGetMemoryInfo");
	assert_int_equal(cuDevicePrimaryCtxRetain(&c2, 0), 0);	/* up already: not measured */
	assert_int_equal(n_calls("nvmlDeviceGetMemoryInfo"), nvml_calls);
	assert_int_equal(K.charged, 8 * MiB);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(K.regs, 2);			/* and the plain one */
	assert_int_equal(K.charged, 9 * MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 8 * MiB);		/* still retained once */
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().ctx_bytes, 0);

	/* a context of its own, through cuGetProcAddress as of CUDA 12.5 (_v4) */
	assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", (void **)&create, 12050, 0, NULL), 0);
	assert_ptr_equal((void *)create, (void *)cuCtxCreate_v4);
	assert_int_equal(create(&c, NULL, 0, 1), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_non_null(kholder_of(DEV1, 0));
	assert_int_equal(cuCtxCreate_v2(&c2, 0, 1), 0);
	assert_int_equal(K.charged, 16 * MiB);
	assert_int_equal(cuCtxDestroy_v2(c), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_int_equal(cuCtxDestroy_v2(c2), 0);
	assert_int_equal(K.charged, 0);

	/* refused: the retain fails, the context went down again */
	K.cap = 4 * MiB;
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(prim_active(0), 0);
	assert_int_equal(d_stat("used"), 0);
	assert_non_null(strstr(nxqp__test_last_said(), "refused a CUDA context of 8 MiB"));
	assert_int_equal(cuCtxCreate_v2(&c, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
	assert_null(c);
	assert_int_equal(d_stat("used"), 0);
	assert_int_equal(K.charged, 0);
	K.cap = 0;

	/* no NVML: the driver measures a context created while one is up */
	nxqp__test_no_nvml(1);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);	/* nothing to measure with */
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().ctx_unmeasured, 1);
	assert_int_equal(cuCtxCreate_v2(&c2, 0, 0), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_int_equal(cuCtxDestroy_v2(c2), 0);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 0);
	nxqp__test_no_nvml(0);

	/* NXQUOTA_CHARGE_CONTEXT=0: not charged */
	setenv("NXQUOTA_CHARGE_CONTEXT", "0", 1);
	setup(st);
	setenv("NXQUOTA_CHARGE_CONTEXT", "0", 1);
	d_ctxmb(8);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	unsetenv("NXQUOTA_CHARGE_CONTEXT");
}

/*
 * Neighbours fill the device while this process's context comes up (as
 * three PyTorch processes starting together on the H200 did: one was
 * charged 4.7 GB more for its context): the charge is the process's own
 * growth by NVML's list of processes; without that list (a pid
 * namespace), the device's free memory before less after, bounded by
 * NXQUOTA_CONTEXT_MAX.
 */
static void test_context_neighbours(void **st)
{
	CUcontext c;
	char *out;

	d_ctxmb(8);
	d_noise(100);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_true(n_calls("nvmlDeviceGetComputeRunningProcesses_v3") >= 2);
	assert_int_equal(cuCtxCreate_v2(&c, 0, 1), 0);	/* a context of its own too */
	assert_int_equal(K.charged, 16 * MiB);
	assert_int_equal(cuCtxDestroy_v2(c), 0);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 0);

	/* no per-process figures: the neighbour's 100 MiB are charged too */
	n_procs(0);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(K.charged, 108 * MiB);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(counters().ctx_bounded, 0);
	/* ... but no more than NXQUOTA_CONTEXT_MAX (1 GiB), said in the sizes refusals use */
	d_noise(2048);
	err_begin();
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	out = err_end();
	assert_int_equal(K.charged, 1024 * MiB);
	assert_int_equal(counters().ctx_bounded, 1);
	assert_non_null(strstr(out, "measured 2.0 GiB by the device's free memory"));	/* 2056 MiB */
	assert_non_null(strstr(out, ": 1 GiB charged (NXQUOTA_CONTEXT_MAX)"));
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 0);
	/* NXQUOTA_CONTEXT_MAX=64M */
	d_noise(0);
	setenv("NXQUOTA_CONTEXT_MAX", "64M", 1);
	setup(st);
	setenv("NXQUOTA_CONTEXT_MAX", "64M", 1);
	n_procs(0);
	d_ctxmb(8);
	d_noise(100);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(K.charged, 64 * MiB);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	unsetenv("NXQUOTA_CONTEXT_MAX");
	n_procs(1);
}

/* ---- issue 32: an authority that answers late ---- */

/* Wait up to ms for the shim's state to be st (1 charging, -2 down). */
static void wait_state(int st, int ms)
{
	for (int i = 0; i < ms && nxqp__test_state() != st; i++)
		usleep(1000);
	assert_int_equal(nxqp__test_state(), st);
}

/* Wait up to ms for the counters' caught_up + repaid to reach n bytes, and nothing owed. */
static void wait_charged(uint64_t n, int ms)
{
	struct nxqp_counters c = counters();

	for (int i = 0; i < ms && (c.caught_up + c.repaid < n || c.owed); i++) {
		usleep(1000);
		c = counters();
	}
	assert_int_equal(c.caught_up + c.repaid, n);
	assert_int_equal(c.owed, 0);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * NXQUOTA_REQUIRE=1: without an authority every allocation is refused,
 * said once, and the budget reads empty; a device the authority does not
 * know is refused too; NXQ_PRELOAD=off does not turn it off.
 */
static void test_require(void **st)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	unsigned long long p, h;
	uint64_t fr, tot;
	long calls = d_calls("cuMemAlloc_v2");
	char *out;
	size_t t;

	setenv("NXQUOTA_REQUIRE", "1", 1);
	setenv("NXQ_DEV", "/nonexistent/nxquota", 1);
	setenv("NXQUOTA_SOCKET", "", 1);
	nxqp__test_authority(NULL, NULL);		/* the library's own choice: none */
	err_begin();
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
		assert_int_equal(cuMemAllocAsync(&p, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
		assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	}
	meminfo(&fr, &tot);
	out = err_end();
	assert_int_equal(nxqp__test_state(), -2);
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls);
	assert_int_equal(counters().refused, 9);
	assert_int_equal(count(out, "NXQUOTA_REQUIRE=1 and no nxquota authority"), 1);
	assert_int_equal(fr, 0);
	assert_int_equal(tot, 8 * GiB);
	assert_int_equal(cuDeviceTotalMem_v2(&t, 0), 0);	/* as cuMemGetInfo's total */
	assert_int_equal(t, 8 * GiB);
	/* host memory is not device memory: not refused */
	prop.location.type = 2;
	assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemRelease(h), 0);
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	/* NXQ_PRELOAD=off is no way around it */
	setenv("NXQ_PRELOAD", "off", 1);
	nxqp__test_authority(NULL, NULL);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(nxqp__test_state(), -2);
	unsetenv("NXQ_PRELOAD");
	unsetenv("NXQ_DEV");
	unsetenv("NXQUOTA_SOCKET");

	/*
	 * an authority comes: looked for again in the background (the
	 * connector's backoff, at most a gap apart: 1 s; 20 ms here), and the
	 * next allocation is charged
	 */
	setup(st);
	setenv("NXQUOTA_REQUIRE", "1", 1);
	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	err_begin();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	K.version_err = 0;
	wait_state(1, 2000);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	out = err_end();
	assert_int_equal(K.charged, MiB);
	assert_int_equal(count(out, "an nxquota authority answers"), 1);
	assert_int_equal(cuMemFree_v2(p), 0);

	/* an authority, but a device it does not know */
	setup(st);
	setenv("NXQUOTA_REQUIRE", "1", 1);
	K.reg_err = -ENOENT;
	calls = d_calls("cuMemAlloc_v2");
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls);
	unsetenv("NXQUOTA_REQUIRE");
	/* without NXQUOTA_REQUIRE: passed through, as before */
	setup(st);
	K.reg_err = -ENOENT;
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(cuMemFree_v2(p), 0);
}

/*
 * The driver allocates but cuCtxGetDevice fails: the shim cannot tell the
 * device.  Before, the allocation passed uncharged and nothing was said,
 * NXQUOTA_REQUIRE or not.  Now, under NXQUOTA_REQUIRE it is given back to
 * the driver and refused; without it, passed and said once.
 */
static void test_unplaced(void **st)
{
	unsigned long long p;
	size_t pitch;
	long frees;
	char *out;

	setenv("NXQUOTA_REQUIRE", "1", 1);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);	/* the authority, found */
	assert_int_equal(cuMemFree_v2(p), 0);
	frees = d_calls("cuMemFree_v2");
	err_begin();
	d_fail("cuCtxGetDevice", 0, 201 /* INVALID_CONTEXT */);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(cuMemAllocManaged(&p, MiB, 1), CUDA_ERROR_OUT_OF_MEMORY);
	d_fail("cuCtxGetDevice", -1, 0);
	out = err_end();
	assert_int_equal(d_calls("cuMemFree_v2"), frees + 3);	/* given back */
	assert_int_equal(K.charged, 0);
	assert_int_equal(count(out, "no context names (cuCtxGetDevice failed): "
			       "refused (NXQUOTA_REQUIRE)"), 1);
	unsetenv("NXQUOTA_REQUIRE");

	setup(st);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(cuMemFree_v2(p), 0);
	err_begin();
	d_fail("cuCtxGetDevice", 0, 201 /* INVALID_CONTEXT */);
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	d_fail("cuCtxGetDevice", -1, 0);
	out = err_end();
	assert_int_equal(K.charged, 0);
	assert_int_equal(count(out, "passed uncharged"), 1);
	assert_int_equal(cuMemFree_v2(p), 0);
}

/*
 * Issue 32: started while the authority is down (here: the fake one's
 * NXQ_IOC_VERSION refused, as a daemon that is not there or refuses the
 * connection for a bound).  Before, the shim passed everything through
 * for the process's whole life.  Now it stays "down" (state -2) and a
 * thread looks for the authority again; what the process allocates
 * meanwhile passes, remembered; when the authority answers, what the
 * process still holds -- pointers, managed memory, a handle held by its
 * mapping alone, a pool's reservation -- is charged to the holders it
 * would have been charged to, and freed as if charged from the start.
 */
static void test_late(void **st)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 1 } };
	const CUdeviceptr va = vmm_va;
	unsigned long long p, q, m, h, a;
	long calls = d_calls("cuMemAlloc_v2");
	struct kh *k;
	char *out;

	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	err_begin();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(cuMemAlloc_v2(&q, 2 * MiB), 0);
	assert_int_equal(cuMemFree_v2(q), 0);			/* freed while down: forgotten */
	assert_int_equal(cuMemAllocManaged(&m, 3 * MiB, 1), 0);
	assert_int_equal(cuMemCreate(&h, 4 * MiB, &prop, 0), 0);
	assert_int_equal(cuMemMap(va, 4 * MiB, 0, h, 0), 0);
	assert_int_equal(cuMemRelease(h), 0);			/* held by its mapping alone */
	assert_int_equal(cuMemAllocAsync(&a, MiB, NULL), 0);	/* the pool reserves CHUNK */
	assert_int_equal(nxqp__test_state(), -2);
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls + 2);
	assert_int_equal(K.charged, 0);
	assert_int_equal(K.regs, 0);
	assert_int_equal(counters().tracked, 3);	/* p, m, the mapping (and its handle) */
	/* the authority comes */
	K.version_err = 0;
	wait_state(1, 2000);
	wait_charged(8 * MiB + CHUNK, 2000);
	err_wait("meanwhile charged", 2000);	/* the connector's line, after its charges */
	out = err_end();
	assert_int_equal(K.charged, 8 * MiB + CHUNK);
	k = kholder_of(DEV0, 0);
	assert_non_null(k);
	assert_int_equal(k->charged, 4 * MiB);
	k = kholder_of(DEV1, 0);
	assert_non_null(k);
	assert_int_equal(k->charged, 4 * MiB);
	k = kholder_of(DEV0, 1);
	assert_non_null(k);
	assert_int_equal(k->charged, CHUNK);
	assert_int_equal(count(out, "no nxquota authority"), 1);
	assert_int_equal(count(out, "an nxquota authority answers"), 1);
	assert_non_null(strstr(out, "; 40 MiB this process allocated meanwhile charged"));
	/* freed now as if charged from the start */
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 7 * MiB + CHUNK);
	assert_int_equal(cuMemUnmap(va, 4 * MiB), 0);
	assert_int_equal(K.charged, 3 * MiB + CHUNK);
	assert_int_equal(cuMemFree_v2(m), 0);
	assert_int_equal(d_freeasync(a, NULL), 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().tracked, 0);
	/* nothing after it: a new allocation is charged as usual */
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
}

/*
 * Pools that grew while down: their reservations charged at the catch-up;
 * one that does not fit makes the device's pools give back what they
 * reserve unused (a trim, the charged ones' excess uncharged), then is
 * asked again.
 */
static void test_late_pools(void **st)
{
	nxqp_pool_props_head props[8] = { { .allocType = 1,
					    .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } } };
	unsigned long long a1, a2, b1;
	CUmemoryPool b;
	struct kh *k;

	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	assert_int_equal(cuMemAllocAsync(&a1, CHUNK, NULL), 0);	/* pool A reserves 2 chunks */
	assert_int_equal(cuMemAllocAsync(&a2, MiB, NULL), 0);
	assert_int_equal(d_freeasync(a1, NULL), 0);		/* not synchronised */
	assert_int_equal(cuMemPoolCreate(&b, props), 0);
	assert_int_equal(cuMemAllocFromPoolAsync(&b1, MiB, b, NULL), 0);	/* B: 1 chunk */
	assert_int_equal(d_freeasync(b1, NULL), 0);
	assert_int_equal(K.charged, 0);
	/* A fits, A and B do not: the trim leaves A one chunk (a2), B none */
	K.cap = 2 * CHUNK + CHUNK / 2;
	K.version_err = 0;
	wait_state(1, 2000);
	for (int i = 0; i < 2000 && counters().caught_up < CHUNK; i++)
		usleep(1000);
	usleep(20000);
	assert_int_equal(counters().caught_up, 2 * CHUNK);
	k = kholder_of(DEV0, 1);
	assert_non_null(k);
	assert_int_equal(K.charged, CHUNK);
	assert_int_equal(k->charged, CHUNK);
	assert_int_equal(d_freeasync(a2, NULL), 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool_of(A_ASYNC), 0), 0);
	assert_int_equal(cuMemPoolDestroy(b), 0);
	assert_int_equal(K.charged, 0);
}

/* Contexts that came up while down: measured then, charged when the authority answers. */
static void test_late_context(void **st)
{
	CUcontext c, c2, c3;

	nxqp__test_gap(20000000ULL);
	d_ctxmb(8);
	K.version_err = -ECONNREFUSED;
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), 0);
	assert_int_equal(cuCtxCreate_v2(&c2, 0, 1), 0);
	assert_int_equal(cuCtxCreate_v2(&c3, 0, 1), 0);
	assert_int_equal(cuCtxDestroy_v2(c3), 0);		/* gone while down: forgotten */
	assert_int_equal(nxqp__test_state(), -2);
	assert_int_equal(counters().ctx_bytes, 16 * MiB);
	assert_int_equal(K.charged, 0);
	K.version_err = 0;
	wait_state(1, 2000);
	wait_charged(16 * MiB, 2000);
	assert_int_equal(K.charged, 16 * MiB);
	assert_int_equal(cuCtxDestroy_v2(c2), 0);
	assert_int_equal(K.charged, 8 * MiB);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().ctx_bytes, 0);
}

struct later {
	int ms;
	pthread_t t;
};

static void *authority_later(void *arg)
{
	struct later *l = arg;

	usleep((useconds_t)l->ms * 1000);
	pthread_mutex_lock(&kmu);
	K.version_err = 0;
	pthread_mutex_unlock(&kmu);
	return NULL;
}

/*
 * The connect wait (NXQUOTA_CONNECT_WAIT_MS): an allocation while down
 * waits for the authority and is charged when it comes; the wait is
 * bounded, counted from the process's first look (a later allocation does
 * not wait again); with NXQUOTA_REQUIRE=1 it is then refused, without it
 * passed (remembered).
 */
static void test_late_wait(void **st)
{
	struct later l = { .ms = 200 };
	unsigned long long p;
	uint64_t t0, dt;

	setenv("NXQUOTA_REQUIRE", "1", 1);
	setenv("NXQUOTA_CONNECT_WAIT_MS", "5000", 1);
	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	assert_int_equal(pthread_create(&l.t, NULL, authority_later, &l), 0);
	t0 = ms_now();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	dt = ms_now() - t0;
	pthread_join(l.t, NULL);
	assert_true(dt >= 150 && dt < 4000);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(counters().caught_up, 0);	/* charged at once, nothing pending */
	assert_int_equal(cuMemFree_v2(p), 0);

	/* bounded: refused after the wait, the next refused at once */
	setup(st);
	setenv("NXQUOTA_REQUIRE", "1", 1);
	setenv("NXQUOTA_CONNECT_WAIT_MS", "150", 1);
	K.version_err = -ECONNREFUSED;
	t0 = ms_now();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	dt = ms_now() - t0;
	assert_true(dt >= 140 && dt < 1000);
	t0 = ms_now();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	assert_true(ms_now() - t0 < 100);
	unsetenv("NXQUOTA_REQUIRE");

	/* without NXQUOTA_REQUIRE: passed after the wait, remembered */
	setup(st);
	setenv("NXQUOTA_CONNECT_WAIT_MS", "150", 1);
	K.version_err = -ECONNREFUSED;
	t0 = ms_now();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_true(ms_now() - t0 >= 140);
	assert_int_equal(counters().tracked, 1);
	assert_int_equal(cuMemFree_v2(p), 0);
	/* a malformed value: said, not waited */
	setup(st);
	setenv("NXQUOTA_CONNECT_WAIT_MS", "soon", 1);
	K.version_err = -ECONNREFUSED;
	err_begin();
	t0 = ms_now();
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	assert_true(ms_now() - t0 < 100);
	assert_non_null(strstr(err_end(), "NXQUOTA_CONNECT_WAIT_MS is not a number"));
	assert_int_equal(cuMemFree_v2(p), 0);
}

/*
 * The catch-up refused (the budget is smaller than what the process took
 * while down): said, and the bytes stay owed, as libnxquota keeps what a
 * restore could not take back -- asked for before any new charge on the
 * device, so the process cannot grow while it holds memory uncharged,
 * and paid off first by frees.  A background retry may pay them at any
 * time: each step below holds either way.
 */
static void test_late_refused(void **st)
{
	unsigned long long p[4], x;
	long calls;
	int i;
	char *out;

	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	err_begin();
	for (i = 0; i < 4; i++)
		assert_int_equal(cuMemAlloc_v2(&p[i], MiB), 0);
	K.cap = 2 * MiB;
	K.version_err = 0;
	wait_state(1, 2000);
	for (i = 0; i < 2000 && !K.denials; i++)
		usleep(1000);
	err_wait("could not be charged", 2000);	/* the connector's line */
	usleep(30000);		/* the refusal lines' gap (20 ms here) */
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().owed, 4 * MiB);
	calls = d_calls("cuMemAlloc_v2");
	assert_int_equal(cuMemAlloc_v2(&x, MiB), CUDA_ERROR_OUT_OF_MEMORY);	/* 5 > 2 */
	assert_int_equal(d_calls("cuMemAlloc_v2"), calls);
	out = err_end();
	assert_non_null(strstr(out, "refused what this process allocated while no authority "
			       "answered (charged before any new allocation on the device), "
			       "4 MiB on "));
	assert_non_null(strstr(out, "but 4 MiB of what this process allocated meanwhile could "
			       "not be charged"));
	assert_int_equal(count(out, "refused what this process allocated"), 2);
	assert_int_equal(cuMemFree_v2(p[0]), 0);		/* pays 1 off: 3 owed */
	assert_int_equal(K.uncharges, 0);
	assert_int_equal(counters().owed, 3 * MiB);
	assert_int_equal(cuMemAlloc_v2(&x, MiB), CUDA_ERROR_OUT_OF_MEMORY);	/* 4 > 2 */
	assert_int_equal(cuMemFree_v2(p[1]), 0);		/* 2 owed, or 2 charged */
	assert_int_equal(cuMemAlloc_v2(&x, MiB), CUDA_ERROR_OUT_OF_MEMORY);	/* 3 > 2 */
	assert_int_equal(cuMemFree_v2(p[2]), 0);		/* 1 owed, or 1 charged */
	assert_int_equal(cuMemAlloc_v2(&x, MiB), 0);		/* 2: fits */
	assert_int_equal(K.charged, 2 * MiB);
	assert_int_equal(counters().owed, 0);
	assert_int_equal(cuMemFree_v2(p[3]), 0);
	assert_int_equal(cuMemFree_v2(x), 0);
	assert_int_equal(K.charged, 0);
}

/* What is owed is asked for again in the background: charged once it fits, no allocation needed. */
static void test_late_repaid(void **st)
{
	unsigned long long p[2];
	int i;
	char *out;

	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	for (i = 0; i < 2; i++)
		assert_int_equal(cuMemAlloc_v2(&p[i], MiB), 0);
	K.cap = MiB;
	err_begin();
	K.version_err = 0;
	for (i = 0; i < 2000 && !K.denials; i++)
		usleep(1000);
	assert_int_equal(counters().owed, 2 * MiB);
	K.cap = 0;
	wait_charged(2 * MiB, 3000);
	err_wait("charged now", 2000);
	out = err_end();
	assert_int_equal(K.charged, 2 * MiB);
	assert_non_null(strstr(out, "charged now"));
	for (i = 0; i < 2; i++)
		assert_int_equal(cuMemFree_v2(p[i]), 0);
	assert_int_equal(K.charged, 0);
}

/*
 * Threads allocating, holding and freeing while the authority comes: the
 * ledger ends at exactly what they hold -- every allocation was either
 * pending before the catch-up or charged after it.
 */
#define HOLD 40000
struct hold {
	unsigned long long p[HOLD];
	uint64_t bytes;
	int n;
};

/* Until 1000 allocations after the authority came (or HOLD held): one in four held. */
static void *hold_hammer(void *arg)
{
	struct hold *h = arg;
	int after = 0;

	d_setdev(0);
	for (int i = 0; h->n < HOLD && after < 1000; i++) {
		unsigned long long p;
		size_t sz = 4096 + (size_t)(i % 7) * 512;

		after += nxqp__test_state() == 1;
		if (cuMemAlloc_v2(&p, sz))
			return arg;
		if (i % 4) {
			cuMemFree_v2(p);
			continue;
		}
		h->p[h->n++] = p;
		h->bytes += sz;
	}
	return NULL;
}

static void test_late_threads(void **st)
{
	static struct hold h[8];
	uint64_t held = 0;
	long n = 0;
	pthread_t t[8];
	void *r;
	int i;

	nxqp__test_gap(1000000ULL);
	memset(h, 0, sizeof(h));
	K.version_err = -ECONNREFUSED;
	assert_int_equal(cuMemAlloc_v2(&h[0].p[0], MiB), 0);	/* down before they start */
	assert_int_equal(cuMemFree_v2(h[0].p[0]), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hold_hammer, &h[i]), 0);
	usleep(2000);
	pthread_mutex_lock(&kmu);
	K.version_err = 0;
	pthread_mutex_unlock(&kmu);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], &r);
		assert_null(r);
		held += h[i].bytes;
		n += h[i].n;
	}
	wait_state(1, 2000);
	for (i = 0; i < 2000 && (K.charged != held || counters().owed); i++)
		usleep(1000);
	assert_int_equal(K.charged, held);
	assert_int_equal(counters().owed, 0);
	assert_int_equal(counters().tracked, n);
	for (i = 0; i < 8; i++)
		for (int j = 0; j < h[i].n; j++)
			assert_int_equal(cuMemFree_v2(h[i].p[j]), 0);
	assert_int_equal(K.charged, 0);
}

static int threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			n = atoi(line + 8);
	if (f)
		fclose(f);
	return n;
}

/*
 * While down, one thread looks for the authority, with a backoff up to
 * the gap (1 s; 100 ms here): no busy loop, no thread per allocation.
 */
static void test_late_looks(void **st)
{
	unsigned long long p;
	uint64_t looks;
	int before = threads_now();

	nxqp__test_gap(100000000ULL);
	K.version_err = -ECONNREFUSED;
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(cuMemAlloc_v2(&p, 4096), 0);
		assert_int_equal(cuMemFree_v2(p), 0);
	}
	assert_int_equal(threads_now(), before + 1);
	usleep(1000000);
	looks = counters().looks;
	/* 10, 20, 40, 80 ms, then 100 ms apart: 12 in the first second */
	assert_true(looks >= 2 && looks <= 13);
	assert_int_equal(nxqp__test_state(), -2);
}

/* A child forked while down starts over: its own look, nothing of its parent's. */
static void test_late_fork(void **st)
{
	unsigned long long p;
	pid_t pid;
	int status;

	nxqp__test_gap(20000000ULL);
	K.version_err = -ECONNREFUSED;
	assert_int_equal(cuMemAlloc_v2(&p, MiB), 0);
	pid = fork();
	if (!pid) {
		unsigned long long q;
		int ok = counters().tracked == 0 && nxqp__test_state() == 0;

		ok = ok && cuMemAlloc_v2(&q, 2 * MiB) == 0 && nxqp__test_state() == -2 &&
		     counters().tracked == 1 && cuMemFree_v2(q) == 0 && counters().tracked == 0;
		_exit(ok ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	K.version_err = 0;
	wait_state(1, 2000);
	wait_charged(MiB, 2000);
	assert_int_equal(K.charged, MiB);
	assert_int_equal(cuMemFree_v2(p), 0);
	assert_int_equal(K.charged, 0);
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
		cmocka_unit_test_setup_teardown(test_meminfo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvml, setup, teardown),
		cmocka_unit_test_setup_teardown(test_totalmem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusal_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusal_no_min, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vmm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regress_map_track_leak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regress_pool_stream_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_neighbours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_require, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unplaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_repaid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_looks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_fork, setup, teardown),
	};

	/* NXQP_TEST=PATTERN: only the tests whose names match (cmocka's filter) */
	if (getenv("NXQP_TEST"))
		cmocka_set_test_filter(getenv("NXQP_TEST"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
