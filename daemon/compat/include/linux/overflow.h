/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/overflow.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_OVERFLOW_H
#define _UK_LINUX_OVERFLOW_H
#include <uk/uk.h>
#endif
