/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libnxquota - device-memory arenas that ask the nxquota kernel module
 * before they grow.
 *
 * Objects:
 *  - struct nxq_ctx: one per process (or per runtime); holds the open
 *    /dev/nxquota file, or, for an unmanaged context, a process-local cap.
 *  - struct nxq_arena: one VA range on one device (a CUDA GPU or host
 *    memory), grown by physical handles sized to the growth (whole
 *    granules); registered as one holder with the
 *    module, with an eventfd the module signals when it asks the holder to
 *    give memory back (a pressure ticket).  Allocations are served
 *    best-fit from mapped granules.
 *
 * Pressure: by default a library thread per managed context answers the
 * module's tickets; with NXQ_CTX_NO_THREAD the runtime polls
 * nxq_ctx_pressure_fd() in its own loop and calls nxq_ctx_handle_pressure().
 * Either way the library releases retained handles, then idle handles,
 * then calls the arena's reclaim callbacks (nxq_arena_add_reclaim()), and
 * answers the ticket with what was released.  It never touches memory in
 * use.  See "Pressure" in Documentation/libnxquota.rst for the callback
 * contract.
 *
 * Conventions:
 *  - Every function returns 0 (or a non-negative value where it says so)
 *    on success and a negative errno on failure.  nxq_errmsg() gives a
 *    human-readable reason for the last failure in the calling thread.
 *  - Options structs start with their size (set it to sizeof the struct);
 *    bytes past the fields this library knows must be zero (-E2BIG).  A
 *    field left 0 takes its environment variable, else its default;
 *    NXQ_OPT_ZERO asks for an explicit zero where zero is meaningful.
 *  - All functions are thread-safe; one arena may be used from several
 *    threads.  Byte counts are charge, not residency.
 *  - Fork: a context and its arenas belong to the process that opened the
 *    context; in a child, calls on them fail with -ECHILD and close/destroy
 *    free only the child's copy (see FORK in nxq_ctx_open(3)).
 *  - Streams: nxq_free_async() frees in a stream's order; nxq_alloc_async()
 *    on the same stream reuses such memory at once, others once the
 *    stream's work completed.
 *
 * See Documentation/libnxquota.rst and the nxq_*(3) man pages.
 */
#ifndef NXQUOTA_H
#define NXQUOTA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NXQ_BUILDING_LIB)
#define NXQ_API __attribute__((visibility("default")))
#else
#define NXQ_API
#endif

struct nxq_ctx;
struct nxq_arena;

/* An explicit zero for option fields where 0 otherwise means "default". */
#define NXQ_OPT_ZERO		UINT64_MAX
/* A statistic the library cannot measure. */
#define NXQ_UNKNOWN		UINT64_MAX

/* nxq_ctx_opts.flags */
#define NXQ_CTX_UNMANAGED	(1U << 0)  /* never open /dev/nxquota */
#define NXQ_CTX_NO_THREAD	(1U << 1)  /* no pressure thread: the caller polls */
#define NXQ_CTX_FLAGS_ALL	(NXQ_CTX_UNMANAGED | NXQ_CTX_NO_THREAD)

/* struct nxq_event.type */
#define NXQ_EVENT_TICKET	1	/* a ticket was read */
#define NXQ_EVENT_ANSWER	2	/* a ticket was answered (or the answer failed) */

/**
 * struct nxq_event - one pressure event, passed to nxq_ctx_opts.on_event
 * @size: sizeof(struct nxq_event) of the library; fields past it are absent
 * @type: NXQ_EVENT_*
 * @arena: the arena whose holder got the ticket
 * @generation: the ticket's generation
 * @bytes_wanted: TICKET: bytes asked
 * @deadline_ns: TICKET: CLOCK_MONOTONIC deadline of the asker
 * @reason: TICKET: NXQ_TICKET_REASON_* (see the kernel ABI)
 * @level: TICKET: NXQ_TICKET_LEVEL_*
 * @released: ANSWER: bytes released and uncharged
 * @charged: ANSWER: the arena's charge after the answer
 * @error: ANSWER: 0, or the negative errno of a failed answer (the bytes
 *	were then uncharged with a plain uncharge)
 */
struct nxq_event {
	uint32_t size;
	uint32_t type;
	struct nxq_arena *arena;
	uint64_t generation;
	uint64_t bytes_wanted;
	uint64_t deadline_ns;
	uint32_t reason;
	uint32_t level;
	uint64_t released;
	uint64_t charged;
	int32_t error;
	uint32_t pad;
};

/**
 * struct nxq_ctx_opts - options of nxq_ctx_open()
 * @size: sizeof(struct nxq_ctx_opts)
 * @flags: NXQ_CTX_*
 * @dev_path: the module's device node; NULL: $NXQ_DEV, else "/dev/nxquota"
 * @unmanaged_cap: with NXQ_CTX_UNMANAGED, the most bytes all arenas of the
 *	context may map together (a process-local limit, like a runtime's own
 *	memory limit); 0: $NXQ_UNMANAGED_CAP, else no limit
 * @on_event: called on the pressure-handling thread for each ticket read
 *	and each answer (same rules as reclaim callbacks); NULL: none
 * @event_user: passed to @on_event
 * @report_interval_ms: how often the pressure thread (or
 *	nxq_ctx_handle_pressure()) may tell the module an arena's changed
 *	reclaimable bytes; 0: $NXQ_REPORT_INTERVAL_MS, else 100;
 *	NXQ_OPT_ZERO: only on growth, release, trim, tickets and
 *	nxq_arena_report()
 */
struct nxq_ctx_opts {
	uint32_t size;
	uint32_t flags;
	const char *dev_path;
	uint64_t unmanaged_cap;
	void (*on_event)(const struct nxq_event *ev, void *user);
	void *event_user;
	uint64_t report_interval_ms;
};
#define NXQ_CTX_OPTS_SIZE_VER0	24

enum nxq_backend {
	NXQ_BACKEND_AUTO = 0,	/* from the device key: "GPU-..." is CUDA */
	NXQ_BACKEND_HOST = 1,	/* memfd + mmap */
	NXQ_BACKEND_CUDA = 2,	/* CUDA VMM through libcuda.so.1 */
};

/**
 * struct nxq_arena_opts - options of nxq_arena_create()
 * @size: sizeof(struct nxq_arena_opts)
 * @backend: enum nxq_backend
 * @cuda_device: CUDA device ordinal (CUDA backend)
 * @device_key: the module's device key; NULL: "host0" for the host
 *	backend, "GPU-<uuid>" of @cuda_device for CUDA
 * @priority: holder priority, 0..NXQ_PRIORITY_MAX (see the kernel ABI)
 * @flags: none defined, must be 0
 * @va_size: VA range reserved up front; $NXQ_VA_SIZE, default 64 GiB
 * @granule: mapping unit, $NXQ_GRANULE; host default 2 MiB (a
 *	multiple of the page size); CUDA: a multiple of the driver's minimum
 *	granularity, default that granularity
 * @grow_batch: the largest physical handle growth makes beyond what one
 *	allocation needs: each growth maps one handle (charged in one
 *	request) of what the allocation needs, and at least a quarter of
 *	what is mapped (a power of two from one granule up to @grow_batch);
 *	$NXQ_GROW_BATCH, default 64 MiB
 * @retain_idle: idle mapped bytes kept after frees; above it, whole idle
 *	granules are unmapped; $NXQ_RETAIN_IDLE, default 64 MiB
 * @handle_pool: bytes of unmapped physical handles kept (still charged) to
 *	serve later growth without creating handles; $NXQ_HANDLE_POOL,
 *	default 64 MiB
 * @grow_timeout_ms: how long a growth the module refuses waits for a
 *	grant (NXQ_CHARGE_WAIT) before the allocation fails with -ETIMEDOUT;
 *	$NXQ_GROW_TIMEOUT_MS, default 0 (fail at once with -EDQUOT/-ENOSPC);
 *	since NXQ_ARENA_OPTS_SIZE_VER1
 * @grow_min: the least one growth maps: each growth maps at least this
 *	much (rounded up to the granule), so the first allocation of an empty
 *	arena can map one large handle; at most @va_size; $NXQ_GROW_MIN,
 *	default 0 (one granule: the rule of @grow_batch alone);
 *	NXQ_OPT_ZERO: 0 whatever $NXQ_GROW_MIN says.  Since
 *	NXQ_ARENA_OPTS_SIZE_VER2: a caller of an earlier size gets
 *	$NXQ_GROW_MIN or the default
 */
struct nxq_arena_opts {
	uint32_t size;
	uint32_t backend;
	int32_t cuda_device;
	uint32_t priority;
	const char *device_key;
	uint32_t flags;
	uint32_t pad;
	uint64_t va_size;
	uint64_t granule;
	uint64_t grow_batch;
	uint64_t retain_idle;
	uint64_t handle_pool;
	uint64_t grow_timeout_ms;
	uint64_t grow_min;
};
#define NXQ_ARENA_OPTS_SIZE_VER0	72	/* up to handle_pool */
#define NXQ_ARENA_OPTS_SIZE_VER1	80	/* up to grow_timeout_ms */
#define NXQ_ARENA_OPTS_SIZE_VER2	88	/* up to grow_min */

/* nxq_stats.flags */
#define NXQ_STATS_UNMANAGED	(1U << 0)  /* no module: nothing is charged */

/**
 * struct nxq_stats - nxq_arena_stats()
 * @size: in, sizeof(struct nxq_stats)
 * @flags: NXQ_STATS_*
 * @granule: the arena's granule
 * @va_size: the reserved VA range
 * @mapped: bytes mapped
 * @in_use: bytes handed out (rounded sizes) and not freed
 * @pending: bytes freed on a stream (nxq_free_async()) not known complete
 *	yet: reused at once by allocations on that stream
 *	(nxq_alloc_async()), by others once the stream's work completed
 * @free: mapped bytes neither in use nor pending
 * @idle: the part of @free in whole granules (what trimming can unmap)
 * @retained: bytes of unmapped physical handles kept in the pool
 * @charged: bytes charged to the module (@mapped + @retained); for an
 *	unmanaged context, charged to the process-local cap only
 * @reclaimable: bytes last reported to the module as quickly releasable
 * @unattributed: memory the process holds outside the library; the
 *	library cannot measure it and says NXQ_UNKNOWN
 * @charge_calls: charge requests made (one per growth batch)
 * @uncharge_calls: uncharge requests made
 * @charge_denied: charge requests refused
 * @grows: growth events
 * @allocs, @frees: counters
 * @grow_waits: growths that waited for a grant (NXQ_CHARGE_WAIT)
 * @tickets: pressure tickets read (a raised ticket counts again)
 * @answers: tickets answered
 * @answered_bytes: bytes released and uncharged through answers
 * @reclaim_calls: reclaim callback invocations
 * @stale_answers: answers refused as stale (the ticket was raised)
 * @reclaimable_reports: NXQ_IOC_SET_RECLAIMABLE calls made
 */
struct nxq_stats {
	uint32_t size;
	uint32_t flags;
	uint64_t granule;
	uint64_t va_size;
	uint64_t mapped;
	uint64_t in_use;
	uint64_t pending;
	uint64_t free;
	uint64_t idle;
	uint64_t retained;
	uint64_t charged;
	uint64_t reclaimable;
	uint64_t unattributed;
	uint64_t charge_calls;
	uint64_t uncharge_calls;
	uint64_t charge_denied;
	uint64_t grows;
	uint64_t allocs;
	uint64_t frees;
	uint64_t grow_waits;
	uint64_t tickets;
	uint64_t answers;
	uint64_t answered_bytes;
	uint64_t reclaim_calls;
	uint64_t stale_answers;
	uint64_t reclaimable_reports;
};
#define NXQ_STATS_SIZE_VER0	144

/* nxq_arena_trim() flags */
#define NXQ_TRIM_WAIT		(1U << 0)  /* wait for pending stream frees */

NXQ_API int nxq_ctx_open(const struct nxq_ctx_opts *opts, struct nxq_ctx **ctxp);
NXQ_API int nxq_ctx_close(struct nxq_ctx *ctx);
NXQ_API int nxq_ctx_is_managed(const struct nxq_ctx *ctx);
NXQ_API int nxq_ctx_pressure_fd(struct nxq_ctx *ctx);
NXQ_API int nxq_ctx_handle_pressure(struct nxq_ctx *ctx);

NXQ_API int nxq_arena_create(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			     struct nxq_arena **arenap);
NXQ_API int nxq_arena_destroy(struct nxq_arena *arena);

NXQ_API int nxq_alloc(struct nxq_arena *arena, size_t size, size_t align, void **ptrp);
NXQ_API int nxq_free(struct nxq_arena *arena, void *ptr);
NXQ_API int nxq_alloc_async(struct nxq_arena *arena, size_t size, size_t align, void *stream,
			    void **ptrp);
NXQ_API int nxq_free_async(struct nxq_arena *arena, void *ptr, void *stream);

NXQ_API int64_t nxq_arena_trim(struct nxq_arena *arena, uint64_t target, unsigned int flags);
NXQ_API int nxq_arena_report(struct nxq_arena *arena);
NXQ_API int nxq_arena_stats(struct nxq_arena *arena, struct nxq_stats *st);

/*
 * A reclaim callback: free what the application can spare (through
 * nxq_free(), towards bytes_wanted) and return 0, or a negative errno
 * (counted, otherwise ignored).  Runs on the pressure-handling thread; see
 * nxq_arena_add_reclaim(3) for what it may and may not call.
 */
typedef int (*nxq_reclaim_fn)(struct nxq_arena *arena, uint64_t bytes_wanted, void *user);

NXQ_API int nxq_arena_add_reclaim(struct nxq_arena *arena, nxq_reclaim_fn cb, void *user);
NXQ_API int nxq_arena_remove_reclaim(struct nxq_arena *arena, nxq_reclaim_fn cb, void *user);

NXQ_API const char *nxq_errmsg(void);

#ifdef __cplusplus
}
#endif

#endif /* NXQUOTA_H */
