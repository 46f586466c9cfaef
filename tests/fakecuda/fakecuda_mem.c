// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The fake driver's device memory (fakecuda.c has the whole model).
 *
 * One ledger per device: fc.mine[d], what this process takes -- pointers
 * (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged), handles
 * (cuMemCreate, until released and unmapped), pools' reservations
 * (fakecuda_pool.c) and contexts (fakecuda.c) -- against one capacity,
 * $FAKECUDA_MEM MiB; what does not fit is CUDA_ERROR_OUT_OF_MEMORY.
 * cuMemGetInfo (both versions) reports it, cuDeviceTotalMem (both) the
 * capacity.  With $FAKECUDA_SHM=FILE the devices are shared by every
 * process naming the same file: each publishes what it takes in a slot
 * of the file, and a dead process's slot is not counted (the driver frees
 * a dead process's memory), so processes can fill one fake GPU together.
 *
 * Pointers are host pages (an anonymous mapping each, touched only if
 * used; a freed one's kept for the next pointer of its size, so that a
 * pair costs no system call, as the driver's own cache makes it cheap).
 * Device memory behind handles is one memfd: a handle is an
 * extent of it, punched out when the handle goes.  A VA reservation is a
 * PROT_NONE mapping; cuMemMap maps a handle's extent there still
 * inaccessible, cuMemSetAccess makes it read-write; cuMemMap and
 * cuMemUnmap take whole mappings only, as the driver requires.  A
 * handle's memory goes when it is released and its last mapping is
 * unmapped.  Everything here is under fc_mu.
 */
#include "fakecuda.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>


/* ---- the ledger ---- */

#define SHM_SLOTS	64
struct shm_slot { int pid; uint64_t used[MAXDEV]; };

/* $FAKECUDA_SHM: a slot of our own in FILE (fc_init(), once). */
void fc_mem_init(const char *f)
{
	int fd;

	if (!f || !*f)
		return;
	fd = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct shm_slot) * SHM_SLOTS))
		abort();
	fc.shm = mmap(NULL, sizeof(struct shm_slot) * SHM_SLOTS, PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	close(fd);
	if (fc.shm == MAP_FAILED)
		abort();
	/* free, or of a process that is gone */
	for (int i = 0; i < SHM_SLOTS && !fc.myslot; i++) {
		int pid = __atomic_load_n(&fc.shm[i].pid, __ATOMIC_ACQUIRE);

		if ((!pid || (kill(pid, 0) && pid != getpid())) &&
		    __atomic_compare_exchange_n(&fc.shm[i].pid, &pid, (int)getpid(), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			fc.myslot = &fc.shm[i];
			memset(fc.myslot->used, 0, sizeof(fc.myslot->used));
		}
	}
	if (!fc.myslot)
		abort();
}

/* What device d has in use: everyone's, and the neighbours'. */
uint64_t fc_dev_used(int d)
{
	uint64_t u = fc.others[d];

	if (!fc.shm)
		return u + fc.mine[d];
	for (int i = 0; i < SHM_SLOTS; i++) {
		int pid = __atomic_load_n(&fc.shm[i].pid, __ATOMIC_ACQUIRE);

		if (pid && (pid == getpid() || !kill(pid, 0)))
			u += __atomic_load_n(&fc.shm[i].used[d], __ATOMIC_RELAXED);
	}
	return u;
}

/* Take (delta > 0) or give back device d's memory: 0, or -1 when it does not fit. */
int fc_mem_take(int d, int64_t delta)
{
	if (d < 0 || d >= MAXDEV)
		return 0;	/* host memory */
	if (delta > 0 && fc_dev_used(d) + (uint64_t)delta > fc.capacity)
		return -1;
	fc.mine[d] += (uint64_t)delta;
	if (fc.myslot)
		__atomic_store_n(&fc.myslot->used[d], fc.mine[d], __ATOMIC_RELAXED);
	return 0;
}

/* Device d's memory, everyone's use of it (what the fake NVML reports): 0, or -1: no such device. */
EXPORT int fakecuda_devmem(int d, uint64_t *total, uint64_t *used)
{
	int r = -1;

	fc_init();
	pthread_mutex_lock(&fc_mu);
	if (VALID_DEV(d)) {
		*total = fc.capacity;
		*used = fc_dev_used(d);
		r = 0;
	}
	pthread_mutex_unlock(&fc_mu);
	return r;
}

/* What this process takes of device d (NVML's per-process figure). */
EXPORT uint64_t fakecuda_mine(int d)
{
	uint64_t m = 0;

	fc_init();
	pthread_mutex_lock(&fc_mu);
	if (d >= 0 && d < MAXDEV)
		m = fc.mine[d];
	pthread_mutex_unlock(&fc_mu);
	return m;
}

/* ---- pointers: host pages behind each ---- */

#define CACHE		64		/* freed pointers' pages kept */
#define CACHE_BYTES	(256ULL << 20)	/* at most */

static struct { uint64_t va, size; } cache[CACHE];
static int ncache;
static uint64_t cached;

static uint64_t page_round(uint64_t n)
{
	return (n + 4095) & ~4095ULL;
}

/* Pages for size bytes: a freed pointer's of that size, else new ones; 0 if none. */
static uint64_t pages_get(uint64_t size)
{
	void *m;

	size = page_round(size);
	for (int i = ncache - 1; i >= 0; i--)
		if (cache[i].size == size) {
			uint64_t va = cache[i].va;

			cache[i] = cache[--ncache];
			cached -= size;
			return va;
		}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	return m == MAP_FAILED ? 0 : (uintptr_t)m;
}

static void pages_put(uint64_t va, uint64_t size)
{
	size = page_round(size);
	if (ncache < CACHE && cached + size <= CACHE_BYTES) {
		cache[ncache].va = va;
		cache[ncache++].size = size;
		cached += size;
		return;
	}
	munmap((void *)(uintptr_t)va, size);
}

/* A pointer of size bytes on dev (a pool's block: the pool's memory, taken by the pool). */
CUresult fc_alloc_new(int kind, uint64_t size, int dev, CUmemoryPool pool, CUdeviceptr *out)
{
	struct alloc *a;
	uint64_t va;

	if (!pool && fc_mem_take(dev, (int64_t)size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	va = pages_get(size);
	a = va ? calloc(1, sizeof(*a)) : NULL;
	if (!a) {
		if (va)
			pages_put(va, size);
		if (!pool)
			fc_mem_take(dev, -(int64_t)size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->va = va;
	a->size = size;
	a->kind = kind;
	a->dev = dev;
	a->pool = pool;
	a->next = fc.allocs;
	fc.allocs = a;
	*out = a->va;
	return CUDA_SUCCESS;
}

/* Gone: its pages, and its memory back to the device or its pool. */
void fc_alloc_free(struct alloc *a)
{
	struct alloc **pp;

	for (pp = &fc.allocs; *pp != a; pp = &(*pp)->next)
		;
	*pp = a->next;
	if (a->pool)
		a->pool->used -= a->size;
	else
		fc_mem_take(a->dev, -(int64_t)a->size);
	pages_put(a->va, a->size);
	free(a);
}

/* The pointer in use that va falls in, or NULL. */
struct alloc *fc_alloc_at(uint64_t va)
{
	for (struct alloc *a = fc.allocs; a; a = a->next)
		if (va >= a->va && va < a->va + a->size && a->state != B_PENDING)
			return a;
	return NULL;
}

static struct mapping *map_at(uint64_t va)
{
	for (struct mapping *m = fc.maps; m; m = m->next)
		if (va >= m->va && va < m->va + m->size)
			return m;
	return NULL;
}

/* Is [va, va+n) memory the device may touch now? */
int fc_accessible(uint64_t va, uint64_t n)
{
	uint64_t end = va + n;

	while (va < end) {
		struct mapping *m = map_at(va);
		struct alloc *a;

		if (m) {
			if (!m->access)
				return 0;
			va = m->va + m->size;
			continue;
		}
		a = fc_alloc_at(va);
		if (!a)
			return 0;
		va = a->va + a->size;
	}
	return 1;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	ENTER();
	NEED_CTX();
	if (!p || !n)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	LEAVE(fc_alloc_new(A_PLAIN, n, fc_cur()->dev, NULL, p));
}
LOCAL(cuMemAlloc_v2)

/* Rows wider than asked (1 KiB steps); the memory from cuMemAlloc_v2, through the exported symbol. */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
				   unsigned int elem)
{
	size_t pt = (w + 1023) / 1024 * 1024;

	ENTER();
	NEED_INIT();
	if (!pitch || !w || !h || (elem != 4 && elem != 8 && elem != 16))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_unlock(&fc_mu);
	*pitch = pt;
	return cuMemAlloc_v2(p, pt * h);
}
LOCAL(cuMemAllocPitch_v2)

/* Device memory too (what the shim charges for it). */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
	ENTER();
	NEED_CTX();
	if (!p || !n || (flags != 1 && flags != 2))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	LEAVE(fc_alloc_new(A_MANAGED, n, fc_cur()->dev, NULL, p));
}
LOCAL(cuMemAllocManaged)

/* Synchronises first (queued work that uses it runs), as the driver's does. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	struct alloc *a;

	ENTER();
	NEED_CTX();
	a = fc_alloc_at(p);
	if (!a || a->va != p || a->state != B_LIVE)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (int d = 0; d < MAXDEV; d++)
		fc_drain_dev(d);
	fc_alloc_free(a);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemFree_v2)

/* ---- what the driver reports ---- */

/* The current context's device. */
static CUresult meminfo(size_t *fr, size_t *tot)
{
	int d = fc_cur()->dev;
	uint64_t u = fc_dev_used(d);

	if (!fr || !tot)
		return CUDA_ERROR_INVALID_VALUE;
	*tot = fc.capacity;
	*fr = u < fc.capacity ? fc.capacity - u : 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *tot)
{
	ENTER();
	NEED_CTX();
	LEAVE(meminfo(fr, tot));
}
LOCAL(cuMemGetInfo_v2)

/* The 32-bit one (before CUDA 3.2): the same, saturated at 4 GiB - 1. */
EXPORT CUresult cuMemGetInfo(unsigned int *fr, unsigned int *tot)
{
	size_t f, t;
	CUresult r;

	ENTER();
	NEED_CTX();
	if (!fr || !tot)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	r = meminfo(&f, &t);
	*fr = f > 0xffffffffU ? 0xffffffffU : (unsigned int)f;
	*tot = t > 0xffffffffU ? 0xffffffffU : (unsigned int)t;
	LEAVE(r);
}
LOCAL(cuMemGetInfo)

/* A device's memory, with or without a context: what `nxquotactl devices sync` registers. */
/* Both forms' checks; fc_mu held. */
static CUresult total_mem_check(const void *bytes, CUdevice d)
{
	if (!fc.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!VALID_DEV(d))
		return CUDA_ERROR_INVALID_DEVICE;
	return bytes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	CUresult r;

	ENTER();
	r = total_mem_check(bytes, d);
	if (!r)
		*bytes = fc.capacity;
	LEAVE(r);
}
LOCAL(cuDeviceTotalMem_v2)

/* The 32-bit one (before CUDA 3.2): the same, saturated at 4 GiB - 1. */
EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice d)
{
	CUresult r;

	ENTER();
	r = total_mem_check(bytes, d);
	if (!r)
		*bytes = fc.capacity > 0xffffffffU ? 0xffffffffU : (unsigned int)fc.capacity;
	LEAVE(r);
}
LOCAL(cuDeviceTotalMem)

/* ---- virtual memory management ---- */

/* A device location (a handle may also be host memory: type 2, CU_MEM_LOCATION_TYPE_HOST). */
static int device_prop(const CUmemAllocationProp *p)
{
	return p && p->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
	       p->location.type == CU_MEM_LOCATION_TYPE_DEVICE && VALID_DEV(p->location.id);
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, int opt)
{
	ENTER();
	NEED_INIT();
	if (!g || !device_prop(p) || (opt != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
				      opt != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*g = GRAN;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemGetAllocationGranularity)

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
				    CUdeviceptr addr, unsigned long long flags)
{
	struct resv *r;
	char *p, *a;
	uint64_t over;

	ENTER();
	NEED_CTX();
	if (!ptr || !size || size % GRAN || flags || (align & (align - 1)))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (align < GRAN)
		align = GRAN;
	over = size + align;
	p = mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + size < p + over)
		munmap(a + size, (size_t)(p + over - (a + size)));
	r = calloc(1, sizeof(*r));
	r->va = (uintptr_t)a;
	r->size = size;
	r->next = fc.resvs;
	fc.resvs = r;
	*ptr = r->va;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemAddressReserve)

EXPORT CUresult cuMemAddressFree(CUdeviceptr va, size_t size)
{
	struct resv **pp, *r;

	ENTER();
	NEED_CTX();
	for (pp = &fc.resvs; *pp; pp = &(*pp)->next)
		if ((*pp)->va == va && (*pp)->size == size)
			break;
	if (!*pp)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (struct mapping *m = fc.maps; m; m = m->next)
		if (m->va >= va && m->va < va + size)
			LEAVE(CUDA_ERROR_INVALID_VALUE);	/* still mapped */
	r = *pp;
	*pp = r->next;
	munmap((void *)(uintptr_t)r->va, r->size);
	free(r);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemAddressFree)

/* Device memory of location.id (host memory, location type 2, takes none). */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *hp, size_t size,
			    const CUmemAllocationProp *p, unsigned long long flags)
{
	struct handle *h;
	int dev;

	ENTER();
	NEED_CTX();
	if (!hp || !p || !size || size % GRAN || flags ||
	    p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    !(device_prop(p) || p->location.type == 2))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	dev = device_prop(p) ? p->location.id : -1;
	if (fc_mem_take(dev, (int64_t)size))
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	h = calloc(1, sizeof(*h));
	if (!h || ftruncate(fc.memfd, (off_t)(fc.next_off + size))) {
		free(h);
		fc_mem_take(dev, -(int64_t)size);
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	h->off = fc.next_off;
	h->size = size;
	h->dev = dev;
	fc.next_off += size;
	h->next = fc.handles;
	fc.handles = h;
	*hp = (uintptr_t)h;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemCreate)

static struct handle *find_handle(CUmemGenericAllocationHandle hv)
{
	for (struct handle *h = fc.handles; h; h = h->next)
		if ((uintptr_t)h == hv && !h->released)
			return h;
	return NULL;
}

/* Released and not mapped: its memory goes. */
static void handle_put(struct handle *h)
{
	struct handle **pp;

	if (!h->released || h->maps)
		return;
	fallocate(fc.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)h->off,
		  (off_t)h->size);
	fc_mem_take(h->dev, -(int64_t)h->size);
	for (pp = &fc.handles; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	free(h);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle hv)
{
	struct handle *h;

	ENTER();
	NEED_CTX();
	h = find_handle(hv);
	if (!h)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	h->released = 1;
	handle_put(h);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemRelease)

static int in_resv(uint64_t va, uint64_t size)
{
	for (struct resv *r = fc.resvs; r; r = r->next)
		if (va >= r->va && va + size <= r->va + r->size)
			return 1;
	return 0;
}

/* Inside a reservation, on no mapping, whole granules of a live handle. */
EXPORT CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset,
			 CUmemGenericAllocationHandle hv, unsigned long long flags)
{
	struct handle *h;
	struct mapping *m;
	void *p;

	ENTER();
	NEED_CTX();
	h = find_handle(hv);
	if (!h || !size || size % GRAN || offset % GRAN || offset + size > h->size || flags ||
	    va % GRAN || !in_resv(va, size))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (m = fc.maps; m; m = m->next)
		if (va < m->va + m->size && m->va < va + size)
			LEAVE(CUDA_ERROR_ALREADY_MAPPED);
	m = calloc(1, sizeof(*m));
	if (!m)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fc.memfd,
		 (off_t)(h->off + offset));
	if (p == MAP_FAILED) {
		free(m);
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	m->va = va;
	m->size = size;
	m->h = h;
	m->next = fc.maps;
	fc.maps = m;
	h->maps++;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemMap)

EXPORT CUresult cuMemSetAccess(CUdeviceptr va, size_t size, const CUmemAccessDesc *d,
			       size_t count)
{
	uint64_t p = va, end = va + size;

	ENTER();
	NEED_CTX();
	if (!d || count != 1 || d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !VALID_DEV(d->location.id) || d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	while (p < end) {		/* every byte must be mapped */
		struct mapping *m = map_at(p);

		if (!m || m->va < va || m->va + m->size > end)
			LEAVE(CUDA_ERROR_INVALID_VALUE);
		p = m->va + m->size;
	}
	if (mprotect((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (p = va; p < end;) {
		struct mapping *m = map_at(p);

		m->access = 1;
		p = m->va + m->size;
	}
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemSetAccess)

/* Whole mappings, contiguous from va to va + size; a released handle's memory goes with its last. */
EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t size)
{
	uint64_t p = va, end = va + size;

	ENTER();
	NEED_CTX();
	while (p < end) {
		struct mapping *m = map_at(p);

		if (!m || m->va != p || m->va + m->size > end)
			LEAVE(CUDA_ERROR_INVALID_VALUE);
		p = m->va + m->size;
	}
	mmap((void *)(uintptr_t)va, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	for (struct mapping **pp = &fc.maps; *pp;) {
		struct mapping *m = *pp;

		if (m->va >= va && m->va < end) {
			*pp = m->next;
			m->h->maps--;
			handle_put(m->h);
			free(m);
		} else {
			pp = &m->next;
		}
	}
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuMemUnmap)
