/* Force-included (-include) into every QuickJS C file of the guest build.
 *
 * quickjs-ng turns its stack-overflow check off when __wasi__ is defined
 * (update_stack_limit() forces stack_limit to 0 and the runtime starts with
 * stack_size 0), so deep JS recursion overflows the wasm shadow stack and the
 * instance traps. The check itself is portable: js_get_stack_pointer() uses
 * __builtin_frame_address(0), which on wasm32 is the shadow stack pointer.
 *
 * The build passes -U__wasi__ so quickjs.c takes the portable path. wasi-libc's
 * own headers require __wasi__, so this header defines it again, includes
 * every libc header the QuickJS sources use (their include guards make the
 * later #includes no-ops), and undefines it before the QuickJS code starts.
 * See docs/guest-abi.md, "Deep recursion".
 */
#ifndef CODEMODE_STACK_CHECK_H
#define CODEMODE_STACK_CHECK_H
#define __wasi__ 1
#include <alloca.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fenv.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#undef __wasi__
#endif
