/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/kernel.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_KERNEL_H
#define _UK_LINUX_KERNEL_H
#include <uk/uk.h>
#endif
