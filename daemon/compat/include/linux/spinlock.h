/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/spinlock.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_SPINLOCK_H
#define _UK_LINUX_SPINLOCK_H
#include <uk/uk.h>
#endif
