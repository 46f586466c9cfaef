/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/kthread.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_KTHREAD_H
#define _UK_LINUX_KTHREAD_H
#include <uk/uk.h>
#endif
