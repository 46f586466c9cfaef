/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/indirect_call_wrapper.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_INDIRECT_CALL_WRAPPER_H
#define _UK_LINUX_INDIRECT_CALL_WRAPPER_H
#include <uk/uk.h>
#endif
