/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libnxq_torch: PyTorch's CUDAPluggableAllocator on libnxquota arenas.
 * See nxq_torch.c for the behaviour and the NXQ_TORCH_* variables, and
 * README.rst for the Python side.
 */
#ifndef NXQ_TORCH_H
#define NXQ_TORCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NXQ_TORCH_MAX_DEVICES 64

/*
 * Statistics of one device, in this order (nxq_torch_stats() fills an
 * array of uint64_t; nxq_torch_stat_name(i) names entry i).  The first
 * group is this integration's own bookkeeping, the second the arena's
 * nxq_arena_stats() at the time of the call.  Bytes are charge, not
 * residency; memory PyTorch holds outside the allocator (the CUDA context,
 * cuBLAS handles) is not in them.
 */
#define NXQ_TORCH_STATS(X) \
	X(NXQ_TS_MALLOCS, "mallocs")		/* successful non-empty allocations */ \
	X(NXQ_TS_FREES, "frees")		/* frees the arena accepted */ \
	X(NXQ_TS_ZERO_MALLOCS, "zero_mallocs")	/* size 0: NULL, as the caching allocator */ \
	X(NXQ_TS_FAILED_MALLOCS, "failed_mallocs") \
	X(NXQ_TS_FREE_ERRORS, "free_errors")	/* frees the arena refused */ \
	X(NXQ_TS_LIVE_COUNT, "live_count")	/* allocations not yet freed */ \
	X(NXQ_TS_LIVE_REQUESTED, "live_requested")	/* their sizes as PyTorch asked */ \
	X(NXQ_TS_LIVE_ROUNDED, "live_rounded")	/* the same rounded to 256 bytes */ \
	X(NXQ_TS_PEAK_REQUESTED, "peak_requested") \
	X(NXQ_TS_PEAK_ROUNDED, "peak_rounded") \
	X(NXQ_TS_PEAK_MAPPED, "peak_mapped")	/* arena mapped, after each allocation */ \
	X(NXQ_TS_PEAK_CHARGED, "peak_charged")	/* mapped + retained handles */ \
	X(NXQ_TS_LO_PTR, "lo_ptr")		/* lowest address handed out */ \
	X(NXQ_TS_HI_PTR, "hi_ptr")		/* highest end address handed out */ \
	X(NXQ_TS_RELEASES, "releases")		/* nxq_torch_release() calls */ \
	X(NXQ_TS_RELEASED_BYTES, "released_bytes") \
	X(NXQ_TS_RECLAIM_CALLS, "reclaim_calls")	/* pressure callback calls */ \
	X(NXQ_TS_OOM_RETRIES, "oom_retries")	/* refusals retried after a trim */ \
	X(NXQ_TS_MANAGED, "managed")		/* 1: the module's budgets apply */ \
	X(NXQ_TS_CAP, "cap")			/* unmanaged process-local cap, 0 none */ \
	X(NXQ_TS_GRANULE, "granule") \
	X(NXQ_TS_VA_SIZE, "va_size") \
	X(NXQ_TS_MAPPED, "mapped") \
	X(NXQ_TS_IN_USE, "in_use") \
	X(NXQ_TS_PENDING, "pending") \
	X(NXQ_TS_FREE, "free") \
	X(NXQ_TS_IDLE, "idle") \
	X(NXQ_TS_RETAINED, "retained") \
	X(NXQ_TS_CHARGED, "charged") \
	X(NXQ_TS_RECLAIMABLE, "reclaimable") \
	X(NXQ_TS_CHARGE_CALLS, "charge_calls") \
	X(NXQ_TS_UNCHARGE_CALLS, "uncharge_calls") \
	X(NXQ_TS_CHARGE_DENIED, "charge_denied") \
	X(NXQ_TS_GROWS, "grows") \
	X(NXQ_TS_ARENA_ALLOCS, "arena_allocs") \
	X(NXQ_TS_ARENA_FREES, "arena_frees") \
	X(NXQ_TS_TICKETS, "tickets") \
	X(NXQ_TS_ANSWERS, "answers") \
	X(NXQ_TS_ANSWERED_BYTES, "answered_bytes") \
	X(NXQ_TS_ROUTE, "route")		/* 0 tensor (pluggable), 1 pool (MemPool) */ \
	X(NXQ_TS_HOOK_CALLS, "hook_calls")	/* release hook calls (pool route) */ \
	X(NXQ_TS_HOOK_ERRORS, "hook_errors")	/* ... that returned an error */

enum {
#define NXQ_TS_ENUM(id, name) id,
	NXQ_TORCH_STATS(NXQ_TS_ENUM)
#undef NXQ_TS_ENUM
	NXQ_TORCH_NSTATS
};

/* The allocator PyTorch calls (torch.cuda.memory.CUDAPluggableAllocator). */
void *nxq_torch_malloc(size_t size, int device, void *stream);
void nxq_torch_free(void *ptr, size_t size, int device, void *stream);

/* Read the NXQ_TORCH_* variables and open the context: 0 or -errno. */
int nxq_torch_configure(void);
/* Entries filled (at most n) or -errno; -ENOENT: no arena on that device yet. */
int nxq_torch_stats(int device, uint64_t *out, int n);
const char *nxq_torch_stat_name(int i);
int nxq_torch_nstats(void);
int nxq_torch_reset_peaks(int device);
/* Bytes released (device -1: all devices; bytes UINT64_MAX: all idle). */
int64_t nxq_torch_release(int device, uint64_t bytes);
/*
 * The release hook (either route; the Python module's pool route sets
 * its own, which calls the program's): called before every release -- a
 * pressure ticket (the library's thread), nxq_torch_release() -- so that
 * the runtime in front of the arena (PyTorch's caching allocator) hands
 * its cached segments back through nxq_torch_free() first.  device is the
 * device asked (-1: all), bytes what is wanted (UINT64_MAX: everything).
 * Returns 0 or -errno (counted in hook_errors, otherwise ignored).  Never
 * called recursively: a release from inside the hook skips it.  NULL
 * unregisters; nxq_torch_set_release_hook() returns once a call in
 * progress has finished.
 */
typedef int (*nxq_torch_release_hook)(int device, uint64_t bytes, void *user);
int nxq_torch_set_release_hook(nxq_torch_release_hook hook, void *user);
/* nxq_torch_release() on a new thread, joined: what a ticket does, from a
 * thread the runtime did not create (tests). */
int64_t nxq_torch_release_from_thread(int device, uint64_t bytes);
/*
 * Pressure events of a managed context (nxq_torch_events.c): each event is
 * NXQ_TORCH_EVENT_WORDS uint64_t -- type (NXQ_EVENT_TICKET or _ANSWER),
 * CLOCK_MONOTONIC ns when the library's thread passed it on, the ticket's
 * generation, bytes wanted, level, reason (tickets), bytes released and
 * the charge after (answers).  nxq_torch_events() moves up to max of the
 * oldest into out and returns how many (or -EINVAL); the ring keeps the
 * last NXQ_TORCH_EVENTS and counts what it dropped.  nxq_torch_ticket()
 * fills one event: the ticket the calling thread is answering (from the
 * release hook: the one it was called for); -ENOENT on a thread that has
 * read none.
 */
#define NXQ_TORCH_EVENTS 4096
#define NXQ_TORCH_EVENT_WORDS 8
int nxq_torch_events(uint64_t *out, int max);
uint64_t nxq_torch_events_dropped(void);
int nxq_torch_ticket(uint64_t *out);

/* The last failure's reason (process-wide), and the effective configuration. */
const char *nxq_torch_last_error(void);
const char *nxq_torch_thread_error(void);	/* the calling thread's */
const char *nxq_torch_config(void);

#ifdef __cplusplus
}
#endif

#endif /* NXQ_TORCH_H */
