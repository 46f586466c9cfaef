/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/bug.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_BUG_H
#define _UK_LINUX_BUG_H
#include <uk/uk.h>
#endif
