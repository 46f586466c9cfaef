// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Fork and load: the constructor (locks, the reactor's handler, the
 * atfork handlers) and the child's reset: no thread, no allocations,
 * not the parent's holders; its first allocation opens its own context.
 *
 * Layer 8, the top: may call every file below.
 */
#include "shim.h"

/* ---- fork ---- */

static void py_locks_init(void);
static void conn_locks_init(void);

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
	conn_locks_init();	/* no connector here: the child looks for its own */
	S.conn_on = S.conn_stop = 0;
	state_drop_locked(0);
	SAY_RESET();
}

/*
 * The connector's locks (at load, and again in a forked child): the
 * catch-up's S.down_rw prefers its writer, so that a stream of
 * allocations while down cannot hold it off; S.conn_cv waits on
 * CLOCK_MONOTONIC (now_ns()'s clock).
 */
static void conn_locks_init(void)
{
	pthread_rwlockattr_t ra;
	pthread_condattr_t ca;

	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&S.down_rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&S.conn_mu, NULL);
	pthread_mutex_init(&S.owe_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.conn_cv, &ca);
	pthread_condattr_destroy(&ca);
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
	S.on_ticket = ticket_event;
	S.on_down = connect_start;
	conn_locks_init();
	py_locks_init();
	pthread_once(&shard_once, shard_init);
	for (int i = 0; i < MAXPOOL; i++)
		pthread_mutex_init(&S.pool[i].mu, NULL);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
