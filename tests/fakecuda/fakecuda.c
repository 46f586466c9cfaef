// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A fake libcuda.so.1: the part of the CUDA driver API that libnxquota,
 * its GPU test and its benchmark call (and what `nxquotactl devices sync`
 * reads: each device's UUID and cuDeviceTotalMem_v2), over host memory,
 * so that the CUDA backend builds and runs in `make check` on machines
 * without a GPU.  It is loaded through the library's normal
 * dlopen("libcuda.so.1") with LD_LIBRARY_PATH pointing at this directory.
 *
 * Model:
 *  - one or more devices ($FAKECUDA_DEVICES, default 1), each with a
 *    primary context and a capacity ($FAKECUDA_MEM, default 8G); device
 *    memory is one memfd, a physical handle an extent of it (pages exist
 *    once touched; a released handle's extent is punched out);
 *  - VA reservations are PROT_NONE mappings; cuMemMap maps a handle's
 *    extent there still inaccessible, cuMemSetAccess makes it read-write;
 *    cuMemUnmap must cover whole mappings, as the driver requires;
 *  - a context stack per thread: every call that needs a current context
 *    fails with CUDA_ERROR_INVALID_CONTEXT without one (as the driver
 *    does: cuEventRecord, cuMemCreate, cuMemAddressReserve, ...);
 *  - streams run their work at once unless held (fakecuda_hold()): then it
 *    queues, and runs when the stream is released or synchronised, or an
 *    event recorded after it is waited for.  Work that touches memory not
 *    mapped read-write when it runs is a device fault: counted, and the
 *    context's sticky error (CUDA_ERROR_ILLEGAL_ADDRESS) from then on;
 *  - failures on demand: $FAKECUDA_FAIL="cuMemCreate:3,cuMemMap:1=2"
 *    fails the 3rd cuMemCreate (CUDA_ERROR_OUT_OF_MEMORY) and the 1st
 *    cuMemMap with error 2; "name:0" fails every call; fakecuda_fail() does
 *    the same at run time.  $FAKECUDA_NO_VMM=1 reports no VMM support.
 *
 * Control functions (dlsym them from the loaded library): fakecuda_fail,
 * fakecuda_hold, fakecuda_stat, fakecuda_calls, fakecuda_on_sync.
 * One global lock serialises everything: the fake is for correctness,
 * not speed (the benchmark's short run only checks that it runs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_api.h"

#define EXPORT __attribute__((visibility("default")))

#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_ILLEGAL_ADDRESS	700
#define CUDA_ERROR_INVALID_HANDLE	400
#define CUDA_ERROR_NOT_FOUND		500
#define CUDA_ERROR_ALREADY_MAPPED	208
#define CUDA_ERROR_NOT_MAPPED		211

#define MAXDEV	4
#define MAXFAIL	16
#define MAXOPS	4096

struct fctx { int dev; int retained; int sticky; };

struct handle {
	uint64_t off, size;
	int dev, maps, released;
	struct handle *next;
};

struct mapping {
	uint64_t va, size;
	struct handle *h;
	int access;
	struct mapping *next;
};

struct resv {
	uint64_t va, size;
	struct resv *next;
};

struct op {
	int kind;		/* 1 memset, 2 copy to host, 3 event, 4 free (cuMemFreeAsync) */
	uint64_t va, n;
	unsigned char val;
	void *host;
	struct CUevent_st *ev;
	long seq;
};

struct CUstream_st {
	int held, dev;
	int nops;
	struct op ops[MAXOPS];
	struct CUstream_st *next;
};

struct CUevent_st { long seq, done; struct CUstream_st *st; };

struct dalloc { uint64_t va, size; int dev; struct dalloc *next; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inited, ndev = 1, novmm;
static uint64_t capacity = 8ULL << 30, gran = 2ULL << 20;
static int memfd = -1;
static uint64_t next_off;
static uint64_t used[MAXDEV];
static struct fctx ctxs[MAXDEV];
static struct handle *handles;
static struct mapping *maps;
static struct resv *resvs;
static struct dalloc *dallocs;
static struct CUstream_st legacy = { .dev = 0 };
static struct CUstream_st *streams = &legacy;
static long faults;
static void (*sync_hook)(void);

static __thread struct fctx *stack[16];
static __thread int depth;

/* ---- failure injection and call counts ---- */

struct failspec { char name[48]; long nth; int err; long seen; };
static struct failspec fails[MAXFAIL];
static int nfails;
struct count { char name[48]; long n; };
static struct count counts[64];
static int ncounts;

static void add_fail(const char *name, long nth, int err)
{
	for (int i = 0; i < nfails; i++)
		if (!strcmp(fails[i].name, name)) {
			fails[i].nth = nth;
			fails[i].err = err;
			fails[i].seen = 0;
			return;
		}
	if (nfails < MAXFAIL) {
		snprintf(fails[nfails].name, sizeof(fails[nfails].name), "%s", name);
		fails[nfails].nth = nth;
		fails[nfails].err = err;
		fails[nfails].seen = 0;
		nfails++;
	}
}

/* Counts the call; returns the error to fail it with, or 0. */
static int inject(const char *name)
{
	int i;

	for (i = 0; i < ncounts; i++)
		if (!strcmp(counts[i].name, name))
			break;
	if (i == ncounts && ncounts < 64)
		snprintf(counts[ncounts++].name, sizeof(counts[0].name), "%s", name);
	if (i < 64)
		counts[i].n++;
	for (i = 0; i < nfails; i++) {
		struct failspec *f = &fails[i];

		if (strcmp(f->name, name) || f->nth < 0)
			continue;
		f->seen++;
		if (f->nth == 0 || f->seen == f->nth)
			return f->err;
	}
	return 0;
}

static void parse_env(void)
{
	const char *s = getenv("FAKECUDA_FAIL");
	char buf[512], *tok, *save = NULL;

	if (getenv("FAKECUDA_DEVICES"))
		ndev = atoi(getenv("FAKECUDA_DEVICES"));
	if (ndev < 0 || ndev > MAXDEV)
		ndev = 1;
	if (getenv("FAKECUDA_MEM"))
		capacity = strtoull(getenv("FAKECUDA_MEM"), NULL, 0) << 20;
	if (getenv("FAKECUDA_NO_VMM"))
		novmm = 1;
	if (!s)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *c = strchr(tok, ':'), *e;
		int err = CUDA_ERROR_OUT_OF_MEMORY;

		if (!c)
			continue;
		*c++ = 0;
		e = strchr(c, '=');
		if (e) {
			*e++ = 0;
			err = atoi(e);
		}
		add_fail(tok, atol(c), err);
	}
}

/* Every entry point: lock, count, maybe fail. */
#define ENTER(name) \
	int _inj; \
	pthread_mutex_lock(&mu); \
	if ((_inj = inject(name)) != 0) { pthread_mutex_unlock(&mu); return _inj; }
#define LEAVE(r) do { CUresult _r = (r); pthread_mutex_unlock(&mu); return _r; } while (0)
#define NEED_INIT() do { if (!inited) LEAVE(CUDA_ERROR_NOT_INITIALIZED); } while (0)
#define NEED_CTX() do { \
	NEED_INIT(); \
	if (!depth || !stack[depth - 1]) \
		LEAVE(CUDA_ERROR_INVALID_CONTEXT); \
	if (stack[depth - 1]->sticky) \
		LEAVE(stack[depth - 1]->sticky); \
} while (0)

static struct fctx *cur(void) { return depth ? stack[depth - 1] : NULL; }

/* ---- memory model ---- */

static struct mapping *map_at(uint64_t va)
{
	for (struct mapping *m = maps; m; m = m->next)
		if (va >= m->va && va < m->va + m->size)
			return m;
	return NULL;
}

static struct dalloc *dalloc_at(uint64_t va)
{
	for (struct dalloc *d = dallocs; d; d = d->next)
		if (va >= d->va && va < d->va + d->size)
			return d;
	return NULL;
}

/* Is [va, va+n) device memory the device may touch now? */
static int accessible(uint64_t va, uint64_t n)
{
	uint64_t end = va + n;

	while (va < end) {
		struct mapping *m = map_at(va);
		struct dalloc *d;

		if (m) {
			if (!m->access)
				return 0;
			va = m->va + m->size;
			continue;
		}
		d = dalloc_at(va);
		if (!d)
			return 0;
		va = d->va + d->size;
	}
	return 1;
}

static void fault(int dev)
{
	faults++;
	ctxs[dev].sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
}

static void dalloc_free(struct dalloc *d);

static void run_op(struct CUstream_st *st, struct op *o)
{
	switch (o->kind) {
	case 1:
		if (!accessible(o->va, o->n))
			fault(st->dev);
		else
			memset((void *)(uintptr_t)o->va, o->val, o->n);
		break;
	case 2:
		if (!accessible(o->va, o->n))
			fault(st->dev);
		else
			memcpy(o->host, (void *)(uintptr_t)o->va, o->n);
		break;
	case 3:
		if (o->ev->done < o->seq)
			o->ev->done = o->seq;
		break;
	case 4: {
		struct dalloc *d = dalloc_at(o->va);

		if (d)
			dalloc_free(d);
		break;
	}
	}
}

static void drain(struct CUstream_st *st)
{
	for (int i = 0; i < st->nops; i++)
		run_op(st, &st->ops[i]);
	st->nops = 0;
}

static void drain_all(void)
{
	for (struct CUstream_st *s = streams; s; s = s->next)
		drain(s);
}

static struct CUstream_st *stream_of(CUstream s)
{
	if (!s || s == (CUstream)1 || s == (CUstream)2)
		return &legacy;
	return s;
}

static void submit(struct CUstream_st *st, struct op o)
{
	if (st->held && st->nops < MAXOPS) {
		st->ops[st->nops++] = o;
		return;
	}
	drain(st);
	run_op(st, &o);
}

/* ---- init, devices, contexts ---- */

EXPORT CUresult cuInit(unsigned int flags)
{
	ENTER("cuInit");
	if (flags)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (!inited) {
		parse_env();
		memfd = memfd_create("fakecuda", MFD_CLOEXEC);
		if (memfd < 0)
			LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
		for (int i = 0; i < MAXDEV; i++)
			ctxs[i].dev = i;
		inited = 1;
	}
	if (!ndev)
		LEAVE(CUDA_ERROR_NO_DEVICE);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 12040;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	ENTER("cuDeviceGetCount");
	NEED_INIT();
	*n = ndev;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	ENTER("cuDeviceGet");
	NEED_INIT();
	if (ordinal < 0 || ordinal >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	*d = ordinal;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	ENTER("cuDeviceGetAttribute");
	NEED_INIT();
	if (d < 0 || d >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	*v = attr == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ? !novmm : 0;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	ENTER("cuDeviceGetUuid");
	NEED_INIT();
	if (d < 0 || d >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	for (int i = 0; i < 16; i++)
		u->bytes[i] = (char)(0xf0 + (i == 15 ? d : i % 10));
	LEAVE(CUDA_SUCCESS);
}

/* Each device's capacity: what `nxquotactl devices sync` registers. */
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	ENTER("cuDeviceTotalMem");
	NEED_INIT();
	if (d < 0 || d >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	*bytes = capacity;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	ENTER("cuDevicePrimaryCtxRetain");
	NEED_INIT();
	if (d < 0 || d >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	ctxs[d].retained++;
	*c = (CUcontext)&ctxs[d];
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	ENTER("cuDevicePrimaryCtxRelease");
	NEED_INIT();
	if (d < 0 || d >= ndev || !ctxs[d].retained)
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	ctxs[d].retained--;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	ENTER("cuCtxPushCurrent");
	NEED_INIT();
	if (!c || depth == 16)
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	stack[depth++] = (struct fctx *)c;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	ENTER("cuCtxPopCurrent");
	NEED_INIT();
	if (!depth)
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	depth--;
	if (c)
		*c = (CUcontext)stack[depth];
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	ENTER("cuCtxSetCurrent");
	NEED_INIT();
	if (!c) {
		if (depth)
			depth--;
	} else if (depth) {
		stack[depth - 1] = (struct fctx *)c;
	} else {
		stack[depth++] = (struct fctx *)c;
	}
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = (CUcontext)cur();
	return CUDA_SUCCESS;
}

/* The current context's device, as the driver answers (the shim asks it
 * where a process sees more than one device). */
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	ENTER("cuCtxGetDevice");
	NEED_CTX();
	*d = cur()->dev;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void)
{
	void (*hook)(void);
	CUresult r;

	{
		ENTER("cuCtxSynchronize");
		NEED_CTX();
		drain_all();
		r = cur()->sticky;
		hook = sync_hook;
		pthread_mutex_unlock(&mu);
	}
	if (hook)
		hook();		/* outside the fake's lock: it may call anything */
	return r;
}

static const struct { int code; const char *name; } errnames[] = {
	{ 0, "CUDA_SUCCESS" }, { 1, "CUDA_ERROR_INVALID_VALUE" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY" }, { 3, "CUDA_ERROR_NOT_INITIALIZED" },
	{ 100, "CUDA_ERROR_NO_DEVICE" }, { 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT" }, { 208, "CUDA_ERROR_ALREADY_MAPPED" },
	{ 211, "CUDA_ERROR_NOT_MAPPED" }, { 400, "CUDA_ERROR_INVALID_HANDLE" },
	{ 500, "CUDA_ERROR_NOT_FOUND" }, { 600, "CUDA_ERROR_NOT_READY" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS" }, { 801, "CUDA_ERROR_NOT_SUPPORTED" },
};

EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].code == e) {
			*s = errnames[i].name;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- virtual memory management ---- */

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, int opt)
{
	ENTER("cuMemGetAllocationGranularity");
	NEED_INIT();
	if (!g || !p || p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    p->location.type != CU_MEM_LOCATION_TYPE_DEVICE || p->location.id < 0 ||
	    p->location.id >= ndev || (opt != 0 && opt != 1))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*g = gran;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
				    CUdeviceptr addr, unsigned long long flags)
{
	struct resv *r;
	char *p, *a;
	uint64_t over;

	ENTER("cuMemAddressReserve");
	NEED_CTX();
	if (!ptr || !size || size % gran || flags || (align & (align - 1)))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (align < gran)
		align = gran;
	over = size + align;
	p = mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, a - p);
	if (a + size < p + over)
		munmap(a + size, p + over - (a + size));
	r = calloc(1, sizeof(*r));
	r->va = (uintptr_t)a;
	r->size = size;
	r->next = resvs;
	resvs = r;
	*ptr = r->va;
	(void)addr;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr va, size_t size)
{
	struct resv **pp;

	ENTER("cuMemAddressFree");
	NEED_CTX();
	for (pp = &resvs; *pp; pp = &(*pp)->next)
		if ((*pp)->va == va && (*pp)->size == size)
			break;
	if (!*pp)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (struct mapping *m = maps; m; m = m->next)
		if (m->va >= va && m->va < va + size)
			LEAVE(CUDA_ERROR_INVALID_VALUE);	/* still mapped */
	{
		struct resv *r = *pp;

		*pp = r->next;
		munmap((void *)(uintptr_t)r->va, r->size);
		free(r);
	}
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *hp, size_t size,
			    const CUmemAllocationProp *p, unsigned long long flags)
{
	struct handle *h;

	ENTER("cuMemCreate");
	NEED_CTX();
	if (!hp || !p || !size || size % gran || flags ||
	    p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    p->location.type != CU_MEM_LOCATION_TYPE_DEVICE || p->location.id < 0 ||
	    p->location.id >= ndev)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (used[p->location.id] + size > capacity)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	if (ftruncate(memfd, (off_t)(next_off + size)))
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	h = calloc(1, sizeof(*h));
	h->off = next_off;
	h->size = size;
	h->dev = p->location.id;
	next_off += size;
	used[h->dev] += size;
	h->next = handles;
	handles = h;
	*hp = (uintptr_t)h;
	LEAVE(CUDA_SUCCESS);
}

static struct handle *find_handle(CUmemGenericAllocationHandle hv)
{
	for (struct handle *h = handles; h; h = h->next)
		if ((uintptr_t)h == hv && !h->released)
			return h;
	return NULL;
}

static void handle_put(struct handle *h)
{
	struct handle **pp;

	if (!h->released || h->maps)
		return;
	fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)h->off,
		  (off_t)h->size);
	used[h->dev] -= h->size;
	for (pp = &handles; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	free(h);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle hv)
{
	struct handle *h;

	ENTER("cuMemRelease");
	NEED_CTX();
	h = find_handle(hv);
	if (!h)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	h->released = 1;
	handle_put(h);
	LEAVE(CUDA_SUCCESS);
}

static int in_resv(uint64_t va, uint64_t size)
{
	for (struct resv *r = resvs; r; r = r->next)
		if (va >= r->va && va + size <= r->va + r->size)
			return 1;
	return 0;
}

EXPORT CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset,
			 CUmemGenericAllocationHandle hv, unsigned long long flags)
{
	struct handle *h;
	struct mapping *m;
	void *p;

	ENTER("cuMemMap");
	NEED_CTX();
	h = find_handle(hv);
	if (!h || !size || size % gran || offset % gran || offset + size > h->size || flags ||
	    va % gran || !in_resv(va, size))
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (m = maps; m; m = m->next)
		if (va < m->va + m->size && m->va < va + size)
			LEAVE(CUDA_ERROR_ALREADY_MAPPED);
	p = mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, memfd,
		 (off_t)(h->off + offset));
	if (p == MAP_FAILED)
		LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	m = calloc(1, sizeof(*m));
	m->va = va;
	m->size = size;
	m->h = h;
	m->next = maps;
	maps = m;
	h->maps++;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr va, size_t size, const CUmemAccessDesc *d,
			       size_t count)
{
	uint64_t p = va, end = va + size;

	ENTER("cuMemSetAccess");
	NEED_CTX();
	if (!d || count != 1 || d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    d->location.id < 0 || d->location.id >= ndev ||
	    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
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

EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t size)
{
	uint64_t p = va, end = va + size;

	ENTER("cuMemUnmap");
	NEED_CTX();
	while (p < end) {		/* whole mappings only, no holes */
		struct mapping *m = map_at(p);

		if (!m || m->va != p || m->va + m->size > end)
			LEAVE(CUDA_ERROR_INVALID_VALUE);
		p = m->va + m->size;
	}
	mmap((void *)(uintptr_t)va, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	for (struct mapping **pp = &maps; *pp;) {
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

/* ---- events and streams ---- */

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	ENTER("cuEventCreate");
	NEED_CTX();
	*e = calloc(1, sizeof(**e));
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	struct CUstream_st *st = stream_of(s);

	ENTER("cuEventRecord");
	NEED_CTX();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	/* a later record replaces an earlier one still queued */
	e->st = st;
	e->seq++;
	submit(st, (struct op){ .kind = 3, .ev = e, .seq = e->seq });
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventQuery(CUevent e)
{
	ENTER("cuEventQuery");
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	LEAVE(e->done < e->seq ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS);
}

EXPORT CUresult cuEventSynchronize(CUevent e)
{
	ENTER("cuEventSynchronize");
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	if (e->done < e->seq && e->st)
		drain(e->st);	/* the device gets there eventually */
	e->done = e->seq;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	ENTER("cuEventDestroy");
	NEED_INIT();
	if (!e)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	for (struct CUstream_st *s = streams; s; s = s->next)
		for (int i = 0; i < s->nops; i++)
			if (s->ops[i].kind == 3 && s->ops[i].ev == e)
				s->ops[i].kind = 0;
	free(e);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	struct CUstream_st *st;

	ENTER("cuStreamCreate");
	NEED_CTX();
	st = calloc(1, sizeof(*st));
	st->dev = cur()->dev;
	st->next = streams;
	streams = st;
	*s = st;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	struct CUstream_st **pp;

	ENTER("cuStreamDestroy");
	NEED_INIT();
	for (pp = &streams; *pp && *pp != s; pp = &(*pp)->next)
		;
	if (!*pp || s == &legacy)
		LEAVE(CUDA_ERROR_INVALID_HANDLE);
	drain(s);
	*pp = s->next;
	free(s);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	ENTER("cuStreamSynchronize");
	NEED_CTX();
	drain(stream_of(s));
	LEAVE(cur()->sticky);
}

/* ---- memset, copies ---- */

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr va, unsigned char v, size_t n)
{
	ENTER("cuMemsetD8");
	NEED_CTX();
	drain(&legacy);
	submit(&legacy, (struct op){ .kind = 1, .va = va, .n = n, .val = v });
	LEAVE(cur()->sticky);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr va, unsigned char v, size_t n, CUstream s)
{
	ENTER("cuMemsetD8Async");
	NEED_CTX();
	submit(stream_of(s), (struct op){ .kind = 1, .va = va, .n = n, .val = v });
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr va, const void *src, size_t n)
{
	ENTER("cuMemcpyHtoD");
	NEED_CTX();
	drain(&legacy);
	if (!accessible(va, n)) {
		fault(cur()->dev);
		LEAVE(CUDA_ERROR_ILLEGAL_ADDRESS);
	}
	memcpy((void *)(uintptr_t)va, src, n);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr va, size_t n)
{
	ENTER("cuMemcpyDtoH");
	NEED_CTX();
	drain(&legacy);
	submit(&legacy, (struct op){ .kind = 2, .va = va, .n = n, .host = dst });
	LEAVE(cur()->sticky);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr va, size_t n, CUstream s)
{
	ENTER("cuMemcpyDtoHAsync");
	NEED_CTX();
	submit(stream_of(s), (struct op){ .kind = 2, .va = va, .n = n, .host = dst });
	LEAVE(CUDA_SUCCESS);
}

/* ---- cuMemAlloc and the stream-ordered pool (plain host pages) ---- */

static CUresult dalloc_new(CUdeviceptr *p, size_t n)
{
	struct dalloc *d;
	uint64_t sz = (n + 511) & ~511ULL;
	void *m;

	if (!p || !n)
		return CUDA_ERROR_INVALID_VALUE;
	if (used[cur()->dev] + sz > capacity)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d = calloc(1, sizeof(*d));
	d->va = (uintptr_t)m;
	d->size = sz;
	d->dev = cur()->dev;
	d->next = dallocs;
	dallocs = d;
	used[d->dev] += sz;
	*p = d->va;
	return CUDA_SUCCESS;
}

static void dalloc_free(struct dalloc *d)
{
	struct dalloc **pp;

	for (pp = &dallocs; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	used[d->dev] -= d->size;
	munmap((void *)(uintptr_t)d->va, d->size);
	free(d);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	ENTER("cuMemAlloc");
	NEED_CTX();
	LEAVE(dalloc_new(p, n));
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	struct dalloc *d;

	ENTER("cuMemFree");
	NEED_CTX();
	d = dalloc_at(p);
	if (!d || d->va != p)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	drain_all();		/* cuMemFree synchronises */
	dalloc_free(d);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	ENTER("cuMemAllocAsync");
	NEED_CTX();
	(void)s;
	LEAVE(dalloc_new(p, n));
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	struct dalloc *d;

	ENTER("cuMemFreeAsync");
	NEED_CTX();
	d = dalloc_at(p);
	if (!d || d->va != p)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	submit(stream_of(s), (struct op){ .kind = 4, .va = p });
	LEAVE(CUDA_SUCCESS);
}

static int default_pool;

EXPORT CUresult cuDeviceGetDefaultMemPool(void **pool, CUdevice d)
{
	ENTER("cuDeviceGetDefaultMemPool");
	NEED_INIT();
	if (d < 0 || d >= ndev)
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	*pool = &default_pool;
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemPoolSetAttribute(void *pool, int attr, void *v)
{
	ENTER("cuMemPoolSetAttribute");
	NEED_INIT();
	if (pool != &default_pool || !v || attr != 4)	/* RELEASE_THRESHOLD only */
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *total)
{
	ENTER("cuMemGetInfo");
	NEED_CTX();
	*total = capacity;
	*fr = capacity - used[cur()->dev];
	LEAVE(CUDA_SUCCESS);
}

/* ---- cuGetProcAddress ---- */

#define P(n, f) { n, (void *)f }
static const struct { const char *name; void *fn; } procs[] = {
	P("cuInit", cuInit), P("cuDriverGetVersion", cuDriverGetVersion),
	P("cuDeviceGet", cuDeviceGet), P("cuDeviceGetCount", cuDeviceGetCount),
	P("cuDeviceGetAttribute", cuDeviceGetAttribute),
	P("cuDeviceGetUuid", cuDeviceGetUuid_v2),
	P("cuDeviceTotalMem", cuDeviceTotalMem_v2),
	P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
	P("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
	P("cuCtxPushCurrent", cuCtxPushCurrent_v2), P("cuCtxPopCurrent", cuCtxPopCurrent_v2),
	P("cuCtxSetCurrent", cuCtxSetCurrent), P("cuCtxGetCurrent", cuCtxGetCurrent),
	P("cuCtxGetDevice", cuCtxGetDevice),
	P("cuCtxSynchronize", cuCtxSynchronize), P("cuGetErrorName", cuGetErrorName),
	P("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity),
	P("cuMemAddressReserve", cuMemAddressReserve), P("cuMemAddressFree", cuMemAddressFree),
	P("cuMemCreate", cuMemCreate), P("cuMemRelease", cuMemRelease), P("cuMemMap", cuMemMap),
	P("cuMemUnmap", cuMemUnmap), P("cuMemSetAccess", cuMemSetAccess),
	P("cuEventCreate", cuEventCreate), P("cuEventRecord", cuEventRecord),
	P("cuEventQuery", cuEventQuery), P("cuEventSynchronize", cuEventSynchronize),
	P("cuEventDestroy", cuEventDestroy_v2), P("cuStreamCreate", cuStreamCreate),
	P("cuStreamDestroy", cuStreamDestroy_v2), P("cuStreamSynchronize", cuStreamSynchronize),
	P("cuMemsetD8", cuMemsetD8_v2), P("cuMemsetD8Async", cuMemsetD8Async),
	P("cuMemcpyHtoD", cuMemcpyHtoD_v2), P("cuMemcpyDtoH", cuMemcpyDtoH_v2),
	P("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2), P("cuMemAlloc", cuMemAlloc_v2),
	P("cuMemFree", cuMemFree_v2), P("cuMemAllocAsync", cuMemAllocAsync),
	P("cuMemFreeAsync", cuMemFreeAsync), P("cuMemGetInfo", cuMemGetInfo_v2),
	P("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool),
	P("cuMemPoolSetAttribute", cuMemPoolSetAttribute),
};

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int ver, uint64_t flags,
				    int *status)
{
	if (!name || !fn)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		if (!strcmp(procs[i].name, name)) {
			*fn = procs[i].fn;
			if (status)
				*status = 0;
			return CUDA_SUCCESS;
		}
	*fn = NULL;
	if (status)
		*status = 1;	/* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *name, void **fn, int ver, uint64_t flags)
{
	return cuGetProcAddress_v2(name, fn, ver, flags, NULL);
}

/* ---- control ---- */

/* Fail the nth next call of name (0: every call; -1: stop failing) with err. */
EXPORT void fakecuda_fail(const char *name, long nth, int err)
{
	pthread_mutex_lock(&mu);
	add_fail(name, nth, err ? err : CUDA_ERROR_OUT_OF_MEMORY);
	pthread_mutex_unlock(&mu);
}

/* Hold a stream's work (1), or release and run it (0). */
EXPORT void fakecuda_hold(CUstream s, int hold)
{
	struct CUstream_st *st;

	pthread_mutex_lock(&mu);
	st = stream_of(s);
	st->held = hold;
	if (!hold)
		drain(st);
	pthread_mutex_unlock(&mu);
}

/* "handles", "maps", "reservations", "used", "faults", "queued", "allocs". */
EXPORT long fakecuda_stat(const char *what)
{
	long n = 0;

	pthread_mutex_lock(&mu);
	if (!strcmp(what, "handles")) {
		for (struct handle *h = handles; h; h = h->next)
			n++;
	} else if (!strcmp(what, "maps")) {
		for (struct mapping *m = maps; m; m = m->next)
			n++;
	} else if (!strcmp(what, "reservations")) {
		for (struct resv *r = resvs; r; r = r->next)
			n++;
	} else if (!strcmp(what, "used")) {
		n = (long)used[0];
	} else if (!strcmp(what, "faults")) {
		n = faults;
	} else if (!strcmp(what, "queued")) {
		for (struct CUstream_st *s = streams; s; s = s->next)
			n += s->nops;
	} else if (!strcmp(what, "allocs")) {
		for (struct dalloc *d = dallocs; d; d = d->next)
			n++;
	} else if (!strcmp(what, "retained")) {
		n = ctxs[0].retained;
	}
	pthread_mutex_unlock(&mu);
	return n;
}

/* Calls made so far of one entry point. */
EXPORT long fakecuda_calls(const char *name)
{
	long n = 0;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncounts; i++)
		if (!strcmp(counts[i].name, name))
			n = counts[i].n;
	pthread_mutex_unlock(&mu);
	return n;
}

/* Run fn after every cuCtxSynchronize (outside the fake's lock); NULL: none. */
EXPORT void fakecuda_on_sync(void (*fn)(void))
{
	pthread_mutex_lock(&mu);
	sync_hook = fn;
	pthread_mutex_unlock(&mu);
}

/* Clear the sticky error and the fault count (between test cases). */
EXPORT void fakecuda_reset_faults(void)
{
	pthread_mutex_lock(&mu);
	faults = 0;
	for (int i = 0; i < MAXDEV; i++)
		ctxs[i].sticky = 0;
	pthread_mutex_unlock(&mu);
}
