/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Between compat/uk*.c alone: the clock and condition-variable helpers
 * uk.c defines and the deferred-work files use.
 */
#ifndef _UK_INTERNAL_H
#define _UK_INTERNAL_H

#include <uk/uk.h>

struct timespec uk_ts(u64 ns);
void uk_sleep_until(u64 deadline);
void uk_cond_init(pthread_cond_t *c);

#endif /* _UK_INTERNAL_H */
