/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/ktime.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_KTIME_H
#define _UK_LINUX_KTIME_H
#include <uk/uk.h>
#endif
