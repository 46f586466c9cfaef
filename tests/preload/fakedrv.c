// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A fake libcuda.so.1 for the preload tests: the allocation entry points
 * the shim wraps, and the few it calls (cuCtxGetDevice, cuDeviceGetUuid_v2,
 * cuDeviceGetMemPool, cuMemPoolGetAttribute), with no memory behind the
 * addresses.  tests/fakecuda models the VMM calls libnxquota makes; it has
 * no pitch, managed, pool or _ptsz entry points, hence this one.
 *
 * Nesting on purpose, as a driver may do: cuMemAllocPitch_v2 calls
 * cuMemAlloc_v2, cuMemAllocAsync calls cuMemAllocFromPoolAsync, the _ptsz
 * forms call the plain ones, all through their exported symbols (so a
 * preloaded wrapper sees the inner call).
 *
 * Pools reserve in 32 MiB chunks and keep what they reserved until
 * cuMemPoolTrimTo (or a synchronisation, which trims to the release
 * threshold, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, default 0).  As on the
 * real driver, cuMemFreeAsync only enqueues the free: the block stays
 * used (not reusable, not trimmable) until a synchronisation observes it
 * (cuStreamSynchronize, fakedrv_sync(): every pool; cuCtxSynchronize: the
 * current context's device, and only on a thread that has a context made
 * current -- cuCtxSetCurrent, cuCtxPushCurrent_v2, fakedrv_set_device,
 * fakedrv_reset; a thread of its own has none).  An allocation on the
 * stream a pending free was enqueued on reuses it (stream order).  Control: fakedrv_fail(name, nth)
 * fails the nth next call (0: every call, -1: none) with OUT_OF_MEMORY;
 * fakedrv_calls(name); fakedrv_stat("allocs"|"handles"|"reserved"|"used"|"mappings"|
 * "devused"); fakedrv_set_device(ord) (-1: no current context).
 *
 * Device memory (issue 20): each device has FAKEDRV_MEM_MB (default 8192)
 * MiB; plain, managed and handle allocations, pool reservations and
 * contexts take it, and an allocation that does not fit is
 * CUDA_ERROR_OUT_OF_MEMORY; cuMemGetInfo (both versions) reports it,
 * cuDeviceTotalMem (both versions) its total.  A
 * handle's memory goes when it is released and its last mapping is
 * unmapped (cuMemMap/cuMemUnmap: whole mappings, contiguous from the
 * address, as the driver wants).  A context takes FAKEDRV_CTX_MB (default
 * 0; fakedrv_ctx_mb() at run time): the primary one while retained (its
 * first cuDevicePrimaryCtxRetain brings it up, the last release or a
 * reset takes it down), each cuCtxCreate_v2/_v3/_v4 until cuCtxDestroy_v2.
 * Without FAKEDRV_CTX_MB a primary context counts as up without a retain
 * (the tests' threads allocate without one) and costs nothing.
 * FAKEDRV_SHM=FILE: the devices are shared by every process naming the
 * same file (each publishes what it takes in a slot; a dead process's
 * slot is not counted, as the driver frees a dead process's memory), so
 * processes can fill one fake GPU together.  fakedrv_devmem(dev, &total,
 * &used) is what the fake NVML (tests/fakenvml/fakenvml.c) reports.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_api.h"

#define EXPORT __attribute__((visibility("default")))
#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_NOT_FOUND		500
#define NDEV	2
#define CHUNK	(32ULL << 20)

typedef struct fpool *CUmemoryPool;
struct fpool { int dev, live; uint64_t reserved, used, threshold, pending; };

struct alloc {
	uint64_t va, size;
	int kind;		/* 0 plain, 1 managed, 2 pool block, 3 handle, 4 freed pending */
	int dev;		/* plain, managed, handle: the device it takes memory of */
	int maps, released;	/* a handle's mappings; released (kept while mapped) */
	struct fpool *pool;
	CUstream stream;	/* a pool block's free: the stream it was enqueued on */
	struct alloc *next;
};

struct mapping {
	uint64_t va, size;
	struct alloc *h;
	struct mapping *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/*
 * The current context: 0 none, else (n << 8) | (dev + 1) (n 0: the
 * primary one); the push stack holds one below it.
 */
static __thread int curdev;
static __thread int bound, saved_dev, saved_bound;	/* a context made current; the push stack (1) */
static __thread uintptr_t curctx, saved_ctx;
static uint64_t next_va = 0x100000000ULL;
static struct alloc *allocs;
static struct mapping *maps;
static struct fpool defpool[NDEV] = { { .dev = 0, .live = 1 }, { .dev = 1, .live = 1 } };

/* ---- device memory ---- */

#define SHM_SLOTS	64
struct shm_slot { int pid; uint64_t used[NDEV]; };

static uint64_t mine[NDEV];	/* what this process takes of each device (under mu) */
static uint64_t ctx_bytes;	/* what a context takes */
static uint64_t noise_bytes;	/* what a neighbour takes while a context comes up */
static uint64_t others[NDEV];	/* what those neighbours hold (under mu) */
static int prim_ref[NDEV];	/* retains of each primary context */
static int implicit = 1;	/* a primary context is up without a retain */
static unsigned int next_ctx = 1;
static struct shm_slot *shm, *myslot;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;

static uint64_t mem_total(void)
{
	static uint64_t t;
	const char *e;

	if (!t) {
		e = getenv("FAKEDRV_MEM_MB");
		t = (e && *e ? strtoull(e, NULL, 10) : 8192) << 20;
	}
	return t;
}

static void mem_init(void)
{
	const char *e = getenv("FAKEDRV_CTX_MB"), *f = getenv("FAKEDRV_SHM");
	int fd;

	if (e && *e) {
		ctx_bytes = strtoull(e, NULL, 10) << 20;
		implicit = 0;
	}
	if (!f || !*f)
		return;
	fd = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct shm_slot) * SHM_SLOTS))
		abort();
	shm = mmap(NULL, sizeof(struct shm_slot) * SHM_SLOTS, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (shm == MAP_FAILED)
		abort();
	/* a slot of our own: free, or of a process that is gone */
	for (int i = 0; i < SHM_SLOTS && !myslot; i++) {
		int pid = __atomic_load_n(&shm[i].pid, __ATOMIC_ACQUIRE);

		if ((!pid || (kill(pid, 0) && pid != getpid())) &&
		    __atomic_compare_exchange_n(&shm[i].pid, &pid, (int)getpid(), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			myslot = &shm[i];
			memset(myslot->used, 0, sizeof(myslot->used));
		}
	}
	if (!myslot)
		abort();
}

/* What device d has in use, everyone's (under mu). */
static uint64_t dev_used(int d)
{
	uint64_t u = 0;

	pthread_once(&mem_once, mem_init);
	if (!shm)
		return mine[d] + others[d];
	u = others[d];
	for (int i = 0; i < SHM_SLOTS; i++) {
		int pid = __atomic_load_n(&shm[i].pid, __ATOMIC_ACQUIRE);

		if (pid && (pid == getpid() || !kill(pid, 0)))
			u += __atomic_load_n(&shm[i].used[d], __ATOMIC_RELAXED);
	}
	return u;
}

/* Take (delta > 0) or give back device d's memory (under mu): 0, or -1 when it does not fit. */
static int mem_take(int d, int64_t delta)
{
	if (d < 0 || d >= NDEV)
		return 0;
	pthread_once(&mem_once, mem_init);
	if (delta > 0 && dev_used(d) + (uint64_t)delta > mem_total())
		return -1;
	mine[d] += (uint64_t)delta;
	if (myslot)
		__atomic_store_n(&myslot->used[d], mine[d], __ATOMIC_RELAXED);
	return 0;
}

EXPORT void fakedrv_devmem(int d, uint64_t *tot, uint64_t *used)
{
	pthread_mutex_lock(&mu);
	*tot = mem_total();
	*used = d >= 0 && d < NDEV ? dev_used(d) : 0;
	pthread_mutex_unlock(&mu);
}

/* What this process has taken of device d (NVML's per-process figure). */
EXPORT uint64_t fakedrv_mine(int d)
{
	uint64_t m;

	pthread_mutex_lock(&mu);
	m = d >= 0 && d < NDEV ? mine[d] : 0;
	pthread_mutex_unlock(&mu);
	return m;
}

/*
 * From now on, each context that comes up has a neighbour take @mb MiB of
 * its device at the same moment (and keep it): what a measurement of the
 * device's free memory around the context's creation also sees.
 */
EXPORT void fakedrv_ctx_noise_mb(uint64_t mb)
{
	pthread_mutex_lock(&mu);
	noise_bytes = mb << 20;
	if (!mb)
		memset(others, 0, sizeof(others));
	pthread_mutex_unlock(&mu);
}

/* What a context takes from now on (MiB); primary contexts then need a retain to be up. */
EXPORT void fakedrv_ctx_mb(uint64_t mb)
{
	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mu);
	ctx_bytes = mb << 20;
	implicit = 0;
	pthread_mutex_unlock(&mu);
}

static struct { const char *name; long n, fail_at; int fail_all; } cnt[64];
static int ncnt;

static long total;	/* every counted call (fakedrv_calls_total) */

static int hit(const char *name)
{
	int i, fail = 0;

	__atomic_add_fetch(&total, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mu);
	for (i = 0; i < ncnt && strcmp(cnt[i].name, name); i++)
		;
	if (i == ncnt && ncnt < 64)
		cnt[ncnt++].name = name;
	if (i < 64) {
		cnt[i].n++;
		if (cnt[i].fail_all || (cnt[i].fail_at && cnt[i].n == cnt[i].fail_at))
			fail = 1;
	}
	pthread_mutex_unlock(&mu);
	return fail;
}

EXPORT void fakedrv_fail(const char *name, long nth)
{
	int i;

	hit(name);		/* makes the slot; the count is taken back below */
	pthread_mutex_lock(&mu);
	for (i = 0; strcmp(cnt[i].name, name); i++)
		;
	cnt[i].n--;
	cnt[i].fail_all = nth == 0;
	cnt[i].fail_at = nth > 0 ? cnt[i].n + nth : 0;
	pthread_mutex_unlock(&mu);
}

EXPORT long fakedrv_calls(const char *name)
{
	long n = 0;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncnt; i++)
		if (!strcmp(cnt[i].name, name))
			n = cnt[i].n;
	pthread_mutex_unlock(&mu);
	return n;
}

/* Every counted driver call so far (bench_preload: driver calls per pair). */
EXPORT long fakedrv_calls_total(void)
{
	return __atomic_load_n(&total, __ATOMIC_RELAXED);
}

EXPORT void fakedrv_set_device(int d)
{
	curdev = d;
	bound = d >= 0;
	curctx = d >= 0 ? (uintptr_t)(d + 1) : 0;
}

static uint64_t newva(uint64_t size)
{
	uint64_t va = next_va;

	next_va += (size + 0xfffff) & ~0xfffffULL;
	return va;
}

static CUresult add(int kind, uint64_t size, struct fpool *p, uint64_t *out, int dev)
{
	struct alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	if (p) {
		if (p->used + size > p->reserved) {
			uint64_t grow = (p->used + size - p->reserved + CHUNK - 1) / CHUNK * CHUNK;

			if (mem_take(p->dev, (int64_t)grow)) {
				pthread_mutex_unlock(&mu);
				free(a);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			p->reserved += grow;
		}
		p->used += size;
	} else if (mem_take(dev, (int64_t)size)) {
		pthread_mutex_unlock(&mu);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->va = newva(size);
	a->size = size;
	a->kind = kind;
	a->dev = dev;
	a->pool = p;
	a->next = allocs;
	allocs = a;
	*out = a->va;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

static CUresult drop(uint64_t va, int kind)
{
	struct alloc **pp, *a;

	pthread_mutex_lock(&mu);
	for (pp = &allocs; (a = *pp); pp = &a->next)
		if (a->va == va && a->kind != 4 && !a->released &&
		    (kind == 3 ? a->kind == 3 : a->kind != 3))
			break;
	if (!a) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (kind == 3 && a->maps) {	/* its memory stays until its last mapping goes */
		a->released = 1;
		pthread_mutex_unlock(&mu);
		return CUDA_SUCCESS;
	}
	*pp = a->next;
	if (a->pool)
		a->pool->used -= a->size;
	else
		mem_take(a->dev, -(int64_t)a->size);
	pthread_mutex_unlock(&mu);
	free(a);
	return CUDA_SUCCESS;
}

EXPORT long fakedrv_stat(const char *what)
{
	long n = 0;

	pthread_mutex_lock(&mu);
	for (struct alloc *a = allocs; a; a = a->next) {
		if (!strcmp(what, "allocs") && a->kind != 3 && a->kind != 4)
			n++;
		if (!strcmp(what, "handles") && a->kind == 3)
			n++;
	}
	if (!strcmp(what, "reserved"))
		n = (long)defpool[0].reserved;
	if (!strcmp(what, "used"))
		n = (long)defpool[0].used;
	if (!strcmp(what, "devused"))
		n = (long)mine[0];
	if (!strcmp(what, "mappings"))
		for (struct mapping *m = maps; m; m = m->next)
			n++;
	pthread_mutex_unlock(&mu);
	return n;
}

static void trim(struct fpool *p, uint64_t keep)
{
	uint64_t floor = p->used > keep ? p->used : keep;

	if (floor >= p->reserved)
		return;
	floor = (floor + CHUNK - 1) / CHUNK * CHUNK;
	if (p->reserved > floor) {
		mem_take(p->dev, -(int64_t)(p->reserved - floor));
		p->reserved = floor;
	}
}

/*
 * A synchronisation (dev -1: every device): the pending frees complete,
 * then every pool gives back what it holds above its threshold.
 */
static void sync_dev(int dev)
{
	struct alloc **pp, *a;

	pthread_mutex_lock(&mu);
	for (pp = &allocs; (a = *pp);) {
		if (a->kind == 4 && (dev < 0 || a->pool->dev == dev)) {
			a->pool->used -= a->size;
			a->pool->pending -= a->size;
			*pp = a->next;
			free(a);
			continue;
		}
		pp = &a->next;
	}
	for (int i = 0; i < NDEV; i++)
		if (dev < 0 || i == dev)
			trim(&defpool[i], defpool[i].threshold);
	pthread_mutex_unlock(&mu);
}

EXPORT void fakedrv_sync(void)
{
	sync_dev(-1);
}

EXPORT CUresult cuInit(unsigned int f) { (void)f; return CUDA_SUCCESS; }

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	if (hit("cuCtxGetDevice"))	/* fakedrv_fail(): the device cannot be told */
		return CUDA_ERROR_INVALID_CONTEXT;
	if (curdev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = curdev;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	for (int i = 0; i < 16; i++)
		u->bytes[i] = (char)(0x10 * (d + 1) + i);
	return CUDA_SUCCESS;
}

/* NDEV devices, or FAKEDRV_NDEV=1: one (device 1 then does not exist). */
EXPORT CUresult cuDeviceGetCount(int *n)
{
	const char *e = getenv("FAKEDRV_NDEV");

	hit("cuDeviceGetCount");
	*n = e && !strcmp(e, "1") ? 1 : NDEV;
	return CUDA_SUCCESS;
}

/* A context per device, as the runtime sets them up. */
EXPORT CUresult cuDeviceGet(CUdevice *d, int ord)
{
	if (ord < 0 || ord >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ord;
	return CUDA_SUCCESS;
}

/* A context's device, from its handle: (n << 8) | (dev + 1). */
static int ctx_dev(CUcontext c)
{
	return (int)((uintptr_t)c & 0xff) - 1;
}

/* Up with its first retain: it takes a context's memory (OUT_OF_MEMORY if it does not fit). */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	hit("cuDevicePrimaryCtxRetain");
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mu);
	if (!prim_ref[d] && noise_bytes)
		others[d] += noise_bytes;
	if (!prim_ref[d] && mem_take(d, (int64_t)ctx_bytes)) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	prim_ref[d]++;
	pthread_mutex_unlock(&mu);
	*c = (CUcontext)(uintptr_t)(d + 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	curdev = c ? ctx_dev(c) : -1;
	bound = c != NULL;
	curctx = (uintptr_t)c;
	return CUDA_SUCCESS;
}

/* Active while retained (or, without FAKEDRV_CTX_MB, always: the tests' threads use it). */
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
	hit("cuDevicePrimaryCtxGetState");
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mu);
	*flags = 0;
	*active = implicit || prim_ref[d] > 0;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

static void prim_down(int d)
{
	prim_ref[d] = 0;
	mem_take(d, -(int64_t)ctx_bytes);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	hit("cuDevicePrimaryCtxRelease_v2");
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (prim_ref[d] == 1)
		prim_down(d);
	else if (prim_ref[d])
		prim_ref[d]--;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
	hit("cuDevicePrimaryCtxReset_v2");
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (prim_ref[d])
		prim_down(d);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

/* A context of its own: it takes a context's memory, and is made current (pushed). */
static CUresult ctx_create(CUcontext *pc, CUdevice d)
{
	uintptr_t c;

	pthread_once(&mem_once, mem_init);
	if (!pc || d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (noise_bytes)
		others[d] += noise_bytes;
	if (mem_take(d, (int64_t)ctx_bytes)) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c = ((uintptr_t)next_ctx++ << 8) | (uintptr_t)(d + 1);
	pthread_mutex_unlock(&mu);
	saved_dev = curdev;
	saved_bound = bound;
	saved_ctx = curctx;
	curdev = d;
	bound = 1;
	curctx = c;
	*pc = (CUcontext)c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pc, unsigned int flags, CUdevice d)
{
	hit("cuCtxCreate_v2");
	return ctx_create(pc, d);
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *pc, void *params, int n, unsigned int flags, CUdevice d)
{
	hit("cuCtxCreate_v3");
	return ctx_create(pc, d);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pc, void *params, unsigned int flags, CUdevice d)
{
	hit("cuCtxCreate_v4");
	return ctx_create(pc, d);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	hit("cuCtxDestroy_v2");
	if (!c || !((uintptr_t)c >> 8) || ctx_dev(c) < 0 || ctx_dev(c) >= NDEV)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	mem_take(ctx_dev(c), -(int64_t)ctx_bytes);
	pthread_mutex_unlock(&mu);
	if (curctx == (uintptr_t)c) {
		curdev = saved_dev;
		bound = saved_bound;
		curctx = saved_ctx;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	saved_dev = curdev;
	saved_bound = bound;
	saved_ctx = curctx;
	curdev = ctx_dev(c);
	bound = 1;
	curctx = (uintptr_t)c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	if (!bound)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c)
		*c = (CUcontext)(curctx ? curctx : (uintptr_t)(curdev + 1));
	curdev = saved_dev;
	bound = saved_bound;
	curctx = saved_ctx;
	return CUDA_SUCCESS;
}

/* The current context's device: its memory as the driver reports it. */
static CUresult meminfo(size_t *fr, size_t *tot)
{
	uint64_t u;

	if (!bound || curdev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!fr || !tot)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	u = dev_used(curdev);
	*tot = mem_total();
	*fr = u < mem_total() ? mem_total() - u : 0;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *tot)
{
	hit("cuMemGetInfo_v2");
	return meminfo(fr, tot);
}

/* The 32-bit one (before CUDA 3.2): the same, saturated at 4 GiB - 1. */
EXPORT CUresult cuMemGetInfo(unsigned int *fr, unsigned int *tot)
{
	size_t f, t;
	CUresult r;

	hit("cuMemGetInfo");
	if (!fr || !tot)
		return CUDA_ERROR_INVALID_VALUE;
	r = meminfo(&f, &t);
	if (!r) {
		*fr = f > 0xffffffffU ? 0xffffffffU : (unsigned int)f;
		*tot = t > 0xffffffffU ? 0xffffffffU : (unsigned int)t;
	}
	return r;
}

/* A device's memory, with or without a context (FAKEDRV_MEM_MB). */
static CUresult totalmem(size_t *bytes, CUdevice d)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = mem_total();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	hit("cuDeviceTotalMem_v2");
	return totalmem(bytes, d);
}

/* The 32-bit one (before CUDA 3.2): the same, saturated at 4 GiB - 1. */
EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice d)
{
	size_t t;
	CUresult r;

	hit("cuDeviceTotalMem");
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	r = totalmem(&t, d);
	if (!r)
		*bytes = t > 0xffffffffU ? 0xffffffffU : (unsigned int)t;
	return r;
}

/* Whole mappings of a live handle; no overlap. */
EXPORT CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset,
			 CUmemGenericAllocationHandle hv, unsigned long long flags)
{
	struct alloc *a;
	struct mapping *m;

	if (hit("cuMemMap"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (a = allocs; a && !(a->va == hv && a->kind == 3 && !a->released); a = a->next)
		;
	if (!a || offset + size > a->size) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (m = maps; m; m = m->next)
		if (va < m->va + m->size && m->va < va + size) {
			pthread_mutex_unlock(&mu);
			return CUDA_ERROR_INVALID_VALUE;	/* already mapped */
		}
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->va = va;
	m->size = size;
	m->h = a;
	m->next = maps;
	maps = m;
	a->maps++;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

static struct mapping *map_at(uint64_t va)
{
	for (struct mapping *m = maps; m; m = m->next)
		if (m->va == va)
			return m;
	return NULL;
}

/* Whole mappings, contiguous from va to va + size; a released handle's memory goes with its last. */
EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t size)
{
	uint64_t p = va, end = va + size;
	struct mapping *m, **pp;

	if (hit("cuMemUnmap"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	while (p < end) {
		m = map_at(p);
		if (!m || p + m->size > end) {
			pthread_mutex_unlock(&mu);
			return CUDA_ERROR_INVALID_VALUE;
		}
		p += m->size;
	}
	for (pp = &maps; (m = *pp);) {
		if (m->va >= va && m->va < end) {
			struct alloc *a = m->h, **ap;

			*pp = m->next;
			free(m);
			if (!--a->maps && a->released) {
				for (ap = &allocs; *ap != a; ap = &(*ap)->next)
					;
				*ap = a->next;
				mem_take(a->dev, -(int64_t)a->size);
				free(a);
			}
			continue;
		}
		pp = &m->next;
	}
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

/* Every stream of the current context: its device's pending frees complete. */
EXPORT CUresult cuCtxSynchronize(void)
{
	hit("cuCtxSynchronize");
	if (!bound || curdev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	sync_dev(curdev);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	sync_dev(-1);
	return CUDA_SUCCESS;
}

#define CTX() do { if (curdev < 0) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	if (hit("cuMemAlloc_v2"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CTX();
	if (!p || !n)
		return CUDA_ERROR_INVALID_VALUE;
	return add(0, n, NULL, (uint64_t *)p, curdev);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
				   unsigned int elem)
{
	size_t pt = (w + 1023) / 1024 * 1024;	/* wider than the shim's guess */

	if (hit("cuMemAllocPitch_v2"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!pitch || !w || !h || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*pitch = pt;
	return cuMemAlloc_v2(p, pt * h);	/* through the exported symbol */
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
	if (hit("cuMemAllocManaged"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CTX();
	if (!p || !n || (flags != 1 && flags != 2))
		return CUDA_ERROR_INVALID_VALUE;
	return add(1, n, NULL, (uint64_t *)p, curdev);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	if (hit("cuMemFree_v2"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return drop(p, 0);
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	if (hit("cuMemCreate"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!h || !prop || !size || size % (2 << 20) || flags)
		return CUDA_ERROR_INVALID_VALUE;
	return add(3, size, NULL, (uint64_t *)h,
		   prop->location.type == 1 ? prop->location.id : -1);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	if (hit("cuMemRelease"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return drop(h, 3);
}

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *p, CUdevice d)
{
	hit("cuDeviceGetMemPool");
	if (d < 0 || d >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	*p = &defpool[d];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *p, const int *props)
{
	struct fpool *f;

	if (hit("cuMemPoolCreate"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	f = calloc(1, sizeof(*f));
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->dev = props[3];	/* location.id */
	f->live = 1;
	*p = f;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool p)
{
	if (hit("cuMemPoolDestroy"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!p || p == &defpool[0] || p == &defpool[1])
		return CUDA_ERROR_INVALID_VALUE;
	p->live = 0;		/* kept: the tests read its counters after */
	pthread_mutex_lock(&mu);
	mem_take(p->dev, -(int64_t)p->reserved);
	p->reserved = 0;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *v)
{
	hit("cuMemPoolGetAttribute");
	if (!p || !v)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (attr == 4)
		*(uint64_t *)v = p->threshold;
	else if (attr == 5)
		*(uint64_t *)v = p->reserved;
	else if (attr == 7)
		*(uint64_t *)v = p->used;
	pthread_mutex_unlock(&mu);
	return attr >= 4 && attr <= 7 && attr != 6 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (4) only: what PyTorch sets (UINT64_MAX). */
EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *v)
{
	if (!p || !v || attr != 4)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	p->threshold = *(uint64_t *)v;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	if (hit("cuMemPoolTrimTo"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	trim(p, keep);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

/* Blocks freed on stream s are reusable by s at once (stream order). */
static void reuse(struct fpool *p, CUstream s)
{
	struct alloc **pp, *a;

	pthread_mutex_lock(&mu);
	for (pp = &allocs; (a = *pp);) {
		if (a->kind == 4 && a->pool == p && a->stream == s) {
			p->used -= a->size;
			p->pending -= a->size;
			*pp = a->next;
			free(a);
			continue;
		}
		pp = &a->next;
	}
	pthread_mutex_unlock(&mu);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dp, size_t n, CUmemoryPool p, CUstream s)
{
	if (hit("cuMemAllocFromPoolAsync"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!dp || !n || !p || !p->live)
		return CUDA_ERROR_INVALID_VALUE;
	reuse(p, s);
	return add(2, (n + 511) / 512 * 512, p, (uint64_t *)dp, p->dev);
}

/*
 * Streams: one per device, from fakedrv_stream() (no cuStreamCreate);
 * NULL and the other handles are the current context's.
 */
struct CUstream_st { int dev; };
static struct CUstream_st fstream[NDEV] = { { 0 }, { 1 } };

EXPORT CUstream fakedrv_stream(int d)
{
	return d >= 0 && d < NDEV ? &fstream[d] : NULL;
}

static int stream_dev(CUstream s)
{
	for (int i = 0; i < NDEV; i++)
		if (s == &fstream[i])
			return i;
	return curdev;
}

EXPORT CUresult cuStreamGetDevice(CUstream s, CUdevice *d)
{
	hit("cuStreamGetDevice");
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (stream_dev(s) < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = stream_dev(s);
	return CUDA_SUCCESS;
}

/* The current pool of the stream's device (not the current device's). */
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dp, size_t n, CUstream s)
{
	if (hit("cuMemAllocAsync"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CTX();
	return cuMemAllocFromPoolAsync(dp, n, &defpool[stream_dev(s)], s);
}

/* Enqueued: the block stays used until a synchronisation sees the free. */
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	struct alloc *a;

	hit("cuMemFreeAsync");
	pthread_mutex_lock(&mu);
	for (a = allocs; a && !(a->va == p && a->kind == 2); a = a->next)
		;
	if (a) {
		a->kind = 4;
		a->stream = s;
		a->pool->pending += a->size;
	}
	pthread_mutex_unlock(&mu);
	return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dp, size_t n, CUstream s)
{
	hit("cuMemAllocAsync_ptsz");
	return cuMemAllocAsync(dp, n, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dp, size_t n, CUmemoryPool p,
					     CUstream s)
{
	hit("cuMemAllocFromPoolAsync_ptsz");
	return cuMemAllocFromPoolAsync(dp, n, p, s);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	hit("cuMemFreeAsync_ptsz");
	return cuMemFreeAsync(p, s);
}

/*
 * Local aliases: what cuGetProcAddress hands out is the driver's own code,
 * not whatever a preloaded library put in front of the exported name.
 */
#define L(n) extern __typeof(n) l_##n __attribute__((alias(#n), visibility("hidden")));
L(cuMemAlloc_v2) L(cuMemAllocPitch_v2) L(cuMemFree_v2) L(cuMemAllocManaged) L(cuMemCreate)
L(cuMemRelease) L(cuMemAllocAsync) L(cuMemAllocAsync_ptsz) L(cuMemAllocFromPoolAsync)
L(cuMemAllocFromPoolAsync_ptsz) L(cuMemFreeAsync) L(cuMemFreeAsync_ptsz) L(cuMemPoolTrimTo)
L(cuMemPoolCreate) L(cuMemPoolDestroy) L(cuMemPoolGetAttribute) L(cuDeviceGetMemPool)
L(cuCtxGetDevice) L(cuInit) L(cuDeviceGet) L(cuDevicePrimaryCtxRetain) L(cuCtxSetCurrent)
L(cuStreamSynchronize) L(cuDeviceGetUuid_v2) L(cuDevicePrimaryCtxGetState)
L(cuDevicePrimaryCtxRelease_v2) L(cuCtxPushCurrent_v2) L(cuCtxPopCurrent_v2) L(cuCtxSynchronize)
L(cuMemPoolSetAttribute) L(cuDeviceGetCount) L(cuMemGetInfo) L(cuMemGetInfo_v2) L(cuMemMap)
L(cuMemUnmap) L(cuCtxCreate_v2) L(cuCtxCreate_v3) L(cuCtxCreate_v4) L(cuCtxDestroy_v2)
L(cuDevicePrimaryCtxReset_v2) L(cuDeviceTotalMem) L(cuDeviceTotalMem_v2)
#undef L

/* ---- cuGetProcAddress: base names, versions and stream flavours as the driver has them ---- */

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int ver, uint64_t flags,
				    int *status);
EXPORT CUresult cuGetProcAddress(const char *name, void **fn, int ver, uint64_t flags);
extern __typeof(cuGetProcAddress) l_cuGetProcAddress __attribute__((visibility("hidden")));
extern __typeof(cuGetProcAddress_v2) l_cuGetProcAddress_v2 __attribute__((visibility("hidden")));

static void *proc(const char *n, int ver, uint64_t flags)
{
	int pt = !!(flags & 2);

#define IS(x) (!strcmp(n, x))
	if (IS("cuMemAlloc"))
		return ver >= 3020 ? (void *)l_cuMemAlloc_v2 : NULL;
	if (IS("cuMemAllocPitch"))
		return ver >= 3020 ? (void *)l_cuMemAllocPitch_v2 : NULL;
	if (IS("cuMemFree"))
		return ver >= 3020 ? (void *)l_cuMemFree_v2 : NULL;
	if (IS("cuMemAllocManaged"))
		return (void *)l_cuMemAllocManaged;
	if (IS("cuMemCreate"))
		return (void *)l_cuMemCreate;
	if (IS("cuMemRelease"))
		return (void *)l_cuMemRelease;
	if (IS("cuMemAllocAsync"))
		return pt ? (void *)l_cuMemAllocAsync_ptsz : (void *)l_cuMemAllocAsync;
	if (IS("cuMemAllocFromPoolAsync"))
		return pt ? (void *)l_cuMemAllocFromPoolAsync_ptsz : (void *)l_cuMemAllocFromPoolAsync;
	if (IS("cuMemFreeAsync"))
		return pt ? (void *)l_cuMemFreeAsync_ptsz : (void *)l_cuMemFreeAsync;
	if (IS("cuMemPoolTrimTo"))
		return (void *)l_cuMemPoolTrimTo;
	if (IS("cuMemPoolCreate"))
		return (void *)l_cuMemPoolCreate;
	if (IS("cuMemPoolDestroy"))
		return (void *)l_cuMemPoolDestroy;
	if (IS("cuMemPoolGetAttribute"))
		return (void *)l_cuMemPoolGetAttribute;
	if (IS("cuDeviceGetMemPool"))
		return (void *)l_cuDeviceGetMemPool;
	if (IS("cuCtxGetDevice"))
		return (void *)l_cuCtxGetDevice;
	if (IS("cuDeviceGetCount"))
		return (void *)l_cuDeviceGetCount;
	if (IS("cuInit"))
		return (void *)l_cuInit;
	if (IS("cuDeviceGet"))
		return (void *)l_cuDeviceGet;
	if (IS("cuDevicePrimaryCtxRetain"))
		return (void *)l_cuDevicePrimaryCtxRetain;
	if (IS("cuCtxSetCurrent"))
		return (void *)l_cuCtxSetCurrent;
	if (IS("cuStreamSynchronize"))
		return (void *)l_cuStreamSynchronize;
	if (IS("cuDevicePrimaryCtxGetState"))
		return (void *)l_cuDevicePrimaryCtxGetState;
	if (IS("cuDevicePrimaryCtxRelease"))
		return (void *)l_cuDevicePrimaryCtxRelease_v2;
	if (IS("cuCtxPushCurrent"))
		return (void *)l_cuCtxPushCurrent_v2;
	if (IS("cuCtxPopCurrent"))
		return (void *)l_cuCtxPopCurrent_v2;
	if (IS("cuCtxSynchronize"))
		return (void *)l_cuCtxSynchronize;
	if (IS("cuMemPoolSetAttribute"))
		return (void *)l_cuMemPoolSetAttribute;
	if (IS("cuDeviceGetUuid"))
		return (void *)l_cuDeviceGetUuid_v2;
	if (IS("cuMemGetInfo"))
		return ver >= 3020 ? (void *)l_cuMemGetInfo_v2 : (void *)l_cuMemGetInfo;
	if (IS("cuDeviceTotalMem"))
		return ver >= 3020 ? (void *)l_cuDeviceTotalMem_v2 : (void *)l_cuDeviceTotalMem;
	if (IS("cuMemMap"))
		return (void *)l_cuMemMap;
	if (IS("cuMemUnmap"))
		return (void *)l_cuMemUnmap;
	if (IS("cuCtxCreate"))
		return ver >= 12050 ? (void *)l_cuCtxCreate_v4 : ver >= 11040 ?
		       (void *)l_cuCtxCreate_v3 : (void *)l_cuCtxCreate_v2;
	if (IS("cuCtxDestroy"))
		return (void *)l_cuCtxDestroy_v2;
	if (IS("cuDevicePrimaryCtxReset"))
		return (void *)l_cuDevicePrimaryCtxReset_v2;
	if (IS("cuGetProcAddress"))
		return ver >= 12000 ? (void *)l_cuGetProcAddress_v2 : (void *)l_cuGetProcAddress;
#undef IS
	return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int ver, uint64_t flags,
				    int *status)
{
	hit("cuGetProcAddress_v2");
	if (!name || !fn)
		return CUDA_ERROR_INVALID_VALUE;
	*fn = proc(name, ver, flags);
	if (status)
		*status = *fn ? 0 : 1;
	return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *name, void **fn, int ver, uint64_t flags)
{
	hit("cuGetProcAddress");
	return cuGetProcAddress_v2(name, fn, ver, flags, NULL);
}

extern __typeof(cuGetProcAddress) l_cuGetProcAddress __attribute__((alias("cuGetProcAddress")));
extern __typeof(cuGetProcAddress_v2) l_cuGetProcAddress_v2
	__attribute__((alias("cuGetProcAddress_v2")));

/* Between test cases: pools back to what they use, no failures pending. */
EXPORT void fakedrv_reset(void)
{
	sync_dev(-1);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < NDEV; i++) {
		defpool[i].threshold = 0;
		trim(&defpool[i], 0);
	}
	for (int i = 0; i < ncnt; i++)
		cnt[i].fail_all = 0, cnt[i].fail_at = 0;
	/* contexts back to free and implicit (the pools' memory was trimmed above) */
	for (int i = 0; i < NDEV; i++)
		if (prim_ref[i])
			prim_down(i);
	pthread_once(&mem_once, mem_init);
	if (!getenv("FAKEDRV_CTX_MB")) {
		ctx_bytes = 0;
		implicit = 1;
	}
	noise_bytes = 0;
	memset(others, 0, sizeof(others));
	pthread_mutex_unlock(&mu);
	curdev = 0;
	bound = 1;
	curctx = 1;
}

/* What cuGetProcAddress gives without a shim in front: the driver's own code. */
EXPORT void *fakedrv_proc(const char *name, int ver, uint64_t flags)
{
	return proc(name, ver, flags);
}

/* A pool's counters (reserved, used). */
EXPORT void fakedrv_pool(CUmemoryPool p, uint64_t *reserved, uint64_t *used)
{
	pthread_mutex_lock(&mu);
	*reserved = p->reserved;
	*used = p->used;
	pthread_mutex_unlock(&mu);
}
