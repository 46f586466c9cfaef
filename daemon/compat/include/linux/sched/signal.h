/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/sched/signal.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_SCHED_SIGNAL_H
#define _UK_LINUX_SCHED_SIGNAL_H
#include <uk/uk.h>
#endif
