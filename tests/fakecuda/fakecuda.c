// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A fake libcuda.so.1 over host memory, for every test that needs a CUDA
 * driver and has no GPU: libnxquota's CUDA backend, its GPU test and
 * benchmark, `nxquotactl devices sync`, the LD_PRELOAD shim (preload/)
 * and the container scenarios.  Found through LD_LIBRARY_PATH (this
 * directory), as the real one is through the loader.
 *
 * This file: initialisation ($FAKECUDA_*), failure injection and call
 * counts, devices, contexts, cuGetProcAddress and the control functions
 * of general use.  fakecuda_mem.c: device memory (its accounting,
 * cuMemAlloc and friends, the VMM calls); fakecuda_stream.c: streams,
 * events, device work and synchronisation; fakecuda_pool.c: memory pools
 * and stream-ordered allocation.  The model, as the driver behaves:
 *
 *  - cuInit first: every call but cuDriverGetVersion, cuGetProcAddress
 *    and cuGetErrorName fails with CUDA_ERROR_NOT_INITIALIZED before it;
 *  - $FAKECUDA_DEVICES devices (default 1, at most 4), device N's UUID
 *    bytes f0..f9, f0..f4, then f0 + N; each has $FAKECUDA_MEM MiB
 *    (default 8192) of memory, one ledger of what takes it: allocations,
 *    handles, pools' reservations, contexts (fakecuda_mem.c);
 *  - a context stack per thread (cuCtxPushCurrent_v2, cuCtxPopCurrent_v2,
 *    cuCtxSetCurrent): a call that needs a current context fails with
 *    CUDA_ERROR_INVALID_CONTEXT without one, or with a destroyed one, or
 *    with a primary context that is not up; a thread starts with none;
 *  - a primary context is up while retained; it and each cuCtxCreate'd
 *    context take $FAKECUDA_CTX_MB MiB of the device (fakecuda_ctx_mb()
 *    at run time).  Without $FAKECUDA_CTX_MB, primary contexts count as
 *    up from the start at no cost, as if the process's runtime had
 *    retained them (tests whose threads only make one current);
 *  - entry points that the driver builds on others call them through the
 *    exported symbols (cuMemAllocPitch_v2 -> cuMemAlloc_v2,
 *    cuMemAllocAsync -> cuMemAllocFromPoolAsync, _ptsz -> plain,
 *    cuGetProcAddress -> cuGetProcAddress_v2), so a preloaded wrapper
 *    sees the inner call; built with -Bsymbolic-functions (bound/) they
 *    stay inside the driver.  cuGetProcAddress hands out the driver's own
 *    code either way, by version and per-thread-stream flag as the driver;
 *  - failures on demand: $FAKECUDA_FAIL="cuMemCreate:3,cuMemMap:1=2"
 *    fails the 3rd cuMemCreate (CUDA_ERROR_OUT_OF_MEMORY) and the 1st
 *    cuMemMap with error 2; "name:0" fails every call; names are the
 *    exported ones (cuMemAlloc_v2); fakecuda_fail() does the same at run
 *    time.  $FAKECUDA_NO_VMM=1 reports no VMM support.
 *
 * Control functions (dlsym them from the loaded library; none is an
 * entry point, none is counted): fakecuda_fail, fakecuda_calls,
 * fakecuda_calls_total, fakecuda_stat, fakecuda_reset,
 * fakecuda_reset_faults, fakecuda_set_device, fakecuda_set_devices,
 * fakecuda_ctx_mb, fakecuda_ctx_noise_mb, fakecuda_proc (here);
 * fakecuda_devmem, fakecuda_mine (fakecuda_mem.c); fakecuda_hold,
 * fakecuda_on_sync (fakecuda_stream.c); fakecuda_pool, fakecuda_sync
 * (fakecuda_pool.c).  One lock serialises the driver (fakecuda.h): the
 * fake is for correctness, not speed, but for an allocation and its free
 * (no system call for a pair: bench_preload measures the shim against it).
 */
#include "fakecuda.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>


struct fakecuda fc;
pthread_mutex_t fc_mu = PTHREAD_MUTEX_INITIALIZER;

/* This thread's context stack (no lock: it is the thread's own). */
static __thread struct CUctx_st *stack[16];
static __thread int depth;

/* ---- failure injection and call counts (under fc_mu) ---- */

#define MAXFAIL		16
#define MAXCOUNT	128

struct failspec { char name[48]; long nth, seen; int err; };
static struct failspec fails[MAXFAIL];
static int nfails;
static struct { const char *name; long n; } counts[MAXCOUNT];
static int ncounts;
static long total;	/* every counted call */

static void add_fail(const char *name, long nth, int err)
{
	struct failspec *f = NULL;

	for (int i = 0; i < nfails; i++)
		if (!strcmp(fails[i].name, name))
			f = &fails[i];
	if (!f && nfails < MAXFAIL)
		f = &fails[nfails++];
	if (!f)
		return;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->nth = nth;
	f->err = err;
	f->seen = 0;
}

/*
 * Counts the call (name: __func__; *slot: its counter, -1 until found);
 * the error to fail it with, or 0.
 */
int fc_inject(const char *name, int *slot)
{
	int i = *slot;

	total++;
	if (i < 0) {
		for (i = 0; i < ncounts && strcmp(counts[i].name, name); i++)
			;
		if (i == ncounts && ncounts < MAXCOUNT)
			counts[ncounts++].name = name;
		*slot = i < MAXCOUNT ? i : -1;
	}
	if (i < MAXCOUNT)
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

static void parse_fail(const char *s)
{
	char buf[512], *tok, *save = NULL;

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

/* ---- initialisation: $FAKECUDA_*, once per process ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
	const char *e;

	fc.ndev = 1;
	if ((e = getenv("FAKECUDA_DEVICES")) && *e)
		fc.ndev = atoi(e);
	if (fc.ndev < 0 || fc.ndev > MAXDEV)
		fc.ndev = 1;
	fc.capacity = 8192ULL << 20;
	if ((e = getenv("FAKECUDA_MEM")) && *e)
		fc.capacity = strtoull(e, NULL, 0) << 20;
	fc.env_implicit = 1;
	if ((e = getenv("FAKECUDA_CTX_MB")) && *e) {
		fc.env_ctx_bytes = strtoull(e, NULL, 0) << 20;
		fc.env_implicit = 0;
	}
	fc.ctx_bytes = fc.env_ctx_bytes;
	fc.implicit = fc.env_implicit;
	fc.novmm = (e = getenv("FAKECUDA_NO_VMM")) && *e && strcmp(e, "0");
	for (int d = 0; d < MAXDEV; d++) {
		fc.prim[d] = (struct CUctx_st){ .dev = d, .primary = 1 };
		fc.defpool[d] = (struct CUmemPoolHandle_st){ .dev = d, .live = 1 };
		fc.legacy[d].dev = d;
	}
	fc.memfd = memfd_create("fakecuda", MFD_CLOEXEC);
	if (fc.memfd < 0)
		abort();
	if ((e = getenv("FAKECUDA_FAIL")))
		parse_fail(e);
	fc_mem_init(getenv("FAKECUDA_SHM"));
}

void fc_init(void)
{
	pthread_once(&init_once, init);
}

/* ---- devices ---- */

EXPORT CUresult cuInit(unsigned int flags)
{
	ENTER();
	if (flags)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	fc.inited = 1;
	LEAVE(fc.ndev ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE);
}
LOCAL(cuInit)

EXPORT CUresult cuDriverGetVersion(int *v)
{
	ENTER();
	if (!v)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*v = 12040;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDriverGetVersion)

EXPORT CUresult cuDeviceGetCount(int *n)
{
	ENTER();
	NEED_INIT();
	if (!n)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*n = fc.ndev;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDeviceGetCount)

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(ordinal))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!d)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*d = ordinal;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDeviceGet)

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!v)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*v = attr == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ? !fc.novmm : 0;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDeviceGetAttribute)

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!u)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < 16; i++)
		u->bytes[i] = (char)(0xf0 + (i == 15 ? d : i % 10));
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDeviceGetUuid_v2)

/* ---- contexts ---- */

struct CUctx_st *fc_cur(void)
{
	return depth ? stack[depth - 1] : NULL;
}

/* A context calls may run in: alive, and a primary one up (under fc_mu). */
int fc_ctx_ok(const struct CUctx_st *c)
{
	return c && !c->dead && (!c->primary || fc.implicit || fc.prim_ref[c->dev]);
}

/* c made this thread's current context (cuCtxSetCurrent's rule; NULL pops). */
void fc_set_current(struct CUctx_st *c)
{
	if (!c) {
		if (depth)
			depth--;
	} else if (depth) {
		stack[depth - 1] = c;
	} else {
		stack[depth++] = c;
	}
}

/* A primary context's last reference gone: its memory and its error with it (under fc_mu). */
void fc_prim_down(int d)
{
	fc.prim_ref[d] = 0;
	fc.prim[d].sticky = 0;
	fc_mem_take(d, -(int64_t)fc.ctx_bytes);
}

/* Up with its first retain, taking a context's memory (OUT_OF_MEMORY if it does not fit). */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!c)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	if (!fc.prim_ref[d]) {
		fc.others[d] += fc.noise_bytes;
		if (fc_mem_take(d, (int64_t)fc.ctx_bytes))
			LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	fc.prim_ref[d]++;
	*c = &fc.prim[d];
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDevicePrimaryCtxRetain)

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!fc.prim_ref[d])
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	if (fc.prim_ref[d] == 1)
		fc_prim_down(d);
	else
		fc.prim_ref[d]--;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDevicePrimaryCtxRelease_v2)

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (fc.prim_ref[d])
		fc_prim_down(d);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDevicePrimaryCtxReset_v2)

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
	ENTER();
	NEED_INIT();
	if (!VALID_DEV(d))
		LEAVE(CUDA_ERROR_INVALID_DEVICE);
	if (!flags || !active)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*flags = 0;
	*active = fc.implicit || fc.prim_ref[d] > 0;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuDevicePrimaryCtxGetState)

/* A context of its own: a context's memory, pushed onto the thread's stack (under fc_mu). */
static CUresult ctx_create(CUcontext *pc, CUdevice d)
{
	struct CUctx_st *c;

	if (!fc.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!VALID_DEV(d))
		return CUDA_ERROR_INVALID_DEVICE;
	if (depth == 16)
		return CUDA_ERROR_INVALID_CONTEXT;
	fc.others[d] += fc.noise_bytes;
	if (fc_mem_take(d, (int64_t)fc.ctx_bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = calloc(1, sizeof(*c));
	if (!c) {
		fc_mem_take(d, -(int64_t)fc.ctx_bytes);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->dev = d;
	c->next = fc.created;
	fc.created = c;
	stack[depth++] = c;
	*pc = c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pc, unsigned int flags, CUdevice d)
{
	ENTER();
	LEAVE(ctx_create(pc, d));
}
LOCAL(cuCtxCreate_v2)

EXPORT CUresult cuCtxCreate_v3(CUcontext *pc, void *params, int n, unsigned int flags, CUdevice d)
{
	ENTER();
	LEAVE(ctx_create(pc, d));
}
LOCAL(cuCtxCreate_v3)

EXPORT CUresult cuCtxCreate_v4(CUcontext *pc, void *params, unsigned int flags, CUdevice d)
{
	ENTER();
	LEAVE(ctx_create(pc, d));
}
LOCAL(cuCtxCreate_v4)

/* Its memory back; off the calling thread's stack (other threads keep a dead one). */
EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	struct CUctx_st *x;
	int i, j;

	ENTER();
	NEED_INIT();
	for (x = fc.created; x && x != c; x = x->next)
		;
	if (!x || x->dead)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	x->dead = 1;
	fc_mem_take(x->dev, -(int64_t)fc.ctx_bytes);
	for (i = j = 0; i < depth; i++)
		if (stack[i] != x)
			stack[j++] = stack[i];
	depth = j;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxDestroy_v2)

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	ENTER();
	NEED_INIT();
	if (!c || depth == 16)
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	stack[depth++] = c;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxPushCurrent_v2)

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	ENTER();
	NEED_INIT();
	if (!depth)
		LEAVE(CUDA_ERROR_INVALID_CONTEXT);
	depth--;
	if (c)
		*c = stack[depth];
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxPopCurrent_v2)

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	ENTER();
	NEED_INIT();
	fc_set_current(c);
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxSetCurrent)

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	ENTER();
	NEED_INIT();
	if (!c)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*c = fc_cur();
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxGetCurrent)

/* The current context's device, as the driver answers (the shim asks it per allocation). */
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	ENTER();
	NEED_CTX();
	if (!d)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*d = fc_cur()->dev;
	LEAVE(CUDA_SUCCESS);
}
LOCAL(cuCtxGetDevice)

/* ---- errors ---- */

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
	ENTER();
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].code == e) {
			*s = errnames[i].name;
			LEAVE(CUDA_SUCCESS);
		}
	*s = NULL;
	LEAVE(CUDA_ERROR_INVALID_VALUE);
}
LOCAL(cuGetErrorName)

/* ---- cuGetProcAddress: base names, versions and stream flavours as the driver has them ---- */

/* name: from version ver fn (its per-thread-stream form ptsz), before it old */
#define P(n, f) { n, (void *)l_##f, 0, NULL, NULL }
#define PV(n, v, f, o) { n, (void *)l_##f, v, o, NULL }
#define PT(n, f) { n, (void *)l_##f, 0, NULL, (void *)l_##f##_ptsz }
static const struct {
	const char *name;
	void *fn;
	int ver;
	void *old, *ptsz;
} procs[] = {
	P("cuInit", cuInit), P("cuDriverGetVersion", cuDriverGetVersion),
	P("cuDeviceGetCount", cuDeviceGetCount), P("cuDeviceGet", cuDeviceGet),
	P("cuDeviceGetAttribute", cuDeviceGetAttribute), P("cuDeviceGetUuid", cuDeviceGetUuid_v2),
	PV("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2, (void *)l_cuDeviceTotalMem),
	P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
	P("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
	P("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2),
	P("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState),
	P("cuCtxDestroy", cuCtxDestroy_v2),
	P("cuCtxPushCurrent", cuCtxPushCurrent_v2), P("cuCtxPopCurrent", cuCtxPopCurrent_v2),
	P("cuCtxSetCurrent", cuCtxSetCurrent), P("cuCtxGetCurrent", cuCtxGetCurrent),
	P("cuCtxGetDevice", cuCtxGetDevice), P("cuCtxSynchronize", cuCtxSynchronize),
	P("cuGetErrorName", cuGetErrorName),
	PV("cuMemGetInfo", 3020, cuMemGetInfo_v2, (void *)l_cuMemGetInfo),
	PV("cuMemAlloc", 3020, cuMemAlloc_v2, NULL),
	PV("cuMemAllocPitch", 3020, cuMemAllocPitch_v2, NULL),
	P("cuMemAllocManaged", cuMemAllocManaged), PV("cuMemFree", 3020, cuMemFree_v2, NULL),
	P("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity),
	P("cuMemAddressReserve", cuMemAddressReserve), P("cuMemAddressFree", cuMemAddressFree),
	P("cuMemCreate", cuMemCreate), P("cuMemRelease", cuMemRelease), P("cuMemMap", cuMemMap),
	P("cuMemUnmap", cuMemUnmap), P("cuMemSetAccess", cuMemSetAccess),
	P("cuEventCreate", cuEventCreate), P("cuEventRecord", cuEventRecord),
	P("cuEventQuery", cuEventQuery), P("cuEventSynchronize", cuEventSynchronize),
	P("cuEventDestroy", cuEventDestroy_v2), P("cuStreamCreate", cuStreamCreate),
	P("cuStreamDestroy", cuStreamDestroy_v2), P("cuStreamSynchronize", cuStreamSynchronize),
	P("cuStreamGetDevice", cuStreamGetDevice),
	P("cuMemsetD8", cuMemsetD8_v2), P("cuMemsetD8Async", cuMemsetD8Async),
	P("cuMemcpyHtoD", cuMemcpyHtoD_v2), P("cuMemcpyDtoH", cuMemcpyDtoH_v2),
	P("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2),
	P("cuDeviceGetMemPool", cuDeviceGetMemPool),
	P("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool),
	P("cuMemPoolCreate", cuMemPoolCreate), P("cuMemPoolDestroy", cuMemPoolDestroy),
	P("cuMemPoolGetAttribute", cuMemPoolGetAttribute),
	P("cuMemPoolSetAttribute", cuMemPoolSetAttribute), P("cuMemPoolTrimTo", cuMemPoolTrimTo),
	PT("cuMemAllocAsync", cuMemAllocAsync), PT("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync),
	PT("cuMemFreeAsync", cuMemFreeAsync),
	PV("cuGetProcAddress", 12000, cuGetProcAddress_v2, (void *)l_cuGetProcAddress),
};

static void *proc(const char *name, int ver, uint64_t flags)
{
	if (!strcmp(name, "cuCtxCreate"))	/* _v3 from 11.4, _v4 from 12.5 */
		return ver >= 12050 ? (void *)l_cuCtxCreate_v4 : ver >= 11040 ?
		       (void *)l_cuCtxCreate_v3 : (void *)l_cuCtxCreate_v2;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, name))
			continue;
		if (ver < procs[i].ver)
			return procs[i].old;
		return (flags & 2) && procs[i].ptsz ? procs[i].ptsz : procs[i].fn;
	}
	return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int ver, uint64_t flags,
				    int *status)
{
	ENTER();
	if (!name || !fn)
		LEAVE(CUDA_ERROR_INVALID_VALUE);
	*fn = proc(name, ver, flags);
	if (status)
		*status = *fn ? 0 : 1;	/* 1: CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	LEAVE(*fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
}
LOCAL(cuGetProcAddress_v2)

EXPORT CUresult cuGetProcAddress(const char *name, void **fn, int ver, uint64_t flags)
{
	ENTER();
	pthread_mutex_unlock(&fc_mu);
	return cuGetProcAddress_v2(name, fn, ver, flags, NULL);	/* through the exported symbol */
}
LOCAL(cuGetProcAddress)

/* ---- control ---- */

/* Fail the nth next call of name (0: every call; -1: stop failing) with err (0: OUT_OF_MEMORY). */
EXPORT void fakecuda_fail(const char *name, long nth, int err)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	add_fail(name, nth, err ? err : CUDA_ERROR_OUT_OF_MEMORY);
	pthread_mutex_unlock(&fc_mu);
}

/* Calls made so far of one entry point (its exported name). */
EXPORT long fakecuda_calls(const char *name)
{
	long n = 0;

	pthread_mutex_lock(&fc_mu);
	for (int i = 0; i < ncounts; i++)
		if (!strcmp(counts[i].name, name))
			n = counts[i].n;
	pthread_mutex_unlock(&fc_mu);
	return n;
}

/* Every call of an entry point so far (bench_preload: driver calls per pair). */
EXPORT long fakecuda_calls_total(void)
{
	long n;

	pthread_mutex_lock(&fc_mu);
	n = total;
	pthread_mutex_unlock(&fc_mu);
	return n;
}

/*
 * What the driver holds now: "handles", "maps" (mappings), "reservations",
 * "allocs" (pointers in use: plain, managed, pool blocks), "used" (device
 * 0's memory this process takes), "faults", "queued" (work on held
 * streams), "retained" (references to device 0's primary context).
 */
EXPORT long fakecuda_stat(const char *what)
{
	long n = 0;

	fc_init();
	pthread_mutex_lock(&fc_mu);
	if (!strcmp(what, "handles")) {
		for (struct handle *h = fc.handles; h; h = h->next)
			n++;
	} else if (!strcmp(what, "maps")) {
		for (struct mapping *m = fc.maps; m; m = m->next)
			n++;
	} else if (!strcmp(what, "reservations")) {
		for (struct resv *r = fc.resvs; r; r = r->next)
			n++;
	} else if (!strcmp(what, "allocs")) {
		for (struct alloc *a = fc.allocs; a; a = a->next)
			n += a->state != B_PENDING;
	} else if (!strcmp(what, "used")) {
		n = (long)fc.mine[0];
	} else if (!strcmp(what, "faults")) {
		n = fc.faults;
	} else if (!strcmp(what, "queued")) {
		for (int d = 0; d < MAXDEV; d++)
			n += fc.legacy[d].nops;
		for (struct CUstream_st *s = fc.streams; s; s = s->next)
			n += s->nops;
	} else if (!strcmp(what, "retained")) {
		n = fc.prim_ref[0];
	}
	pthread_mutex_unlock(&fc_mu);
	return n;
}

/* Clear the sticky errors and the fault count (between test cases). */
EXPORT void fakecuda_reset_faults(void)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc.faults = 0;
	for (int d = 0; d < MAXDEV; d++)
		fc.prim[d].sticky = 0;
	for (struct CUctx_st *c = fc.created; c; c = c->next)
		c->sticky = 0;
	pthread_mutex_unlock(&fc_mu);
}

/*
 * Device d's primary context made this thread's current one (d < 0: no
 * context at all), as the runtime leaves a thread it set a device on; not
 * a retain.
 */
EXPORT void fakecuda_set_device(int d)
{
	fc_init();
	depth = 0;
	if (d >= 0 && d < MAXDEV)
		stack[depth++] = &fc.prim[d];
}

/* How many devices there are from now on (1 to 4). */
EXPORT void fakecuda_set_devices(int n)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	if (n >= 1 && n <= MAXDEV)
		fc.ndev = n;
	pthread_mutex_unlock(&fc_mu);
}

/* What a context takes from now on (MiB); primary contexts then need a retain to be up. */
EXPORT void fakecuda_ctx_mb(uint64_t mb)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc.ctx_bytes = mb << 20;
	fc.implicit = 0;
	pthread_mutex_unlock(&fc_mu);
}

/*
 * From now on, each context that comes up has a neighbour take mb MiB of
 * its device at the same moment (and keep it): what a measurement of the
 * device's free memory around the context's creation also sees.  0: none,
 * and the neighbours' memory back.
 */
EXPORT void fakecuda_ctx_noise_mb(uint64_t mb)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc.noise_bytes = mb << 20;
	if (!mb)
		memset(fc.others, 0, sizeof(fc.others));
	pthread_mutex_unlock(&fc_mu);
}

/* What cuGetProcAddress gives without a preloaded library in front: the driver's own code. */
EXPORT void *fakecuda_proc(const char *name, int ver, uint64_t flags)
{
	return proc(name, ver, flags);
}

/*
 * Between test cases: queued work run, every pending free complete, pools
 * back to what they use with no release threshold, no failures pending,
 * no fault, primary contexts down, contexts costing $FAKECUDA_CTX_MB
 * again, no neighbours; the calling thread on device 0's primary context.
 */
EXPORT void fakecuda_reset(void)
{
	fc_init();
	pthread_mutex_lock(&fc_mu);
	fc_pools_reset();
	nfails = 0;
	fc.faults = 0;
	for (int d = 0; d < MAXDEV; d++)
		if (fc.prim_ref[d])
			fc_prim_down(d);
	for (int d = 0; d < MAXDEV; d++)
		fc.prim[d].sticky = 0;
	fc.ctx_bytes = fc.env_ctx_bytes;
	fc.implicit = fc.env_implicit;
	fc.noise_bytes = 0;
	memset(fc.others, 0, sizeof(fc.others));
	pthread_mutex_unlock(&fc_mu);
	fakecuda_set_device(0);
}
