/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/kref.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_KREF_H
#define _UK_LINUX_KREF_H
#include <uk/uk.h>
#endif
