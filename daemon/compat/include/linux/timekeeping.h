/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <linux/timekeeping.h> for userspace: see uk/uk.h.  The coarse clock is
 * the clock itself here (it never runs ahead of ktime_get_ns(), as the
 * kernel's coarse clock does not).
 */
#ifndef _UK_LINUX_TIMEKEEPING_H
#define _UK_LINUX_TIMEKEEPING_H
#include <uk/uk.h>

static inline u64 ktime_get_coarse_ns(void)
{
	return ktime_get_ns();
}
#endif
