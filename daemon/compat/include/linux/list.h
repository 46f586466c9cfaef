/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/list.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_LIST_H
#define _UK_LINUX_LIST_H
#include <uk/uk.h>
#endif
