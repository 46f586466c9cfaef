/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/hrtimer.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_HRTIMER_H
#define _UK_LINUX_HRTIMER_H
#include <uk/uk.h>
#endif
