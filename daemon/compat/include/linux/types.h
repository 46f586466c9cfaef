/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/types.h> for userspace: the uapi one, then uk/uk.h */
#include_next <linux/types.h>
#ifndef _UK_LINUX_TYPES_H
#define _UK_LINUX_TYPES_H
#include <uk/uk.h>
#endif
