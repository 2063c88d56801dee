#ifndef CBUILDINFO_SHIM_H
#define CBUILDINFO_SHIM_H
/* Build facts (version, commit, date) that `make` links into the executable as a small object file
   (deploy/build-info.sh writes it; the Makefile passes it with -Xlinker). The symbols are weak: a plain
   `swift build` links no such object, they resolve to NULL and the accessors answer NULL, which BuildInfo.swift
   shows as "unknown". Injecting at link time rather than through a generated Swift source keeps a version, commit
   or date change from recompiling any module. */
extern const char push_server_build_version[] __attribute__((weak));
extern const char push_server_build_commit[] __attribute__((weak));
extern const char push_server_build_date[] __attribute__((weak));

static inline const char *cbuildinfo_version(void) { return push_server_build_version; }
static inline const char *cbuildinfo_commit(void) { return push_server_build_commit; }
static inline const char *cbuildinfo_date(void) { return push_server_build_date; }
#endif
