/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/atomic.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_ATOMIC_H
#define _UK_LINUX_ATOMIC_H
#include <uk/uk.h>
#endif
