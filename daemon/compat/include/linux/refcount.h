/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/refcount.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_REFCOUNT_H
#define _UK_LINUX_REFCOUNT_H
#include <uk/uk.h>
#endif
