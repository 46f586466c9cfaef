/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
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
 * What the application is told (issue 20): cuMemGetInfo, cuDeviceTotalMem
 * and NVML's nvmlDeviceGetMemoryInfo report the budget (STATUS version
 * 1's room and limit, at most the device's); a refused charge is said on
 * stderr, with the node that refused and what would help;
 * NXQUOTA_REQUIRE=1 refuses every allocation while no authority answers,
 * instead of passing.
 *
 * One thread-local depth counter: a wrapper called while another wrapper
 * of the same thread is in the driver (the driver calling its own exported
 * entry points) passes straight through, so nothing is charged twice.
 *
 * NXQ_PRELOAD=off: every wrapper passes straight through, and the process
 * is told once on stderr.  No authority at the first look (no module, the
 * daemon down or its connection refused for a bound): "down" (ST_DOWN),
 * never for life -- one thread (connect.c) looks for it again, with a
 * backoff up to a second; allocations wait for it up to
 * NXQUOTA_CONNECT_WAIT_MS from the first look, then pass uncharged but
 * remembered (NXQUOTA_REQUIRE=1: refused); when one answers, what the
 * process holds is charged at once (the catch-up), and what that charge
 * could not take is owed: asked again with the holder's next charge and
 * in the background, paid off first by frees.
 *
 * Sizes are remembered per pointer and per handle in a sharded hash (the
 * only allocation on the allocation path).  Fork: the child's state is
 * reset in a pthread_atfork() handler; its first allocation opens its own
 * context (CUDA itself does not carry a context across fork()).
 *
 * The files, lowest first; each calls only files above it in this list
 * (scripts/call-graph.sh, run by make check, fails on a cycle), and each
 * opens with what it owns:
 *
 *   state.c      S, the shim's state (this header's struct nxqp_state)
 *   resolve.c    the real entry points, say(), the clock; cuGetProcAddress
 *                and dlsym handing the wrappers out
 *   track.c      the pointer/handle hash
 *   python.c     whether this is a PyTorch process; Python's C API (P)
 *   reactor.c    the ticket thread: eventfds dispatched to S.on_ticket
 *   authority.c  the context, each device's holders (dev_state())
 *   charge.c     charge/uncharge, refusals said, the plain credit
 *   plain.c      cuMemAlloc & co, cuMemFree, the VMM calls followed
 *   meminfo.c    cuMemGetInfo, cuDeviceTotalMem, NVML's memory info: the budget
 *   context.c    CUDA contexts measured and charged
 *   pool.c       stream-ordered pools
 *   torch.c      PyTorch's cache given back on a ticket
 *   tickets.c    ticket answers; ticket_event(), the reactor's handler
 *   connect.c    an authority looked for again while down; the catch-up
 *   fork.c       the constructor, fork
 *   testing.c    the tests' hooks
 *
 * Where a lower file must reach up it takes a pointer: S.on_ticket and
 * S.on_down (set by the constructor, before any wrapper runs).  Everything here is
 * hidden: only the wrappers (EXPORT) and preload.map's names leave
 * libnxquota-preload.so.
 */
#ifndef NXQP_SHIM_H
#define NXQP_SHIM_H

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
#include "size.h"

#define EXPORT __attribute__((visibility("default")))

/* CUDA values the shim needs beyond lib/cuda_api.h (cuda.h's, same ABI). */
#define CUDA_ERROR_INVALID_CONTEXT_		201
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM_	(1ULL << 1)
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_	5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT_	7
#define CU_MEM_LOCATION_TYPE_DEVICE_		1

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
	R_cuStreamGetDevice,
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

/* ---- state: the context, holders, pools, the ticket thread ---- */

#define MAXDEV		64
/* NXQUOTA_CONNECT_WAIT_MS's default where nxquotad's socket directory exists */
#define NXQ_PRELOAD_CONNECT_WAIT_MS	5000
#define MAXPOOL		256
#define POOL_STEP	(2ULL << 20)

enum { DS_UNKNOWN = 0, DS_CHARGE, DS_PASS, DS_REFUSE };
/* The holders of a device (dev_state()'s kind). */
enum { H_PLAIN = 0, H_POOL, H_CTX, NHKIND };
/*
 * S.state; the settled ones (charging, passing) are odd: authority()'s
 * test.  ST_DOWN: no authority yet, looked for in the background
 * (connect.c); allocations are remembered as pending (ent.pend), or
 * refused with NXQUOTA_REQUIRE.  Once ST_CHARGE, it stays (the library
 * reconnects to a daemon that restarts).
 */
enum { ST_DOWN = -2, ST_PASS = -1, ST_UNKNOWN = 0, ST_CHARGE = 1 };
/* The holder charge_plain() gives an allocation made while ST_DOWN: S.down_rw is held. */
#define PENDING	UINT64_MAX

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
	uint64_t prim_pend;	/* of prim_bytes, measured while ST_DOWN (under S.ctx_mu) */
	/*
	 * Owed (atomic): bytes the plain (owed) and context (cowed) holders
	 * hold that the authority did not take at the catch-up; only shrink
	 * once ST_CHARGE (charge.c's owed_*()).
	 */
	uint64_t owed, cowed;
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

struct nxqp_state {
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
	uint64_t gap_ns;	/* 1 s: the longest between two looks for an authority; two refusal lines */
	/* ST_DOWN (connect.c): the connector thread, the wait, the catch-up */
	uint64_t wait_until;	/* allocations wait for an authority until then (atomic; 0: no more) */
	uint64_t retry_ns;	/* the connector could not start: when it was last tried (atomic) */
	pthread_rwlock_t down_rw;	/* read: a wrapper tracking while ST_DOWN; write: the catch-up */
	pthread_mutex_t conn_mu;	/* conn_on, conn_stop; conn_cv */
	pthread_mutex_t owe_mu;	/* charges of owed bytes, one at a time (owed_charge()) */
	pthread_cond_t conn_cv;	/* CLOCK_MONOTONIC: the state changed, or stop */
	int conn_on;		/* the connector thread runs */
	int conn_stop;		/* tests: the connector ends */
	void (*on_down)(void);	/* connect.c's connect_start(), set by the constructor */
	struct dev dev[MAXDEV];
	struct pool pool[MAXPOOL];
	int epfd, stopfd, thread_on;
	pthread_t thread;
	pthread_mutex_t ctx_mu;	/* a context's creation measured: one at a time */
	pthread_mutex_t say_mu;	/* last_said */
	char last_said[1024];
	int said_none, said_err, said_pool, said_hash, said_gpa, said_sync, said_py;
	int said_nodev;		/* settle(): an allocation on no device we can tell */
	int said_require, said_lost, said_ctx, said_nvml, said_ctxmax, said_conn;
	/* PyTorch's cache (see py_release) */
	pthread_mutex_t col_mu;	/* d->collect, d->collected */
	pthread_mutex_t py_mu;	/* py_pending, py_done; py_cv */
	pthread_cond_t py_cv;	/* CLOCK_MONOTONIC */
	int py_pending;		/* a callback is queued and has not run yet */
	uint64_t py_done;	/* callbacks run */
	uint64_t py_wait_ns;	/* NXQ_PRELOAD_PY_WAIT_MS */
	int py_torch;		/* -1 not looked at, 0 no, 1 a PyTorch process */
	int verbose;		/* NXQ_PRELOAD_VERBOSE: each ticket answer said */
	/* the ticket thread's handler: tickets.c's ticket_event(), set by the constructor */
	void (*on_ticket)(uint32_t tag);
	int one_dev;		/* -1 not asked, 1: the process sees one device (cur_dev) */
	/* tests */
	int test_set;
	const struct nxq_kops *test_kops;
	void *test_kpriv;
	struct nxqp_counters cnt;
};
extern struct nxqp_state S;

/* Python's C API (python.c): found with dlsym(RTLD_DEFAULT) by py_torch_locked(). */
struct nxqp_py {
	int (*is_init)(void);
	int (*add_pending)(int (*)(void *), void *);
	void *(*moddict)(void);
	void *(*dict_get)(void *, const char *);
	void *(*call_method)(void *, const char *, const char *, ...);
	int (*is_true)(void *);
	void (*decref)(void *);
	void (*err_clear)(void);
};
extern struct nxqp_py P;

#define SAY_RESET() do {							\
	S.said_none = S.said_err = S.said_pool = S.said_hash = S.said_gpa = 0;	\
	S.said_nodev = 0;							\
	S.said_sync = S.said_py = S.said_require = S.said_lost = 0;		\
	S.said_ctx = S.said_nvml = S.said_ctxmax = S.said_conn = 0;		\
} while (0)

#define CNT(f) __atomic_add_fetch(&S.cnt.f, 1, __ATOMIC_RELAXED)

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
	int pend;		/* allocated while ST_DOWN: not charged yet (the catch-up's) */
	struct ent *h;		/* K_MAP: the handle's entry */
	struct ent *next;
};

/* Say it once per process (and once again in a forked child). */
#define SAY_ONCE(flag, ...) do {						\
	if (!__atomic_exchange_n(&(flag), 1, __ATOMIC_RELAXED))			\
		say(__VA_ARGS__);						\
} while (0)

/* The real entry point i as a T, or the wrapper fails: how wrappers start. */
#define REAL_OR_FAIL(T, i)							\
	__typeof__(T) f = (__typeof__(T))R(i);								\
	if (!f)									\
		return CUDA_ERROR_NOT_INITIALIZED

/* resolve.c */
extern __thread int depth __attribute__((tls_model("initial-exec")));
uint64_t now_ns(void);
void nvml_init(void);
extern pthread_once_t nvml_once;
extern void *real[NREAL];
void real_init(void);
extern pthread_once_t real_once;
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void *const wrapper[NWRAP];
extern void *(*real_dlsym)(void *, const char *);

/* python.c */
int py_torch_locked(void);

/* reactor.c */
int ticket_thread_start_locked(void);
void ticket_thread_stop(void);

/* track.c */
void ent_free(struct ent *e);
unsigned int hidx(uint64_t k);
void retrack(int kind, struct ent *e);
extern pthread_mutex_t shard[NSHARD];
void shard_init(void);
extern pthread_once_t shard_once;
extern struct ent *tab[NKIND][1U << HBITS];
int track(int kind, uint64_t key, uint64_t bytes, int dev, struct ent *h, int pend);
extern long tracked[NSHARD];
struct ent *untrack(int kind, uint64_t key);

/* authority.c */
int authority_init(void);
int authority_down(void);
int authority_open(struct nxq_ctx **ctxp);
int down_begin(void);
void down_end(void);
int dev_key(int ord, char key[NXQ_DEVICE_KEY_MAX]);
int dev_state(int ord, int kind);
void state_drop_locked(int close_ctx);

/* charge.c */
int collect_add(struct dev *d, uint64_t bytes);
int charge(int ord, int kind, uint64_t holder, uint64_t bytes, uint64_t asked);
int charge_plain(int ord, uint64_t bytes, uint64_t *holderp);
int cur_dev(void);
uint64_t *owedp(int ord, int kind);
int owed_charge(int ord, int kind, uint64_t holder, uint64_t *paid, int quiet);
int owed_first_slow(int ord);
uint64_t owed_pay(int ord, int kind, uint64_t bytes);
void plain_undo(int ord, uint64_t holder, uint64_t bytes);
void plain_drop_credit(int ord);
void plain_give(int ord, uint64_t bytes);
int plain_take(int ord, uint64_t bytes);
void release_tracked(int kind, struct ent *e);
CUresult settle(int kind, uint64_t key, uint64_t bytes, int ord, uint64_t holder,
		CUresult (*undo)(uint64_t));
void uncharge(uint64_t holder, uint64_t bytes);

/* context.c */
extern int no_nvml;

/* pool.c */
int pool_attr(CUmemoryPool pool, int attr, uint64_t *v);
int pool_settle(struct pool *p, int may_grow, uint64_t keep);

/* torch.c */
uint64_t py_release(int ord, const struct nxq_ticket *t);

/* tickets.c */
uint64_t pools_trim(int ord);
void ticket_event(uint32_t tag);

/* connect.c */
void connect_start(void);
void connect_stop(void);

/* Entry point i (R_*) of the driver or NVML, resolved on first use; NULL if absent. */
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

/*
 * The authority's state (ST_*), settled on first use (authority.c); while
 * ST_DOWN, an allocation waits for one until S.wait_until.
 */
static inline int authority(void)
{
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);

	if (__builtin_expect(st & 1, 1))	/* ST_CHARGE or ST_PASS: settled */
		return st;
	if (st == ST_UNKNOWN)
		st = authority_init();
	return st == ST_DOWN ? authority_down() : st;
}

/* The same without the wait (queries, contexts, frees). */
static inline int authority_nowait(void)
{
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);

	return st == ST_UNKNOWN ? authority_init() : st;
}

/*
 * Before a new charge on device ord: what its holders owe since a late
 * connection, charged first (charge.c; a holder that cannot be registered
 * owes nothing: the device is not under nxquota, or refused and said).
 * 0, or -1: refused (said), the new charge is refused too.  Two loads
 * when nothing is owed.
 */
static inline int owed_first(int ord)
{
	if (__builtin_expect(!__atomic_load_n(&S.dev[ord].owed, __ATOMIC_RELAXED) &&
			     !__atomic_load_n(&S.dev[ord].cowed, __ATOMIC_RELAXED), 1))
		return 0;
	return owed_first_slow(ord);
}

/* Does a wrapper follow what it frees (charging, or remembering while down)? */
static inline int tracking(int st)
{
	return st == ST_CHARGE || st == ST_DOWN;
}

#endif /* NXQP_SHIM_H */
