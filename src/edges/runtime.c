/*
 * cargo sfl's edge recorder: the SanitizerCoverage runtime linked into instrumented test
 * binaries (see src/edges/mod.rs). Compiled by the system C compiler at run time; no libc
 * beyond POSIX open/ftruncate/mmap/getenv/readlink.
 *
 * Every basic block of the workspace's code calls __sanitizer_cov_trace_pc_guard with its
 * guard; guards hold block numbers 1..n here, with the entry flag (0 = not recording). The
 * recorder pairs consecutive
 * blocks of the same function activation into intraprocedural CFG edges:
 *  - a per-thread shadow stack holds, per live activation, its frame address and last block;
 *  - frames are identified by the callback's own frame address, which sits a constant
 *    distance below the caller's stack pointer: a block of the same activation always
 *    sees the same address, callees see lower ones (stacks grow down), so a block seen at
 *    a higher address means the activations below it have returned (or unwound);
 *  - an entry block (pc-table flag 1) starts an activation and records the virtual edge
 *    0 -> entry; any other block records last -> block of its activation.
 * Edges go into an open-addressing hash set in a MAP_SHARED file mapping, inserted with
 * compare-and-swap: thread-safe, and already in the page cache when the process crashes,
 * aborts or is killed at the timeout.
 *
 * File layout (native endian): header (struct header), then `slots` u64 keys, each
 * (from << 32 | to), 0 = empty. The path of the executable follows the header.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SFL_MAGIC 0x31454744454c4653ULL /* "SFLEDGE1" */
#define SFL_PATH_MAX 4096
#define SFL_STACK_MAX 2048

struct header {
    uint64_t magic;
    uint64_t header_size; /* bytes before the slots */
    uint64_t guards;      /* blocks in this executable */
    uint64_t slots;       /* hash set size, a power of two */
    uint64_t dropped;     /* edges lost: set full, or activations beyond the stack depth */
    uint64_t reserved[3];
    char exe[SFL_PATH_MAX];
};

struct frame {
    uintptr_t sp;
    uint32_t last;
};

static uint32_t *guards_start, *guards_stop;
static const uintptr_t *pcs;
static uint64_t n_guards;
static struct header *out;
static uint64_t *slots;
static uint64_t mask;

static __thread struct frame stack[SFL_STACK_MAX];
#define SFL_RECENT_BITS 10
static __thread uint64_t recent[1 << SFL_RECENT_BITS];
static __thread uint32_t depth; /* may exceed SFL_STACK_MAX: frames above are not stored */

static void expand_pid(const char *pattern, char *path, size_t size) {
    char pid[24];
    int n = 0;
    long p = (long)getpid();
    char tmp[24];
    do {
        tmp[n++] = (char)('0' + p % 10);
        p /= 10;
    } while (p > 0);
    for (int i = 0; i < n; i++) pid[i] = tmp[n - 1 - i];
    pid[n] = 0;
    size_t o = 0;
    for (const char *c = pattern; *c && o + 1 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            for (int i = 0; pid[i] && o + 1 < size; i++) path[o++] = pid[i];
            c++;
        } else {
            path[o++] = *c;
        }
    }
    path[o] = 0;
}

static void open_output(void) {
    const char *pattern = getenv("CARGO_SFL_EDGES_FILE");
    if (!pattern || !*pattern) return;
    char path[SFL_PATH_MAX];
    expand_pid(pattern, path, sizeof path);
    uint64_t n = 1024;
    while (n < 4 * n_guards) n <<= 1;
    size_t size = sizeof(struct header) + n * sizeof(uint64_t);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return;
    }
    void *m = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return;
    struct header *h = (struct header *)m;
    h->header_size = sizeof(struct header);
    h->guards = n_guards;
    h->slots = n;
    ssize_t len = readlink("/proc/self/exe", h->exe, SFL_PATH_MAX - 1);
    h->exe[len > 0 ? len : 0] = 0;
    __atomic_store_n(&h->magic, SFL_MAGIC, __ATOMIC_RELEASE);
    slots = (uint64_t *)((char *)m + sizeof(struct header));
    mask = n - 1;
    out = h;
}

void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
    /* Every instrumented object's constructor passes the whole section; the first wins. */
    if (start == stop || guards_start) return;
    guards_start = start;
    guards_stop = stop;
}

void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end) {
    if (pcs || !guards_start) return;
    uint64_t n = (uint64_t)(guards_stop - guards_start);
    /* One (pc, flags) pair per guard, in the same order; anything else is not ours. */
    if ((uint64_t)(end - beg) != 2 * n) return;
    if (n >= (1u << 31)) return;
    pcs = beg;
    n_guards = n;
    open_output();
    if (!out) return;
    /* A guard holds its block number (1-based) shifted left, with the entry flag in bit 0:
     * the callback needs no other table. */
    for (uint64_t i = 0; i < n; i++) guards_start[i] = (uint32_t)(((i + 1) << 1) | (pcs[2 * i + 1] & 1));
}

/* Adds `key` (hashed to `h`) to the shared set. */
static void insert(uint64_t key, uint64_t h) {
    uint64_t i = (h >> 29) & mask;
    for (uint64_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
        uint64_t v = __atomic_load_n(&slots[i], __ATOMIC_RELAXED);
        if (v == key) return;
        if (v == 0) {
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&slots[i], &expected, key, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return;
            if (expected == key) return;
        }
    }
    __atomic_fetch_add(&out->dropped, 1, __ATOMIC_RELAXED);
}

/* Records `key` unless this thread recorded it lately (hot edges stay in a small cache). */
static inline void record(uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ULL;
    uint64_t *cached = &recent[h >> (64 - SFL_RECENT_BITS)];
    if (*cached == key) return;
    *cached = key;
    insert(key, h);
}

static void push(uint32_t d, uintptr_t sp, uint32_t block) {
    if (d < SFL_STACK_MAX) {
        stack[d].sp = sp;
        stack[d].last = block;
        depth = d + 1;
    } else {
        /* Deeper than we store: this activation's edges are lost (counted). */
        depth = d;
        __atomic_fetch_add(&out->dropped, 1, __ATOMIC_RELAXED);
    }
}

/* Everything but the common case: an entry block, or a block after a return. */
__attribute__((noinline)) static void slow_path(uint32_t g, uintptr_t sp) {
    uint32_t block = g >> 1;
    int entry = g & 1;
    uint32_t d = depth;
    /* Activations at lower addresses have returned (or unwound); an entry block also
     * replaces one at its own address (the previous call from the same caller returned, or
     * this is a tail call). */
    while (d > 0 && (stack[d - 1].sp < sp || (entry && stack[d - 1].sp == sp))) d--;
    if (entry) {
        record((uint64_t)block);
        push(d, sp, block);
    } else if (d > 0 && stack[d - 1].sp == sp) {
        record(((uint64_t)stack[d - 1].last << 32) | block);
        stack[d - 1].last = block;
        depth = d;
    } else {
        /* A block whose activation we did not see start (its entry ran before recording
         * began, or beyond the stored depth): track it from here, without an edge. */
        push(d, sp, block);
    }
}

void __sanitizer_cov_trace_pc_guard(uint32_t *guard) {
    uint32_t g = *guard;
    if (!g) return;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uint32_t d = depth;
    /* The common case: the next block of the activation on top of the stack. */
    if (__builtin_expect(!(g & 1) && d > 0 && stack[d - 1].sp == sp, 1)) {
        struct frame *f = &stack[d - 1];
        uint64_t key = ((uint64_t)f->last << 32) | (g >> 1);
        f->last = g >> 1;
        record(key);
        return;
    }
    slow_path(g, sp);
}
