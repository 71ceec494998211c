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
 *
 * The shadow-stack check alone misses recursion whose frames live only on the
 * native wasm stack (JSON.parse of a million '[', the parser on 30,000 '('):
 * those frames take no shadow stack, so wasmtime's native stack ran out first
 * and the instance trapped. QuickJS reads the stack pointer in exactly one
 * place, js_get_stack_pointer() (__builtin_frame_address(0)), so the macro
 * below routes it through codemode_frame_address(): while the host's
 * codemode.native_stack_low import (asked every CODEMODE_STACK_SAMPLE-th check,
 * and every check while it says yes) says the native stack is nearly used up,
 * it returns CODEMODE_STACK_EXHAUSTED, an address below QuickJS's stack
 * limit, which every check reads as "overflow" (a catchable RangeError); the
 * real shadow stack pointer otherwise. Not 0: checks subtract the bytes they
 * are about to use (1000 in the tokenizer) and 0 would wrap around. The
 * shadow stack is first in linear memory and the runtime's limit leaves its
 * lowest 1 MiB unused, so the limit is above 1 MiB and 512 KiB is below it
 * for every check of up to 512 KiB.
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

/* The host's answer to "is the native wasm stack of this call nearly used up?"
 * (docs/guest-abi.md, "Imports"). */
__attribute__((import_module("codemode"), import_name("native_stack_low")))
int codemode_native_stack_low(void);

#define CODEMODE_STACK_EXHAUSTED (512 * 1024)
/* Stack checks between two questions to the host while the answer is "no"
 * (a power of two). Between two samples QuickJS runs at most this many
 * checks' worth of frames (about 150 KiB in the parser, at 2.4 KiB per level),
 * far less than the host's 4 MiB headroom. */
#define CODEMODE_STACK_SAMPLE 64

static inline void *codemode_frame_address(void)
{
    /* One copy per translation unit; quickjs.c holds every check. They live in
     * linear memory, so snapshots carry them. */
    static unsigned ticks;
    static int low;
    if (low || (++ticks & (CODEMODE_STACK_SAMPLE - 1)) == 0)
        low = codemode_native_stack_low();
    if (low)
        return (void *)CODEMODE_STACK_EXHAUSTED;
    return __builtin_frame_address(0);
}

#define __builtin_frame_address(level) codemode_frame_address()
#endif
