// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxquota-preload.so: the CUDA driver's allocation calls of a process
 * that does not link libnxquota, charged to its cgroup through the same
 * authority the library uses (the module, the daemon where the library
 * finds one), before the real allocation; uncharged after the free.
 *
 * How calls reach the wrappers:
 *  - exported symbols: an application (or library) linked against libcuda
 *    binds cuMemAlloc_v2 & co to this library, which LD_PRELOAD puts first;
 *  - cuGetProcAddress / cuGetProcAddress_v2: the CUDA runtime resolves
 *    every driver call through it; for the names below the wrapper is
 *    returned instead of the driver's entry point;
 *  - dlsym(): the runtime finds cuGetProcAddress with dlsym() on its own
 *    handle of libcuda.so.1, which searches libcuda only, not the
 *    preloaded libraries; dlsym is interposed for the wrapped names (and
 *    tail-calls glibc's for everything else, so that RTLD_NEXT stays
 *    relative to the real caller).  Lookups made by libnxquota.so, or by
 *    any library between nxquota_preload_exempt(1) and (0), are left
 *    alone: a process that links the library is charged by it.
 *
 * What is charged (see preload/README.md for the reasons):
 *  - cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged: the bytes asked
 *    (pitch * height once the pitch is known), on the current context's
 *    device, to a holder without an eventfd (nothing of it can be given
 *    back without the application: such a holder cannot borrow beyond its
 *    cgroup's guarantee, so no ticket ever waits on it);
 *  - cuMemCreate: the handle's size, on prop->location's device (host
 *    locations are not device memory: not charged), same holder;
 *  - stream-ordered pools (cuMemAllocAsync, cuMemAllocFromPoolAsync and
 *    their _ptsz forms): what the pool reserves, not each block: charged
 *    ahead by the growth an allocation may cause, then set to the pool's
 *    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT after it; to a second holder per
 *    device that has an eventfd, because unused reserved pool memory can be
 *    given back (cuMemPoolTrimTo) without the application: a thread of this
 *    library answers its tickets that way;
 *  - frees: cuMemFree_v2 uncharges what its allocation charged; a handle
 *    is uncharged when it is released (cuMemRelease) and its last mapping
 *    unmapped (cuMemMap/cuMemUnmap are followed: the driver frees the
 *    memory then); cuMemPoolTrimTo and cuMemPoolDestroy bring a pool's
 *    charge down to what it still reserves;
 *  - contexts (issue 20): what a context takes on the device, measured as
 *    it comes up (cuDevicePrimaryCtxRetain, cuCtxCreate_v2/_v3/_v4), to a
 *    third holder per device; given back when it goes.
 *
 * What the application is told (issue 20): cuMemGetInfo and NVML's
 * nvmlDeviceGetMemoryInfo report the budget (STATUS version 1's room and
 * limit, at most the device's); a refused charge is said on stderr, with
 * the node that refused and what would help; NXQUOTA_REQUIRE=1 refuses
 * every allocation while no authority answers, instead of passing.
 *
 * One thread-local depth counter: a wrapper called while another wrapper
 * of the same thread is in the driver (the driver calling its own exported
 * entry points) passes straight through, so nothing is charged twice.
 *
 * No authority (no module, no daemon), or NXQ_PRELOAD=off: every wrapper
 * passes straight through, and the process is told once on stderr (with
 * NXQUOTA_REQUIRE=1: every allocation is refused, and the authority looked
 * for again once a second).
 *
 * Sizes are remembered per pointer and per handle in a sharded hash (the
 * only allocation on the allocation path).  Fork: the child's state is
 * reset in a pthread_atfork() handler; its first allocation opens its own
 * context (CUDA itself does not carry a context across fork()).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_api.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

/* CUDA values this file needs beyond lib/cuda_api.h (cuda.h's, same ABI). */
#define CUDA_ERROR_INVALID_CONTEXT_		201
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM_	(1ULL << 1)
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_	5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT_	7
#define CU_MEM_LOCATION_TYPE_DEVICE_		1

/* ---- real entry points ---- */

enum {
#define W(n) R_##n,
	NXQP_WRAPPED(W)
#undef W
	NWRAP,
	R_cuCtxGetDevice = NWRAP,
	R_cuDeviceGetCount,
	R_cuDeviceGetUuid_v2,
	R_cuDeviceGetMemPool,
	R_cuMemPoolGetAttribute,
	R_cuMemFreeAsync,
	R_cuMemFreeAsync_ptsz,
	R_cuDevicePrimaryCtxGetState,
	R_cuCtxPushCurrent_v2,
	R_cuCtxPopCurrent_v2,
	R_cuCtxSynchronize,
	R_cuStreamSynchronize,
	R_cuStreamSynchronize_ptsz,
	NCUDA,
	/* NVML's, from libnvidia-ml.so.1 (nvml_init()) */
	R_nvmlInit_v2 = NCUDA,
	R_nvmlDeviceGetHandleByUUID,
	R_nvmlDeviceGetUUID,
	R_nvmlDeviceGetComputeRunningProcesses_v3,
	NREAL
};

/* Is entry point i NVML's (resolved from libnvidia-ml.so.1, not libcuda)? */
#define IS_NVML(i)	((i) >= NXQP_FIRST_NVML && ((i) < NWRAP || (i) >= NCUDA))

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
	[R_nvmlInit_v2] = "nvmlInit_v2",
	[R_nvmlDeviceGetHandleByUUID] = "nvmlDeviceGetHandleByUUID",
	[R_nvmlDeviceGetUUID] = "nvmlDeviceGetUUID",
	[R_nvmlDeviceGetComputeRunningProcesses_v3] = "nvmlDeviceGetComputeRunningProcesses_v3",
};

static void *const wrapper[NWRAP] = {
#define W(n) [R_##n] = (void *)n,
	NXQP_WRAPPED(W)
#undef W
};

static void *real[NREAL];
static void *(*real_dlsym)(void *, const char *);
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

static __thread int depth __attribute__((tls_model("initial-exec")));
static __thread int exempt __attribute__((tls_model("initial-exec")));	/* see nxquota_preload_exempt() */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "nxquota-preload[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
}

/* Say it once per process (and once again in a forked child). */
#define SAY_ONCE(flag, ...) do {						\
	if (!__atomic_exchange_n(&(flag), 1, __ATOMIC_RELAXED))			\
		say(__VA_ARGS__);						\
} while (0)

static void dlsym_init(void)
{
	/* glibc >= 2.34 has dlsym in libc at GLIBC_2.34; older at 2.2.5 (x86-64) / 2.17 (arm64). */
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };

	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]) && !real_dlsym; i++)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", vers[i]);
}

static void real_init(void)
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
static void nvml_init(void)
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

static inline void *R(int i)
{
	void *p = __atomic_load_n(&real[i], __ATOMIC_ACQUIRE);

	if (__builtin_expect(!p, 0)) {
		pthread_once(IS_NVML(i) ? &nvml_once : &real_once,
			     IS_NVML(i) ? nvml_init : real_init);
		p = __atomic_load_n(&real[i], __ATOMIC_ACQUIRE);
	}
	return p;
}

/* ---- state: the context, holders, pools, the ticket thread ---- */

#define MAXDEV		64
#define MAXPOOL		256
#define POOL_STEP	(2ULL << 20)

enum { DS_UNKNOWN = 0, DS_CHARGE, DS_PASS, DS_REFUSE };
/* The holders of a device (dev_state()'s kind). */
enum { H_PLAIN = 0, H_POOL, H_CTX, NHKIND };
/* S.state; the settled ones (charging, passing) are odd: authority()'s test */
enum { ST_REFUSE = -2, ST_PASS = -1, ST_UNKNOWN = 0, ST_CHARGE = 1 };

struct dev {
	int state;		/* DS_*: the plain holder (atomic) */
	int pstate;		/* DS_*: the pool holder (atomic) */
	int cstate;		/* DS_*: the context holder (atomic) */
	uint64_t holder;	/* allocations only the application frees: no eventfd */
	uint64_t pholder;	/* stream-ordered pools: eventfd where tickets exist */
	uint64_t cholder;	/* contexts' memory: an eventfd where the plain holder has one */
	uint64_t credit;	/* plain holder: charged, held by no allocation (atomic) */
	uint64_t last;		/* plain holder: the size of the last granted allocation (atomic) */
	int evfd;
	int plevfd;		/* the plain holder's eventfd: a PyTorch process (see py_release) */
	int cevfd;		/* the context holder's eventfd: its tickets are answered 0 */
	int collect;		/* a ticket collects the plain holder's frees (atomic; col_mu) */
	uint64_t collected;	/* under col_mu */
	uint64_t prim_bytes;	/* charged for the primary context (under S.ctx_mu) */
	uint64_t said_ns;	/* the last refusal line for this device (atomic) */
	uint64_t unsaid;	/* refusals not said since (atomic) */
	char key[NXQ_DEVICE_KEY_MAX];
};

struct pool {
	CUmemoryPool pool;	/* NULL: free slot */
	int dev;		/* -1: not device memory, not charged */
	uint64_t charged;	/* under mu */
	uint64_t reserved;	/* under mu: its reservation when last asked */
	uint64_t used_ub;	/* under mu: what it used when last asked, plus what was allocated since */
	pthread_mutex_t mu;
};

static struct {
	pthread_mutex_t lock;	/* init, registration, pool slots, the thread */
	int state;		/* ST_*: 0 not yet (atomic) */
	struct nxq_ctx *ctx;
	struct nxq_ctx *stale;	/* the parent's context, in a forked child */
	uint64_t wait_ns;
	uint64_t batch;		/* NXQ_PRELOAD_BATCH */
	int require;		/* NXQUOTA_REQUIRE: no authority refuses, never passes */
	int quiet;		/* NXQUOTA_QUIET: no refusal lines */
	int charge_ctx;		/* NXQUOTA_CHARGE_CONTEXT (default on) */
	uint64_t ctx_max;	/* NXQUOTA_CONTEXT_MAX (default 1 GiB) */
	uint64_t retry_ns;	/* ST_REFUSE: when the authority was last looked for (atomic) */
	uint64_t gap_ns;	/* 1 s: between two looks for an authority, two refusal lines */
	struct dev dev[MAXDEV];
	struct pool pool[MAXPOOL];
	int epfd, stopfd, thread_on;
	pthread_t thread;
	pthread_mutex_t ctx_mu;	/* a context's creation measured: one at a time */
	pthread_mutex_t say_mu;	/* last_said */
	char last_said[1024];
	int said_none, said_err, said_pool, said_hash, said_gpa, said_sync, said_py;
	int said_require, said_lost, said_ctx, said_nvml, said_ctxmax;
	/* PyTorch's cache (see py_release) */
	pthread_mutex_t col_mu;	/* d->collect, d->collected */
	pthread_mutex_t py_mu;	/* py_pending, py_done; py_cv */
	pthread_cond_t py_cv;	/* CLOCK_MONOTONIC */
	int py_pending;		/* a callback is queued and has not run yet */
	uint64_t py_done;	/* callbacks run */
	uint64_t py_wait_ns;	/* NXQ_PRELOAD_PY_WAIT_MS */
	int py_torch;		/* -1 not looked at, 0 no, 1 a PyTorch process */
	int verbose;		/* NXQ_PRELOAD_VERBOSE: each ticket answer said */
	int one_dev;		/* -1 not asked, 1: the process sees one device (cur_dev) */
	/* tests */
	int test_set;
	const struct nxq_kops *test_kops;
	void *test_kpriv;
	struct nxqp_counters cnt;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .ctx_mu = PTHREAD_MUTEX_INITIALIZER,
	.say_mu = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .stopfd = -1, .one_dev = -1,
	.gap_ns = 1000000000ULL };

#define SAY_RESET() do {							\
	S.said_none = S.said_err = S.said_pool = S.said_hash = S.said_gpa = 0;	\
	S.said_sync = S.said_py = S.said_require = S.said_lost = 0;		\
	S.said_ctx = S.said_nvml = S.said_ctxmax = 0;				\
} while (0)

#define CNT(f) __atomic_add_fetch(&S.cnt.f, 1, __ATOMIC_RELAXED)

/* ---- the pointer/handle hash ---- */

#define HBITS	12
#define NSHARD	64
/*
 * Kinds of entries: a pointer (cuMemAlloc & co), a handle (cuMemCreate,
 * until released), a mapping (cuMemMap: va -> its handle's entry, which
 * it holds), a context (cuCtxCreate).
 */
enum { K_PTR = 0, K_HANDLE, K_MAP, K_CTX, NKIND };

struct ent {
	uint64_t key;
	uint64_t bytes;		/* K_MAP: the mapping's size */
	int dev;
	/*
	 * K_HANDLE: 2 x its live mappings, + 1 once released (atomic): the
	 * charge goes when it reads 1 (released, the last mapping gone).
	 */
	uint32_t hst;
	struct ent *h;		/* K_MAP: the handle's entry */
	struct ent *next;
};

static struct ent *tab[NKIND][1U << HBITS];
static pthread_mutex_t shard[NSHARD];
static pthread_once_t shard_once = PTHREAD_ONCE_INIT;
static long tracked[NSHARD];	/* entries per shard, under its lock (no atomic per pair) */

static void shard_init(void)
{
	for (int i = 0; i < NSHARD; i++)
		pthread_mutex_init(&shard[i], NULL);
}

static unsigned int hidx(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (unsigned int)(k & ((1U << HBITS) - 1));
}

/*
 * One entry kept per thread: a warm allocation/free pair reuses it instead
 * of a malloc() and a free() (a thread that ends leaves its one entry).
 */
static __thread struct ent *spare __attribute__((tls_model("initial-exec")));

static void ent_free(struct ent *e)
{
	if (!spare)
		spare = e;
	else
		free(e);
}

/* Remember key (h: a mapping's handle entry, else NULL): 0, or -ENOMEM. */
static int track(int kind, uint64_t key, uint64_t bytes, int dev, struct ent *h)
{
	struct ent *e = spare;
	unsigned int i = hidx(key);

	if (e)
		spare = NULL;
	else
		e = malloc(sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->bytes = bytes;
	e->dev = dev;
	e->hst = 0;
	e->h = h;
	pthread_mutex_lock(&shard[i % NSHARD]);
	e->next = tab[kind][i];
	tab[kind][i] = e;
	tracked[i % NSHARD]++;
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return 0;
}

/* Take key's entry out; NULL if not tracked. */
static struct ent *untrack(int kind, uint64_t key)
{
	unsigned int i = hidx(key);
	struct ent **pp, *e = NULL;

	pthread_mutex_lock(&shard[i % NSHARD]);
	for (pp = &tab[kind][i]; *pp; pp = &(*pp)->next)
		if ((*pp)->key == key) {
			e = *pp;
			*pp = e->next;
			tracked[i % NSHARD]--;
			break;
		}
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return e;
}

static void retrack(int kind, struct ent *e)
{
	unsigned int i = hidx(e->key);

	pthread_mutex_lock(&shard[i % NSHARD]);
	e->next = tab[kind][i];
	tab[kind][i] = e;
	tracked[i % NSHARD]++;
	pthread_mutex_unlock(&shard[i % NSHARD]);
}

/* ---- the authority ---- */

static void ticket_thread_stop(void);

/* With S.lock held: forget everything (a forked child, or a test's reset). */
static void state_drop_locked(int close_ctx)
{
	/* mappings first: a handle released while mapped is held by them alone */
	for (unsigned int i = 0; i < (1U << HBITS); i++) {
		struct ent *e = tab[K_MAP][i], *n;

		for (; e; e = n) {
			n = e->next;
			if (__atomic_sub_fetch(&e->h->hst, 2, __ATOMIC_RELAXED) == 1)
				free(e->h);
			free(e);
		}
		tab[K_MAP][i] = NULL;
	}
	for (int k = 0; k < NKIND; k++)
		for (unsigned int i = 0; i < (1U << HBITS); i++) {
			struct ent *e = tab[k][i], *n;

			for (; e; e = n) {
				n = e->next;
				free(e);
			}
			tab[k][i] = NULL;
		}
	memset(tracked, 0, sizeof(tracked));
	for (int i = 0; i < MAXDEV; i++) {
		if (S.dev[i].evfd > 0)
			close(S.dev[i].evfd);
		if (S.dev[i].plevfd > 0)
			close(S.dev[i].plevfd);
		if (S.dev[i].cevfd > 0)
			close(S.dev[i].cevfd);
		memset(&S.dev[i], 0, sizeof(S.dev[i]));
	}
	for (int i = 0; i < MAXPOOL; i++) {
		S.pool[i].pool = NULL;
		S.pool[i].charged = 0;
	}
	if (S.ctx) {
		if (close_ctx)
			nxq_ctx_close(S.ctx);
		else
			S.stale = S.ctx;
	}
	S.ctx = NULL;
	S.one_dev = -1;
	__atomic_store_n(&S.state, 0, __ATOMIC_RELEASE);
}

static int env_on(const char *name, int dflt)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return dflt;
	return strcmp(v, "0") && strcmp(v, "off") && strcmp(v, "no");
}

static uint64_t now_ns(void);

static int authority_init(void)
{
	struct nxq_ctx_opts o = { .size = sizeof(o), .flags = NXQ_CTX_NO_THREAD };
	const char *env = getenv("NXQ_PRELOAD");
	uint64_t ms = 0;
	int r, st;

	pthread_mutex_lock(&S.lock);
	st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
	if (st != ST_UNKNOWN) {
		pthread_mutex_unlock(&S.lock);
		return st;
	}
	if (S.stale) {		/* a forked child: free our copy of the parent's */
		nxq_ctx_close(S.stale);
		S.stale = NULL;
	}
	S.require = env_on("NXQUOTA_REQUIRE", 0);
	S.quiet = env_on("NXQUOTA_QUIET", 0);
	S.charge_ctx = env_on("NXQUOTA_CHARGE_CONTEXT", 1);
	S.ctx_max = 1ULL << 30;
	if (nxq__env_size("NXQUOTA_CONTEXT_MAX", &S.ctx_max) < 0) {
		say("NXQUOTA_CONTEXT_MAX is not a size: 1 GiB");
		S.ctx_max = 1ULL << 30;
	}
	if (env && !strcmp(env, "off") && S.require) {
		SAY_ONCE(S.said_none, "NXQ_PRELOAD=off ignored: NXQUOTA_REQUIRE=1 (the operator "
			 "requires a ledger)");
	} else if (env && !strcmp(env, "off")) {
		SAY_ONCE(S.said_none, "NXQ_PRELOAD=off: CUDA allocations of this process "
			 "are not charged");
		st = ST_PASS;
		goto out;
	}
	if (nxq__env_ms("NXQ_PRELOAD_WAIT_MS", &ms) < 0)
		say("NXQ_PRELOAD_WAIT_MS is not a number of milliseconds: not waiting");
	S.wait_ns = ms * 1000000ULL;
	ms = 250;
	if (nxq__env_ms("NXQ_PRELOAD_PY_WAIT_MS", &ms) < 0)
		say("NXQ_PRELOAD_PY_WAIT_MS is not a number of milliseconds: 250");
	S.py_wait_ns = ms * 1000000ULL;
	S.verbose = getenv("NXQ_PRELOAD_VERBOSE") && strcmp(getenv("NXQ_PRELOAD_VERBOSE"), "0");
	S.py_torch = -1;
	S.batch = 2ULL << 20;
	if (nxq__env_size("NXQ_PRELOAD_BATCH", &S.batch) < 0) {
		say("NXQ_PRELOAD_BATCH is not a size: charging each allocation exactly");
		S.batch = 0;
	}
	if (S.test_set)
		r = S.test_kops ? nxq__ctx_open_kops(&o, S.test_kops, S.test_kpriv, &S.ctx)
				: nxq_ctx_open(&o, &S.ctx);
	else
		r = nxq_ctx_open(&o, &S.ctx);
	if (r && S.require) {
		SAY_ONCE(S.said_require, "NXQUOTA_REQUIRE=1 and no nxquota authority (%s): every "
			 "CUDA allocation of this process is refused until one answers",
			 nxq_errmsg());
		S.ctx = NULL;
		__atomic_store_n(&S.retry_ns, now_ns(), __ATOMIC_RELAXED);
		st = ST_REFUSE;
		goto out;
	}
	if (r) {
		SAY_ONCE(S.said_none, "no nxquota authority (%s): CUDA allocations of this "
			 "process are not charged", nxq_errmsg());
		S.ctx = NULL;
		st = ST_PASS;
		goto out;
	}
	if (S.said_require)
		say("an nxquota authority answers (%s): CUDA allocations are charged from now on",
		    S.ctx->kops->name);
	st = ST_CHARGE;
out:
	__atomic_store_n(&S.state, st, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	return st;
}

/*
 * ST_REFUSE (NXQUOTA_REQUIRE, no authority): look for one again, at most
 * once a second (only refused calls get here).
 */
static int authority_retry(void)
{
	uint64_t now = now_ns(), last = __atomic_load_n(&S.retry_ns, __ATOMIC_RELAXED);

	if (now - last < S.gap_ns ||
	    !__atomic_compare_exchange_n(&S.retry_ns, &last, now, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return ST_REFUSE;
	pthread_mutex_lock(&S.lock);
	if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == ST_REFUSE)
		__atomic_store_n(&S.state, ST_UNKNOWN, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	return authority_init();
}

static inline int authority(void)
{
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);

	if (__builtin_expect(st & 1, 1))	/* ST_CHARGE or ST_PASS: settled */
		return st;
	return st == ST_REFUSE ? authority_retry() : authority_init();
}

static int dev_key(int ord, char key[NXQ_DEVICE_KEY_MAX])
{
	CUresult (*uuid)(CUuuid *, CUdevice) = (CUresult (*)(CUuuid *, CUdevice))R(R_cuDeviceGetUuid_v2);
	const unsigned char *b;
	CUuuid u;

	if (!uuid || uuid(&u, ord))
		return -ENODEV;
	b = (const unsigned char *)u.bytes;
	snprintf(key, NXQ_DEVICE_KEY_MAX,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
		 b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

static int ticket_thread_start_locked(void);
static int py_torch_locked(void);

/*
 * Register device ord's holder of the given kind (H_PLAIN, H_POOL,
 * H_CTX) once; the state says what its charges get.  Not registered with
 * the authority (-ENOENT/-ENODEV): not under nxquota, passed through
 * (refused with NXQUOTA_REQUIRE); any other refusal (no budget, no access
 * to the device): refused.
 */
static int dev_state(int ord, int kind)
{
	struct dev *d;
	struct nxq_holder_reg reg = { .size = sizeof(reg), .eventfd = -1 };
	int *stp, st, r, evfd = -1;
	static const char *const what[NHKIND] = { "PyTorch's cached", "pool", "context" };

	if (ord < 0 || ord >= MAXDEV)
		return DS_PASS;
	d = &S.dev[ord];
	stp = kind == H_POOL ? &d->pstate : kind == H_CTX ? &d->cstate : &d->state;
	st = __atomic_load_n(stp, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st != DS_UNKNOWN, 1))
		return st;
	pthread_mutex_lock(&S.lock);
	st = *stp;
	if (st != DS_UNKNOWN || !S.ctx)
		goto out;
	if (!d->key[0] && dev_key(ord, d->key)) {
		st = DS_PASS;
		goto out;
	}
	memcpy(reg.device, d->key, sizeof(reg.device));
	/*
	 * An eventfd only where someone will read it and can give something
	 * back: else tickets would wait in vain.  The pool holder: trims.  The
	 * plain holder: only in a PyTorch process, whose cached segments
	 * torch.cuda.empty_cache() releases (py_release()).  The context
	 * holder: as the plain one, so that a PyTorch process that may borrow
	 * may borrow for its context too (it answers its tickets with 0).
	 */
	if ((kind == H_POOL || py_torch_locked() > 0) && (S.ctx->features & NXQ_FEAT_TICKETS) &&
	    !ticket_thread_start_locked()) {
		evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (evfd < 0)
			say("eventfd: %s: %s memory on %s cannot be asked back", strerror(errno),
			    what[kind], d->key);
		reg.eventfd = evfd;
	}
	r = S.ctx->kops->holder_register(S.ctx, &reg);
	if ((r == -ENOENT || r == -ENODEV) && S.require) {
		say("%s is not under nxquota (%s) and NXQUOTA_REQUIRE=1: its allocations are "
		    "refused", d->key, strerror(-r));
		st = DS_REFUSE;
	} else if (r == -ENOENT || r == -ENODEV) {
		say("%s is not under nxquota (%s): its allocations are not charged", d->key,
		    strerror(-r));
		st = DS_PASS;
	} else if (r) {
		say("cannot register a holder for %s (%s): its allocations are refused", d->key,
		    strerror(-r));
		st = DS_REFUSE;
	} else {
		/* MAXDEV + ord: the plain holder's tickets; 2 MAXDEV + ord: the context's */
		uint32_t tag = (uint32_t)(kind == H_POOL ? ord : kind == H_PLAIN ? MAXDEV + ord
					   : 2 * MAXDEV + ord);

		st = DS_CHARGE;
		CNT(holders);
		if (kind == H_POOL) {
			d->pholder = reg.holder_id;
			d->evfd = evfd;
		} else if (kind == H_PLAIN) {
			d->holder = reg.holder_id;
			d->plevfd = evfd;
		} else {
			d->cholder = reg.holder_id;
			d->cevfd = evfd;
		}
		if (evfd >= 0) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

			if (epoll_ctl(S.epfd, EPOLL_CTL_ADD, evfd, &ev))
				say("epoll_ctl: %s: tickets for %s go unanswered", strerror(errno),
				    d->key);
			else if (S.verbose && kind == H_PLAIN)
				say("%s: a PyTorch process: its cached segments are given back "
				    "on a ticket (torch.cuda.empty_cache())", d->key);
		}
		evfd = -1;
	}
	if (evfd >= 0)
		close(evfd);
out:
	if (st == DS_UNKNOWN)
		st = DS_PASS;	/* no context (a reset): pass */
	__atomic_store_n(stp, st, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	return st;
}

/* ---- refusals said: why, and what would help ---- */

/* "4 GiB", "1.5 MiB", "4096 B": a size for a person. */
static const char *hsize(char *buf, size_t n, uint64_t v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double x = (double)v;
	int u = 0;

	if (v == NXQ_UNLIMITED) {
		snprintf(buf, n, "unlimited");
		return buf;
	}
	while (x >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (!u || x == (double)(uint64_t)x)
		snprintf(buf, n, "%llu %s", (unsigned long long)x, unit[u]);
	else
		snprintf(buf, n, "%.1f %s", x, unit[u]);
	return buf;
}

/* This process's cgroup (v2), as /proc/self/cgroup says it ("0::PATH"). */
static void cgroup_path(char *out, size_t n)
{
	char buf[4096], *p;
	ssize_t len;
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

	snprintf(out, n, "(unknown cgroup)");
	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = 0;
	for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "0::", 3)) {
			char *e = strchr(p + 3, '\n');

			if (e)
				*e = 0;
			snprintf(out, n, "%s", p + 3);
			return;
		}
}

/* The node level levels up from cgroup cg: its path, "/" at the top. */
static void node_path(const char *cg, uint32_t level, char *out, size_t n)
{
	size_t len = strlen(cg);
	uint32_t up = 0;

	while (len > 1 && cg[len - 1] == '/')
		len--;
	while (up < level && len > 1) {
		while (len > 0 && cg[len - 1] != '/')
			len--;
		while (len > 1 && cg[len - 1] == '/')
			len--;
		up++;
	}
	if (up < level) {	/* above what this cgroup namespace shows */
		snprintf(out, n, "the cgroup %u level%s above %s (outside this cgroup namespace)",
			 level, level == 1 ? "" : "s", cg);
		return;
	}
	if (len == 0 || (len == 1 && cg[0] == '/'))
		snprintf(out, n, "/");
	else
		snprintf(out, n, "%.*s", (int)len, cg);
}

static const char *const kind_what[NHKIND] = { "an allocation", "a pool's growth",
						"a CUDA context" };

/* Does device ord's holder of this kind have an eventfd (can it give back)? */
static int holder_evfd(int ord, int kind)
{
	const struct dev *d = &S.dev[ord];

	return (kind == H_POOL ? d->evfd : kind == H_CTX ? d->cevfd : d->plevfd) >= 0;
}

/*
 * One line on stderr for a refused charge of bytes (err: the authority's
 * answer) by device ord's holder of this kind: the device, this process's
 * cgroup, the node that refused (STATUS version 1: last_level levels up),
 * its limit, min and usage, and what would help.  At most one line per
 * device per second (the refusals in between are counted in the next);
 * none with NXQUOTA_QUIET.  A trip to the authority (STATUS), on the
 * refusal path only.
 */
static void refusal_say(int ord, int kind, uint64_t holder, uint64_t bytes, uint64_t asked,
			int err, uint64_t waited_ns)
{
	struct dev *d = &S.dev[ord];
	uint64_t now = now_ns(), last = __atomic_load_n(&d->said_ns, __ATOMIC_RELAXED), more;
	char cg[512], node[640], hb[32], hl[32], hm[32], hu[32], line[1024], wait[160] = "";
	char more_b[64] = "";
	struct nxq_status st;
	int evfd = holder_evfd(ord, kind), v1, n;

	if (S.quiet)
		return;
	if ((last && now - last < S.gap_ns) ||
	    !__atomic_compare_exchange_n(&d->said_ns, &last, now, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&d->unsaid, 1, __ATOMIC_RELAXED);
		return;
	}
	more = __atomic_exchange_n(&d->unsaid, 0, __ATOMIC_RELAXED);
	cgroup_path(cg, sizeof(cg));
	v1 = (S.ctx->features & NXQ_FEAT_STATUS_V1) && !nxq__status(S.ctx, holder, &st) &&
	     st.last_error;
	hsize(hb, sizeof(hb), asked);
	if (asked != bytes)	/* the rest was charged already (the credit) */
		snprintf(more_b, sizeof(more_b), " (%s of it to charge)",
			 hsize(hl, sizeof(hl), bytes));
	if (err == -ETIMEDOUT)
		snprintf(wait, sizeof(wait), " after waiting %llu ms for memory given back",
			 (unsigned long long)(waited_ns / 1000000ULL));
	else if (S.wait_ns && waited_ns < S.wait_ns)
		snprintf(wait, sizeof(wait), " at once, although it may wait %llu ms "
			 "(NXQ_PRELOAD_WAIT_MS): waiting cannot make room for it",
			 (unsigned long long)(S.wait_ns / 1000000ULL));
	n = snprintf(line, sizeof(line), "refused %s of %s%s on %s for cgroup %s%s: ",
		     kind_what[kind], hb, more_b, d->key, cg, wait);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	if (!v1) {
		snprintf(line + n, sizeof(line) - (size_t)n, "%s (the authority does not say "
			 "which budget: no NXQ_FEAT_STATUS_V1)", strerror(-err));
	} else if (st.last_level == NXQ_LEVEL_DEVICE) {
		snprintf(line + n, sizeof(line) - (size_t)n, "the GPU is full (capacity %s, "
			 "charged %s): wait for memory to come back (nxquota-run --wait MS) or "
			 "ask the borrowers on it to give memory back",
			 hsize(hl, sizeof(hl), st.last_limit), hsize(hu, sizeof(hu), st.last_usage));
	} else {
		int guarantee = !evfd && st.last_limit < st.node_effective_max;

		node_path(cg, st.last_level, node, sizeof(node));
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s (%u level%s up) is at its "
			      "%s: limit %s, min %s, in use %s; ", node, st.last_level,
			      st.last_level == 1 ? "" : "s", guarantee ? "guarantee" : "limit",
			      hsize(hl, sizeof(hl), st.last_limit),
			      hsize(hm, sizeof(hm), st.last_min),
			      hsize(hu, sizeof(hu), st.last_usage));
		if (n < 0 || (size_t)n >= sizeof(line))
			n = (int)sizeof(line) - 1;
		if (!st.last_limit)
			snprintf(line + n, sizeof(line) - (size_t)n, "nothing may be charged there "
				 "(no budget: a new device's default_max is 0): set one, e.g. "
				 "nxquotactl set %s %s min=SIZE max=SIZE", cg, d->key);
		else if (guarantee)
			snprintf(line + n, sizeof(line) - (size_t)n, "this process cannot give "
				 "memory back, so it may charge only within its guarantee: raise "
				 "the min of %s or use a runtime that answers tickets (libnxquota; "
				 "PyTorch under the shim)", node);
		else if (!evfd)
			snprintf(line + n, sizeof(line) - (size_t)n, "raise the max of %s (and "
				 "its min: this process cannot give memory back, so it may charge "
				 "only within its guarantee)", node);
		else
			snprintf(line + n, sizeof(line) - (size_t)n, "raise the max of %s, or "
				 "free memory below it", node);
	}
	if (more) {
		size_t l = strlen(line);

		snprintf(line + l, sizeof(line) - l, " (and %llu more refused since the last "
			 "line)", (unsigned long long)more);
	}
	CNT(said);
	pthread_mutex_lock(&S.say_mu);
	snprintf(S.last_said, sizeof(S.last_said), "%s", line);
	pthread_mutex_unlock(&S.say_mu);
	say("%s", line);
}

/*
 * A charge of bytes by device ord's holder of this kind, for something of
 * asked bytes (an allocation whose rest the credit covers): 0, or -1
 * refused (counted; said: refusal_say() for the ledger's refusals, once
 * for other errors -- the authority gone, say).
 */
static int charge(int ord, int kind, uint64_t holder, uint64_t bytes, uint64_t asked)
{
	uint64_t t0 = 0;
	int r;

	if (!bytes)
		return 0;
	CNT(trips);
	if (S.wait_ns)
		t0 = now_ns();
	r = S.ctx->kops->charge(S.ctx, holder, bytes, S.wait_ns);
	if (!r) {
		CNT(charges);
		return 0;
	}
	CNT(refused);
	if (r == -EDQUOT || r == -ENOSPC || r == -ETIMEDOUT)
		refusal_say(ord, kind, holder, bytes, asked, r, S.wait_ns ? now_ns() - t0 : 0);
	else if (S.require)
		SAY_ONCE(S.said_lost, "charge of %llu bytes on %s failed: %s; NXQUOTA_REQUIRE=1: "
			 "allocations that need the authority are refused while it does not "
			 "answer", (unsigned long long)bytes, S.dev[ord].key, strerror(-r));
	else
		SAY_ONCE(S.said_err, "charge of %llu bytes failed: %s; the allocation is "
			 "refused", (unsigned long long)bytes, strerror(-r));
	return -1;
}

static void uncharge(uint64_t holder, uint64_t bytes)
{
	int r;

	if (!bytes)
		return;
	CNT(trips);
	r = S.ctx->kops->uncharge(S.ctx, holder, bytes);
	if (r)
		SAY_ONCE(S.said_err, "uncharge of %llu bytes failed: %s",
			 (unsigned long long)bytes, strerror(-r));
	else
		CNT(uncharges);
}

/*
 * The plain holder's credit: bytes charged but held by no allocation, so
 * that repeated allocation/free pairs ask the authority once, not twice
 * per pair, whatever their size.  A charge that needs the authority asks
 * for NXQ_PRELOAD_BATCH more than the allocation needs; a free gives its
 * bytes to the credit, which keeps up to one batch plus the size of the
 * last allocation (so a warm loop of any size stays in the process) and
 * gives the excess back.  A ticket to the device's pool holder gives all
 * of it back.  A charge the authority refuses with the batch is asked
 * again without it, and the credit the process holds counts towards it:
 * the refusal comes exactly where the process's cgroup is full.  The
 * batch is asked as a probe (NXQ_CHARGE_PROBE), whose refusal the
 * authority does not count, report or ask for: a refused allocation is
 * one denial, for its own bytes.  The
 * authority sees the credit as charge (it is: charge, not residency).
 */
static int plain_take(int ord, uint64_t bytes)
{
	struct dev *d = &S.dev[ord];
	uint64_t cur = __atomic_load_n(&d->credit, __ATOMIC_RELAXED), took, need;

	for (;;) {
		if (cur >= bytes) {
			if (__atomic_compare_exchange_n(&d->credit, &cur, cur - bytes, 0,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				goto granted;
		} else if (__atomic_compare_exchange_n(&d->credit, &cur, 0, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED)) {
			break;
		}
	}
	took = cur;
	need = bytes - took;
	if (S.batch && need + S.batch > need) {
		CNT(trips);
		if (!nxq__charge_probe(S.ctx, d->holder, need + S.batch)) {
			CNT(charges);
			__atomic_add_fetch(&d->credit, S.batch, __ATOMIC_RELAXED);
			goto granted;
		}
	}
	if (!charge(ord, H_PLAIN, d->holder, need, bytes))
		goto granted;
	__atomic_add_fetch(&d->credit, took, __ATOMIC_RELAXED);
	return -1;
granted:
	if (__atomic_load_n(&d->last, __ATOMIC_RELAXED) != bytes)
		__atomic_store_n(&d->last, bytes, __ATOMIC_RELAXED);
	return 0;
}

static int collect_add(struct dev *d, uint64_t bytes);

static void plain_give(int ord, uint64_t bytes)
{
	struct dev *d = &S.dev[ord];
	uint64_t cur, keep;

	/* a ticket is collecting what PyTorch's empty_cache() frees: its answer */
	if (__builtin_expect(__atomic_load_n(&d->collect, __ATOMIC_ACQUIRE), 0) &&
	    collect_add(d, bytes))
		return;
	if (!S.batch) {		/* exact: every free asks the authority */
		uncharge(d->holder, bytes);
		return;
	}
	cur = __atomic_add_fetch(&d->credit, bytes, __ATOMIC_RELAXED);
	keep = S.batch + __atomic_load_n(&d->last, __ATOMIC_RELAXED);
	if (keep < S.batch)
		keep = UINT64_MAX;	/* overflow: keep it all */
	while (cur > keep) {
		if (__atomic_compare_exchange_n(&d->credit, &cur, keep, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			uncharge(d->holder, cur - keep);
			return;
		}
	}
}

/* A ticket reached the device: the plain holder's whole credit goes back. */
static void plain_drop_credit(int ord)
{
	struct dev *d = &S.dev[ord];
	uint64_t c;

	if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != DS_CHARGE)
		return;
	c = __atomic_exchange_n(&d->credit, 0, __ATOMIC_RELAXED);
	if (c)
		uncharge(d->holder, c);
}

/*
 * The device of the calling thread's current context, or -1.  A process
 * that sees one device (CUDA_VISIBLE_DEVICES, a one-GPU container: the
 * usual case) allocates on device 0 or, without a context, not at all
 * (the driver's CUDA_ERROR_INVALID_CONTEXT gives the charge back): no
 * driver call per allocation to ask.  The count is asked once (S.one_dev).
 */
static int cur_dev(void)
{
	CUresult (*f)(CUdevice *) = (CUresult (*)(CUdevice *))R(R_cuCtxGetDevice);
	int one = __atomic_load_n(&S.one_dev, __ATOMIC_RELAXED);
	CUdevice d;

	if (__builtin_expect(one < 0, 0)) {
		CUresult (*cnt)(int *) = (CUresult (*)(int *))R(R_cuDeviceGetCount);
		int n;

		if (cnt && !cnt(&n)) {	/* not cached if it failed (before cuInit) */
			one = n == 1;
			__atomic_store_n(&S.one_dev, one, __ATOMIC_RELAXED);
		}
	}
	if (one > 0)
		return 0;

	if (!f || f(&d))
		return -1;
	return d;
}

/*
 * One plain allocation's charge: *holderp is 0 when nothing is charged
 * (no authority, device not under nxquota, no context: the driver says
 * what it says).  Returns -1 when refused.
 */
static int charge_plain(int ord, uint64_t bytes, uint64_t *holderp)
{
	int st = authority();

	*holderp = 0;
	if (__builtin_expect(st == ST_REFUSE, 0) && bytes) {
		CNT(refused);	/* NXQUOTA_REQUIRE and no authority: said once */
		return -1;
	}
	if (st < 0 || !bytes || ord < 0)
		return 0;
	st = dev_state(ord, H_PLAIN);
	if (st == DS_PASS)
		return 0;
	if (st == DS_REFUSE) {
		CNT(refused);
		return -1;
	}
	if (plain_take(ord, bytes))
		return -1;
	*holderp = S.dev[ord].holder;
	return 0;
}

/* After a successful plain allocation: remember it, or undo it. */
static CUresult settle(int kind, uint64_t key, uint64_t bytes, int ord, uint64_t holder,
		       CUresult (*undo)(uint64_t))
{
	if (!holder)
		return CUDA_SUCCESS;
	if (!track(kind, key, bytes, ord, NULL))
		return CUDA_SUCCESS;
	SAY_ONCE(S.said_hash, "out of memory tracking an allocation: refused");
	depth++;
	undo(key);
	depth--;
	plain_give(ord, bytes);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static void release_tracked(int kind, struct ent *e)
{
	if (e->dev >= 0 && e->dev < MAXDEV && S.dev[e->dev].holder)
		plain_give(e->dev, e->bytes);
	ent_free(e);
	(void)kind;
}

/* ---- plain allocations ---- */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static CUresult undo_ptr(uint64_t p)
{
	return ((free_fn)R(R_cuMemFree_v2))((CUdeviceptr)p);
}

static CUresult undo_handle(uint64_t h)
{
	return ((CUresult (*)(CUmemGenericAllocationHandle))R(R_cuMemRelease))(h);
}

#define REAL_OR_FAIL(T, i)							\
	__typeof__(T) f = (__typeof__(T))R(i);								\
	if (!f)									\
		return CUDA_ERROR_NOT_INITIALIZED

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	REAL_OR_FAIL(alloc_fn, R_cuMemAlloc_v2);
	uint64_t holder;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, bytesize);
	ord = authority() > 0 ? cur_dev() : -1;
	if (charge_plain(ord, bytesize, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, bytesize);
	depth--;
	if (cr) {
		if (holder)
			plain_give(ord, bytesize);
		return cr;
	}
	return settle(K_PTR, *dptr, bytesize, ord, holder, undo_ptr);
}

/* The pitch the driver will pick is not known before: charge the width
 * rounded to 512 bytes per row ahead, then settle to pitch * height. */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
				   size_t height, unsigned int elem)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int),
		     R_cuMemAllocPitch_v2);
	uint64_t holder, ahead, bytes;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, pitch, width, height, elem);
	ahead = (width + 511) / 512 * 512;
	if (height && ahead > UINT64_MAX / height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ahead *= height;
	ord = authority() > 0 ? cur_dev() : -1;
	if (charge_plain(ord, ahead, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, pitch, width, height, elem);
	depth--;
	if (cr) {
		if (holder)
			plain_give(ord, ahead);
		return cr;
	}
	if (!holder)
		return CUDA_SUCCESS;
	bytes = (uint64_t)*pitch * height;
	if (bytes > ahead && plain_take(ord, bytes - ahead)) {
		depth++;
		undo_ptr(*dptr);
		depth--;
		plain_give(ord, ahead);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (bytes < ahead)
		plain_give(ord, ahead - bytes);
	return settle(K_PTR, *dptr, bytes, ord, holder, undo_ptr);
}

/*
 * Managed memory is charged to the current device, as device memory: the
 * driver may place all of it there, and leaving it out would let any
 * process step around its budget with cudaMallocManaged.
 */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr *, size_t, unsigned int), R_cuMemAllocManaged);
	uint64_t holder;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, bytesize, flags);
	ord = authority() > 0 ? cur_dev() : -1;
	if (charge_plain(ord, bytesize, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, bytesize, flags);
	depth--;
	if (cr) {
		if (holder)
			plain_give(ord, bytesize);
		return cr;
	}
	return settle(K_PTR, *dptr, bytesize, ord, holder, undo_ptr);
}

/*
 * The entry is taken out before the driver frees, so that the same address
 * handed out again by a concurrent allocation cannot meet a stale entry;
 * put back if the driver refuses the free.
 */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	REAL_OR_FAIL(free_fn, R_cuMemFree_v2);
	struct ent *e;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(dptr);
	e = untrack(K_PTR, dptr);
	depth++;
	cr = f(dptr);
	depth--;
	if (e) {
		if (cr)
			retrack(K_PTR, e);
		else
			release_tracked(K_PTR, e);
	}
	return cr;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	REAL_OR_FAIL(CUresult (*)(CUmemGenericAllocationHandle *, size_t,
				  const CUmemAllocationProp *, unsigned long long), R_cuMemCreate);
	uint64_t holder = 0;
	CUresult cr;
	int ord = -1;

	if (depth)
		return f(handle, size, prop, flags);
	/* host (and host NUMA) locations are not device memory */
	if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE_) {
		ord = prop->location.id;
		if (charge_plain(ord, size, &holder))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	depth++;
	cr = f(handle, size, prop, flags);
	depth--;
	if (cr) {
		if (holder)
			plain_give(ord, size);
		return cr;
	}
	return settle(K_HANDLE, *handle, size, ord, holder, undo_handle);
}

/*
 * A handle's memory lives until it is released AND its last mapping is
 * unmapped (the driver frees it then): cuMemRelease of a mapped handle
 * leaves it charged, and the cuMemUnmap of its last mapping uncharges it
 * -- CUDA's VMM samples create, map and release at once, then use the
 * mapping.  Its entry leaves the handle table at the release (the value
 * may be handed out again) and is then held by its mappings alone.
 */
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	REAL_OR_FAIL(CUresult (*)(CUmemGenericAllocationHandle), R_cuMemRelease);
	struct ent *e;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(handle);
	e = untrack(K_HANDLE, handle);
	depth++;
	cr = f(handle);
	depth--;
	if (e) {
		if (cr)
			retrack(K_HANDLE, e);
		else if (__atomic_fetch_or(&e->hst, 1, __ATOMIC_ACQ_REL) == 0)
			release_tracked(K_HANDLE, e);	/* not mapped: its memory is gone */
	}
	return cr;
}

/* A mapping's entry goes: its handle's charge with it if it was the last of a released one. */
static void map_drop(struct ent *m)
{
	struct ent *h = m->h;

	if (__atomic_sub_fetch(&h->hst, 2, __ATOMIC_ACQ_REL) == 1)
		release_tracked(K_HANDLE, h);
	ent_free(m);
}

/* The handle's entry with one more mapping counted, or NULL if not tracked. */
static struct ent *handle_ref(uint64_t key)
{
	unsigned int i = hidx(key);
	struct ent *e;

	pthread_mutex_lock(&shard[i % NSHARD]);
	for (e = tab[K_HANDLE][i]; e; e = e->next)
		if (e->key == key) {
			__atomic_add_fetch(&e->hst, 2, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return e;
}

EXPORT CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
				  unsigned long long), R_cuMemMap);
	struct ent *h, *old;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(va, size, offset, handle, flags);
	depth++;
	cr = f(va, size, offset, handle, flags);
	depth--;
	if (cr || !(h = handle_ref(handle)))
		return cr;	/* a handle the shim did not charge: nothing to follow */
	old = untrack(K_MAP, va);	/* one the shim did not see go: it went */
	if (old)
		map_drop(old);
	if (track(K_MAP, va, size, h->dev, h)) {
		SAY_ONCE(S.said_hash, "out of memory tracking a mapping: refused");
		depth++;
		((CUresult (*)(CUdeviceptr, size_t))R(R_cuMemUnmap))(va, size);
		depth--;
		__atomic_sub_fetch(&h->hst, 2, __ATOMIC_RELAXED);	/* not released: mapped */
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return cr;
}

/*
 * The driver unmaps whole mappings, contiguous from va: their entries are
 * found from va on by their sizes, taken out before the driver's call
 * (put back if it refuses), and each lets go of its handle.
 */
EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t size)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr, size_t), R_cuMemUnmap);
	struct ent *list = NULL, *m, *n;
	uint64_t p = va, end = va + size;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(va, size);
	while (p < end && (m = untrack(K_MAP, p))) {
		m->next = list;
		list = m;
		if (!m->bytes)
			break;
		p += m->bytes;
	}
	depth++;
	cr = f(va, size);
	depth--;
	for (m = list; m; m = n) {
		n = m->next;
		if (cr)
			retrack(K_MAP, m);
		else
			map_drop(m);
	}
	return cr;
}

/* ---- memory queries: the budget is what the application sees ---- */

/*
 * What a memory query on device ord reports under the shim: free at most
 * what this process could be granted now (STATUS version 1's room, plus
 * the plain holder's credit, which is charged already), total at most its
 * limit; both also at most what the driver said.  Unchanged (0 returned)
 * when the authority has no STATUS version 1, the device is not under
 * nxquota or the process is not charged; free 0 where every allocation
 * would be refused (NXQUOTA_REQUIRE without an authority, a refused
 * registration).  A round trip to the authority per query.
 */
static int budget_clamp(int ord, uint64_t *freep, uint64_t *totalp)
{
	struct nxq_status st;
	uint64_t room;
	int a = authority();

	if (a == ST_REFUSE) {
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

static int no_nvml;	/* tests: as if NVML were absent */

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
		SAY_ONCE(S.said_ctxmax, "a CUDA context on %s measured %" PRIu64 " MiB by the device's "
			 "free memory, which counts other processes' allocations too: %" PRIu64
			 " MiB charged (NXQUOTA_CONTEXT_MAX)", S.dev[ord].key[0] ? S.dev[ord].key :
			 "a device", d >> 20, S.ctx_max >> 20);
		CNT(ctx_bounded);
		d = S.ctx_max;
	}
	return d;
}

/* Is a context created now on ord to be measured and charged? */
static int ctx_on(int ord)
{
	return ord >= 0 && ord < MAXDEV && authority() == ST_CHARGE &&
	       __atomic_load_n(&S.charge_ctx, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&S.dev[ord].cstate, __ATOMIC_ACQUIRE) != DS_PASS;
}

/* Charge a new context's bytes on ord: 0, or -1 refused (said). */
static int ctx_charge(int ord, uint64_t bytes)
{
	int st;

	if (!bytes)
		return 0;
	st = dev_state(ord, H_CTX);
	if (st == DS_PASS)
		return 0;
	if (st == DS_REFUSE) {
		CNT(refused);
		return -1;
	}
	if (charge(ord, H_CTX, S.dev[ord].cholder, bytes, bytes))
		return -1;
	__atomic_add_fetch(&S.cnt.ctx_bytes, bytes, __ATOMIC_RELAXED);
	return 0;
}

static void ctx_uncharge(int ord, uint64_t bytes)
{
	uncharge(S.dev[ord].cholder, bytes);
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
		if (ctx_charge(dev, bytes)) {
			depth++;
			release(dev);
			depth--;
			cr = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			S.dev[dev].prim_bytes += bytes;
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
		ctx_uncharge(ord, S.dev[ord].prim_bytes);
		S.dev[ord].prim_bytes = 0;
	}
	pthread_mutex_unlock(&S.ctx_mu);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUdevice), R_cuDevicePrimaryCtxRelease_v2);
	CUresult cr = f(dev);

	if (!cr && !depth && __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) > 0)
		prim_gone(dev);
	return cr;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	REAL_OR_FAIL(CUresult (*)(CUdevice), R_cuDevicePrimaryCtxReset_v2);
	CUresult cr = f(dev);

	if (!cr && !depth && __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) > 0)
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

	if (cr || !(bytes = ctx_measure_end(ord, m, *pctx)))
		return cr;
	if (ctx_charge(ord, bytes)) {
		depth++;
		if (destroy)
			destroy(*pctx);
		depth--;
		*pctx = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (track(K_CTX, (uint64_t)(uintptr_t)*pctx, bytes, ord, NULL)) {
		SAY_ONCE(S.said_hash, "out of memory tracking a context: its charge given back");
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
	struct ent *e;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(ctx);
	e = untrack(K_CTX, (uint64_t)(uintptr_t)ctx);
	depth++;
	cr = f(ctx);
	depth--;
	if (e) {
		if (cr) {
			retrack(K_CTX, e);
		} else {
			ctx_uncharge(e->dev, e->bytes);
			ent_free(e);
		}
	}
	return cr;
}

/* ---- stream-ordered pools ---- */

static int pool_attr(CUmemoryPool pool, int attr, uint64_t *v)
{
	CUresult (*f)(CUmemoryPool, int, void *) =
		(CUresult (*)(CUmemoryPool, int, void *))R(R_cuMemPoolGetAttribute);

	if (!f || f(pool, attr, v))
		return -1;
	return 0;
}

/* The slot of pool (created with dev if absent and dev is given); NULL if none. */
static struct pool *pool_slot(CUmemoryPool pool, int dev, int create)
{
	static __thread struct pool *last __attribute__((tls_model("initial-exec")));
	struct pool *p = NULL;

	/* this thread's last pool first: a warm loop does not scan the slots */
	if (last && __atomic_load_n(&last->pool, __ATOMIC_ACQUIRE) == pool)
		return last;
	for (int i = 0; i < MAXPOOL; i++)
		if (__atomic_load_n(&S.pool[i].pool, __ATOMIC_ACQUIRE) == pool)
			return last = &S.pool[i];
	if (!create)
		return NULL;
	pthread_mutex_lock(&S.lock);
	for (int i = 0; i < MAXPOOL; i++) {
		if (S.pool[i].pool == pool) {
			p = &S.pool[i];
			break;
		}
		if (!p && !S.pool[i].pool)
			p = &S.pool[i];
	}
	if (p && p->pool != pool) {
		p->dev = dev;
		p->charged = 0;
		p->reserved = 0;
		p->used_ub = 0;
		__atomic_store_n(&p->pool, pool, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&S.lock);
	if (!p)
		SAY_ONCE(S.said_pool, "more than %d memory pools: allocations from the others "
			 "are refused", MAXPOOL);
	return p;
}

/*
 * Bring a pool's charge to what it reserves (p->mu held); up only when
 * may_grow (the charge may be refused: -1).  Down, up to keep bytes above
 * the reservation stay charged: after an allocation, the charge ahead of
 * its size, so that the next pair of the same size needs no authority
 * (the pool's "used" counts a stream-ordered free until the driver has
 * seen it done, though the same stream reuses the block at once; without
 * this each such pair would charge ahead and settle back: two trips).  An
 * overcharge, never an undercharge; a trim, a ticket or a destroy settle
 * it exactly.
 */
static int pool_settle(struct pool *p, int may_grow, uint64_t keep)
{
	uint64_t res, h = S.dev[p->dev].pholder;

	if (pool_attr(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_, &res))
		return 0;	/* cannot tell: keep the charge */
	p->reserved = res;
	if (res > p->charged) {
		if (!may_grow || charge(p->dev, H_POOL, h, res - p->charged, res - p->charged))
			return -1;
		p->charged = res;
	} else if (res + keep < p->charged && res + keep >= res) {
		uncharge(h, p->charged - res - keep);
		p->charged = res + keep;
	}
	return 0;
}

typedef CUresult (*pool_alloc_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*async_alloc_fn)(CUdeviceptr *, size_t, CUstream);

/*
 * One stream-ordered allocation: pool is NULL for cuMemAllocAsync (the
 * current device's current pool).  Charged ahead by the growth it may
 * cause (used + size above the charge, in 2 MiB steps), settled to the
 * pool's reservation after.  A growth beyond the charge that is refused
 * frees the block back and trims the pool to the charge.
 */
static CUresult pool_alloc(int ri, int fri, CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
			   CUstream s)
{
	void *f = R(ri);
	struct pool *p;
	uint64_t used, need;
	CUresult cr;
	int ord, st;

	if (!f)
		return CUDA_ERROR_NOT_INITIALIZED;
#define CALL() (pool && (ri == R_cuMemAllocFromPoolAsync || ri == R_cuMemAllocFromPoolAsync_ptsz) \
		? ((pool_alloc_fn)f)(dptr, size, pool, s) : ((async_alloc_fn)f)(dptr, size, s))
	if (depth || !size)
		return CALL();
	st = authority();
	if (__builtin_expect(st == ST_REFUSE, 0)) {
		CNT(refused);	/* NXQUOTA_REQUIRE and no authority */
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (st < 0)
		return CALL();
	ord = cur_dev();
	if (ord < 0)
		return CALL();
	if (!pool) {
		CUresult (*gp)(CUmemoryPool *, CUdevice) =
			(CUresult (*)(CUmemoryPool *, CUdevice))R(R_cuDeviceGetMemPool);

		if (!gp || gp(&pool, ord) || !pool)
			return CALL();
		p = pool_slot(pool, ord, 1);
		pool = NULL;	/* the call itself takes no pool */
	} else {
		p = pool_slot(pool, ord, 1);
	}
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p->dev < 0 || p->dev >= MAXDEV)
		return CALL();
	st = dev_state(p->dev, H_POOL);
	if (st == DS_PASS)
		return CALL();
	if (st == DS_REFUSE) {
		CNT(refused);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&p->mu);
	/*
	 * What the pool uses is at most what it used when last asked plus
	 * what this wrapper allocated from it since (frees only lower it), and
	 * at most what it reserved when last asked (pool_settle() after each
	 * allocation; a reservation only shrinks by itself): while that bound
	 * leaves room under the charge, no driver call to ask (a warm loop of
	 * small pairs asks once per charge's worth); else the pool is asked.
	 * An allocation this wrapper did not see (the driver's own) can make
	 * the bound low: the growth is then charged after, as any growth
	 * beyond the charge ahead is (pool_settle()).
	 */
	used = p->used_ub < p->reserved ? p->used_ub : p->reserved;
	if (used + size > p->charged &&
	    pool_attr(p->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT_, &used))
		used = p->charged;
	need = 0;
	if (used + size > p->charged)
		need = (used + size - p->charged + POOL_STEP - 1) / POOL_STEP * POOL_STEP;
	if (need && charge(p->dev, H_POOL, S.dev[p->dev].pholder, need, need)) {
		pthread_mutex_unlock(&p->mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->charged += need;
	depth++;
	cr = CALL();
	depth--;
	if (!cr)
		p->used_ub = used + size > used ? used + size : UINT64_MAX;
	if (pool_settle(p, 1, cr ? 0 : (size + POOL_STEP - 1) / POOL_STEP * POOL_STEP)) {
		/* grew past its charge and the rest was refused: give it back */
		CUresult (*fr)(CUdeviceptr, CUstream) =
			(CUresult (*)(CUdeviceptr, CUstream))R(fri);
		CUresult (*trim)(CUmemoryPool, size_t) =
			(CUresult (*)(CUmemoryPool, size_t))R(R_cuMemPoolTrimTo);

		int si = fri == R_cuMemFreeAsync_ptsz && R(R_cuStreamSynchronize_ptsz)
			 ? R_cuStreamSynchronize_ptsz : R_cuStreamSynchronize;
		CUresult (*sync)(CUstream) = (CUresult (*)(CUstream))R(si);

		depth++;
		if (!cr && fr)
			fr(*dptr, s);
		if (!cr && sync)
			sync(s);	/* a trim gives back only frees the host saw complete */
		if (trim)
			trim(p->pool, 0);
		depth--;
		pool_settle(p, 0, 0);
		cr = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&p->mu);
	return cr;
#undef CALL
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return pool_alloc(R_cuMemAllocAsync, R_cuMemFreeAsync, dptr, size, NULL, s);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return pool_alloc(R_cuMemAllocAsync_ptsz, R_cuMemFreeAsync_ptsz, dptr, size, NULL, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
					CUstream s)
{
	if (!pool) {
		REAL_OR_FAIL(pool_alloc_fn, R_cuMemAllocFromPoolAsync);
		return f(dptr, size, pool, s);
	}
	return pool_alloc(R_cuMemAllocFromPoolAsync, R_cuMemFreeAsync, dptr, size, pool, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size,
					     CUmemoryPool pool, CUstream s)
{
	if (!pool) {
		REAL_OR_FAIL(pool_alloc_fn, R_cuMemAllocFromPoolAsync_ptsz);
		return f(dptr, size, pool, s);
	}
	return pool_alloc(R_cuMemAllocFromPoolAsync_ptsz, R_cuMemFreeAsync_ptsz, dptr, size,
			  pool, s);
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool, size_t), R_cuMemPoolTrimTo);
	struct pool *p;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(pool, keep);
	p = pool_slot(pool, -1, 0);
	if (!p || p->dev < 0)
		return f(pool, keep);
	pthread_mutex_lock(&p->mu);
	depth++;
	cr = f(pool, keep);
	depth--;
	if (!cr)
		pool_settle(p, 0, 0);
	pthread_mutex_unlock(&p->mu);
	return cr;
}

/* A pool created on a host location is not charged: its slot says dev -1. */
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const nxqp_pool_props_head *props)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool *, const nxqp_pool_props_head *), R_cuMemPoolCreate);
	CUresult cr;
	int dev = -1;

	if (depth || authority() < 0)
		return f(pool, props);
	depth++;
	cr = f(pool, props);
	depth--;
	if (!cr && props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE_)
		dev = props->location.id;
	if (!cr)
		pool_slot(*pool, dev, 1);	/* no slot: said once, its allocations refused */
	return cr;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool), R_cuMemPoolDestroy);
	struct pool *p;
	CUresult cr;

	if (depth || __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) <= 0)
		return f(pool);
	p = pool_slot(pool, -1, 0);
	if (!p)
		return f(pool);
	pthread_mutex_lock(&p->mu);
	depth++;
	cr = f(pool);
	depth--;
	if (!cr) {
		if (p->dev >= 0 && p->dev < MAXDEV)
			uncharge(S.dev[p->dev].pholder, p->charged);
		p->charged = 0;
		__atomic_store_n(&p->pool, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->mu);
	return cr;
}

/* ---- pressure tickets: trim the device's pools ---- */

/*
 * Let the driver see every stream-ordered free of device ord complete.
 * cuMemPoolTrimTo cannot give back memory whose cuMemFreeAsync has not
 * been observed complete by the host ("can count as outstanding", its
 * documentation says), and an application such as PyTorch's
 * cudaMallocAsync backend frees with cudaFreeAsync and need not
 * synchronise before it goes idle: without this, a ticket trims nothing
 * (what the H200 showed).  PyTorch's own emptyCache() synchronises the
 * device before its trim for the same reason.  The ticket thread has no
 * context: it borrows the device's primary context while the application
 * has it active (never creating one), synchronises it, keeps it current
 * for the trims (dev_sync_end() puts it back).
 * Returns 0 when synchronised.
 */
static int dev_sync(int ord, int *pushed)
{
	CUresult (*state)(CUdevice, unsigned int *, int *) =
		(CUresult (*)(CUdevice, unsigned int *, int *))R(R_cuDevicePrimaryCtxGetState);
	CUresult (*retain)(CUcontext *, CUdevice) =
		(CUresult (*)(CUcontext *, CUdevice))R(R_cuDevicePrimaryCtxRetain);
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	CUresult (*push)(CUcontext) = (CUresult (*)(CUcontext))R(R_cuCtxPushCurrent_v2);
	CUresult (*sync)(void) = (CUresult (*)(void))R(R_cuCtxSynchronize);
	unsigned int flags;
	CUcontext c;
	int active = 0;

	*pushed = 0;
	if (!state || !retain || !release || !push || !sync || !R(R_cuCtxPopCurrent_v2))
		return -1;
	if (state(ord, &flags, &active) || !active)
		return -1;
	if (retain(&c, ord))
		return -1;
	if (push(c)) {
		release(ord);
		return -1;
	}
	*pushed = 1;
	return sync() ? -1 : 0;
}

/* After dev_sync() and the trims: the borrowed context popped and released. */
static void dev_sync_end(int ord, int pushed)
{
	CUresult (*release)(CUdevice) = (CUresult (*)(CUdevice))R(R_cuDevicePrimaryCtxRelease_v2);
	CUresult (*pop)(CUcontext *) = (CUresult (*)(CUcontext *))R(R_cuCtxPopCurrent_v2);
	CUcontext old;

	if (!pushed)
		return;
	pop(&old);
	release(ord);
}

/* Trim every pool of ord to what it uses; the bytes uncharged-to-be. */
static uint64_t pools_trim(int ord)
{
	CUresult (*trim)(CUmemoryPool, size_t) =
		(CUresult (*)(CUmemoryPool, size_t))R(R_cuMemPoolTrimTo);
	uint64_t released = 0, res;
	int pushed;

	if (!trim)
		return 0;
	/* the context stays current for the trims too (a driver may want one) */
	if (dev_sync(ord, &pushed))
		SAY_ONCE(S.said_sync, "cannot synchronise device %d's primary context: a "
			 "ticket gives back only the pool memory whose frees completed", ord);
	for (int i = 0; i < MAXPOOL; i++) {
		struct pool *p = &S.pool[i];

		if (!__atomic_load_n(&p->pool, __ATOMIC_ACQUIRE) || p->dev != ord)
			continue;
		/*
		 * A pool busy with an allocation for more than 10 ms (one that
		 * may be waiting for a grant this very ticket is part of) is
		 * skipped: the answer says what the others gave.
		 */
		int busy = pthread_mutex_trylock(&p->mu);

		for (int k = 0; busy && k < 20; k++) {
			usleep(500);
			busy = pthread_mutex_trylock(&p->mu);
		}
		if (busy)
			continue;
		if (p->pool && p->dev == ord) {
			depth++;
			trim(p->pool, 0);
			depth--;
			if (!pool_attr(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_, &res)) {
				p->reserved = res;
				if (res < p->charged) {
					released += p->charged - res;
					p->charged = res;
				}
			}
		}
		pthread_mutex_unlock(&p->mu);
	}
	dev_sync_end(ord, pushed);
	return released;
}

/* ---- PyTorch's cached segments: torch.cuda.empty_cache() on a ticket ---- */

/*
 * PyTorch's native caching allocator keeps the segments it got from
 * cudaMalloc (cuMemAlloc_v2; cuMemCreate with expandable segments) after
 * their tensors are gone; only its emptyCache() gives them back, and the
 * shim sees those frees (cuMemFree_v2, cuMemRelease).  How the ticket
 * thread gets emptyCache() run, and why this way (preload/README.md,
 * "PyTorch's cache", has the whole argument):
 *
 *  - not the C++ allocator object (c10::cuda::CUDACachingAllocator::
 *    allocator, an atomic pointer to a class whose emptyCache is a virtual
 *    call): calling it from C relies on a vtable slot, which changes with
 *    PyTorch's version, and runs it on a thread PyTorch never expects;
 *  - not PyGILState_Ensure() on the ticket thread: the main thread may hold
 *    the GIL inside a CUDA call that waits for this very ticket's answer
 *    (an allocation with NXQ_PRELOAD_WAIT_MS, or torch code that calls
 *    CUDA without releasing the GIL): a deadlock, or an answer as late as
 *    that call;
 *  - Py_AddPendingCall() (CPython's stable ABI; documented as callable from
 *    any thread without the GIL): the callback runs in the main thread, with
 *    the GIL, at its next bytecode boundary -- exactly as if the program had
 *    called torch.cuda.empty_cache() between two of its statements, which
 *    is PyTorch's public, supported use.  The main thread is then inside
 *    no PyTorch call; other threads' allocations are serialised against
 *    emptyCache() by the allocator's own lock, as for any user call.
 *
 * The ticket thread does not wait for the callback beyond NXQ_PRELOAD_PY_
 * WAIT_MS (250 ms; at most half the time to the ticket's deadline): a main
 * thread that reaches no bytecode boundary (a long C call, blocked in
 * read()) gets its ticket answered with what was released so far (the
 * credit, possibly 0); when its callback runs later, those frees are
 * uncharged on their own (and the credit with them).
 *
 * Everything is found with dlsym(RTLD_DEFAULT): a process that is not
 * Python has none of these symbols and is untouched.  A Python process is
 * a PyTorch process when libc10_cuda.so (PyTorch's CUDA allocator) is
 * loaded at its plain holder's registration (no GIL needed to ask the
 * loader); the callback itself empties the cache only if sys.modules has
 * torch.cuda and the current stream is not capturing a CUDA graph.
 */
static struct {
	int (*is_init)(void);
	int (*add_pending)(int (*)(void *), void *);
	void *(*moddict)(void);
	void *(*dict_get)(void *, const char *);
	void *(*call_method)(void *, const char *, const char *, ...);
	int (*is_true)(void *);
	void (*decref)(void *);
	void (*err_clear)(void);
} P;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* With S.lock held: 1 when this is a PyTorch process (decided once). */
static int py_torch_locked(void)
{
	const char *env = getenv("NXQ_PRELOAD_TORCH");
	void *h;

	if (S.py_torch >= 0)
		return S.py_torch;
	S.py_torch = 0;
	if ((env && !strcmp(env, "off")) || !R(R_cuCtxGetDevice) || !real_dlsym)
		return 0;
#define PYSYM(f, n) (*(void **)&P.f = real_dlsym(RTLD_DEFAULT, n))
	if (!PYSYM(is_init, "Py_IsInitialized") || !PYSYM(add_pending, "Py_AddPendingCall") ||
	    !PYSYM(moddict, "PyImport_GetModuleDict") ||
	    !PYSYM(dict_get, "PyDict_GetItemString") ||
	    !PYSYM(call_method, "PyObject_CallMethod") || !PYSYM(is_true, "PyObject_IsTrue") ||
	    !PYSYM(decref, "Py_DecRef") || !PYSYM(err_clear, "PyErr_Clear"))
		return 0;	/* not Python */
#undef PYSYM
	if (!P.is_init())
		return 0;
	h = dlopen("libc10_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;	/* Python without PyTorch's CUDA allocator */
	dlclose(h);
	S.py_torch = 1;
	return 1;
}

/* plain_give() while a ticket collects: 1 when the bytes went to its answer. */
static int collect_add(struct dev *d, uint64_t bytes)
{
	int r = 0;

	pthread_mutex_lock(&S.col_mu);
	if (d->collect) {
		d->collected += bytes;
		r = 1;
	}
	pthread_mutex_unlock(&S.col_mu);
	return r;
}

/* The pending call: in the main thread, with the GIL, between two bytecodes. */
static int py_cb(void *arg)
{
	void *mods = P.moddict(), *m, *r;
	int late = 1;

	(void)arg;
	m = mods ? P.dict_get(mods, "torch.cuda") : NULL;	/* borrowed; NULL: not imported */
	if (m) {
		r = P.call_method(m, "is_current_stream_capturing", NULL);
		if (r && !P.is_true(r)) {
			P.decref(r);
			r = P.call_method(m, "empty_cache", NULL);
		}
		if (r)
			P.decref(r);
		else
			P.err_clear();	/* ours, not the program's: none was pending here */
	}
	pthread_mutex_lock(&S.py_mu);
	S.py_pending = 0;
	S.py_done++;
	pthread_cond_broadcast(&S.py_cv);
	pthread_mutex_unlock(&S.py_mu);
	CNT(py_calls);
	/* no ticket collected the frees (it was answered before): uncharge them */
	for (int i = 0; i < MAXDEV; i++)
		if (__atomic_load_n(&S.dev[i].collect, __ATOMIC_ACQUIRE))
			late = 0;
	if (late)
		for (int i = 0; i < MAXDEV; i++)
			if (S.dev[i].plevfd > 0)
				plain_drop_credit(i);
	return 0;
}

/*
 * A ticket to device ord's plain holder (a PyTorch process): the bytes to
 * answer with -- the credit, and what the plain holder's frees give back
 * while the callback runs (or until the wait ends).  No trip to the
 * authority: the answer itself uncharges them.
 */
static uint64_t py_release(int ord, const struct nxq_ticket *t)
{
	struct dev *d = &S.dev[ord];
	uint64_t start = now_ns(), until, done0, released, credit;
	struct timespec ts;
	int ran, queued = 1;

	pthread_mutex_lock(&S.col_mu);
	credit = __atomic_exchange_n(&d->credit, 0, __ATOMIC_RELAXED);
	d->collected = credit;
	__atomic_store_n(&d->collect, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.col_mu);

	until = start + S.py_wait_ns;
	if (t->deadline_ns > start && (t->deadline_ns - start) / 2 < S.py_wait_ns)
		until = start + (t->deadline_ns - start) / 2;
	pthread_mutex_lock(&S.py_mu);
	done0 = S.py_done;
	if (!S.py_pending) {
		if (P.is_init() && !P.add_pending(py_cb, NULL))
			S.py_pending = 1;
		else
			queued = 0;
	}
	while (queued && S.py_done == done0) {
		uint64_t now = now_ns();

		if (now >= until)
			break;
		ts.tv_sec = (time_t)(until / 1000000000ULL);
		ts.tv_nsec = (long)(until % 1000000000ULL);
		pthread_cond_timedwait(&S.py_cv, &S.py_mu, &ts);
	}
	ran = S.py_done != done0;
	pthread_mutex_unlock(&S.py_mu);

	pthread_mutex_lock(&S.col_mu);
	__atomic_store_n(&d->collect, 0, __ATOMIC_RELEASE);
	released = d->collected;
	d->collected = 0;
	pthread_mutex_unlock(&S.col_mu);
	if (!ran)
		CNT(py_late);
	if (S.verbose)
		say("ticket on %s's plain holder: %llu bytes asked; answer %llu bytes (credit "
		    "%llu, empty_cache %s) after %llu ms", d->key, (unsigned long long)t->bytes,
		    (unsigned long long)released, (unsigned long long)credit,
		    !queued ? "not queued" : ran ? "ran" : "not run yet",
		    (unsigned long long)((now_ns() - start) / 1000000ULL));
	else if (!queued)
		SAY_ONCE(S.said_py, "Py_AddPendingCall failed: a ticket is answered with the "
			 "credit only");
	return released;
}

static void handle_plain_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt, released;
	int r;

	if (read(d->plevfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->holder, &t))) {
		CNT(tickets);
		released = py_release(ord, &t);
		r = S.ctx->kops->ticket_answer(S.ctx, d->holder, t.generation, released, NULL);
		if (r) {
			uncharge(d->holder, released);
			if (r == -ESTALE)
				continue;
			break;
		}
		CNT(answers);
		__atomic_add_fetch(&S.cnt.answered_bytes, released, __ATOMIC_RELAXED);
	}
}

static void handle_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt, released;
	int r;

	if (read(d->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->pholder, &t))) {
		CNT(tickets);
		plain_drop_credit(ord);
		released = pools_trim(ord);
		r = S.ctx->kops->ticket_answer(S.ctx, d->pholder, t.generation, released, NULL);
		if (r) {
			/* raised meanwhile (-ESTALE) or refused: the bytes are gone anyway */
			uncharge(d->pholder, released);
			if (r == -ESTALE)
				continue;
			break;
		}
		CNT(answers);
		__atomic_add_fetch(&S.cnt.answered_bytes, released, __ATOMIC_RELAXED);
	}
}

/* A ticket to a context holder: nothing of a context can be given back: 0. */
static void handle_ctx_tickets(int ord)
{
	struct dev *d = &S.dev[ord];
	struct nxq_ticket t;
	uint64_t cnt;
	int r;

	if (read(d->cevfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	while (!(r = S.ctx->kops->ticket_read(S.ctx, d->cholder, &t))) {
		CNT(tickets);
		r = S.ctx->kops->ticket_answer(S.ctx, d->cholder, t.generation, 0, NULL);
		if (r == -ESTALE)
			continue;
		if (r)
			break;
		CNT(answers);
	}
}

static void *ticket_thread(void *arg)
{
	struct epoll_event ev[8];

	(void)arg;
	for (;;) {
		int n = epoll_wait(S.epfd, ev, 8, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == UINT32_MAX)
				return NULL;
			if (ev[i].data.u32 >= 2 * MAXDEV)
				handle_ctx_tickets((int)(ev[i].data.u32 - 2 * MAXDEV));
			else if (ev[i].data.u32 >= MAXDEV)
				handle_plain_tickets((int)(ev[i].data.u32 - MAXDEV));
			else
				handle_tickets((int)ev[i].data.u32);
		}
	}
	return NULL;
}

/* With S.lock held. */
static int ticket_thread_start_locked(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	sigset_t all, old;
	int r;

	if (S.thread_on)
		return 0;
	S.epfd = epoll_create1(EPOLL_CLOEXEC);
	S.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (S.epfd < 0 || S.stopfd < 0 || epoll_ctl(S.epfd, EPOLL_CTL_ADD, S.stopfd, &ev))
		goto fail;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&S.thread, NULL, ticket_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		errno = r;
		goto fail;
	}
	S.thread_on = 1;
	return 0;
fail:
	say("cannot start the ticket thread (%s): pool memory cannot be asked back",
	    strerror(errno));
	if (S.epfd >= 0)
		close(S.epfd);
	if (S.stopfd >= 0)
		close(S.stopfd);
	S.epfd = S.stopfd = -1;
	return -1;
}

static void ticket_thread_stop(void)
{
	uint64_t one = 1;

	if (!S.thread_on)
		return;
	if (write(S.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(S.thread, NULL);
	close(S.epfd);
	close(S.stopfd);
	S.epfd = S.stopfd = -1;
	S.thread_on = 0;
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

/* ---- fork ---- */

static void py_locks_init(void);

static void fork_prepare(void)
{
	pthread_mutex_lock(&S.lock);
	for (int i = 0; i < MAXPOOL; i++)
		pthread_mutex_lock(&S.pool[i].mu);
	for (int i = 0; i < NSHARD; i++)
		pthread_mutex_lock(&shard[i]);
}

static void fork_parent(void)
{
	for (int i = NSHARD - 1; i >= 0; i--)
		pthread_mutex_unlock(&shard[i]);
	for (int i = MAXPOOL - 1; i >= 0; i--)
		pthread_mutex_unlock(&S.pool[i].mu);
	pthread_mutex_unlock(&S.lock);
}

/* The child has no thread, no CUDA allocations and not the parent's holders. */
static void fork_child(void)
{
	shard_init();
	for (int i = 0; i < MAXPOOL; i++)
		pthread_mutex_init(&S.pool[i].mu, NULL);
	pthread_mutex_init(&S.lock, NULL);
	py_locks_init();	/* the parent's pending call does not run here */
	if (S.thread_on) {
		close(S.epfd);
		close(S.stopfd);
		S.epfd = S.stopfd = -1;
		S.thread_on = 0;
	}
	pthread_mutex_init(&S.ctx_mu, NULL);
	pthread_mutex_init(&S.say_mu, NULL);
	state_drop_locked(0);
	SAY_RESET();
}

/* The locks of the PyTorch path (at load, and again in a forked child). */
static void py_locks_init(void)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&S.col_mu, NULL);
	pthread_mutex_init(&S.py_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.py_cv, &ca);
	pthread_condattr_destroy(&ca);
	S.py_pending = 0;
}

__attribute__((constructor)) static void preload_init(void)
{
	py_locks_init();
	pthread_once(&shard_once, shard_init);
	for (int i = 0; i < MAXPOOL; i++)
		pthread_mutex_init(&S.pool[i].mu, NULL);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- for the tests (hidden: linked in, not exported by the .so) ---- */

void nxqp__test_authority(const struct nxq_kops *kops, void *kpriv)
{
	pthread_mutex_lock(&S.lock);
	ticket_thread_stop();
	state_drop_locked(1);
	S.test_set = 1;
	S.test_kops = kops;
	S.test_kpriv = kpriv;
	SAY_RESET();
	S.last_said[0] = 0;
	memset(&S.cnt, 0, sizeof(S.cnt));
	pthread_mutex_unlock(&S.lock);
}

void nxqp__test_counters(struct nxqp_counters *c)
{
	*c = S.cnt;
	c->tracked = 0;
	for (int i = 0; i < NSHARD; i++) {
		pthread_mutex_lock(&shard[i]);
		c->tracked += tracked[i];
		pthread_mutex_unlock(&shard[i]);
	}
}

int nxqp__test_state(void)
{
	return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
}

void nxqp__test_no_nvml(int on)
{
	no_nvml = on;
}

void nxqp__test_gap(uint64_t ns)
{
	S.gap_ns = ns;
}

const char *nxqp__test_last_said(void)
{
	static char copy[sizeof(S.last_said)];

	pthread_mutex_lock(&S.say_mu);
	memcpy(copy, S.last_said, sizeof(copy));
	pthread_mutex_unlock(&S.say_mu);
	return copy;
}
