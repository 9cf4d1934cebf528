/*
 * cargo sfl's edge recorder: the SanitizerCoverage runtime linked into instrumented test
 * binaries (see src/edges/mod.rs). Compiled by the system C compiler at run time; no libc
 * beyond POSIX (open, read, write, pwrite, mmap, mprotect, readlink, sysconf, environ), dlsym,
 * dladdr1 and the unwinder's _Unwind_Backtrace.
 *
 * Every basic block of the workspace's code has a one-byte flag that code inlined by the
 * compiler sets the first time the block runs (`-sanitizer-coverage-inline-bool-flag`): no
 * call per block. The flags of all instrumented code are one section, `__sancov_bools`,
 * passed to __sanitizer_cov_bool_flag_init by every instrumented object's constructor.
 * This runtime moves the pages that hold them onto a file (MAP_SHARED | MAP_FIXED over the
 * same addresses, after copying what is there), so every flag set is in the page cache at
 * once and survives a crash, an abort or the timeout's SIGKILL. Which edges a test took is
 * worked out afterwards from the flags and the control-flow graph the compiler wrote into
 * the binary (`__sancov_cfs`), by cargo sfl.
 *
 * The pad below is 4096-aligned and linked after the instrumented objects (it is passed as
 * a link argument), so the section starts on a page and the flags' last page holds nothing
 * else: the mapped pages are the flags' own. With another linker or page size the pages may
 * also hold neighbouring data; copying them first keeps that data intact within the process.
 *
 * Counter updates: rustc makes every coverage counter update atomic. cargo sfl rewrites them
 * into plain ones before the tests run (src/edges/relax.rs) and lists their addresses in
 * `<exe>.sfl-atomics`. pthread_create below writes the atomics back before a thread that could
 * run instrumented code alongside another starts, so counts stay exact with threads.
 *
 * File layout (native endian): header (struct header, padded to `header_size`, a multiple
 * of the page size), then the mapped pages; the flags start `offset` bytes into them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sched.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SFL_MAGIC 0x32454744454c4653ULL /* "SFLEDGE2" */
#define SFL_PATH_MAX 4096

struct header {
    uint64_t magic;
    uint64_t header_size; /* bytes before the mapped pages */
    uint64_t blocks;      /* flags (one per block) in this executable */
    uint64_t offset;      /* of the first flag within the mapped pages */
    uint64_t mapped;      /* bytes of mapped pages */
    uint64_t pad_linked;  /* 1: the mapped pages hold nothing but flags */
    uint64_t reserved[2];
    char exe[SFL_PATH_MAX];
};

__attribute__((section("__sancov_bools"), aligned(4096), used)) char sfl_edges_pad[4096];

static char *flags_start;
static int started;
/* Whether the pad ended up in the flags' section (recorded in the header, for diagnosis). */
static int pad_linked;

static void expand_pid(const char *pattern, char *path, size_t size) {
    char tmp[24];
    int n = 0;
    long p = (long)getpid();
    do {
        tmp[n++] = (char)('0' + p % 10);
        p /= 10;
    } while (p > 0);
    size_t o = 0;
    for (const char *c = pattern; *c && o + 1 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            for (int i = n - 1; i >= 0 && o + 1 < size; i--) path[o++] = tmp[i];
            c++;
        } else {
            path[o++] = *c;
        }
    }
    path[o] = 0;
}

/* Moves the pages of flags [start, start + n) onto the output file: 1 when they are there. */
static int open_output(char *start, uint64_t n) {
    const char *pattern = getenv("CARGO_SFL_EDGES_FILE");
    if (!pattern || !*pattern) return 0;
    char path[SFL_PATH_MAX];
    expand_pid(pattern, path, sizeof path);
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uintptr_t lo = (uintptr_t)start & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)start + n + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uint64_t header_size = (sizeof(struct header) + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    struct header h;
    memset(&h, 0, sizeof h);
    h.header_size = header_size;
    h.blocks = n;
    h.offset = (uint64_t)((uintptr_t)start - lo);
    h.mapped = (uint64_t)(hi - lo);
    h.pad_linked = (uint64_t)(pad_linked && h.offset == 0);
    ssize_t len = readlink("/proc/self/exe", h.exe, SFL_PATH_MAX - 1);
    h.exe[len > 0 ? len : 0] = 0;
    /* The magic last: a file without it is one whose process died before recording began. */
    int ok = ftruncate(fd, (off_t)(header_size + h.mapped)) == 0 &&
             pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
             pwrite(fd, (void *)lo, h.mapped, (off_t)header_size) == (ssize_t)h.mapped;
    int mapped = 0;
    if (ok) {
        void *m = mmap((void *)lo, h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)header_size);
        if (m == (void *)lo) {
            mapped = 1;
            uint64_t magic = SFL_MAGIC;
            if (pwrite(fd, &magic, sizeof magic, 0) != (ssize_t)sizeof magic) { /* stays unstarted */ }
        }
    }
    close(fd);
    return mapped;
}

void __sanitizer_cov_bool_flag_init(char *start, char *stop) {
    /* Every instrumented object's constructor passes the whole section; the first wins. */
    if (start == stop || flags_start) return;
    flags_start = start;
    /* A use of the pad, or the linker's garbage collection drops it. */
    pad_linked = sfl_edges_pad >= start && sfl_edges_pad < stop;
}

static char *plain_getenv(const char *name);

/* Set in a fork server (below) until it forks: each test's child opens its own output. */
static int in_fork_server;
/* Blocks whose output a fork server's child opens. */
static uint64_t deferred_blocks;

void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end) {
    /* One (pc, flags) pair per block, in the flags' order; the pad is not in the table. */
    if (started || !flags_start || end <= beg) return;
    started = 1;
    if (in_fork_server || plain_getenv("CARGO_SFL_FORK_SERVER")) {
        deferred_blocks = (uint64_t)(end - beg) / 2;
        return;
    }
    open_output(flags_start, (uint64_t)(end - beg) / 2);
}

/* The control-flow table is read from the binary by cargo sfl; nothing to do at run time. */
void __sanitizer_cov_cfs_init(const uintptr_t *beg, const uintptr_t *end) {
    (void)beg;
    (void)end;
}

/* ---- Atomic counter updates, restored when a second thread could run instrumented code ---- */

#define SFL_ATOMICS_MAGIC 0x314d4f54414c4653ULL /* "SFLATOM1" */

/* Threads the main thread may still spawn with updates kept plain (libtest's test thread). */
static int serial_spawns;
/* Its value at start-up, given back to a kept process's next test. */
static int serial_spawns_each;
static int atomics_restored;

/* Its name is the marker: cargo sfl relaxes the counter updates only of executables that link
 * it (a constructor, so the linker keeps it). */
__attribute__((constructor)) void sfl_restores_atomic_counters(void) {
    const char *v = getenv("CARGO_SFL_SERIAL_SPAWNS");
    if (v) {
        serial_spawns = atoi(v);
        serial_spawns_each = serial_spawns;
        /* For this process only: an instrumented program it starts has no such thread. */
        unsetenv("CARGO_SFL_SERIAL_SPAWNS");
    }
}

/* Writes the `lock` prefixes back over the `ds` prefixes cargo sfl put at the addresses that
 * `<exe>.sfl-atomics` lists. Called with one thread running instrumented code. */
static void restore_atomic_counters(void) {
    atomics_restored = 1;
    char path[SFL_PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", path, SFL_PATH_MAX - 1);
    if (n <= 0) return;
    memcpy(path + n, ".sfl-atomics", sizeof ".sfl-atomics");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return; /* not relaxed: every update is atomic already */
    uint64_t head[2];
    uint64_t *sites = NULL;
    if (read(fd, head, sizeof head) == (ssize_t)sizeof head && head[0] == SFL_ATOMICS_MAGIC &&
        head[1] > 0 && head[1] < ((uint64_t)1 << 28)) {
        size_t bytes = (size_t)head[1] * sizeof(uint64_t);
        sites = malloc(bytes);
        if (sites && read(fd, sites, bytes) != (ssize_t)bytes) {
            free(sites);
            sites = NULL;
        }
    }
    close(fd);
    if (!sites) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    /* The sites are sorted and all in the text segment: one writable window over them. */
    uintptr_t lo = (uintptr_t)sites[0] & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)sites[head[1] - 1] + (uintptr_t)page) & ~((uintptr_t)page - 1);
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        static const char msg[] = "cargo sfl: cannot restore atomic coverage counters (mprotect failed); "
                                  "counts of code run by several threads at once may be inexact\n";
        if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
        free(sites);
        return;
    }
    for (uint64_t i = 0; i < head[1]; i++) {
        unsigned char *p = (unsigned char *)(uintptr_t)sites[i];
        if (*p == 0x3E && (p[1] & 0xF8) == 0x48 && p[2] == 0xFF) *p = 0xF0;
    }
    mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
    free(sites);
}

typedef int (*sfl_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    static sfl_create_fn real;
    if (!real) real = (sfl_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!real) return EAGAIN;
    if (!atomics_restored) {
        if (serial_spawns > 0 && syscall(SYS_gettid) == getpid())
            serial_spawns--;
        else
            restore_atomic_counters();
    }
    return real(thread, attr, start, arg);
}

/*
 * ---- What a test changes outside its memory ----
 *
 * A kept test process (below) takes the next test only if the test left the process as it
 * found it. Memory is compared; the environment and the working directory live in libc and the
 * kernel, so their changes are noted here instead: the executable's calls of setenv, unsetenv,
 * putenv, clearenv, chdir and fchdir (the standard library's `env::set_var`, `remove_var` and
 * `set_current_dir`) resolve to these definitions while a test runs.
 */
/* A test is running in this process (libtest's entry was called). */
static int in_test;
/* The running test changed the environment or the working directory. */
static int state_changed;

/* Defines `real_<name>()`: libc's `name` (of function pointer type `type`), found once through
 * dlsym; NULL when libc has none. */
#define SFL_REAL(name, type)                                                                       \
    static type real_##name(void) {                                                                \
        static type real;                                                                          \
        type f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);                                         \
        if (!f) {                                                                                  \
            f = (type)dlsym(RTLD_NEXT, #name);                                                     \
            __atomic_store_n(&real, f, __ATOMIC_RELEASE);                                          \
        }                                                                                          \
        return f;                                                                                  \
    }

/* Defines libc's `name` (returning int, -1 and ENOSYS when libc has none) to run `note` and
 * then libc's own ([`SFL_REAL`]). */
#define SFL_INTERPOSE(name, params, args, note)                                                    \
    typedef int(*name##_fn) params;                                                                \
    SFL_REAL(name, name##_fn)                                                                      \
    int name params {                                                                              \
        name##_fn f = real_##name();                                                               \
        note;                                                                                      \
        if (!f) {                                                                                  \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
        return f args;                                                                             \
    }

#define SFL_NOTE_CHANGE(name, params, args)                                                        \
    SFL_INTERPOSE(name, params, args,                                                              \
                  if (__atomic_load_n(&in_test, __ATOMIC_RELAXED))                                 \
                      __atomic_store_n(&state_changed, 1, __ATOMIC_RELAXED))

SFL_NOTE_CHANGE(setenv, (const char *name, const char *value, int overwrite), (name, value, overwrite))
SFL_NOTE_CHANGE(unsetenv, (const char *name), (name))
SFL_NOTE_CHANGE(putenv, (char *string), (string))
SFL_NOTE_CHANGE(clearenv, (void), ())
SFL_NOTE_CHANGE(chdir, (const char *path), (path))
SFL_NOTE_CHANGE(fchdir, (int fd), (fd))

/*
 * Which environment variables a test reads. This executable's own calls of getenv (the Rust
 * standard library's `std::env::var`, libtest's, the test's) resolve to the definition below,
 * which looks the name up as libc does and, when cargo sfl set CARGO_SFL_ENV_READS to a file,
 * appends the name to it (a process a test starts appends to the same file). The file is
 * created at start-up, so its presence says the reads were observed; cargo sfl then re-runs
 * after a change of the environment only the tests that read a changed variable. Iterating
 * the environment (`std::env::vars()`) reads every variable (the wrappers below). Reads that
 * bypass getenv otherwise (libc's own) are not seen: cargo sfl treats PATH and the variables
 * builds read as read by every test.
 */
extern char **environ;
static int env_reads_fd = -2; /* -2: not opened yet; -1: not recording */

/* The value of `name` in the environment, without recording the read. */
static char *plain_getenv(const char *name) {
    size_t n = strlen(name);
    if (!environ || n == 0 || strchr(name, '=')) return NULL;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    }
    return NULL;
}

static int env_reads_file(void) {
    int fd = __atomic_load_n(&env_reads_fd, __ATOMIC_ACQUIRE);
    if (fd != -2) return fd;
    const char *path = plain_getenv("CARGO_SFL_ENV_READS");
    int opened = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    int expected = -2;
    if (!__atomic_compare_exchange_n(&env_reads_fd, &expected, opened, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (opened >= 0) close(opened);
        return expected;
    }
    return opened;
}

/* Names already written (by a hash; 0: free): a program that reads a variable in a loop costs
 * one write, not one per read. Best effort: a race or a full table only writes a name twice. */
#define SFL_ENV_SEEN 256
static uint64_t env_seen[SFL_ENV_SEEN];

static int env_first_read(const char *name, size_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    if (h == 0) h = 1;
    for (size_t k = 0; k < SFL_ENV_SEEN; k++) {
        size_t i = (size_t)(h + k) % SFL_ENV_SEEN;
        uint64_t seen = __atomic_load_n(&env_seen[i], __ATOMIC_RELAXED);
        if (seen == h) return 0;
        if (seen == 0) {
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&env_seen[i], &expected, h, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return 1;
            if (expected == h) return 0;
        }
    }
    return 1;
}

/* Variables read before libtest started (in constructors: a `#[ctor]` reading RUST_LOG, an
 * `.init_array` function), one per line. A process of its own reads them at start-up for each
 * test; a kept process (below) read them once, for its first test, so it writes them into each
 * later test's file too. Too many to hold: `*`, every variable. */
#define SFL_STARTUP_NAMES 4096
static char startup_names[SFL_STARTUP_NAMES];
static size_t startup_len;
static int in_startup = 1;

static void note_startup_read(const char *name, size_t n) {
    if (!__atomic_load_n(&in_startup, __ATOMIC_RELAXED)) return;
    if (startup_len + n + 1 > SFL_STARTUP_NAMES - 2) {
        if (startup_len + 2 <= SFL_STARTUP_NAMES) memcpy(startup_names + startup_len, "*\n", 2), startup_len += 2;
        __atomic_store_n(&in_startup, 0, __ATOMIC_RELAXED);
        return;
    }
    memcpy(startup_names + startup_len, name, n);
    startup_names[startup_len + n] = '\n';
    startup_len += n + 1;
}

/* Appends `name` to the test's file of variables read, once (cargo sfl's own variables and
 * the profile's file name, set per test by cargo sfl, are left out). */
static void record_env_read(const char *name) {
    int fd = env_reads_file();
    size_t n = strlen(name);
    if (fd >= 0 && n > 0 && n < 512 && strncmp(name, "CARGO_SFL_", 10) != 0 &&
        strcmp(name, "LLVM_PROFILE_FILE") != 0 && env_first_read(name, n)) {
        char line[514];
        memcpy(line, name, n);
        line[n] = '\n';
        if (write(fd, line, n + 1) < 0) { /* the read is lost; the test goes on */ }
        note_startup_read(name, n);
    }
}

/* Writes the start-up reads into this test's file (`fd`), each once. */
static void replay_startup_reads(int fd) {
    if (fd < 0) return;
    size_t at = 0;
    while (at < startup_len) {
        char *nl = memchr(startup_names + at, '\n', startup_len - at);
        if (!nl) break;
        size_t n = (size_t)(nl - (startup_names + at));
        if (env_first_read(startup_names + at, n) && write(fd, startup_names + at, n + 1) < 0) {
            /* the read is lost, as a test's own */
        }
        at += n + 1;
    }
}

/* Set in a forked test whose counters cargo sfl's own file holds (below): the profiler's one
 * read of LLVM_PROFILE_FILE at start-up is answered /dev/null, so it maps no profile of its own
 * and what it writes at exit (from the unused counters section) goes nowhere; the variable stays
 * in the environment for the programs the test starts. */
static int profile_to_null;

/* Variables the standard library reads once per process and caches: RUST_MIN_STACK when a
 * thread is spawned (libtest spawns one for every test), RUST_BACKTRACE and RUST_LIB_BACKTRACE
 * at the first panic or backtrace. A kept process (below) records the first for each of its
 * tests, as each test's own process would read it, and ends after a test that read either of
 * the others, so the next test's own first panic reads them as in a process of its own. */
static int read_min_stack, read_backtrace;

char *getenv(const char *name) {
    if (profile_to_null && strcmp(name, "LLVM_PROFILE_FILE") == 0) {
        profile_to_null = 0;
        return (char *)"/dev/null";
    }
    char *value = plain_getenv(name);
    if (strcmp(name, "RUST_MIN_STACK") == 0) __atomic_store_n(&read_min_stack, 1, __ATOMIC_RELAXED);
    if (strcmp(name, "RUST_BACKTRACE") == 0 || strcmp(name, "RUST_LIB_BACKTRACE") == 0)
        __atomic_store_n(&read_backtrace, 1, __ATOMIC_RELAXED);
    record_env_read(name);
    return value;
}

/*
 * A program the test starts gets the whole environment, and one without this runtime (`sh`,
 * `git`, a C tool) reads it unseen: the executable's calls that start one (the standard
 * library's `Command::spawn`: posix_spawn, or fork then execvp/execve) record `*`, every
 * variable, and cargo sfl re-runs the test after any change of the environment.
 */
/*
 * A program of this build (`CARGO_BIN_EXE_…`, under the directory of this executable's profile)
 * started with an environment that lacks LLVM_PROFILE_FILE (`Command::env_clear`, or the
 * variable removed) would write its profile where it runs (`default_….profraw`) and its coverage
 * would be lost to the test. It gets the variables cargo sfl set for the test's programs
 * (LLVM_PROFILE_FILE and the CARGO_SFL_… ones, as copied when the test started) added to the
 * environment it is given. Other programs (`env`, `sh`) get exactly what the test gave them.
 */
#define SFL_PROFILE_VARS 16
static char profile_var_text[8192];
static char *profile_vars[SFL_PROFILE_VARS + 1];
static int profile_vars_n;
static char build_prefix[SFL_PATH_MAX]; /* "<target>/<profile>/"; empty: unknown */

/* Copies the variables a program of this build needs from the environment, as the test has it. */
static void profile_vars_snapshot(void) {
    size_t used = 0;
    profile_vars_n = 0;
    for (char **e = environ; e && *e && profile_vars_n < SFL_PROFILE_VARS; e++) {
        if (strncmp(*e, "LLVM_PROFILE_FILE=", 18) != 0 && strncmp(*e, "CARGO_SFL_", 10) != 0) continue;
        size_t n = strlen(*e) + 1;
        if (used + n > sizeof profile_var_text) break;
        memcpy(profile_var_text + used, *e, n);
        profile_vars[profile_vars_n++] = profile_var_text + used;
        used += n;
    }
    profile_vars[profile_vars_n] = NULL;
}

/* The directory of this executable's build profile (`…/target/sfl/debug/` of
 * `…/debug/deps/tests-0123`), with a trailing slash. */
static void note_build_prefix(void) {
    char exe[SFL_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0;
    size_t len = strlen(exe);
    if (len >= 5 && strcmp(exe + len - 5, "/deps") == 0) exe[len - 5] = 0;
    if (strlen(exe) + 2 > sizeof build_prefix) return;
    strcpy(build_prefix, exe);
    strcat(build_prefix, "/");
}

/* Whether `envp` sets the variable of `entry` (`NAME=…`). */
static int has_var(char *const envp[], const char *entry) {
    size_t n = strcspn(entry, "=") + 1;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, entry, n) == 0) return 1;
    return 0;
}

/* `envp`, or (for a program of this build given no LLVM_PROFILE_FILE) `envp` with the test's
 * profile variables it lacks, in a buffer of the calling thread's. */
static char *const *with_profile_vars(const char *path, char *const envp[]) {
    static __thread char *augmented[1024];
    size_t prefix = strlen(build_prefix);
    if (!path || !prefix || profile_vars_n == 0 || strncmp(path, build_prefix, prefix) != 0 ||
        has_var(envp, "LLVM_PROFILE_FILE="))
        return envp;
    size_t n = 0;
    for (char *const *e = envp; e && *e; e++) {
        if (n + SFL_PROFILE_VARS + 1 >= sizeof augmented / sizeof *augmented) return envp;
        augmented[n++] = *e;
    }
    for (int i = 0; i < profile_vars_n; i++)
        if (!has_var(envp, profile_vars[i])) augmented[n++] = profile_vars[i];
    augmented[n] = NULL;
    return augmented;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);
SFL_REAL(execve, execve_fn)
SFL_REAL(execv, execv_fn)
SFL_REAL(execvp, execv_fn)
SFL_REAL(posix_spawn, spawn_fn)
SFL_REAL(posix_spawnp, spawn_fn)

int execve(const char *path, char *const argv[], char *const envp[]) {
    record_env_read("*");
    execve_fn f = real_execve();
    if (!f) return errno = ENOSYS, -1;
    return f(path, argv, with_profile_vars(path, envp));
}

/* execv and execvp take the environment from `environ` (which the standard library points at
 * the program's own before calling them): a path of this build goes to execve with it. */
static int exec_from_environ(const char *path, char *const argv[], execv_fn f) {
    record_env_read("*");
    char *const *envp = with_profile_vars(path, environ);
    if (envp != environ) {
        execve_fn e = real_execve();
        if (e) return e(path, argv, envp);
    }
    if (!f) return errno = ENOSYS, -1;
    return f(path, argv);
}

int execv(const char *path, char *const argv[]) { return exec_from_environ(path, argv, real_execv()); }
int execvp(const char *file, char *const argv[]) { return exec_from_environ(file, argv, real_execvp()); }

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    record_env_read("*");
    spawn_fn f = real_posix_spawn();
    if (!f) return ENOSYS;
    return f(pid, path, actions, attr, argv, with_profile_vars(path, envp));
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    record_env_read("*");
    spawn_fn f = real_posix_spawnp();
    if (!f) return ENOSYS;
    return f(pid, file, actions, attr, argv, with_profile_vars(file, envp));
}

/*
 * `std::env::vars` and `std::env::vars_os` read `environ` itself, not through getenv: a test
 * that iterates the environment (envy, figment and config's environment sources, a scan for a
 * prefix) reads every variable. cargo sfl compiles this file with SFL_ENV_VARS and
 * SFL_ENV_VARS_OS set to the toolchain's mangled names of the two and links every workspace
 * crate with `--wrap` of them, so each call comes here first, records `*`, and jumps on to the
 * function with its registers as they were (whatever the Rust ABI returns them in). The
 * function is referred to weakly: a link without `--wrap` (rustdoc's doctests) never calls the
 * trampoline and needs no `__real_` symbol. x86-64 only: elsewhere the names are not looked up
 * and nothing is wrapped.
 */
#if defined(SFL_ENV_VARS) && defined(SFL_ENV_VARS_OS) && defined(__x86_64__)
void sfl_note_env_iteration(void) { record_env_read("*"); }

#define SFL_ENV_TRAMPOLINE(sym)                                                                    \
    __asm__(".text\n"                                                                              \
            ".globl __wrap_" sym "\n"                                                              \
            ".weak __real_" sym "\n"                                                               \
            ".type __wrap_" sym ",@function\n"                                                     \
            "__wrap_" sym ":\n"                                                                    \
            "push %rdi\npush %rsi\npush %rdx\npush %rcx\npush %r8\npush %r9\npush %rax\n"           \
            "call sfl_note_env_iteration@PLT\n"                                                    \
            "pop %rax\npop %r9\npop %r8\npop %rcx\npop %rdx\npop %rsi\npop %rdi\n"                  \
            "jmp __real_" sym "@PLT\n"                                                             \
            ".size __wrap_" sym ", .-__wrap_" sym "\n");

SFL_ENV_TRAMPOLINE(SFL_ENV_VARS)
SFL_ENV_TRAMPOLINE(SFL_ENV_VARS_OS)
#endif

__attribute__((constructor)) static void sfl_env_reads_start(void) {
    env_reads_file();
    note_build_prefix();
    profile_vars_snapshot();
}

/*
 * ---- Panic stacks, recorded where the unwinder starts ----
 *
 * cargo sfl needs a failing test's stack at its panic. With RUST_BACKTRACE=1 the standard
 * library prints it, but symbolising it in the test process (parsing the executable's DWARF)
 * costs about 50 ms per failing test, most of a small test's run. So when cargo sfl sets
 * CARGO_SFL_QUIET_BACKTRACE, this runtime takes the stack instead: a panic unwinds through
 * _Unwind_RaiseException, which the definition below (the executable's, so std's call binds
 * to it) wraps. It walks the stack with _Unwind_Backtrace, writes each return address as an
 * address of its file (`<hex address> <file>` per frame, the executable's file named once in
 * the `exe` line) to the file CARGO_SFL_STACKS names, and calls libgcc's. cargo sfl symbolises
 * the addresses once per executable. Only a process's first panic is recorded (the one whose
 * backtrace the standard library would have printed first).
 *
 * The definition is weak: where the unwinder is linked statically its own definition wins,
 * the wrapper never runs, and the constructor below then leaves RUST_BACKTRACE as cargo sfl
 * set it, so the standard library prints the backtrace as before. glibc only (dladdr1 and its
 * link maps); elsewhere nothing here is compiled and the backtrace is printed.
 */
#ifdef __GLIBC__
#include <link.h>
#include <unwind.h>

#define SFL_STACK_MAX 256

struct stack_walk {
    uintptr_t pcs[SFL_STACK_MAX];
    int n;
};

static _Unwind_Reason_Code stack_frame(struct _Unwind_Context *ctx, void *arg) {
    struct stack_walk *w = arg;
    int before = 0;
    uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
    if (ip == 0) return _URC_END_OF_STACK;
    /* A return address: the call is the instruction before it. */
    w->pcs[w->n++] = before ? ip : ip - 1;
    return w->n < SFL_STACK_MAX ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static int stack_recorded;

static void put(char *buf, size_t size, size_t *o, const char *s) {
    size_t n = strlen(s);
    if (*o + n < size) {
        memcpy(buf + *o, s, n);
        *o += n;
    }
}

static void record_stack(void) {
    const char *path = plain_getenv("CARGO_SFL_STACKS");
    if (!path || __atomic_exchange_n(&stack_recorded, 1, __ATOMIC_ACQ_REL)) return;
    static struct stack_walk w; /* the first panic only, so no other thread is here */
    w.n = 0;
    _Unwind_Backtrace(stack_frame, &w);
    static char buf[SFL_STACK_MAX * 96 + SFL_PATH_MAX];
    char exe[SFL_PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    size_t o = 0;
    put(buf, sizeof buf, &o, "exe ");
    put(buf, sizeof buf, &o, exe);
    put(buf, sizeof buf, &o, "\n");
    for (int i = 0; i < w.n; i++) {
        Dl_info info;
        struct link_map *map = NULL;
        if (!dladdr1((void *)w.pcs[i], &info, (void **)&map, RTLD_DL_LINKMAP) || !map) continue;
        char line[64];
        snprintf(line, sizeof line, "%llx ", (unsigned long long)(w.pcs[i] - (uintptr_t)map->l_addr));
        put(buf, sizeof buf, &o, line);
        /* The executable's own link map has an empty name. */
        put(buf, sizeof buf, &o, map->l_name && map->l_name[0] ? map->l_name : "-");
        put(buf, sizeof buf, &o, "\n");
    }
    put(buf, sizeof buf, &o, "end\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (write(fd, buf, o) < 0) { /* no stack; cargo sfl reports the test without one */ }
    close(fd);
}

typedef _Unwind_Reason_Code (*sfl_raise_fn)(struct _Unwind_Exception *);

static _Unwind_Reason_Code sfl_raise(struct _Unwind_Exception *e) {
    record_stack();
    static sfl_raise_fn real;
    sfl_raise_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (sfl_raise_fn)dlsym(RTLD_NEXT, "_Unwind_RaiseException");
        if (!f) abort(); /* cannot happen: this definition is used only beside libgcc_s's */
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    return f(e);
}

_Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *e) __attribute__((weak, alias("sfl_raise")));

/* With CARGO_SFL_QUIET_BACKTRACE set, cargo sfl set RUST_BACKTRACE=1 and RUST_LIB_BACKTRACE=0
 * for a program without this runtime; here, where the stack is recorded above, the test gets
 * the environment `cargo test` gives it, neither set. Runs in each forked test too. */
__attribute__((constructor)) static void sfl_quiet_backtrace(void) {
    if (!plain_getenv("CARGO_SFL_QUIET_BACKTRACE")) return;
    unsetenv("CARGO_SFL_QUIET_BACKTRACE");
    if ((void *)&_Unwind_RaiseException != (void *)&sfl_raise) return;
    unsetenv("RUST_BACKTRACE");
    unsetenv("RUST_LIB_BACKTRACE");
}
#endif /* __GLIBC__ */

/*
 * ---- One test handed to libtest ----
 *
 * A test binary's `main` passes libtest's entry (`test::test_main_static`) every test of the
 * binary; run with `--exact NAME`, libtest copies and sorts all of their descriptors before it
 * keeps the one, a cost per test process in the number of tests. cargo sfl compiles this file
 * with SFL_TEST_MAIN set to the toolchain's mangled name of the entry and links harness test
 * crates with `--wrap` of it, so `main` calls sfl_test_main below. In a process cargo sfl runs
 * for one test (CARGO_SFL_ONE_TEST), it passes on only the descriptor of the test named after
 * `--exact`: the one descriptor among whose first words is the (address, length) pair of a
 * string equal to the name. The descriptor's layout is libtest's and is not assumed: a name
 * found in no descriptor or in two, or a descriptor or string outside the executable's loaded
 * segments, passes every test on, as without this. libtest then filters and runs the test as
 * before; only its count of tests "filtered out" is 0.
 */
#if defined(SFL_TEST_MAIN) && defined(__linux__)
#include <link.h>

#define SFL_DESC_WORDS 16

static int one_test;
static int saved_argc;
static char **saved_argv;

__attribute__((constructor)) static void sfl_note_args(int argc, char **argv, char **envp) {
    (void)envp;
    saved_argc = argc;
    saved_argv = argv;
    if (plain_getenv("CARGO_SFL_ONE_TEST")) {
        one_test = 1;
        unsetenv("CARGO_SFL_ONE_TEST");
    }
}

struct sfl_segments {
    uintptr_t lo[16], hi[16];
    int n;
};

static int note_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct sfl_segments *s = data;
    for (int i = 0; i < info->dlpi_phnum && s->n < 16; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
        s->lo[s->n] = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        s->hi[s->n] = s->lo[s->n] + ph->p_memsz;
        s->n++;
    }
    return 1; /* the executable comes first: only its segments */
}

/* Whether [p, p + len) lies in one loaded segment of the executable. */
static int loaded(const struct sfl_segments *s, uintptr_t p, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (p >= s->lo[i] && p < s->hi[i] && len <= s->hi[i] - p) return 1;
    return 0;
}

static const char *exact_name(void) {
    for (int i = 1; i + 1 < saved_argc; i++)
        if (strcmp(saved_argv[i], "--exact") == 0) return saved_argv[i + 1];
    return NULL;
}

/* The address of the one descriptor in tests[0..n) that names `name`, or NULL. */
static const void *const *named_test(const void *const *tests, size_t n, const char *name) {
    struct sfl_segments segs;
    segs.n = 0;
    dl_iterate_phdr(note_segments, &segs);
    size_t len = strlen(name);
    const void *const *found = NULL;
    for (size_t i = 0; i < n; i++) {
        const uintptr_t *w = tests[i];
        if (!loaded(&segs, (uintptr_t)w, SFL_DESC_WORDS * sizeof *w)) return NULL;
        for (int k = 0; k + 1 < SFL_DESC_WORDS; k++) {
            if (w[k + 1] != len || !loaded(&segs, w[k], len) || memcmp((const void *)w[k], name, len) != 0)
                continue;
            if (found) return NULL;
            found = &tests[i];
            break;
        }
    }
    return found;
}

/*
 * A kept process looks up a test by name for every test it takes: scanning every descriptor
 * each time costs O(n) per test, O(n^2) per process (3000 tests: 6% of a run's CPU, and a
 * crate with 10,000 tests would pay seconds). So from its second lookup a process indexes the
 * (string, length) word pairs of every descriptor once, by a hash of the string, and answers
 * as the scan does: the one descriptor holding the name, or NULL when none or two do, or when
 * a descriptor lies outside the loaded segments.
 */
struct sfl_name_slot {
    const char *at; /* NULL: free */
    size_t len;
    size_t desc;
    uint64_t hash;
};
static struct sfl_name_slot *name_slots;
static size_t name_mask; /* slots - 1 */
static int name_index_state; /* 0: not built, 1: built, -1: unusable (answer NULL) */

static uint64_t name_hash(const char *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    return h;
}

/* The candidate pair (w[k], w[k + 1]) of a descriptor, if it can be a loaded string. */
static int name_candidate(const struct sfl_segments *segs, const uintptr_t *w, int k) {
    return w[k + 1] > 0 && w[k + 1] <= 4096 && loaded(segs, w[k], w[k + 1]);
}

static void build_name_index(const void *const *tests, size_t n) {
    struct sfl_segments segs;
    segs.n = 0;
    dl_iterate_phdr(note_segments, &segs);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const uintptr_t *w = tests[i];
        if (!loaded(&segs, (uintptr_t)w, SFL_DESC_WORDS * sizeof *w)) {
            name_index_state = -1;
            return;
        }
        for (int k = 0; k + 1 < SFL_DESC_WORDS; k++) count += name_candidate(&segs, w, k);
    }
    size_t cap = 16;
    while (cap < 2 * count) cap <<= 1;
    name_slots = calloc(cap, sizeof *name_slots);
    if (!name_slots) return; /* not built: the scan answers */
    name_mask = cap - 1;
    for (size_t i = 0; i < n; i++) {
        const uintptr_t *w = tests[i];
        for (int k = 0; k + 1 < SFL_DESC_WORDS; k++) {
            if (!name_candidate(&segs, w, k)) continue;
            const char *at = (const char *)w[k];
            uint64_t h = name_hash(at, w[k + 1]);
            size_t j = (size_t)h & name_mask;
            while (name_slots[j].at) j = (j + 1) & name_mask;
            name_slots[j] = (struct sfl_name_slot){at, w[k + 1], i, h};
        }
    }
    name_index_state = 1;
}

/* named_test's answer, through the index from the process's second lookup on. */
static const void *const *find_test(const void *const *tests, size_t n, const char *name) {
    static int lookups;
    size_t len = strlen(name);
    if (++lookups == 2 && n >= 64) build_name_index(tests, n);
    if (name_index_state == -1) return NULL;
    if (name_index_state == 0 || len > 4096) return named_test(tests, n, name);
    uint64_t h = name_hash(name, len);
    const void *const *found = NULL;
    for (size_t j = (size_t)h & name_mask; name_slots[j].at; j = (j + 1) & name_mask) {
        const struct sfl_name_slot *e = &name_slots[j];
        if (e->hash != h || e->len != len || memcmp(e->at, name, len) != 0) continue;
        if (found && found != &tests[e->desc]) return NULL;
        found = &tests[e->desc];
    }
    return found;
}

extern void sfl_test_main_real(const void *const *tests, size_t n) __asm__("__real_" SFL_TEST_MAIN)
    __attribute__((weak));
void sfl_test_main(const void *const *tests, size_t n) __asm__("__wrap_" SFL_TEST_MAIN);

static int keep_prepare(void);
static int keep_next(void);

void sfl_test_main(const void *const *tests, size_t n) {
    /* A forked test whose process may take more tests (see "Kept test processes" below). */
    int keep = keep_prepare();
    __atomic_store_n(&in_startup, 0, __ATOMIC_RELAXED);
    for (;;) {
        const char *name = one_test ? exact_name() : NULL;
        const void *const *one = name && *name ? find_test(tests, n, name) : NULL;
        in_test = 1;
        if (one)
            sfl_test_main_real(one, 1);
        else
            sfl_test_main_real(tests, n);
        in_test = 0;
        /* The test passed (libtest exits on a failure). */
        if (!keep || !keep_next()) return;
    }
}
#endif /* SFL_TEST_MAIN && __linux__ */

/*
 * ---- Counters only: a forked test's coverage without a profile of its own ----
 *
 * A continuous-mode profile (LLVM_PROFILE_FILE with %c) is written whole when the process
 * starts: its header, a record per function and the names (130 KB for a parser's test binary),
 * then the counters are mapped onto the file. Every forked test of one executable would write
 * the same records and names. So with CARGO_SFL_PROFILE_TEMPLATE set, the fork server writes
 * them once, as a profile (`<exe>.sfl-template.profraw`, written aside and renamed), and with
 * CARGO_SFL_COUNTERS_FILE set, each forked test maps its counters onto that file alone (zeros
 * until run: only the pages a test touches take memory) and points the instrumented code at it
 * through the counter bias that runtime counter relocation reads at each function's entry, as
 * the profiler's continuous mode does. The profiler's start-up then reads LLVM_PROFILE_FILE as
 * /dev/null (profile_to_null), so it maps nothing and its exit write goes nowhere. cargo sfl
 * decodes the counters with the template's records. A program the test starts writes its own
 * profile as before. Where anything is missing (no profiler, no relocation, no template written,
 * a failed mapping), the test's profile is the profiler's own, as without this.
 */
extern intptr_t __llvm_profile_counter_bias __attribute__((weak));
extern char *__llvm_profile_begin_counters(void) __attribute__((weak));
extern char *__llvm_profile_end_counters(void) __attribute__((weak));
extern uint64_t __llvm_profile_get_size_for_buffer(void) __attribute__((weak));
extern int __llvm_profile_write_buffer(char *buffer) __attribute__((weak));

#define SFL_TEMPLATE_SUFFIX ".sfl-template.profraw"

static int counters_supported(void) {
    return &__llvm_profile_counter_bias && __llvm_profile_begin_counters && __llvm_profile_end_counters &&
           __llvm_profile_get_size_for_buffer && __llvm_profile_write_buffer;
}

/* Whether the fork server wrote the template: its children map their counters only then. */
static int template_written;

/* In the fork server, before any test: the profile every test of this executable shares. */
static void write_template(void) {
    if (!plain_getenv("CARGO_SFL_PROFILE_TEMPLATE") || !counters_supported()) return;
    char path[SFL_PATH_MAX + 64], tmp[SFL_PATH_MAX + 96];
    ssize_t n = readlink("/proc/self/exe", path, SFL_PATH_MAX - 1);
    if (n <= 0) return;
    memcpy(path + n, SFL_TEMPLATE_SUFFIX, sizeof SFL_TEMPLATE_SUFFIX);
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    uint64_t size = __llvm_profile_get_size_for_buffer();
    char *buf = size > 0 && size < ((uint64_t)1 << 34) ? malloc((size_t)size) : NULL;
    if (!buf) return;
    int ok = __llvm_profile_write_buffer(buf) == 0;
    int fd = ok ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    size_t o = 0;
    while (fd >= 0 && o < size) {
        ssize_t w = write(fd, buf + o, (size_t)size - o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        o += (size_t)w;
    }
    if (fd >= 0) close(fd);
    if (fd >= 0 && o == size && rename(tmp, path) == 0)
        template_written = 1;
    else if (fd >= 0)
        unlink(tmp);
    free(buf);
}

/* The mapping the counters are on (a kept process maps the next test's and unmaps this one). */
static void *counters_map;
static size_t counters_map_size;

/* In a forked test, before any instrumented code, once its server wrote the template (so the
 * profiler's functions are there): its counters onto the file `pattern` names (%p: its process
 * id). 1 when they are there. */
static int map_counters(const char *pattern) {
    char *begin = __llvm_profile_begin_counters(), *end = __llvm_profile_end_counters();
    if (!begin || end <= begin) return 0;
    size_t size = (size_t)(end - begin);
    char path[SFL_PATH_MAX];
    expand_pid(pattern, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    void *m = ftruncate(fd, (off_t)size) == 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                              : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) {
        unlink(path);
        return 0;
    }
    __llvm_profile_counter_bias = (intptr_t)m - (intptr_t)begin;
    if (counters_map) munmap(counters_map, counters_map_size);
    counters_map = m;
    counters_map_size = size;
    return 1;
}

/*
 * ---- Fork server: a test process per test without a launch per test ----
 *
 * With CARGO_SFL_FORK_SERVER set, the executable becomes a server before `main`: this
 * constructor runs after the standard library has noted argc and argv (priority 99) and after
 * the instrumented objects' SanitizerCoverage constructors, but before the profiler runtime
 * opens its profile and before any constructor of the program's own code, so nothing has run
 * that a test's coverage would count. It reads requests on stdin and answers on stdout:
 *
 *   request  `<id>\t<test name>\t<output file>[\t<NAME=value>]...\n`, or `kill <id>\n`
 *   replies  `ready\n` once, `started <id> <pid>\n`, `exited <id> <wait status>\n`, and
 *            `passed <id> 0\n` for a test whose process lives on, kept (below)
 *
 * For each request it forks. The child takes a process group of its own, sets the variables
 * (the profile's and edge file's names, ...), writes stdout and stderr to the output file,
 * puts the test's name where the placeholder argument was (the standard library reads argv
 * only when `main` asks for it), opens its edge file and returns: the remaining constructors
 * (the profiler runtime's among them) and `main`, that is libtest, run as in a process of its
 * own. The server reaps every child and reports how it ended. At the end of stdin it waits for
 * its children and exits. `kill <id>` kills the process group of the child running test <id>
 * if one still runs it: the server alone knows which test a kept process runs now.
 */
#define SFL_SLOT "__cargo_sfl_test__"
#define SFL_MAX_CHILDREN 1024

static int sigchld_pipe[2] = {-1, -1};
static pid_t child_pids[SFL_MAX_CHILDREN];
static uint64_t child_ids[SFL_MAX_CHILDREN];
/* Kept processes: the server's end of each child's socket (-1: none), whether the child waits
 * for a test, the request it was handed (until it says `run` or `refused`), what it said. */
static int child_socks[SFL_MAX_CHILDREN];
static char child_idle[SFL_MAX_CHILDREN];
static char *child_requests[SFL_MAX_CHILDREN];
static char child_said[SFL_MAX_CHILDREN][16];
static unsigned char child_said_len[SFL_MAX_CHILDREN];
/* The server keeps processes (CARGO_SFL_KEEP_PROCESSES). */
static int keeping;
/* In a child: its end of the socket to the server (-1: not kept), and where its test's name is
 * in argv. */
static int keep_sock = -1;
static int slot_arg = -1;
/* In a child: its counters are on cargo sfl's file (the profiler writes nowhere). */
static int counters_mapped;

static void on_sigchld(int sig) {
    (void)sig;
    int saved = errno;
    char b = 0;
    if (write(sigchld_pipe[1], &b, 1) < 0) { /* a byte is already waiting */ }
    errno = saved;
}

static int write_all(int fd, const char *line) {
    size_t n = strlen(line), o = 0;
    while (o < n) {
        ssize_t w = write(fd, line + o, n - o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        o += (size_t)w;
    }
    return 1;
}

static void reply(const char *line) {
    if (!write_all(1, line)) _exit(3); /* cargo sfl is gone */
}

static void reply_id(const char *kind, uint64_t id, long value) {
    char line[96];
    snprintf(line, sizeof line, "%s %llu %ld\n", kind, (unsigned long long)id, value);
    reply(line);
}

static void forget_child(int i) {
    child_pids[i] = 0;
    child_ids[i] = 0;
    child_idle[i] = 0;
    child_said_len[i] = 0;
    free(child_requests[i]);
    child_requests[i] = NULL;
    if (child_socks[i] >= 0) close(child_socks[i]);
    child_socks[i] = -1;
}

/* Reaps every child that ended and reports it; how many are still running. */
static int reap(int running) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < SFL_MAX_CHILDREN; i++) {
            if (child_pids[i] != pid) continue;
            /* An idle kept process has no test to report. */
            if (!child_idle[i]) reply_id("exited", child_ids[i], status);
            forget_child(i);
            running--;
            break;
        }
    }
    return running;
}

static void become_test(char *req, int argc, char **argv);

/* The first free slot of the children's table, or -1. */
static int free_slot(void) {
    for (int i = 0; i < SFL_MAX_CHILDREN; i++)
        if (child_pids[i] == 0) return i;
    return -1;
}

/* Request `req` (tab-separated, modified): its test name and output file, its variables set. */
static void read_request(char *req, char **name, char **output) {
    char *save = NULL;
    strtok_r(req, "\t", &save); /* the id */
    *name = strtok_r(NULL, "\t", &save);
    *output = strtok_r(NULL, "\t", &save);
    for (char *kv; (kv = strtok_r(NULL, "\t", &save));) {
        char *eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = 0;
        setenv(kv, eq + 1, 1);
    }
}

/* stdout and stderr onto `output` (created): 1 when done. */
static int output_to(const char *output) {
    int out = output ? open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    int ok = out >= 0 && dup2(out, 1) >= 0 && dup2(out, 2) >= 0;
    if (out >= 0) close(out);
    return ok;
}

/* The counters onto the file CARGO_SFL_COUNTERS_FILE names (then unset: a program the test
 * starts writes a profile of its own): 1 when they are there. */
static int counters_to_file(void) {
    const char *counters = plain_getenv("CARGO_SFL_COUNTERS_FILE");
    int mapped = template_written && counters && *counters && map_counters(counters);
    unsetenv("CARGO_SFL_COUNTERS_FILE");
    return mapped;
}

/* A new file of the variables this process reads (the next test's). */
static void env_reads_restart(void) {
    int reads = __atomic_exchange_n(&env_reads_fd, -2, __ATOMIC_ACQ_REL);
    if (reads >= 0) close(reads);
    memset(env_seen, 0, sizeof env_seen);
}

/* Forks a child for request `line` (modified) in slot `slot`; in the child, returns 1. */
static int fork_test(char *line, int slot, uint64_t id, int argc, char **argv, int *running) {
    int pair[2] = {-1, -1};
    if (keeping && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) pair[0] = pair[1] = -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* Only its own socket: every kept process's end of file is its server closing it. */
        for (int i = 0; i < SFL_MAX_CHILDREN; i++)
            if (child_socks[i] >= 0) close(child_socks[i]);
        if (pair[0] >= 0) close(pair[0]);
        keep_sock = pair[1];
        become_test(line, argc, argv);
        return 1;
    }
    if (pair[1] >= 0) close(pair[1]);
    if (pid < 0) {
        if (pair[0] >= 0) close(pair[0]);
        reply_id("failed", id, errno);
        return 0;
    }
    setpgid(pid, pid);
    child_pids[slot] = pid;
    child_ids[slot] = id;
    child_socks[slot] = pair[0];
    (*running)++;
    reply_id("started", id, (long)pid);
    return 0;
}

/* What kept child `i` said, a line each: `idle` (its test passed and left it clean), `idle reset`
 * (the same, once what the test changed was put back), `run`
 * (it took the test it was handed), `refused` (it could not). 1 when the server must fork the
 * request it refused (left in child_requests[i], taken by the caller). */
static int heard(int i) {
    char buf[64];
    ssize_t n = read(child_socks[i], buf, sizeof buf);
    if (n <= 0) {
        if (n < 0 && errno == EINTR) return 0;
        close(child_socks[i]); /* it is ending; its reaping reports it */
        child_socks[i] = -1;
        return 0;
    }
    int refused = 0;
    for (ssize_t k = 0; k < n; k++) {
        if (buf[k] != '\n') {
            if ((size_t)child_said_len[i] + 1 < sizeof child_said[i]) child_said[i][child_said_len[i]++] = buf[k];
            continue;
        }
        child_said[i][child_said_len[i]] = 0;
        child_said_len[i] = 0;
        int reset = strcmp(child_said[i], "idle reset") == 0;
        if ((reset || strcmp(child_said[i], "idle") == 0) && !child_idle[i]) {
            reply_id("passed", child_ids[i], reset);
            child_idle[i] = 1;
            child_ids[i] = 0;
        } else if (strcmp(child_said[i], "run") == 0 && child_requests[i]) {
            free(child_requests[i]);
            child_requests[i] = NULL;
            reply_id("started", child_ids[i], (long)child_pids[i]);
        } else if (strcmp(child_said[i], "refused") == 0 && child_requests[i]) {
            refused = 1; /* it exits; its reaping reports nothing */
            child_idle[i] = 1;
        }
    }
    return refused;
}

/* Handles request `line` (modified): a kill, or a test for an idle kept process or a new child. */
static int request(char *line, int argc, char **argv, int *running) {
    if (strncmp(line, "kill ", 5) == 0) {
        uint64_t id = strtoull(line + 5, NULL, 10);
        for (int i = 0; i < SFL_MAX_CHILDREN; i++)
            if (child_pids[i] && !child_idle[i] && child_ids[i] == id) kill(-child_pids[i], SIGKILL);
        return 0;
    }
    uint64_t id = strtoull(line, NULL, 10);
    for (int i = 0; i < SFL_MAX_CHILDREN; i++) {
        if (!child_pids[i] || !child_idle[i] || child_socks[i] < 0) continue;
        size_t n = strlen(line);
        char *copy = malloc(n + 2);
        if (!copy) break;
        memcpy(copy, line, n);
        memcpy(copy + n, "\n", 2);
        if (!write_all(child_socks[i], copy)) {
            free(copy);
            continue;
        }
        copy[n] = 0;
        child_requests[i] = copy;
        child_ids[i] = id;
        child_idle[i] = 0;
        return 0;
    }
    int slot = free_slot();
    if (slot < 0) {
        reply_id("failed", id, EAGAIN); /* as many tests running as the table holds */
        return 0;
    }
    return fork_test(line, slot, id, argc, argv, running);
}

/* In the child: becomes the test the request `req` (tab-separated, modified) names. */
static void become_test(char *req, int argc, char **argv) {
    signal(SIGCHLD, SIG_DFL);
    close(sigchld_pipe[0]);
    close(sigchld_pipe[1]);
    setpgid(0, 0);
#ifdef __linux__
    /* A test outlives no server: killed with it (an interrupt kills the server's group). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(127);
#endif
    char *name, *output;
    read_request(req, &name, &output);
    unsetenv("CARGO_SFL_FORK_SERVER");
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!output_to(output) || null < 0 || dup2(null, 0) < 0) _exit(126);
    close(null);
    for (int i = 1; i < argc; i++) {
        if (name && strcmp(argv[i], SFL_SLOT) == 0) {
            argv[i] = name;
            slot_arg = i;
        }
    }
    in_fork_server = 0;
    env_reads_restart();
    startup_len = 0; /* the server's own reads are none of this process's tests' */
    if (counters_to_file()) profile_to_null = counters_mapped = 1;
    if (deferred_blocks) open_output(flags_start, deferred_blocks);
    profile_vars_snapshot();
}

__attribute__((constructor(101))) static void sfl_fork_server(int argc, char **argv, char **envp) {
    (void)envp;
    if (!plain_getenv("CARGO_SFL_FORK_SERVER")) return;
    in_fork_server = 1;
    keeping = plain_getenv("CARGO_SFL_KEEP_PROCESSES") != NULL;
    unsetenv("CARGO_SFL_KEEP_PROCESSES");
    for (int i = 0; i < SFL_MAX_CHILDREN; i++) child_socks[i] = -1;
    if (pipe(sigchld_pipe) != 0) _exit(125);
    fcntl(sigchld_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(sigchld_pipe[1], F_SETFL, O_NONBLOCK);
    fcntl(sigchld_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(sigchld_pipe[1], F_SETFD, FD_CLOEXEC);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    write_template();
    reply("ready\n");
    static char buf[1 << 16];
    static struct pollfd fds[2 + SFL_MAX_CHILDREN];
    static int polled[2 + SFL_MAX_CHILDREN];
    size_t len = 0;
    int open_input = 1, running = 0;
    while (open_input || running > 0) {
        int nfds = 0;
        fds[nfds++] = (struct pollfd){sigchld_pipe[0], POLLIN, 0};
        if (open_input) fds[nfds++] = (struct pollfd){0, POLLIN, 0};
        int first_child = nfds;
        for (int i = 0; i < SFL_MAX_CHILDREN; i++) {
            if (!child_pids[i] || child_socks[i] < 0) continue;
            /* At the end of the requests an idle kept process is told so: it exits. */
            if (!open_input && child_idle[i]) {
                close(child_socks[i]);
                child_socks[i] = -1;
                continue;
            }
            polled[nfds] = i;
            fds[nfds++] = (struct pollfd){child_socks[i], POLLIN, 0};
        }
        int r = poll(fds, (nfds_t)nfds, -1);
        if (r < 0 && errno != EINTR) _exit(4);
        char drain[64];
        while (read(sigchld_pipe[0], drain, sizeof drain) > 0) {}
        if (r > 0) {
            for (int k = first_child; k < nfds; k++) {
                int i = polled[k];
                if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)) || child_socks[i] < 0) continue;
                if (!heard(i)) continue;
                /* Refused: a new child takes its request. */
                char *line = child_requests[i];
                child_requests[i] = NULL;
                uint64_t id = child_ids[i];
                child_ids[i] = 0;
                int slot = free_slot();
                int child = slot < 0 ? (reply_id("failed", id, EAGAIN), 0)
                                     : fork_test(line, slot, id, argc, argv, &running);
                if (child) return;
                free(line);
            }
        }
        running = reap(running);
        if (!open_input || r <= 0 || !(fds[1].revents & (POLLIN | POLLHUP))) continue;
        ssize_t n = read(0, buf + len, sizeof buf - 1 - len);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            open_input = 0;
            continue;
        }
        len += (size_t)n;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', len - (size_t)(line - buf)))) {
            *nl = 0;
            if (request(line, argc, argv, &running)) return;
            line = nl + 1;
        }
        len -= (size_t)(line - buf);
        memmove(buf, line, len);
        if (len == sizeof buf - 1) _exit(5); /* a request longer than the buffer */
    }
    _exit(0);
}

/*
 * ---- Kept test processes: the next test without a fork, when nothing is left to tell ----
 *
 * Forking a process per test costs ~2 ms of CPU (fork, exit, page faults, the runtime's and
 * libtest's start-up), several times what a small test costs in one process. So with
 * CARGO_SFL_KEEP_PROCESSES set on the server, a forked test whose test passed and left its
 * process as the process was when the test began, or as it can be put back, takes the
 * server's next test itself: libtest's entry is called again with that test's name. "As it
 * was" means: no other thread and no child process is left, the environment and the working
 * directory are as they were (a test that changed them, noted above, has them put back: the
 * variables in their order, the directory by its path), and the statics of the Rust code
 * other than the standard library's (the crate's and its dependencies': `OnceLock`s, lazy
 * statics, atomics, counters, caches), whose addresses cargo sfl lists in `<exe>.sfl-state`,
 * hold the bytes they held when the process's first test began. Changed statics are put back
 * byte for byte when cargo sfl found the executable allocating with the standard library's
 * allocator (the header's SFL_STATE_RESETTABLE: a Rust `#[global_allocator]` keeps its own
 * bookkeeping in such statics) and the test left no more open descriptors than there were
 * (a descriptor a static held would outlive it) and less than SFL_RESET_GROWTH_PAGES more
 * memory (what a put-back static pointed to stays allocated, unreachable). A test that left
 * anything else, or failed, leaves the process to end as before, and the next test gets a new
 * fork: so each test starts from the state a process of its own would give it, and its
 * coverage and outcome are the same. (Statics are compared from the first test on: one a
 * constructor had pointed at memory that a test freed and replaced would be put back pointing
 * at freed memory; the crates' constructors that fill statics, such as `inventory`'s, link
 * statics to statics.)
 *
 * Coverage that a fresh process counts before its test (constructors of the crate's code)
 * is counted again for each kept test: the counters and flags set when the first test began
 * are copied into each next test's files. Between tests the process maps the next test's
 * counters and edge files, points its stdout and stderr at the next output file, sets the
 * variables that differ per test and puts the name in argv. It tells the server `idle` after
 * a test (`idle reset` when it put back what the test changed), `run` when it took the next one
 * and `refused` (then exits) when it could not.
 */
#if defined(SFL_TEST_MAIN) && defined(__linux__)
#define SFL_STATE_MAGIC 0x32544154534c4653ULL /* "SFLSTAT2" */
#define SFL_STATE_RESETTABLE 1 /* header flag: the statics may be put back */
/* A kept process whose resident memory grew by more than this since its first test ends
 * (statics put back leave what they pointed to allocated). */
#define SFL_RESET_GROWTH_PAGES ((64UL << 20) / 4096)

/* The statics compared: (address, length) pairs in this process, and their bytes at the first
 * test's start. */
static uintptr_t *state_ranges;
static size_t state_n;
static unsigned char *state_copy;
static size_t state_bytes;
/* Whether the statics may be put back as they were (SFL_STATE_RESETTABLE), and the process's
 * open descriptors and resident pages when its first test began. */
static int state_resettable;
static long base_fds = -1, base_pages = -1;
/* Counters and flags set when the first test began: (index, value) pairs. */
static uint64_t *base_counters;
static size_t base_counters_n;
static uint64_t *base_flags;
static size_t base_flags_n;

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
    return 1; /* the executable comes first */
}

/* Reads `<exe>.sfl-state` and copies the statics it lists. */
static int load_state(void) {
    char path[SFL_PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", path, SFL_PATH_MAX - 1);
    if (n <= 0) return 0;
    memcpy(path + n, ".sfl-state", sizeof ".sfl-state");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    uint64_t head[3];
    int ok = read(fd, head, sizeof head) == (ssize_t)sizeof head && head[0] == SFL_STATE_MAGIC &&
             head[1] < ((uint64_t)1 << 24);
    size_t bytes = ok ? (size_t)head[1] * 2 * sizeof(uint64_t) : 0;
    uint64_t *pairs = ok ? malloc(bytes + 1) : NULL;
    ok = pairs && (bytes == 0 || read(fd, pairs, bytes) == (ssize_t)bytes);
    close(fd);
    if (!ok) {
        free(pairs);
        return 0;
    }
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    size_t total = 0;
    for (size_t i = 0; i < head[1]; i++) {
        pairs[2 * i] += bias;
        total += pairs[2 * i + 1];
    }
    unsigned char *copy = malloc(total + 1);
    if (!copy) {
        free(pairs);
        return 0;
    }
    size_t o = 0;
    for (size_t i = 0; i < head[1]; i++) {
        memcpy(copy + o, (const void *)pairs[2 * i], pairs[2 * i + 1]);
        o += pairs[2 * i + 1];
    }
    state_ranges = (uintptr_t *)pairs;
    state_n = (size_t)head[1];
    state_copy = copy;
    state_bytes = total;
    state_resettable = (head[2] & SFL_STATE_RESETTABLE) != 0;
    return 1;
}

static int state_same(void) {
    size_t o = 0;
    for (size_t i = 0; i < state_n; i++) {
        size_t len = state_ranges[2 * i + 1];
        if (memcmp(state_copy + o, (const void *)state_ranges[2 * i], len) != 0) return 0;
        o += len;
    }
    return 1;
}

/* The number of this process's open descriptors; -1 when unknown. */
static long open_fds(void) {
    int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[4096];
    long n = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got <= 0) {
            close(fd);
            return got < 0 ? -1 : n; /* ".", ".." and the one read with counted: compared alike */
        }
        for (long o = 0; o < got;) {
            unsigned short reclen;
            memcpy(&reclen, buf + o + 16, sizeof reclen);
            n++;
            o += reclen;
        }
    }
}

/* This process's resident pages (/proc/self/statm); -1 when unknown. */
static long resident_pages(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strchr(buf, ' ');
    return p ? atol(p + 1) : -1;
}

/* The environment and the working directory when the process's first test began. */
static char **base_env;
static size_t base_env_n;
static char base_cwd[4096];

/* Copies the environment and the working directory (keep_prepare): 0 when they cannot be. */
static int env_save(void) {
    if (!getcwd(base_cwd, sizeof base_cwd)) return 0;
    size_t n = 0;
    while (environ && environ[n]) n++;
    base_env = malloc((n + 1) * sizeof *base_env);
    if (!base_env) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(base_env[i] = strdup(environ[i]))) return 0;
    base_env[n] = NULL;
    base_env_n = n;
    return 1;
}

/* Puts the environment and the working directory back as they were when the first test
 * began (its variables in their order), after a test changed either: 1 when done. Only this
 * thread runs (keep_next), so nothing reads the environment meanwhile. */
static int env_restore(void) {
    if (!base_env || chdir(base_cwd) != 0) return 0;
    size_t n = 0;
    int same = 1;
    for (; environ && environ[n]; n++)
        if (n >= base_env_n || strcmp(environ[n], base_env[n]) != 0) same = 0;
    if (same && n == base_env_n) return 1;
    if (clearenv() != 0) return 0;
    for (size_t i = 0; i < base_env_n; i++) {
        char *eq = strchr(base_env[i], '=');
        if (!eq) continue;
        *eq = 0;
        int r = setenv(base_env[i], eq + 1, 1);
        *eq = '=';
        if (r != 0) return 0;
    }
    return 1;
}

/* Process attributes a test may change that no static holds: the standard descriptors (which
 * open file each is), the file mode mask, signal dispositions, the main thread's signal mask
 * and resource limits. The descriptors are taken at each test's start (a kept process points
 * its stdout and stderr at each test's own output file), the rest when its first test began. */
#include <sys/resource.h>
#include <sys/stat.h>
#ifndef SA_RESTORER
#define SA_RESTORER 0
#endif
struct sfl_fd_id {
    dev_t dev;
    ino_t ino;
    int flags;
};
static struct sfl_fd_id base_stdio[3];
static mode_t base_umask;
static struct sigaction base_actions[NSIG];
static sigset_t base_mask;
static struct rlimit base_limits[RLIM_NLIMITS];

/* Which open file descriptor `fd` is: 0 when it is closed. */
static int fd_id(int fd, struct sfl_fd_id *id) {
    struct stat st;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fstat(fd, &st) != 0) return 0;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->flags = flags;
    return 1;
}

static void stdio_save(void) {
    for (int fd = 0; fd < 3; fd++)
        if (!fd_id(fd, &base_stdio[fd])) base_stdio[fd].flags = -1;
}

static void attributes_save(void) {
    base_umask = umask(0);
    umask(base_umask);
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, NULL, &base_actions[sig]);
    pthread_sigmask(SIG_SETMASK, NULL, &base_mask);
    for (int r = 0; r < RLIM_NLIMITS; r++) getrlimit(r, &base_limits[r]);
    stdio_save();
}

/* 1 when the test left the attributes as they were (the mask it changed put back), 0 when a
 * fresh process would give the next test other ones. */
static int attributes_same(void) {
    for (int fd = 0; fd < 3; fd++) {
        struct sfl_fd_id now;
        if (base_stdio[fd].flags < 0 || !fd_id(fd, &now) || now.dev != base_stdio[fd].dev ||
            now.ino != base_stdio[fd].ino || now.flags != base_stdio[fd].flags)
            return 0;
    }
    mode_t mask = umask(base_umask);
    if (mask != base_umask) state_changed = 1;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (sigaction(sig, NULL, &now) != 0) continue; /* the same for every process */
        if (now.sa_handler != base_actions[sig].sa_handler ||
            (now.sa_flags & ~SA_RESTORER) != (base_actions[sig].sa_flags & ~SA_RESTORER))
            return 0;
    }
    sigset_t mask_now;
    pthread_sigmask(SIG_SETMASK, NULL, &mask_now);
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&mask_now, sig) != sigismember(&base_mask, sig)) return 0;
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        struct rlimit now;
        if (getrlimit(r, &now) == 0 &&
            (now.rlim_cur != base_limits[r].rlim_cur || now.rlim_max != base_limits[r].rlim_max))
            return 0;
    }
    return 1;
}

/* Puts the statics back as they were when the first test began, when that is allowed and
 * the test left nothing else the statics could have held: no more open descriptors than then
 * (one kept in a static would be a descriptor a fresh process does not have) and less than
 * SFL_RESET_GROWTH_PAGES more memory (what the statics pointed to stays allocated). */
static int state_reset(void) {
    if (!state_resettable || base_fds < 0 || base_pages < 0) return 0;
    long fds = open_fds(), pages = resident_pages();
    if (fds < 0 || fds > base_fds || pages < 0 || pages - base_pages > (long)SFL_RESET_GROWTH_PAGES)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < state_n; i++) {
        size_t len = state_ranges[2 * i + 1];
        void *at = (void *)state_ranges[2 * i];
        memcpy(at, state_copy + o, len);
        o += len;
    }
    return 1;
}

/* The nonzero words of `words[0..n)`, as (index, value) pairs (NULL when there are none). */
static uint64_t *nonzero(const void *p, size_t n, size_t width, size_t *found) {
    const unsigned char *b = p;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        memcpy(&v, b + i * width, width);
        k += v != 0;
    }
    *found = k;
    uint64_t *out = k ? malloc(k * 2 * sizeof(uint64_t)) : NULL;
    if (!out) {
        *found = 0;
        return NULL;
    }
    k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        memcpy(&v, b + i * width, width);
        if (v) {
            out[2 * k] = i;
            out[2 * k + 1] = v;
            k++;
        }
    }
    return out;
}

/* At libtest's entry: whether this process may take further tests. */
static int keep_prepare(void) {
    if (keep_sock < 0 || !counters_mapped || slot_arg < 0 || !load_state()) return 0;
    if (!env_save()) return 0;
    attributes_save();
    if (state_resettable) {
        base_fds = open_fds();
        base_pages = resident_pages();
    }
    char *begin = __llvm_profile_begin_counters(), *end = __llvm_profile_end_counters();
    base_counters = nonzero(begin + __llvm_profile_counter_bias, (size_t)(end - begin) / 8, 8, &base_counters_n);
    if (deferred_blocks) base_flags = nonzero(flags_start, (size_t)deferred_blocks, 1, &base_flags_n);
    return 1;
}

/* 1 when this process runs no thread but this one. A thread libtest joined may still be
 * leaving the kernel's count for a moment. */
static int one_thread(void) {
    for (int attempt = 0; attempt < 40; attempt++) {
        char buf[1024];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return 0;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) return 0;
        buf[n] = 0;
        /* Field 20, counted after the command name's closing parenthesis (field 2). */
        char *p = strrchr(buf, ')');
        if (!p) return 0;
        int field = 2;
        for (; *p && field < 20; p++)
            if (*p == ' ') field++;
        if (atoi(p) == 1) return 1;
        if (attempt < 20)
            sched_yield();
        else
            usleep(50);
    }
    return 0;
}

/* 1 when the test left a child process (running, or ended and not waited for). */
static int has_children(void) {
    int status;
    pid_t r = waitpid(-1, &status, WNOHANG);
    return !(r < 0 && errno == ECHILD);
}

static int say(const char *word) {
    return write_all(keep_sock, word);
}

/* The next request from the server, in a static buffer; NULL at its end. */
static char *next_request(void) {
    static char buf[1 << 16];
    size_t len = 0;
    for (;;) {
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            *nl = 0;
            return buf;
        }
        if (len == sizeof buf - 1) return NULL;
        ssize_t n = read(keep_sock, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL;
        len += (size_t)n;
    }
}

/* Sets this process up for request `req` (modified, kept until the next): 1 when done. */
static int take_request(char *req) {
    char *name, *output;
    read_request(req, &name, &output);
    if (!name || !counters_to_file()) return 0;
    uint64_t *live = (uint64_t *)(__llvm_profile_begin_counters() + __llvm_profile_counter_bias);
    for (size_t i = 0; i < base_counters_n; i++) live[base_counters[2 * i]] = base_counters[2 * i + 1];
    if (deferred_blocks) {
        if (!open_output(flags_start, deferred_blocks)) return 0;
        memset(flags_start, 0, (size_t)deferred_blocks);
        for (size_t i = 0; i < base_flags_n; i++) flags_start[base_flags[2 * i]] = (char)base_flags[2 * i + 1];
    }
    if (!output_to(output)) return 0;
    stdio_save();
    saved_argv[slot_arg] = name;
    env_reads_restart();
    int reads = env_reads_file();
    replay_startup_reads(reads);
    if (reads >= 0 && read_min_stack && env_first_read("RUST_MIN_STACK", 14) &&
        write(reads, "RUST_MIN_STACK\n", 15) < 0) { /* the read is lost, as a test's own */ }
#ifdef __GLIBC__
    stack_recorded = 0;
#endif
    if (!atomics_restored) serial_spawns = serial_spawns_each;
    profile_vars_snapshot();
    return 1;
}

/* After a test that passed: when it left this process as it found it, tells the server and
 * takes its next test (1); 0 to end the process as a test's process ends. */
static int keep_next(void) {
    if (read_backtrace || !one_thread() || has_children() || !attributes_same()) return 0;
    int reset = 0;
    if (state_changed) {
        if (!env_restore()) return 0;
        state_changed = 0;
        reset = 1;
    }
    if (!state_same()) {
        if (!state_reset()) return 0;
        reset = 1;
    }
    if (!say(reset ? "idle reset\n" : "idle\n")) return 0;
    char *req = next_request();
    if (!req) _exit(0); /* the run is over */
    if (!take_request(req)) {
        say("refused\n");
        _exit(0);
    }
    say("run\n");
    return 1;
}
#endif /* SFL_TEST_MAIN && __linux__ */
