/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/mutex.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_MUTEX_H
#define _UK_LINUX_MUTEX_H
#include <uk/uk.h>
#endif
