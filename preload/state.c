// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The shim's state, S (struct nxqp_state, shim.h): the context, the
 * devices' holders, the pools, the ticket thread's fds, the counters.
 * Defined here, below every file that reads it; its locks say what they
 * protect in shim.h (S.down_rw, S.conn_cv get their attributes -- writers
 * first, CLOCK_MONOTONIC -- in the constructor, fork.c).
 *
 * Layer 0: calls nothing.
 */
#include "shim.h"

struct nxqp_state S = { .lock = PTHREAD_MUTEX_INITIALIZER, .ctx_mu = PTHREAD_MUTEX_INITIALIZER,
	.say_mu = PTHREAD_MUTEX_INITIALIZER, .conn_mu = PTHREAD_MUTEX_INITIALIZER,
	.owe_mu = PTHREAD_MUTEX_INITIALIZER,
	.down_rw = PTHREAD_RWLOCK_INITIALIZER, .conn_cv = PTHREAD_COND_INITIALIZER,
	.epfd = -1, .stopfd = -1, .one_dev = -1, .gap_ns = 1000000000ULL };
