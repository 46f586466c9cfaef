// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Resolution: the real entry points (R(): libcuda.so.1's, NVML's
 * from libnvidia-ml.so.1, glibc's dlsym), the thread's wrapper depth,
 * say() and the clock; and the interposition that hands the wrappers out
 * (cuGetProcAddress, cuGetProcAddress_v2, dlsym) unless the caller is
 * libnxquota or exempt (nxquota_preload_exempt()).  Owns real[], the
 * wrapper table and the exempt flag.
 *
 * Layer 0: calls state.c only.  The wrapper table names the exported
 * wrappers of the files above; it hands them out, it never calls them
 * (scripts/call-graph.sh -x leaves the exported names out).
 */
#include "shim.h"

/* ---- real entry points ---- */

static const char *const rname[NREAL] = {
#define W(n) [R_##n] = #n,
	NXQP_WRAPPED(W)
#undef W
	[R_cuCtxGetDevice] = "cuCtxGetDevice",
	[R_cuDeviceGetCount] = "cuDeviceGetCount",
	[R_cuDeviceGetUuid_v2] = "cuDeviceGetUuid_v2",
	[R_cuDeviceGetMemPool] = "cuDeviceGetMemPool",
	[R_cuMemPoolGetAttribute] = "cuMemPoolGetAttribute",
	[R_cuMemFreeAsync] = "cuMemFreeAsync",
	[R_cuMemFreeAsync_ptsz] = "cuMemFreeAsync_ptsz",
	[R_cuDevicePrimaryCtxGetState] = "cuDevicePrimaryCtxGetState",
	[R_cuCtxPushCurrent_v2] = "cuCtxPushCurrent_v2",
	[R_cuCtxPopCurrent_v2] = "cuCtxPopCurrent_v2",
	[R_cuCtxSynchronize] = "cuCtxSynchronize",
	[R_cuStreamSynchronize] = "cuStreamSynchronize",
	[R_cuStreamSynchronize_ptsz] = "cuStreamSynchronize_ptsz",
	[R_cuStreamGetDevice] = "cuStreamGetDevice",
	[R_nvmlInit_v2] = "nvmlInit_v2",
	[R_nvmlDeviceGetHandleByUUID] = "nvmlDeviceGetHandleByUUID",
	[R_nvmlDeviceGetUUID] = "nvmlDeviceGetUUID",
	[R_nvmlDeviceGetComputeRunningProcesses_v3] = "nvmlDeviceGetComputeRunningProcesses_v3",
};

void *const wrapper[NWRAP] = {
#define W(n) [R_##n] = (void *)n,
	NXQP_WRAPPED(W)
#undef W
};

void *real[NREAL];
void *(*real_dlsym)(void *, const char *);
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;
pthread_once_t real_once = PTHREAD_ONCE_INIT;
pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

__thread int depth __attribute__((tls_model("initial-exec")));
static __thread int exempt __attribute__((tls_model("initial-exec")));	/* see nxquota_preload_exempt() */

void say(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "nxquota-preload[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
}

static void dlsym_init(void)
{
	/* glibc >= 2.34 has dlsym in libc at GLIBC_2.34; older at 2.2.5 (x86-64) / 2.17 (arm64). */
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };

	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]) && !real_dlsym; i++)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", vers[i]);
}

void real_init(void)
{
	void *h;

	pthread_once(&dlsym_once, dlsym_init);
	if (!real_dlsym)
		return;
	/* The application's libcuda: the same object (same soname), another reference. */
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h)
		return;
	for (int i = 0; i < NREAL; i++) {
		void *p;

		if (IS_NVML(i))
			continue;
		p = real_dlsym(h, rname[i]);
		if (i < NWRAP && p == wrapper[i])
			p = NULL;	/* never call ourselves */
		__atomic_store_n(&real[i], p, __ATOMIC_RELEASE);
	}
}

/*
 * NVML's entry points: from the application's libnvidia-ml.so.1 if it
 * loaded one, else loaded here (only to measure what a CUDA context costs,
 * ctx_measure()); one the application's dlsym() handed us stays.
 */
void nvml_init(void)
{
	void *h;

	pthread_once(&dlsym_once, dlsym_init);
	if (!real_dlsym)
		return;
	h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!h)
		return;
	for (int i = 0; i < NREAL; i++) {
		void *p, *none = NULL;

		if (!IS_NVML(i))
			continue;
		p = real_dlsym(h, rname[i]);
		if (i < NWRAP && p == wrapper[i])
			p = NULL;
		if (p)
			__atomic_compare_exchange_n(&real[i], &none, p, 0, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
	}
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- cuGetProcAddress and dlsym ---- */

/* The wrapper the driver's name resolves to for (version, flags), or -1. */
static int wrapped_variant(const char *sym, int ver, uint64_t flags)
{
	int pt = !!(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM_);

	if (sym[0] != 'c' || sym[1] != 'u')
		return -1;
	if (!strcmp(sym, "cuMemAlloc"))
		return ver >= 3020 ? R_cuMemAlloc_v2 : -1;
	if (!strcmp(sym, "cuMemAllocPitch"))
		return ver >= 3020 ? R_cuMemAllocPitch_v2 : -1;
	if (!strcmp(sym, "cuMemFree"))
		return ver >= 3020 ? R_cuMemFree_v2 : -1;
	if (!strcmp(sym, "cuMemAllocManaged"))
		return R_cuMemAllocManaged;
	if (!strcmp(sym, "cuMemCreate"))
		return R_cuMemCreate;
	if (!strcmp(sym, "cuMemRelease"))
		return R_cuMemRelease;
	if (!strcmp(sym, "cuMemAllocAsync"))
		return pt ? R_cuMemAllocAsync_ptsz : R_cuMemAllocAsync;
	if (!strcmp(sym, "cuMemAllocFromPoolAsync"))
		return pt ? R_cuMemAllocFromPoolAsync_ptsz : R_cuMemAllocFromPoolAsync;
	if (!strcmp(sym, "cuMemPoolTrimTo"))
		return R_cuMemPoolTrimTo;
	if (!strcmp(sym, "cuMemPoolCreate"))
		return R_cuMemPoolCreate;
	if (!strcmp(sym, "cuMemPoolDestroy"))
		return R_cuMemPoolDestroy;
	if (!strcmp(sym, "cuGetProcAddress"))
		return ver >= 12000 ? R_cuGetProcAddress_v2 : R_cuGetProcAddress;
	if (!strcmp(sym, "cuMemMap"))
		return R_cuMemMap;
	if (!strcmp(sym, "cuMemUnmap"))
		return R_cuMemUnmap;
	if (!strcmp(sym, "cuMemGetInfo"))
		return ver >= 3020 ? R_cuMemGetInfo_v2 : R_cuMemGetInfo;
	if (!strcmp(sym, "cuDeviceTotalMem"))	/* as cuMemGetInfo: size_t from 3.2 */
		return ver >= 3020 ? R_cuDeviceTotalMem_v2 : R_cuDeviceTotalMem;
	if (!strcmp(sym, "cuDevicePrimaryCtxRetain"))
		return R_cuDevicePrimaryCtxRetain;
	if (!strcmp(sym, "cuDevicePrimaryCtxRelease"))
		return ver >= 11000 ? R_cuDevicePrimaryCtxRelease_v2 : -1;
	if (!strcmp(sym, "cuDevicePrimaryCtxReset"))
		return ver >= 11000 ? R_cuDevicePrimaryCtxReset_v2 : -1;
	if (!strcmp(sym, "cuCtxCreate"))	/* _v3 from 11.4, _v4 from 12.5 */
		return ver >= 12050 ? R_cuCtxCreate_v4 : ver >= 11040 ? R_cuCtxCreate_v3 :
		       ver >= 3020 ? R_cuCtxCreate_v2 : -1;
	if (!strcmp(sym, "cuCtxDestroy"))
		return ver >= 4000 ? R_cuCtxDestroy_v2 : -1;
	return -1;
}

static void substitute(const char *sym, void **pfn, int ver, uint64_t flags)
{
	int i;

	if (!sym || !pfn || !*pfn)
		return;
	if (exempt)
		return;
	i = wrapped_variant(sym, ver, flags);
	if (i < 0)
		return;
	if (!R(i)) {
		SAY_ONCE(S.said_gpa, "cuGetProcAddress(%s) gave an entry point this driver does "
			 "not export as %s: not intercepted", sym, rname[i]);
		return;
	}
	*pfn = wrapper[i];
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags)
{
	REAL_OR_FAIL(CUresult (*)(const char *, void **, int, uint64_t), R_cuGetProcAddress);
	CUresult cr = f(sym, pfn, ver, flags);

	if (!cr)
		substitute(sym, pfn, ver, flags);
	return cr;
}

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
				    int *status)
{
	REAL_OR_FAIL(CUresult (*)(const char *, void **, int, uint64_t, int *),
		     R_cuGetProcAddress_v2);
	CUresult cr = f(sym, pfn, ver, flags, status);

	if (!cr)
		substitute(sym, pfn, ver, flags);
	return cr;
}

static int wrapped_name(const char *name)
{
	if (!name || ((name[0] != 'c' || name[1] != 'u') && (name[0] != 'n' || name[1] != 'v')))
		return -1;
	for (int i = 0; i < NWRAP; i++)
		if (!strcmp(name, rname[i]))
			return i;
	return -1;
}

/*
 * A library that charges its own mappings (libnxquota, linked in or not)
 * resolves its entry points between nxquota_preload_exempt(1) and (0): on
 * that thread, dlsym and cuGetProcAddress give it the driver's own.
 */
EXPORT void nxquota_preload_exempt(int on)
{
	exempt = !!on;
}

/* Exported: how many times this process asked the authority (charges and uncharges). */
EXPORT uint64_t nxquota_preload_authority_trips(void)
{
	return __atomic_load_n(&S.cnt.trips, __ATOMIC_RELAXED);
}

/* Is the caller libnxquota.so itself (which charges its own mappings)? */
static int caller_is_libnxquota(const void *ret)
{
	Dl_info di;

	return dladdr(ret, &di) && di.dli_fname && strstr(di.dli_fname, "libnxquota.so");
}

/*
 * Everything but the wrapped names goes to glibc's dlsym as a tail call,
 * so that glibc sees the real caller (RTLD_NEXT is relative to it); built
 * with sibling calls on (see preload/Makefile), checked by the tests.
 */
EXPORT __attribute__((optimize("optimize-sibling-calls")))
void *dlsym(void *handle, const char *name)
{
	int i;

	pthread_once(&dlsym_once, dlsym_init);
	if (__builtin_expect(!real_dlsym, 0)) {
		static int said;

		SAY_ONCE(said, "glibc's dlsym not found (dlvsym): every dlsym() fails");
		return NULL;
	}
	i = handle == RTLD_NEXT || exempt ? -1 : wrapped_name(name);
	if (i >= 0 && !caller_is_libnxquota(__builtin_return_address(0))) {
		void *p = real_dlsym(handle, name);

		if (p && p != wrapper[i]) {
			void *none = NULL;

			/* the object the application resolves from is the real one */
			__atomic_compare_exchange_n(&real[i], &none, p, 0, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			return wrapper[i];
		}
		return p;
	}
	return real_dlsym(handle, name);
}
