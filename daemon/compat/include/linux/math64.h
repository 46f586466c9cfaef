/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/math64.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_MATH64_H
#define _UK_LINUX_MATH64_H
#include <uk/uk.h>
#endif
