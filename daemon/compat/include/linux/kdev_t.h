/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/kdev_t.h> for userspace: see uk/uk.h (MKDEV in userspace's encoding) */
#ifndef _UK_LINUX_KDEV_T_H
#define _UK_LINUX_KDEV_T_H
#include <uk/uk.h>
#endif
