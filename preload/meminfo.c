// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Memory queries: cuMemGetInfo, cuMemGetInfo_v2, cuDeviceTotalMem(_v2)
 * and NVML's nvmlDeviceGetMemoryInfo(_v2) answer with the budget
 * (STATUS's room and limit, at most the device's).
 *
 * Layer 4: calls authority.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- memory queries: the budget is what the application sees ---- */

/*
 * What a memory query on device ord reports under the shim: free at most
 * what this process could be granted now (STATUS version 1's room, plus
 * the plain holder's credit, which is charged already), total at most its
 * limit; both also at most what the driver said (free less what the
 * process owes since a late connection).  Unchanged (0 returned) when the
 * authority has no STATUS version 1, the device is not under nxquota or
 * the process is not charged (no authority yet: after the connect wait,
 * which a query waits too); free 0 where every allocation would be
 * refused (NXQUOTA_REQUIRE without an authority, a refused registration).
 * A round trip to the authority per query.
 */
static int budget_clamp(int ord, uint64_t *freep, uint64_t *totalp)
{
	struct nxq_status st;
	uint64_t room, owed;
	int a = authority();

	if (a == ST_DOWN && S.require) {
		*freep = 0;
		CNT(clamped);
		return 1;
	}
	if (a < 0 || ord < 0 || ord >= MAXDEV || !(S.ctx->features & NXQ_FEAT_STATUS_V1))
		return 0;
	switch (dev_state(ord, H_PLAIN)) {
	case DS_CHARGE:
		break;
	case DS_REFUSE:
		*freep = 0;
		CNT(clamped);
		return 1;
	default:
		return 0;
	}
	if (nxq__status(S.ctx, S.dev[ord].holder, &st))
		return 0;
	room = st.room + __atomic_load_n(&S.dev[ord].credit, __ATOMIC_RELAXED);
	if (room < st.room)
		room = UINT64_MAX;
	/* what it owes since a late connection is charged with its next allocation */
	owed = __atomic_load_n(&S.dev[ord].owed, __ATOMIC_RELAXED) +
	       __atomic_load_n(&S.dev[ord].cowed, __ATOMIC_RELAXED);
	room = room > owed ? room - owed : 0;
	if (room < *freep)
		*freep = room;
	if (st.limit < *totalp)
		*totalp = st.limit;
	if (*freep > *totalp)
		*freep = *totalp;
	CNT(clamped);
	return 1;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *freep, size_t *totalp)
{
	REAL_OR_FAIL(CUresult (*)(size_t *, size_t *), R_cuMemGetInfo_v2);
	uint64_t fr, tot;
	CUresult cr = f(freep, totalp);

	if (cr || depth || !freep || !totalp)
		return cr;
	fr = *freep;
	tot = *totalp;
	if (budget_clamp(cur_dev(), &fr, &tot)) {
		*freep = (size_t)fr;
		*totalp = (size_t)tot;
	}
	return cr;
}

/* The 32-bit entry point (before CUDA 3.2): the same, in unsigned ints. */
EXPORT CUresult cuMemGetInfo(unsigned int *freep, unsigned int *totalp)
{
	REAL_OR_FAIL(CUresult (*)(unsigned int *, unsigned int *), R_cuMemGetInfo);
	uint64_t fr, tot;
	CUresult cr = f(freep, totalp);

	if (cr || depth || !freep || !totalp)
		return cr;
	fr = *freep;
	tot = *totalp;
	if (budget_clamp(cur_dev(), &fr, &tot)) {
		*freep = (unsigned int)fr;
		*totalp = (unsigned int)tot;
	}
	return cr;
}

/*
 * A device's total memory (the CUDA runtime's cudaGetDeviceProperties()
 * fills totalGlobalMem from it: torch.cuda.get_device_properties()'s
 * total_memory): at most the limit, as cuMemGetInfo's total, and left as
 * the driver says where cuMemGetInfo's total is (no STATUS version 1, a
 * device not under nxquota, NXQUOTA_REQUIRE without an authority).  Of
 * device dev, not of the current context's: no context is needed.  A
 * CUdevice is the device's ordinal (cuDeviceGet() hands the ordinal
 * out), which is what the shim's devices are indexed by, each keyed by
 * that CUdevice's UUID (dev_key()); cur_dev() and the context wrappers
 * take it the same way.
 */
static int total_clamp(CUdevice dev, uint64_t *totalp)
{
	uint64_t fr = *totalp;

	return budget_clamp(dev, &fr, totalp);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(size_t *, CUdevice), R_cuDeviceTotalMem_v2);
	CUresult cr = f(bytes, dev);
	uint64_t tot;

	if (cr || depth || !bytes)
		return cr;
	tot = *bytes;
	if (total_clamp(dev, &tot))
		*bytes = (size_t)tot;
	return cr;
}

/* The 32-bit entry point (before CUDA 3.2): the same, in an unsigned int. */
EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(unsigned int *, CUdevice), R_cuDeviceTotalMem);
	CUresult cr = f(bytes, dev);
	uint64_t tot;

	if (cr || depth || !bytes)
		return cr;
	tot = *bytes;
	if (total_clamp(dev, &tot))
		*bytes = (unsigned int)tot;
	return cr;
}

/*
 * The CUDA ordinal of an NVML device, by its UUID (GPU-<uuid>, the key
 * the shim registers); -1 for one CUDA does not show this process, or
 * while the process has not initialised CUDA (libcuda not loaded, or
 * cuDeviceGetCount failing before cuInit): a process that only asks NVML
 * (nvidia-smi under /etc/ld.so.preload) is not under the shim, and gets
 * NVML's numbers.
 */
static int nvml_ord(nvmlDevice_t dev)
{
	int (*uuid)(nvmlDevice_t, char *, unsigned int) =
		(int (*)(nvmlDevice_t, char *, unsigned int))R(R_nvmlDeviceGetUUID);
	CUresult (*cnt)(int *);
	char u[96], key[NXQ_DEVICE_KEY_MAX];
	void *h;
	int n;

	if (!uuid || uuid(dev, u, sizeof(u)))
		return -1;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
	dlclose(h);
	cnt = (CUresult (*)(int *))R(R_cuDeviceGetCount);
	if (!cnt || cnt(&n))
		return -1;
	for (int ord = 0; ord < n && ord < MAXDEV; ord++) {
		const char *k = S.dev[ord].key;

		if (!__atomic_load_n(&S.dev[ord].state, __ATOMIC_ACQUIRE) || !k[0]) {
			if (dev_key(ord, key))
				continue;
			k = key;
		}
		if (!strcmp(u, k))
			return ord;
	}
	return -1;
}

static int nvml_clamp(nvmlDevice_t dev, unsigned long long *freep, unsigned long long *totalp)
{
	uint64_t fr = *freep, tot = *totalp;
	int ord = nvml_ord(dev);

	if (ord < 0 || !budget_clamp(ord, &fr, &tot))
		return 0;
	*freep = fr;
	*totalp = tot;
	return 1;
}

#define NVML_ERROR_FUNCTION_NOT_FOUND_	13

EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
	int (*f)(nvmlDevice_t, nvmlMemory_t *) =
		(int (*)(nvmlDevice_t, nvmlMemory_t *))R(R_nvmlDeviceGetMemoryInfo);
	int r;

	if (!f)
		return NVML_ERROR_FUNCTION_NOT_FOUND_;
	r = f(dev, mem);
	if (r || !mem || depth)
		return r;
	if (nvml_clamp(dev, &mem->free, &mem->total))
		mem->used = mem->total - mem->free;
	return r;
}

EXPORT int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
	int (*f)(nvmlDevice_t, nvmlMemory_v2_t *) =
		(int (*)(nvmlDevice_t, nvmlMemory_v2_t *))R(R_nvmlDeviceGetMemoryInfo_v2);
	int r;

	if (!f)
		return NVML_ERROR_FUNCTION_NOT_FOUND_;
	r = f(dev, mem);
	if (r || !mem || depth)
		return r;
	if (nvml_clamp(dev, &mem->free, &mem->total)) {
		if (mem->reserved > mem->total - mem->free)
			mem->reserved = mem->total - mem->free;
		mem->used = mem->total - mem->free - mem->reserved;
	}
	return r;
}
