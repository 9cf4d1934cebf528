/*
 * cargo sfl's edge recorder: the SanitizerCoverage runtime linked into instrumented test
 * binaries (see src/edges/mod.rs). Compiled by the system C compiler at run time; no libc
 * beyond POSIX (open, read, write, pwrite, mmap, mprotect, readlink, sysconf, environ) and
 * dlsym.
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
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* Moves the pages of flags [start, start + n) onto the output file. */
static void open_output(char *start, uint64_t n) {
    const char *pattern = getenv("CARGO_SFL_EDGES_FILE");
    if (!pattern || !*pattern) return;
    char path[SFL_PATH_MAX];
    expand_pid(pattern, path, sizeof path);
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uintptr_t lo = (uintptr_t)start & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)start + n + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uint64_t header_size = (sizeof(struct header) + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
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
    if (ok) {
        void *m = mmap((void *)lo, h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)header_size);
        if (m == (void *)lo) {
            uint64_t magic = SFL_MAGIC;
            if (pwrite(fd, &magic, sizeof magic, 0) != (ssize_t)sizeof magic) { /* stays unstarted */ }
        }
    }
    close(fd);
}

void __sanitizer_cov_bool_flag_init(char *start, char *stop) {
    /* Every instrumented object's constructor passes the whole section; the first wins. */
    if (start == stop || flags_start) return;
    flags_start = start;
    /* A use of the pad, or the linker's garbage collection drops it. */
    pad_linked = sfl_edges_pad >= start && sfl_edges_pad < stop;
}

void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end) {
    /* One (pc, flags) pair per block, in the flags' order; the pad is not in the table. */
    if (started || !flags_start || end <= beg) return;
    started = 1;
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
static int atomics_restored;

/* Its name is the marker: cargo sfl relaxes the counter updates only of executables that link
 * it (a constructor, so the linker keeps it). */
__attribute__((constructor)) void sfl_restores_atomic_counters(void) {
    const char *v = getenv("CARGO_SFL_SERIAL_SPAWNS");
    if (v) {
        serial_spawns = atoi(v);
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
 * Which environment variables a test reads. This executable's own calls of getenv (the Rust
 * standard library's `std::env::var`, libtest's, the test's) resolve to the definition below,
 * which looks the name up as libc does and, when cargo sfl set CARGO_SFL_ENV_READS to a file,
 * appends the name to it (a process a test starts appends to the same file). The file is
 * created at start-up, so its presence says the reads were observed; cargo sfl then re-runs
 * after a change of the environment only the tests that read a changed variable. Reads that
 * bypass getenv (`std::env::vars()`, libc's own) are not seen: cargo sfl treats PATH and the
 * variables builds read as read by every test.
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

char *getenv(const char *name) {
    char *value = plain_getenv(name);
    int fd = env_reads_file();
    size_t n = strlen(name);
    /* cargo sfl's own variables and the profile's file name are set per test by cargo sfl. */
    if (fd >= 0 && n > 0 && n < 512 && strncmp(name, "CARGO_SFL_", 10) != 0 &&
        strcmp(name, "LLVM_PROFILE_FILE") != 0 && env_first_read(name, n)) {
        char line[514];
        memcpy(line, name, n);
        line[n] = '\n';
        if (write(fd, line, n + 1) < 0) { /* the read is lost; the test goes on */ }
    }
    return value;
}

__attribute__((constructor)) static void sfl_env_reads_start(void) {
    env_reads_file();
}
