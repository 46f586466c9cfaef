// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxq_torch: PyTorch's CUDAPluggableAllocator on libnxquota arenas.
 *
 * PyTorch calls
 *	void *nxq_torch_malloc(size_t size, int device, cudaStream_t stream);
 *	void  nxq_torch_free(void *ptr, size_t size, int device, cudaStream_t stream);
 * for every tensor allocation (route "tensor": a pluggable allocator
 * replaces the caching allocator and PyTorch itself caches nothing), or
 * for every segment of a torch.cuda.MemPool (route "pool": PyTorch's
 * caching allocator stays in front and asks us only for whole segments;
 * see nxquota_torch.py).  cudaStream_t is a pointer; no CUDA header is
 * needed.
 *
 *  - One nxquota context per process and one arena per CUDA device, made
 *    at the first allocation on that device (the CUDA backend retains the
 *    device's primary context, the one PyTorch uses).
 *  - Frees are stream-ordered (nxq_free_async on the stream PyTorch hands
 *    back, the allocation's stream) and allocations name their stream
 *    (nxq_alloc_async): a block freed on a stream is reused at once by the
 *    next allocation on that stream, by other streams only once the work
 *    queued before the free has completed.  NXQ_TORCH_FREE=sync frees at
 *    once (nxq_free), which is what the caching allocator does for one
 *    stream: right only for programs that allocate on one stream.  The
 *    pool route always frees stream-ordered: PyTorch hands a cached
 *    segment back without synchronising (it would have called cudaFree,
 *    which does), and work queued on the segment's stream may still use it.
 *  - Pool route: a release (ticket or nxq_torch_release()) first calls the
 *    release hook (nxq_torch_set_release_hook(); the Python module's makes
 *    PyTorch return the pool's cached segments), then waits for those
 *    stream-ordered frees and unmaps them.
 *  - Failure returns NULL and keeps the library's reason
 *    (nxq_torch_last_error()).  A pluggable allocator that returns NULL
 *    does not make PyTorch raise (it builds a tensor on address 0): the
 *    Python module installs nxq_torch_oom.cpp's entry point where it was
 *    built, which throws c10::OutOfMemoryError, i.e. torch.OutOfMemoryError.
 *  - Managed contexts (the nxquota module is loaded): pressure tickets are
 *    answered by the library's thread (retained handles, idle granules);
 *    this integration adds a reclaim callback that waits for pending
 *    stream-ordered frees so that they become idle and are released in the
 *    same answer.  PyTorch has already returned every block it does not
 *    use; nothing live is touched.
 *  - nxq_torch_release(): the same release by request (trim), for
 *    unmanaged contexts or a runtime that wants to give memory back.
 *
 * Configuration, read once (nxq_torch_configure() or the first allocation):
 *   NXQ_TORCH_CONTEXT      auto (default: managed if the module is there,
 *                          else unmanaged), managed, unmanaged
 *   NXQ_TORCH_CAP          unmanaged only: the most bytes all arenas of the
 *                          process may charge (mapped + retained handles)
 *   NXQ_TORCH_ROUTE        tensor (default here; the Python module chooses
 *                          its own default) or pool
 *   NXQ_TORCH_FREE         async (default) or sync; tensor route only
 *   NXQ_TORCH_GRANULE, NXQ_TORCH_GROW_BATCH, NXQ_TORCH_VA_SIZE,
 *   NXQ_TORCH_HANDLE_POOL  sizes ("64M", "2G", digits[K|M|G|T], 1024-based)
 *   NXQ_TORCH_RETAIN_IDLE  idle bytes kept mapped after synchronous frees;
 *                          default: all of them (like the caching allocator:
 *                          idle memory is given back by release or a
 *                          pressure ticket, not on every free); "0" allowed
 *   NXQ_TORCH_GROW_TIMEOUT_MS  managed only: wait this long for a grant
 *   NXQ_TORCH_PRIORITY     holder priority
 *   NXQ_TORCH_BACKEND      cuda (default); host: memfd arenas, for testing
 *                          this library without a GPU
 *   NXQ_TORCH_VERBOSE      1: one line on stderr per arena and failure
 *   NXQ_TORCH_TRACE        a new file (never an existing one: O_EXCL)
 *                          that gets one line per allocation, free and
 *                          release, in tests/lib/replay.c's format, to
 *                          replay this process's own requests without a GPU
 * Unset NXQ_TORCH_* variables leave the field to the library, which reads
 * its own NXQ_* variables (libnxquota.rst, "Tunables").
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nxquota.h"
#include "nxq_torch.h"
#include "size.h"	/* lib/size.c, in libnxquota.a */

#define API __attribute__((visibility("default")))
/* nxq_torch_events.c: the managed context's nxq_ctx_opts.on_event */
void nxq_torch__on_event(const struct nxq_event *ev, void *user);
#define QUANTUM 256ULL		/* libnxquota's size quantum */

struct dev {
	struct nxq_arena *arena;	/* published with release order */
	int create_err;			/* sticky arena-creation failure */
	uint64_t c[NXQ_TORCH_NSTATS];	/* counters, atomics; indices NXQ_TS_* */
};

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;	/* configuration */

static struct {
	pthread_mutex_t lock;		/* arena creation, the error message */
	int configured, config_err;
	struct nxq_ctx *ctx;
	int managed;
	int free_sync;
	int route;			/* ROUTE_TENSOR or ROUTE_POOL */
	int backend;
	int verbose;
	uint64_t cap;
	struct nxq_arena_opts aopts;
	char config[512];
	char err[512];
	struct dev dev[NXQ_TORCH_MAX_DEVICES];
} G = { .lock = PTHREAD_MUTEX_INITIALIZER };

enum { ROUTE_TENSOR, ROUTE_POOL };

/* The release hook: set and called under hook_lock (one call at a time). */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static nxq_torch_release_hook hook_fn;
static void *hook_user;
static uint64_t hook_calls, hook_errors;	/* atomics */
static __thread int in_hook;		/* this thread is inside the hook */

static const char *const stat_names[NXQ_TORCH_NSTATS] = {
#define X(id, name) [id] = name,
	NXQ_TORCH_STATS(X)
#undef X
};

/* ---- small helpers ---- */

static uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void add(uint64_t *p, uint64_t v) { __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }
static void sub(uint64_t *p, uint64_t v) { __atomic_sub_fetch(p, v, __ATOMIC_RELAXED); }

static void set_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = ld(p);

	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static void set_min(uint64_t *p, uint64_t v)
{
	uint64_t cur = ld(p);

	while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static __thread char tl_err[512];	/* this thread's last failure */

__attribute__((format(printf, 2, 3)))
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tl_err, sizeof(tl_err), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&G.lock);
	memcpy(G.err, tl_err, sizeof(G.err));
	if (G.verbose)
		fprintf(stderr, "nxq_torch: %s\n", G.err);
	pthread_mutex_unlock(&G.lock);
	return err;
}

/* 0 unset, 1 set (*out), <0 malformed (message set).  zero: NXQ_OPT_ZERO for "0". */
static int env_size(const char *name, int zero_ok, uint64_t *out)
{
	const char *s = getenv(name);
	uint64_t v;
	int r;

	if (!s || !*s)
		return 0;
	r = nxq_size_parse_b(s, false, &v);
	if (r)
		return fail(-EINVAL, "%s=\"%s\": not a size (digits, optionally "
			    "K, M, G, T, P or E)", name, s);
	if (!v) {
		if (!zero_ok)
			return fail(-EINVAL, "%s cannot be 0", name);
		v = NXQ_OPT_ZERO;
	}
	*out = v;
	return 1;
}

static int env_word(const char *name, const char *const *words, int def)
{
	const char *s = getenv(name);

	if (!s || !*s)
		return def;
	for (int i = 0; words[i]; i++)
		if (!strcmp(s, words[i]))
			return i;
	return fail(-EINVAL, "%s=\"%s\": unknown value", name, s);
}

/* ---- configuration ---- */

enum { CTX_AUTO, CTX_MANAGED, CTX_UNMANAGED };

/* NXQ_TORCH_TRACE: the requests as this library got them, for replay.c. */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *trace_f;

static void trace(const char *act, const void *p, uint64_t size, const void *stream)
{
	if (!__atomic_load_n(&trace_f, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&trace_lock);
	fprintf(trace_f, "%s %" PRIuPTR " %" PRIu64 " %" PRIuPTR "\n", act, (uintptr_t)p, size,
		(uintptr_t)stream);
	pthread_mutex_unlock(&trace_lock);
}

static void trace_close(void)
{
	pthread_mutex_lock(&trace_lock);
	if (trace_f)
		fclose(trace_f);
	trace_f = NULL;
	pthread_mutex_unlock(&trace_lock);
}

static int trace_open(void)
{
	const char *path = getenv("NXQ_TORCH_TRACE");
	FILE *f;

	if (!path || !*path)
		return 0;
	f = fopen(path, "wxe");		/* O_CREAT|O_EXCL|O_CLOEXEC */
	if (!f)
		return fail(-errno, "NXQ_TORCH_TRACE=%s: %s", path, strerror(errno));
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	atexit(trace_close);
	__atomic_store_n(&trace_f, f, __ATOMIC_RELEASE);
	return 0;
}

static int read_config(void)
{
	static const char *const ctxw[] = { "auto", "managed", "unmanaged", NULL };
	static const char *const freew[] = { "async", "sync", NULL };
	static const char *const routew[] = { "tensor", "pool", NULL };
	static const char *const bew[] = { "cuda", "host", NULL };
	struct nxq_arena_opts *o = &G.aopts;
	int ctxmode, r;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	G.verbose = getenv("NXQ_TORCH_VERBOSE") && strcmp(getenv("NXQ_TORCH_VERBOSE"), "0");
	if ((r = trace_open()) < 0)
		return r;
	if ((ctxmode = env_word("NXQ_TORCH_CONTEXT", ctxw, CTX_AUTO)) < 0)
		return ctxmode;
	if ((r = env_word("NXQ_TORCH_FREE", freew, 0)) < 0)
		return r;
	G.free_sync = r == 1;
	if ((r = env_word("NXQ_TORCH_ROUTE", routew, ROUTE_TENSOR)) < 0)
		return r;
	G.route = r;
	if (G.route == ROUTE_POOL && G.free_sync)
		return fail(-EINVAL, "NXQ_TORCH_FREE=sync with NXQ_TORCH_ROUTE=pool: PyTorch "
			    "returns a pool's cached segment without synchronising, so its "
			    "frees must be stream-ordered");
	if ((r = env_word("NXQ_TORCH_BACKEND", bew, 0)) < 0)
		return r;
	G.backend = r == 1 ? NXQ_BACKEND_HOST : NXQ_BACKEND_CUDA;
	o->backend = G.backend;
	if ((r = env_size("NXQ_TORCH_CAP", 0, &G.cap)) < 0)
		return r;
	if (r && ctxmode == CTX_MANAGED)
		return fail(-EINVAL, "NXQ_TORCH_CAP is a process-local cap: it needs "
			    "NXQ_TORCH_CONTEXT=unmanaged (a managed context is capped by the "
			    "module's budgets)");
	if (r && ctxmode == CTX_AUTO)
		ctxmode = CTX_UNMANAGED;	/* a cap asks for a process-local ledger */
	if ((r = env_size("NXQ_TORCH_GRANULE", 0, &o->granule)) < 0 ||
	    (r = env_size("NXQ_TORCH_GROW_BATCH", 0, &o->grow_batch)) < 0 ||
	    (r = env_size("NXQ_TORCH_VA_SIZE", 0, &o->va_size)) < 0 ||
	    (r = env_size("NXQ_TORCH_HANDLE_POOL", 1, &o->handle_pool)) < 0)
		return r;
	/*
	 * 4 MiB physical handles at most beyond what an allocation is missing,
	 * not the library's 64 MiB: one growth then overshoots what PyTorch
	 * asked by less than 4 MiB (the replay of PyTorch's traces,
	 * tests/lib/replay.c, maps 14 MiB more with 16 MiB ones on "small",
	 * above expandable segments' peak); growth is rare in a training loop
	 * (bench_torch.py, configs tensor-async, -gb16 and -gb64).
	 */
	if (!o->grow_batch && !getenv("NXQ_GROW_BATCH"))
		o->grow_batch = 4ULL << 20;
	if ((r = env_size("NXQ_TORCH_RETAIN_IDLE", 1, &o->retain_idle)) < 0)
		return r;
	if (!r && !getenv("NXQ_RETAIN_IDLE"))
		o->retain_idle = UINT64_MAX - 1;	/* keep idle memory until asked */
	if ((r = env_size("NXQ_TORCH_GROW_TIMEOUT_MS", 0, &v)) < 0)
		return r;
	if (r)
		o->grow_timeout_ms = v;
	if ((r = env_size("NXQ_TORCH_PRIORITY", 1, &v)) < 0)
		return r;
	if (r)
		o->priority = v == NXQ_OPT_ZERO ? 0 : (uint32_t)v;

	{
		struct nxq_ctx_opts co = { .size = sizeof(co) };

		if (ctxmode != CTX_UNMANAGED) {
			co.on_event = nxq_torch__on_event;
			r = nxq_ctx_open(&co, &G.ctx);
			if (r && ctxmode == CTX_MANAGED)
				return fail(r, "NXQ_TORCH_CONTEXT=managed: %s", nxq_errmsg());
			if (r && G.verbose)
				fprintf(stderr, "nxq_torch: no managed context (%s); running "
					"unmanaged\n", nxq_errmsg());
		}
		if (!G.ctx) {
			co.on_event = NULL;
			co.flags = NXQ_CTX_UNMANAGED;
			co.unmanaged_cap = G.cap;
			r = nxq_ctx_open(&co, &G.ctx);
			if (r)
				return fail(r, "cannot open an unmanaged nxquota context: %s",
					    nxq_errmsg());
		}
	}
	G.managed = nxq_ctx_is_managed(G.ctx) == 1;
	snprintf(G.config, sizeof(G.config),
		 "route=%s context=%s cap=%" PRIu64 " free=%s backend=%s granule=%" PRIu64
		 " grow_batch=%" PRIu64 " retain_idle=%s handle_pool=%" PRIu64
		 " va_size=%" PRIu64 " (0: the library's default or NXQ_* variable)",
		 G.route == ROUTE_POOL ? "pool" : "tensor",
		 G.managed ? "managed" : "unmanaged", G.cap, G.free_sync ? "sync" : "async",
		 G.backend == NXQ_BACKEND_HOST ? "host" : "cuda", o->granule, o->grow_batch,
		 o->retain_idle == UINT64_MAX - 1 ? "all" :
		 o->retain_idle == NXQ_OPT_ZERO ? "0" : o->retain_idle ? "set" : "default",
		 o->handle_pool == NXQ_OPT_ZERO ? 0 : o->handle_pool,
		 o->va_size);
	if (G.verbose)
		fprintf(stderr, "nxq_torch: %s\n", G.config);
	return 0;
}

API int nxq_torch_configure(void)
{
	if (__atomic_load_n(&G.configured, __ATOMIC_ACQUIRE))
		return G.config_err;
	pthread_mutex_lock(&cfg_lock);
	if (!G.configured) {
		G.config_err = read_config();	/* fail() takes G.lock, not cfg_lock */
		__atomic_store_n(&G.configured, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cfg_lock);
	return G.config_err;
}

/* ---- arenas ---- */

/*
 * Under pressure (managed contexts): wait for the stream-ordered frees so
 * that the library, right after this returns, finds them idle and
 * releases them in the same answer.  A trim to a target it is already
 * under releases nothing: it only waits (NXQ_TRIM_WAIT).
 */
static void call_hook(int device, uint64_t bytes)
{
	int r;

	if (in_hook)
		return;		/* a release from inside the hook */
	pthread_mutex_lock(&hook_lock);
	if (hook_fn) {
		in_hook = 1;
		r = hook_fn(device, bytes, hook_user);
		in_hook = 0;
		add(&hook_calls, 1);
		if (r < 0) {
			add(&hook_errors, 1);
			fail(r, "release hook (device %d): error %d", device, r);
		}
	}
	pthread_mutex_unlock(&hook_lock);
}

API int nxq_torch_set_release_hook(nxq_torch_release_hook fn, void *user)
{
	if (in_hook)
		return -EDEADLK;	/* would wait for itself */
	pthread_mutex_lock(&hook_lock);
	hook_fn = fn;
	hook_user = fn ? user : NULL;
	pthread_mutex_unlock(&hook_lock);
	return 0;
}

/*
 * Under pressure (managed contexts), on the library's thread: the release
 * hook first (pool route: PyTorch hands the pool's cached segments back),
 * then wait for the stream-ordered frees so that the library, right after
 * this returns, finds them idle and releases them in the same answer.  A
 * trim to a target it is already under releases nothing: it only waits
 * (NXQ_TRIM_WAIT).
 */
static int reclaim_wait_pending(struct nxq_arena *a, uint64_t bytes_wanted, void *user)
{
	struct dev *d = user;
	int64_t r;

	add(&d->c[NXQ_TS_RECLAIM_CALLS], 1);
	call_hook((int)(d - G.dev), bytes_wanted);
	r = nxq_arena_trim(a, UINT64_MAX, NXQ_TRIM_WAIT);
	return r < 0 ? (int)r : 0;
}

static struct nxq_arena *arena_of(int device)
{
	struct dev *d;
	struct nxq_arena *a;
	struct nxq_arena_opts o;
	int r;

	if (device < 0 || device >= NXQ_TORCH_MAX_DEVICES) {
		fail(-ENODEV, "device %d out of range (0..%d)", device, NXQ_TORCH_MAX_DEVICES - 1);
		return NULL;
	}
	d = &G.dev[device];
	a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
	if (a)
		return a;
	r = nxq_torch_configure();
	if (r) {
		errno = -r;
		return NULL;
	}
	pthread_mutex_lock(&G.lock);
	a = d->arena;
	if (a || d->create_err) {
		pthread_mutex_unlock(&G.lock);
		if (!a)
			fail(d->create_err, "no arena on device %d (creation failed earlier; "
			     "see the first error)", device);
		return a;
	}
	o = G.aopts;
	o.cuda_device = device;
	r = nxq_arena_create(G.ctx, &o, &a);
	if (r) {
		d->create_err = r;
		pthread_mutex_unlock(&G.lock);
		fail(r, "cannot create an arena on device %d: %s", device, nxq_errmsg());
		return NULL;
	}
	d->c[NXQ_TS_LO_PTR] = UINT64_MAX;
	if (G.managed && nxq_arena_add_reclaim(a, reclaim_wait_pending, d) && G.verbose)
		fprintf(stderr, "nxq_torch: device %d: no reclaim callback: %s\n", device,
			nxq_errmsg());
	__atomic_store_n(&d->arena, a, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&G.lock);
	if (G.verbose)
		fprintf(stderr, "nxq_torch: arena on device %d (%s)\n", device,
			G.managed ? "managed" : "unmanaged");
	return a;
}

/* Peaks of what the arena maps and charges: they only grow on allocation. */
static void observe(struct dev *d, struct nxq_arena *a)
{
	struct nxq_stats s = { .size = sizeof(s) };

	if (nxq_arena_stats(a, &s))
		return;
	set_max(&d->c[NXQ_TS_PEAK_MAPPED], s.mapped);
	set_max(&d->c[NXQ_TS_PEAK_CHARGED], s.charged);
}

API void *nxq_torch_malloc(size_t size, int device, void *stream)
{
	struct nxq_arena *a;
	struct dev *d;
	void *p = NULL;
	uint64_t rounded;
	int r, async;

	a = arena_of(device);
	if (!a)
		return NULL;
	d = &G.dev[device];
	if (!size) {
		/* What the caching allocator does: no block, no statistics. */
		add(&d->c[NXQ_TS_ZERO_MALLOCS], 1);
		return NULL;
	}
	/*
	 * Stream-ordered frees: allocate on PyTorch's stream too, so a block
	 * freed on it is reused at once (the caching allocator's rule) and
	 * other streams get it only once that work completed.
	 */
	async = !(G.free_sync && G.route == ROUTE_TENSOR);
	r = async ? nxq_alloc_async(a, size, 0, stream, &p) : nxq_alloc(a, size, 0, &p);
	if (r == -EDQUOT || r == -ENOSPC || r == -ENOMEM) {
		/*
		 * Refused growth: idle granules (kept mapped by retain_idle) may be
		 * too fragmented for this request while their charge blocks the
		 * growth.  Give them back and try once more, as the caching
		 * allocator frees its cached blocks before it reports OOM.
		 */
		add(&d->c[NXQ_TS_OOM_RETRIES], 1);
		if (nxq_arena_trim(a, 0, NXQ_TRIM_WAIT) > 0)
			r = async ? nxq_alloc_async(a, size, 0, stream, &p) :
				    nxq_alloc(a, size, 0, &p);
	}
	if (r) {
		struct nxq_stats s = { .size = sizeof(s) };

		add(&d->c[NXQ_TS_FAILED_MALLOCS], 1);
		nxq_arena_stats(a, &s);
		fail(r, "device %d: cannot allocate %zu bytes: %s (arena: %" PRIu64
		     " bytes in use, %" PRIu64 " pending, %" PRIu64 " free, %" PRIu64
		     " mapped, %" PRIu64 " charged%s%s)", device, size, nxq_errmsg(),
		     s.in_use, s.pending, s.free, s.mapped, s.charged,
		     G.managed ? "" : ", process-local cap ",
		     G.managed ? "" : (G.cap ? "NXQ_TORCH_CAP" : "none"));
		return NULL;
	}
	rounded = (size + QUANTUM - 1) & ~(QUANTUM - 1);
	add(&d->c[NXQ_TS_MALLOCS], 1);
	add(&d->c[NXQ_TS_LIVE_COUNT], 1);
	set_max(&d->c[NXQ_TS_PEAK_REQUESTED], __atomic_add_fetch(&d->c[NXQ_TS_LIVE_REQUESTED],
								 size, __ATOMIC_RELAXED));
	set_max(&d->c[NXQ_TS_PEAK_ROUNDED], __atomic_add_fetch(&d->c[NXQ_TS_LIVE_ROUNDED],
							       rounded, __ATOMIC_RELAXED));
	set_min(&d->c[NXQ_TS_LO_PTR], (uintptr_t)p);
	set_max(&d->c[NXQ_TS_HI_PTR], (uintptr_t)p + size);
	observe(d, a);
	trace("alloc", p, size, async ? stream : NULL);
	return p;
}

API void nxq_torch_free(void *ptr, size_t size, int device, void *stream)
{
	struct nxq_arena *a;
	struct dev *d;
	int r, sync = G.free_sync && G.route == ROUTE_TENSOR;

	if (!ptr)
		return;
	if (device < 0 || device >= NXQ_TORCH_MAX_DEVICES ||
	    !(a = __atomic_load_n(&G.dev[device].arena, __ATOMIC_ACQUIRE))) {
		fail(-EINVAL, "free of %p on device %d, which has no arena", ptr, device);
		return;
	}
	d = &G.dev[device];
	r = sync ? nxq_free(a, ptr) : nxq_free_async(a, ptr, stream);
	if (!r)
		trace("free_completed", ptr, size, sync ? NULL : stream);
	if (r) {
		/* Not ours, or the stream is gone (interpreter teardown): keep it. */
		add(&d->c[NXQ_TS_FREE_ERRORS], 1);
		fail(r, "device %d: free of %p (%zu bytes): %s", device, ptr, size, nxq_errmsg());
		return;
	}
	add(&d->c[NXQ_TS_FREES], 1);
	sub(&d->c[NXQ_TS_LIVE_COUNT], 1);
	sub(&d->c[NXQ_TS_LIVE_REQUESTED], size);
	sub(&d->c[NXQ_TS_LIVE_ROUNDED], (size + QUANTUM - 1) & ~(QUANTUM - 1));
}

/* ---- what the Python module reads and asks ---- */

API int nxq_torch_stats(int device, uint64_t *out, int n)
{
	struct nxq_stats s = { .size = sizeof(s) };
	struct nxq_arena *a;
	struct dev *d;
	int i;

	if (device < 0 || device >= NXQ_TORCH_MAX_DEVICES || !out || n < 0)
		return -EINVAL;
	d = &G.dev[device];
	a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
	if (!a)
		return -ENOENT;
	if (nxq_arena_stats(a, &s))
		return fail(-EIO, "nxq_arena_stats: %s", nxq_errmsg());
	for (i = 0; i < n && i < NXQ_TORCH_NSTATS; i++)
		out[i] = ld(&d->c[i]);
#define S(id, f) if (id < n) out[id] = s.f;
	S(NXQ_TS_GRANULE, granule) S(NXQ_TS_VA_SIZE, va_size) S(NXQ_TS_MAPPED, mapped)
	S(NXQ_TS_IN_USE, in_use) S(NXQ_TS_PENDING, pending) S(NXQ_TS_FREE, free)
	S(NXQ_TS_IDLE, idle) S(NXQ_TS_RETAINED, retained) S(NXQ_TS_CHARGED, charged)
	S(NXQ_TS_RECLAIMABLE, reclaimable) S(NXQ_TS_CHARGE_CALLS, charge_calls)
	S(NXQ_TS_UNCHARGE_CALLS, uncharge_calls) S(NXQ_TS_CHARGE_DENIED, charge_denied)
	S(NXQ_TS_GROWS, grows) S(NXQ_TS_ARENA_ALLOCS, allocs) S(NXQ_TS_ARENA_FREES, frees)
	S(NXQ_TS_TICKETS, tickets) S(NXQ_TS_ANSWERS, answers)
	S(NXQ_TS_ANSWERED_BYTES, answered_bytes)
#undef S
	if (NXQ_TS_MANAGED < n)
		out[NXQ_TS_MANAGED] = G.managed;
	if (NXQ_TS_CAP < n)
		out[NXQ_TS_CAP] = G.cap;
	if (NXQ_TS_ROUTE < n)
		out[NXQ_TS_ROUTE] = G.route;
	if (NXQ_TS_HOOK_CALLS < n)
		out[NXQ_TS_HOOK_CALLS] = ld(&hook_calls);
	if (NXQ_TS_HOOK_ERRORS < n)
		out[NXQ_TS_HOOK_ERRORS] = ld(&hook_errors);
	if (NXQ_TS_LO_PTR < n && out[NXQ_TS_LO_PTR] == UINT64_MAX)
		out[NXQ_TS_LO_PTR] = 0;
	return i < NXQ_TORCH_NSTATS ? i : NXQ_TORCH_NSTATS;
}

API const char *nxq_torch_stat_name(int i)
{
	return i >= 0 && i < NXQ_TORCH_NSTATS ? stat_names[i] : NULL;
}

API int nxq_torch_nstats(void)
{
	return NXQ_TORCH_NSTATS;
}

API int nxq_torch_reset_peaks(int device)
{
	struct nxq_stats s = { .size = sizeof(s) };
	struct nxq_arena *a;
	struct dev *d;

	if (device < 0 || device >= NXQ_TORCH_MAX_DEVICES)
		return -EINVAL;
	d = &G.dev[device];
	a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
	if (!a)
		return -ENOENT;
	if (nxq_arena_stats(a, &s))
		return -EIO;
	__atomic_store_n(&d->c[NXQ_TS_PEAK_MAPPED], s.mapped, __ATOMIC_RELAXED);
	__atomic_store_n(&d->c[NXQ_TS_PEAK_CHARGED], s.charged, __ATOMIC_RELAXED);
	__atomic_store_n(&d->c[NXQ_TS_PEAK_REQUESTED], ld(&d->c[NXQ_TS_LIVE_REQUESTED]),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&d->c[NXQ_TS_PEAK_ROUNDED], ld(&d->c[NXQ_TS_LIVE_ROUNDED]),
			 __ATOMIC_RELAXED);
	return 0;
}

/*
 * Give back up to bytes (UINT64_MAX: everything idle) on one device, or on
 * all (device -1): the release a pressure ticket makes, by request.
 * Calls the release hook (pool route: PyTorch returns cached segments),
 * waits for pending stream-ordered frees, then releases retained handles
 * and idle granules (nxq_arena_trim); memory in use is never touched.
 * Returns the bytes released (uncharged and returned to the device).
 */
API int64_t nxq_torch_release(int device, uint64_t bytes)
{
	int64_t total = 0;
	int lo = device, hi = device;

	if (device < -1 || device >= NXQ_TORCH_MAX_DEVICES)
		return -EINVAL;
	if (!bytes)
		return 0;
	trace("release", NULL, bytes, NULL);
	call_hook(device, bytes);
	if (device == -1) {
		lo = 0;
		hi = NXQ_TORCH_MAX_DEVICES - 1;
	}
	for (int i = lo; i <= hi && (uint64_t)total < bytes; i++) {
		struct nxq_arena *a = __atomic_load_n(&G.dev[i].arena, __ATOMIC_ACQUIRE);
		struct nxq_stats s = { .size = sizeof(s) };
		uint64_t want = bytes - (uint64_t)total, target;
		int64_t r;

		if (!a)
			continue;
		if (nxq_arena_stats(a, &s))
			return fail(-EIO, "nxq_arena_stats: %s", nxq_errmsg());
		/* trim releases until charged <= target; charged is read again
		 * under the arena's lock there, so a racing growth only means
		 * that a little less is released. */
		target = want >= s.charged ? 0 : s.charged - want;
		r = nxq_arena_trim(a, target, NXQ_TRIM_WAIT);
		if (r < 0)
			return fail((int)r, "device %d: release: %s", i, nxq_errmsg());
		add(&G.dev[i].c[NXQ_TS_RELEASES], 1);
		add(&G.dev[i].c[NXQ_TS_RELEASED_BYTES], (uint64_t)r);
		total += r;
	}
	return total;
}

struct rel_job {
	int device;
	uint64_t bytes;
	int64_t ret;
};

static void *release_thread(void *arg)
{
	struct rel_job *j = arg;

	j->ret = nxq_torch_release(j->device, j->bytes);
	return NULL;
}

API int64_t nxq_torch_release_from_thread(int device, uint64_t bytes)
{
	struct rel_job j = { .device = device, .bytes = bytes };
	pthread_t t;
	int r;

	r = pthread_create(&t, NULL, release_thread, &j);
	if (r)
		return fail(-r, "cannot start a release thread: %s", strerror(r));
	pthread_join(t, NULL);
	return j.ret;
}

API const char *nxq_torch_last_error(void)
{
	return G.err;
}

API const char *nxq_torch_thread_error(void)
{
	return tl_err;
}

API const char *nxq_torch_config(void)
{
	return G.config;
}
