/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/sched.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_SCHED_H
#define _UK_LINUX_SCHED_H
#include <uk/uk.h>
#endif
