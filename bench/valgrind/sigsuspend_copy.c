/*
 * Preloaded into the server only when it runs under valgrind (bench/publish/fanout_count.sh,
 * bench/publish/intake_count.py). libdispatch's signal thread calls sigsuspend() with a mask in its read-only
 * data; valgrind 3.19 (Debian bookworm) rewrites the mask it is given in place, so on some builds (wherever the
 * loader puts that mask) valgrind itself dies with SIGSEGV before the server has started ("the 'impossible'
 * happened", syscall 130). This passes libdispatch's mask on as a writable copy; the call is otherwise unchanged
 * and runs once per process, so the counts do not move.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*next)(const sigset_t *);
    sigset_t copy = *mask;
    if (!next) next = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    return next(&copy);
}
