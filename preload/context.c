// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Context wrappers: what a CUDA context costs on the device, measured as
 * it comes up (cuDevicePrimaryCtxRetain, cuCtxCreate_v2/_v3/_v4; NVML or
 * the driver's free memory), charged to the context holder and given back
 * when it goes (cuDevicePrimaryCtxRelease_v2/Reset_v2, cuCtxDestroy_v2).
 * While no authority answers (ST_DOWN) it is measured and remembered
 * (prim_pend, a pending K_CTX entry), charged at the catch-up.
 *
 * Layer 4: calls charge.c, authority.c, track.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- CUDA contexts: what they cost on the device, charged ---- */

/*
 * A context and the module images loaded with it take device memory the
 * application never asked for (518 MiB for a PyTorch process on the
 * H200); budgets that add up to the GPU fit on it only if it is charged.
 * The shim measures it: the device's free memory before and after the
 * context comes up -- from NVML, which needs no context (loaded here if
 * the application did not), else from the driver's cuMemGetInfo through
 * a context this process already has on the device (the primary one, if
 * active) -- and charges the difference to a holder of its own (same
 * eventfd rule as the plain holder: in a PyTorch process it may borrow,
 * and answers its tickets with 0), given back when the context goes.  A
 * neighbour allocating or freeing on the device at the same moment skews
 * the figure.  What the context loads later (lazy modules, library
 * workspaces) stays unseen: nxquotactl status shows it as unattributed.
 * NXQUOTA_CHARGE_CONTEXT=0: not charged.  Creations are measured one at a
 * time (S.ctx_mu).
 */
enum { M_NONE = 0, M_NVML, M_DRV };
struct ctxm {
	int src;		/* M_* */
	uint64_t before;
	int own;		/* own_before is NVML's figure for this process */
	uint64_t own_before;
};

static int nvml_dev(int ord, nvmlDevice_t *h)
{
	static int inited;	/* under S.ctx_mu */
	int (*init)(void) = (int (*)(void))R(R_nvmlInit_v2);
	int (*byuuid)(const char *, nvmlDevice_t *) =
		(int (*)(const char *, nvmlDevice_t *))R(R_nvmlDeviceGetHandleByUUID);
	char key[NXQ_DEVICE_KEY_MAX];

	if (!init || !byuuid || !R(R_nvmlDeviceGetMemoryInfo))
		return -1;
	if (!inited) {
		if (init())
			return -1;
		inited = 1;
	}
	if (dev_key(ord, key))
		return -1;
	return byuuid(key, h) ? -1 : 0;
}

int no_nvml;	/* tests: as if NVML were absent */

static int free_nvml(int ord, uint64_t *fr)
{
	int (*info)(nvmlDevice_t, nvmlMemory_t *) =
		(int (*)(nvmlDevice_t, nvmlMemory_t *))R(R_nvmlDeviceGetMemoryInfo);
	nvmlDevice_t h;
	nvmlMemory_t m;

	if (no_nvml || nvml_dev(ord, &h) || info(h, &m))
		return -1;
	*fr = m.free;
	return 0;
}

/* The driver's free memory of context c's device (c made current for the call). */
static int free_drv(CUcontext c, uint64_t *fr)
{
	CUresult (*push)(CUcontext) = (CUresult (*)(CUcontext))R(R_cuCtxPushCurrent_v2);
	CUresult (*pop)(CUcontext *) = (CUresult (*)(CUcontext *))R(R_cuCtxPopCurrent_v2);
	CUresult (*info)(size_t *, size_t *) =
		(CUresult (*)(size_t *, size_t *))R(R_cuMemGetInfo_v2);
	size_t f, t;
	CUcontext old;
	int r;

	if (!push || !pop || !info || !c || push(c))
		return -1;
	r = info(&f, &t) ? -1 : 0;
	pop(&old);
	*fr = f;
	return r;
}

/*
 * What this process has on device ord by NVML's list of compute processes:
 * 0 (with *used 0 when it is not listed), or -1 when NVML cannot say (no
 * such call, not supported, or a figure not available).  Only this list
 * tells the process's own memory from its neighbours': a pid namespace
 * (a container) hides it, as NVML lists the host's pids.
 */
static int own_nvml(int ord, uint64_t *used)
{
	int (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *) =
		(int (*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))
		R(R_nvmlDeviceGetComputeRunningProcesses_v3);
	nvmlProcessInfo_t buf[64], *p = buf;
	unsigned int n = 64, i;
	pid_t me = getpid();
	nvmlDevice_t h;
	int r;

	if (no_nvml || !procs || nvml_dev(ord, &h))
		return -1;
	r = procs(h, &n, p);
	if (r == 7 && n > 64 && n < 65536) {	/* NVML_ERROR_INSUFFICIENT_SIZE */
		n += 16;
		p = calloc(n, sizeof(*p));
		if (!p)
			return -1;
		r = procs(h, &n, p);
	}
	*used = 0;
	for (i = 0; !r && i < n; i++)
		if (p[i].pid == (unsigned int)me) {
			if (p[i].usedGpuMemory == ~0ULL)
				r = -1;
			else
				*used = p[i].usedGpuMemory;
			break;
		}
	if (p != buf)
		free(p);
	return r ? -1 : 0;
}

static void ctx_measure_begin(int ord, struct ctxm *m)
{
	CUresult (*state)(CUdevice, unsigned int *, int *) =
		(CUresult (*)(CUdevice, unsigned int *, int *))R(R_cuDevicePrimaryCtxGetState);
	CUresult (*retain)(CUcontext *, CUdevice) =
		(CUresult (*)(CUcontext *, CUdevice))R(R_cuDevicePrimaryCtxRetain);
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	unsigned int fl;
	int active = 0;
	CUcontext c;

	m->src = M_NONE;
	m->own = !own_nvml(ord, &m->own_before);
	if (!free_nvml(ord, &m->before)) {
		m->src = M_NVML;
		return;
	}
	/* no NVML: the driver, through the primary context if it is up already */
	if (!state || !retain || !release || state(ord, &fl, &active) || !active ||
	    retain(&c, ord))
		return;
	if (!free_drv(c, &m->before))
		m->src = M_DRV;
	release(ord);
}

/*
 * The bytes context c (now up on ord) took: 0 when it could not be
 * measured.  This process's own growth by NVML's list of processes when
 * it is listed there (at most the device's difference below); else the
 * device's free memory before less after,
 * which also counts what neighbours took meanwhile (a whole GPU's worth
 * if they fill it as this process starts), bounded by NXQUOTA_CONTEXT_MAX
 * (default 1 GiB; a context and its modules take about 520 MiB for
 * PyTorch on an H200).
 */
static uint64_t ctx_measure_end(int ord, const struct ctxm *m, CUcontext c)
{
	uint64_t after, own, d;
	int mine = m->own && !own_nvml(ord, &own) && own;

	if (m->src == M_NONE || (m->src == M_NVML ? free_nvml(ord, &after)
						 : free_drv(c, &after))) {
		CNT(ctx_unmeasured);
		SAY_ONCE(S.said_ctx, "cannot measure what a CUDA context takes on %s (no NVML, "
			 "libnvidia-ml.so.1, and no context up to ask the driver with): contexts "
			 "are not charged", S.dev[ord].key[0] ? S.dev[ord].key : "a device");
		return 0;
	}
	d = m->before > after ? m->before - after : 0;
	/*
	 * At most the device's difference: a listed pid that is not this
	 * process (a pid namespace's pid equal to a host pid) cannot raise it.
	 */
	if (mine) {
		own = own > m->own_before ? own - m->own_before : 0;
		return own < d ? own : d;
	}
	if (d > S.ctx_max) {
		char hd[NXQ_SIZE_FMT_LEN], hm[NXQ_SIZE_FMT_LEN];

		SAY_ONCE(S.said_ctxmax, "a CUDA context on %s measured %s by the device's free "
			 "memory, which counts other processes' allocations too: %s charged "
			 "(NXQUOTA_CONTEXT_MAX)", S.dev[ord].key[0] ? S.dev[ord].key : "a device",
			 nxq_size_format(d, NXQ_SIZE_IEC, hd, sizeof(hd)),
			 nxq_size_format(S.ctx_max, NXQ_SIZE_IEC, hm, sizeof(hm)));
		CNT(ctx_bounded);
		d = S.ctx_max;
	}
	return d;
}

/*
 * Is a context created now on ord to be measured and charged?  Also while
 * no authority answers (ST_DOWN, required or not: a context is not
 * refused for it): measured then, charged at the catch-up.
 */
static int ctx_on(int ord)
{
	return ord >= 0 && ord < MAXDEV && tracking(authority_nowait()) &&
	       __atomic_load_n(&S.charge_ctx, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&S.dev[ord].cstate, __ATOMIC_ACQUIRE) != DS_PASS;
}

/*
 * Charge a new context's bytes on ord (S.ctx_mu held): 0, or -1 refused
 * (said).  *pend: no authority yet, nothing charged -- the caller
 * remembers them for the catch-up (which takes S.ctx_mu: the state read
 * here holds until the caller is done).
 */
static int ctx_charge(int ord, uint64_t bytes, int *pend)
{
	int st;

	*pend = 0;
	if (!bytes)
		return 0;
	if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == ST_DOWN) {
		*pend = 1;
		__atomic_add_fetch(&S.cnt.ctx_bytes, bytes, __ATOMIC_RELAXED);
		return 0;
	}
	st = dev_state(ord, H_CTX);
	if (st == DS_PASS)
		return 0;
	if (st == DS_REFUSE) {
		CNT(refused);
		return -1;
	}
	if (owed_first(ord) || charge(ord, H_CTX, S.dev[ord].cholder, bytes, bytes))
		return -1;
	__atomic_add_fetch(&S.cnt.ctx_bytes, bytes, __ATOMIC_RELAXED);
	return 0;
}

/* A context's charge back; bytes it still owes (the catch-up's) first. */
static void ctx_uncharge(int ord, uint64_t bytes)
{
	uint64_t b = owed_pay(ord, H_CTX, bytes);

	if (b && S.dev[ord].cholder)
		uncharge(S.dev[ord].cholder, b);
	__atomic_sub_fetch(&S.cnt.ctx_bytes, bytes, __ATOMIC_RELAXED);
}

/*
 * The primary context (what the CUDA runtime and PyTorch use): measured
 * when this retain brings it up (it was not active), given back when a
 * release or reset leaves it down.  A charge the budget refuses fails the
 * retain with CUDA_ERROR_OUT_OF_MEMORY (the context released again).
 */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUcontext *, CUdevice), R_cuDevicePrimaryCtxRetain);
	CUresult (*state)(CUdevice, unsigned int *, int *) =
		(CUresult (*)(CUdevice, unsigned int *, int *))R(R_cuDevicePrimaryCtxGetState);
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	unsigned int fl;
	int active = 1;
	struct ctxm m;
	uint64_t bytes;
	CUresult cr;
	int pend;

	if (depth || !pctx || !ctx_on(dev))
		return f(pctx, dev);
	pthread_mutex_lock(&S.ctx_mu);
	if (!state || !release || state(dev, &fl, &active) || active) {
		pthread_mutex_unlock(&S.ctx_mu);
		return f(pctx, dev);
	}
	ctx_measure_begin(dev, &m);
	depth++;
	cr = f(pctx, dev);
	depth--;
	if (!cr && (bytes = ctx_measure_end(dev, &m, *pctx))) {
		if (ctx_charge(dev, bytes, &pend)) {
			depth++;
			release(dev);
			depth--;
			cr = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			S.dev[dev].prim_bytes += bytes;
			if (pend)
				S.dev[dev].prim_pend += bytes;
		}
	}
	pthread_mutex_unlock(&S.ctx_mu);
	return cr;
}

/* After a release or reset of ord's primary context: its charge goes if it is down. */
static void prim_gone(int ord)
{
	CUresult (*state)(CUdevice, unsigned int *, int *) =
		(CUresult (*)(CUdevice, unsigned int *, int *))R(R_cuDevicePrimaryCtxGetState);
	unsigned int fl;
	int active = 1;

	if (ord < 0 || ord >= MAXDEV || !__atomic_load_n(&S.dev[ord].prim_bytes, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&S.ctx_mu);
	if (S.dev[ord].prim_bytes && state && !state(ord, &fl, &active) && !active) {
		/* what is still pending was never charged */
		ctx_uncharge(ord, S.dev[ord].prim_bytes - S.dev[ord].prim_pend);
		__atomic_sub_fetch(&S.cnt.ctx_bytes, S.dev[ord].prim_pend, __ATOMIC_RELAXED);
		S.dev[ord].prim_bytes = 0;
		S.dev[ord].prim_pend = 0;
	}
	pthread_mutex_unlock(&S.ctx_mu);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUdevice), R_cuDevicePrimaryCtxRelease_v2);
	CUresult cr = f(dev);

	if (!cr && !depth && tracking(__atomic_load_n(&S.state, __ATOMIC_ACQUIRE)))
		prim_gone(dev);
	return cr;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUdevice), R_cuDevicePrimaryCtxReset_v2);
	CUresult cr = f(dev);

	if (!cr && !depth && tracking(__atomic_load_n(&S.state, __ATOMIC_ACQUIRE)))
		prim_gone(dev);
	return cr;
}

/*
 * A context of its own (cuCtxCreate, each version): measured around its
 * creation, remembered by its handle, given back at cuCtxDestroy.  A
 * charge the budget refuses destroys it again: CUDA_ERROR_OUT_OF_MEMORY.
 */
static CUresult ctx_created(int ord, CUresult cr, CUcontext *pctx, const struct ctxm *m)
{
	CUresult (*destroy)(CUcontext) = (CUresult (*)(CUcontext))R(R_cuCtxDestroy_v2);
	uint64_t bytes;
	int pend;

	if (cr || !(bytes = ctx_measure_end(ord, m, *pctx)))
		return cr;
	if (ctx_charge(ord, bytes, &pend)) {
		depth++;
		if (destroy)
			destroy(*pctx);
		depth--;
		*pctx = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (track(K_CTX, (uint64_t)(uintptr_t)*pctx, bytes, ord, NULL, pend)) {
		SAY_ONCE(S.said_hash, "out of memory tracking a context: its charge given back");
		if (pend)
			__atomic_sub_fetch(&S.cnt.ctx_bytes, bytes, __ATOMIC_RELAXED);
		else
			ctx_uncharge(ord, bytes);
	}
	return cr;
}

#define CTX_CREATE(call, dev)							\
	struct ctxm m;								\
	CUresult cr;								\
										\
	if (depth || !pctx || !ctx_on(dev))					\
		return call;							\
	pthread_mutex_lock(&S.ctx_mu);						\
	ctx_measure_begin(dev, &m);						\
	depth++;								\
	cr = call;								\
	depth--;								\
	cr = ctx_created(dev, cr, pctx, &m);					\
	pthread_mutex_unlock(&S.ctx_mu);					\
	return cr

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUcontext *, unsigned int, CUdevice), R_cuCtxCreate_v2);
	CTX_CREATE(f(pctx, flags, dev), dev);
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
			       unsigned int flags, CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUcontext *, CUexecAffinityParam *, int, unsigned int,
				  CUdevice), R_cuCtxCreate_v3);
	CTX_CREATE(f(pctx, params, n, flags, dev), dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
			       CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice),
		     R_cuCtxCreate_v4);
	CTX_CREATE(f(pctx, params, flags, dev), dev);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	REAL_OR_FAIL(CUresult (*)(CUcontext), R_cuCtxDestroy_v2);
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE), dn;
	struct ent *e;
	CUresult cr;

	if (depth || !tracking(st))
		return f(ctx);
	dn = st == ST_DOWN && down_begin();
	e = untrack(K_CTX, (uint64_t)(uintptr_t)ctx);
	depth++;
	cr = f(ctx);
	depth--;
	if (e) {
		if (cr) {
			retrack(K_CTX, e);
		} else {
			if (e->pend)	/* never charged */
				__atomic_sub_fetch(&S.cnt.ctx_bytes, e->bytes, __ATOMIC_RELAXED);
			else
				ctx_uncharge(e->dev, e->bytes);
			ent_free(e);
		}
	}
	if (dn)
		down_end();
	return cr;
}
