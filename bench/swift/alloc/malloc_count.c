// Counts malloc, calloc and realloc calls of a process (LD_PRELOAD) and writes the total to
// $ALLOC_COUNT_DIR/count.<pid> at exit: a figure the machine's load cannot move, unlike CPU time
// (bench/swift/alloc-count.sh). glibc only (__libc_malloc and friends).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdatomic.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static atomic_ulong calls;
void *malloc(size_t n) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed); return __libc_realloc(p, n); }
__attribute__((destructor)) static void report(void) {
    const char *dir = getenv("ALLOC_COUNT_DIR");
    char path[512]; snprintf(path, sizeof path, "%s/count.%d", dir ? dir : "/tmp", getpid());
    FILE *f = fopen(path, "w"); if (f) { fprintf(f, "%lu\n", (unsigned long)atomic_load(&calls)); fclose(f); }
}
