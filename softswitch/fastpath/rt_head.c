/* softswitch fast path: the generic runtime every generated pipeline module starts with.
 *
 * Bit access to packet bytes, BMv2's hash/checksum algorithms, match-action tables
 * (exact: hash map; lpm: one hash map per prefix length, longest first; ternary
 * without ranges: one hash map per mask combination, best priority first with early
 * exit; with ranges: entries sorted by priority, first match), counters, registers
 * and the per-switch context. The program-specific part (types, parser, controls,
 * tables' apply, deparser) follows, then rt_tail.c (pipeline driver, module methods).
 *
 * Everything runs with the GIL held: table writes from gRPC threads (through Python)
 * and packets never run at the same time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

enum { ST_OK = 0, ST_EXIT = 1, ST_PERR = 2, ST_ABORT = 3 };

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PAD 32   /* zero bytes after every packet buffer: bit reads may overrun */

/* ------------------------------------------------------------------ bits */
static inline uint64_t be64(const uint8_t *q) {
    uint64_t x;
    memcpy(&x, q, 8);
    return __builtin_bswap64(x);
}

/* w (0..64) bits at bit offset off, most significant first (p padded by PAD). */
static inline uint64_t rd_bits(const uint8_t *p, uint64_t off, unsigned w) {
    if (w == 0) return 0;
    const uint8_t *q = p + (off >> 3);
    unsigned s = (unsigned)(off & 7);
    uint64_t x = be64(q) << s;
    if (s + w > 64) x |= (uint64_t)q[8] >> (8 - s);
    return x >> (64 - w);
}

static inline u128 rd_bits128(const uint8_t *p, uint64_t off, unsigned w) {
    if (w <= 64) return rd_bits(p, off, w);
    u128 hi = rd_bits(p, off, w - 64);
    u128 lo = rd_bits(p, off + (w - 64), 64);
    return (hi << 64) | lo;
}

/* OR w (0..64) bits of v into a zeroed buffer at bit offset off. */
static inline void wr_bits(uint8_t *p, uint64_t off, uint64_t v, unsigned w) {
    if (w == 0) return;
    if (w < 64) v &= ((uint64_t)1 << w) - 1;
    uint8_t *q = p + (off >> 3);
    unsigned s = (unsigned)(off & 7);
    u128 x = (u128)v << (128 - s - w);
    unsigned n = (s + w + 7) >> 3;
    for (unsigned i = 0; i < n; i++) q[i] |= (uint8_t)(x >> (120 - 8 * i));
}

static inline void wr_bits128(uint8_t *p, uint64_t off, u128 v, unsigned w) {
    if (w <= 64) { wr_bits(p, off, (uint64_t)v, w); return; }
    wr_bits(p, off, (uint64_t)(v >> 64), w - 64);
    wr_bits(p, off + (w - 64), (uint64_t)v, 64);
}

/* varbit values: w bits, most significant first, left-aligned in b (rest zero) */
static inline void rd_varbit(const uint8_t *p, uint64_t off, uint32_t w, uint8_t *b, size_t cap) {
    memset(b, 0, cap);
    for (uint32_t i = 0; (uint64_t)i * 8 < w; i++) {
        unsigned n = (w - i * 8) >= 8 ? 8 : (unsigned)(w - i * 8);
        b[i] = (uint8_t)(rd_bits(p, off + 8 * (uint64_t)i, n) << (8 - n));
    }
}

static inline void wr_varbit(uint8_t *p, uint64_t off, const uint8_t *b, uint32_t w) {
    for (uint32_t i = 0; (uint64_t)i * 8 < w; i++) {
        unsigned n = (w - i * 8) >= 8 ? 8 : (unsigned)(w - i * 8);
        wr_bits(p, off + 8 * (uint64_t)i, (uint64_t)(b[i] >> (8 - n)), n);
    }
}

static inline int64_t sext64(uint64_t v, unsigned w) {
    if (w >= 64) return (int64_t)v;
    return (int64_t)(v << (64 - w)) >> (64 - w);
}

static inline i128 sext128(u128 v, unsigned w) {
    if (w >= 128) return (i128)v;
    return (i128)(v << (128 - w)) >> (128 - w);
}

/* Python's floor division and modulo (the interpreter's // and %), 0 when b == 0. */
static inline i128 rt_fdiv(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}

static inline i128 rt_fmod(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static inline i128 sat128(i128 v, i128 lo, i128 hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Packet cursor (parser) and emit buffer (deparser). */
typedef struct { const uint8_t *data; uint64_t pos, nbits; } rt_reader;
typedef struct { uint8_t *buf; uint64_t nbits; size_t cap; } rt_writer;

static int wr_ensure(rt_writer *w, uint64_t more_bits) {
    size_t need = (size_t)((w->nbits + more_bits + 7) >> 3) + PAD;
    if (need <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need) cap *= 2;
    uint8_t *nb = (uint8_t *)realloc(w->buf, cap);
    if (!nb) return -1;
    memset(nb + w->cap, 0, cap - w->cap);
    w->buf = nb;
    w->cap = cap;
    return 0;
}

/* ------------------------------------------------------------------ hashes */
typedef struct {
    int width;
    uint64_t mask, init, xorout;
    int rdata, rrem;
    uint64_t table[256];
} rt_crc;

static uint64_t reflect_bits(uint64_t v, int n) {
    uint64_t out = 0;
    for (int i = 0; i < n; i++) { out = (out << 1) | (v & 1); v >>= 1; }
    return out;
}

static uint8_t REFL8[256];

static void crc_init(rt_crc *c, int width, uint64_t poly, uint64_t init, uint64_t xorout,
                     int rdata, int rrem) {
    c->width = width;
    c->mask = width >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
    c->init = init;
    c->xorout = xorout;
    c->rdata = rdata;
    c->rrem = rrem;
    uint64_t top = (uint64_t)1 << (width - 1);
    for (int d = 0; d < 256; d++) {
        uint64_t rem = ((uint64_t)d << (width - 8)) & c->mask;
        for (int i = 0; i < 8; i++) {
            rem = (rem & top) ? ((rem << 1) ^ poly) : (rem << 1);
            rem &= c->mask;
        }
        c->table[d] = rem;
    }
    for (int b = 0; b < 256; b++) REFL8[b] = (uint8_t)reflect_bits((uint64_t)b, 8);
}

static uint64_t crc_run(const rt_crc *c, const uint8_t *d, size_t n) {
    uint64_t rem = c->init;
    int shift = c->width - 8;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = c->rdata ? REFL8[d[i]] : d[i];
        rem = c->table[(b ^ (rem >> shift)) & 0xFF] ^ ((rem << 8) & c->mask);
    }
    if (c->rrem) rem = reflect_bits(rem, c->width);
    return rem ^ c->xorout;
}

static rt_crc CRC16, CRC32;
static int CRC_READY = 0;

static void hashes_init(void) {
    if (CRC_READY) return;
    crc_init(&CRC16, 16, 0x8005, 0, 0, 1, 1);
    crc_init(&CRC32, 32, 0x04C11DB7, 0xFFFFFFFFu, 0xFFFFFFFFu, 1, 1);
    CRC_READY = 1;
}

static uint64_t h_csum16(const uint8_t *d, size_t n) {
    uint64_t total = 0;
    size_t i = 0;
    for (; i + 1 < n; i += 2) total += ((uint64_t)d[i] << 8) | d[i + 1];
    if (n & 1) total += (uint64_t)d[n - 1] << 8;
    while (total >> 16) total = (total & 0xFFFF) + (total >> 16);
    return (~total) & 0xFFFF;
}

static uint64_t h_xor16(const uint8_t *d, size_t n) {
    uint64_t out = 0;
    size_t i = 0;
    for (; i + 1 < n; i += 2) out ^= ((uint64_t)d[i] << 8) | d[i + 1];
    if (n & 1) out ^= (uint64_t)d[n - 1] << 8;
    return out;
}

static uint64_t h_identity(const uint8_t *d, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++) v = (v << 8) | d[i];
    return v;
}

/* v1model HashAlgorithm (the interpreter's hashes.ALGORITHMS) by number. */
enum { H_CRC16 = 0, H_CRC32 = 1, H_CRC16C = 2, H_CRC32C = 3, H_CSUM16 = 4, H_XOR16 = 5,
       H_IDENTITY = 6 };

static uint64_t rt_hash(int algo, const uint8_t *d, size_t n) {
    switch (algo) {
    case H_CRC16: case H_CRC16C: return crc_run(&CRC16, d, n);
    case H_CRC32: case H_CRC32C: return crc_run(&CRC32, d, n);
    case H_CSUM16: return h_csum16(d, n);
    case H_XOR16: return h_xor16(d, n);
    default: return h_identity(d, n);
    }
}

/* ------------------------------------------------------------------ hash maps */
/* Open addressing, linear probing, backward-shift deletion; keys are nk u128 words.
 * Growing is incremental: a map past 3/4 full allocates arrays twice the size and moves
 * MAP_STEP slots of the old ones per later write (put or delete), so no single write
 * rehashes the whole table (doubling a big map in one step would stop the port loop for
 * the whole copy, page faults included, on one controller write). Meanwhile lookups try
 * the new arrays, then the old ones, whose moved or deleted slots hold MAP_GONE (probing
 * goes on past them). A key is in one of the two arrays, never both: a write finds it in
 * the old arrays first.
 * Shrinking is the same move into arrays a quarter the size, begun by a delete that
 * leaves a map of over MAP_SHRINK_MIN slots less than 1/16 full (what it moves then fits
 * in a quarter of the new arrays, and the inserts meanwhile in another sixteenth); an
 * emptied map frees its arrays at once, so inserting and deleting many routes leaves
 * the server's memory where it started. */
typedef struct {
    uint32_t cap, n, nk;          /* n: entries in both arrays */
    u128 *keys;
    void **vals;
    uint64_t *hs;
    uint32_t ocap, opos;          /* while growing: the old arrays, moved up to opos */
    u128 *okeys;
    void **ovals;
    uint64_t *ohs;
} rt_map;

#define MAP_GONE ((void *)1)
#define MAP_STEP 64u
#define MAP_SHRINK_MIN 1024u

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t key_hash(const u128 *k, uint32_t nk) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ nk;
    for (uint32_t i = 0; i < nk; i++) {
        h = mix64(h ^ (uint64_t)k[i]);
        h = mix64(h ^ (uint64_t)(k[i] >> 64));
    }
    return h;
}

static inline int key_eq(const u128 *a, const u128 *b, uint32_t nk) {
    for (uint32_t i = 0; i < nk; i++) if (a[i] != b[i]) return 0;
    return 1;
}

static void map_init(rt_map *m, uint32_t nk) {
    memset(m, 0, sizeof(*m));
    m->nk = nk ? nk : 1;
}

static void map_free_old(rt_map *m) {
    free(m->okeys); free(m->ovals); free(m->ohs);
    m->okeys = NULL; m->ovals = NULL; m->ohs = NULL;
    m->ocap = m->opos = 0;
}

static void map_free(rt_map *m) {
    free(m->keys); free(m->vals); free(m->hs);
    map_free_old(m);
    uint32_t nk = m->nk;
    memset(m, 0, sizeof(*m));
    m->nk = nk;
}

/* k's slot (hash h) in the new arrays (*found set), or else the free slot that ends
 * its probe, where it would go (cap > 0). */
static uint32_t map_probe(const rt_map *m, const u128 *k, uint64_t h, int *found) {
    uint32_t mask = m->cap - 1, i = (uint32_t)h & mask;
    for (;;) {
        if (!m->vals[i]) { *found = 0; return i; }
        if (m->hs[i] == h && key_eq(&m->keys[(size_t)i * m->nk], k, m->nk)) {
            *found = 1;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* The slot of k (hash h) in the new arrays, or -1. */
static int64_t map_find_new(const rt_map *m, const u128 *k, uint64_t h) {
    if (!m->cap) return -1;
    int found;
    uint32_t i = map_probe(m, k, h, &found);
    return found ? (int64_t)i : -1;
}

static void map_fill(rt_map *m, uint32_t i, const u128 *k, uint64_t h, void *v) {
    m->vals[i] = v;
    m->hs[i] = h;
    memcpy(&m->keys[(size_t)i * m->nk], k, sizeof(u128) * m->nk);
}

/* The slot of k (hash h) in the old arrays (growing), or -1. */
static int64_t map_find_old(const rt_map *m, const u128 *k, uint64_t h) {
    if (!m->ovals) return -1;
    uint32_t mask = m->ocap - 1, i = (uint32_t)h & mask;
    for (;;) {
        void *v = m->ovals[i];
        if (!v) return -1;
        if (v != MAP_GONE && m->ohs[i] == h && key_eq(&m->okeys[(size_t)i * m->nk], k, m->nk))
            return i;
        i = (i + 1) & mask;
    }
}

static void *map_get(const rt_map *m, const u128 *k) {
    if (!m->n) return NULL;
    uint64_t h = key_hash(k, m->nk);
    int64_t i = map_find_new(m, k, h);
    if (i >= 0) return m->vals[i];
    i = map_find_old(m, k, h);
    return i >= 0 ? m->ovals[i] : NULL;
}

/* Put a key known to be in neither array into the new ones. */
static void map_place(rt_map *m, const u128 *k, uint64_t h, void *v) {
    uint32_t mask = m->cap - 1, i = (uint32_t)h & mask;
    while (m->vals[i]) i = (i + 1) & mask;
    map_fill(m, i, k, h, v);
}

/* Move up to MAP_STEP old slots into the new arrays; the old ones go when all moved. */
static void map_migrate(rt_map *m) {
    if (!m->ovals) return;
    uint32_t end = m->opos + MAP_STEP < m->ocap ? m->opos + MAP_STEP : m->ocap;
    for (uint32_t i = m->opos; i < end; i++) {
        void *v = m->ovals[i];
        if (v && v != MAP_GONE) map_place(m, &m->okeys[(size_t)i * m->nk], m->ohs[i], v);
        if (v) m->ovals[i] = MAP_GONE;
    }
    m->opos = end;
    if (end == m->ocap) map_free_old(m);
}

/* Start moving into arrays of ncap slots (the first allocation has nothing to move);
 * -1 when out of memory. */
static int map_resize(rt_map *m, uint32_t ncap) {
    u128 *keys = (u128 *)malloc(sizeof(u128) * m->nk * (size_t)ncap);
    void **vals = (void **)calloc(ncap, sizeof(void *));
    uint64_t *hs = (uint64_t *)malloc(sizeof(uint64_t) * ncap);
    if (!keys || !vals || !hs) { free(keys); free(vals); free(hs); return -1; }
    if (m->cap) {
        m->okeys = m->keys; m->ovals = m->vals; m->ohs = m->hs;
        m->ocap = m->cap; m->opos = 0;
    }
    m->keys = keys; m->vals = vals; m->hs = hs; m->cap = ncap;
    return 0;
}

/* Insert or replace; returns 0, or -1 when out of memory. */
static int map_put(rt_map *m, const u128 *k, void *v) {
    if (m->ovals) map_migrate(m);
    else if ((m->n + 1) * 4 >= m->cap * 3 && map_resize(m, m->cap ? m->cap * 2 : 16))
        return -1;
    uint64_t h = key_hash(k, m->nk);
    int64_t i = map_find_old(m, k, h);
    if (i >= 0) { m->ovals[i] = v; return 0; }
    int found;          /* one probe finds the key or, where it ends, the slot for it */
    uint32_t j = map_probe(m, k, h, &found);
    if (found) { m->vals[j] = v; return 0; }
    map_fill(m, j, k, h, v);
    m->n++;
    return 0;
}

/* One entry fewer (its slot already emptied): free the arrays of an emptied map, begin
 * shrinking a sparse one (see above; a failed allocation leaves it as it is). */
static void map_deleted(rt_map *m) {
    m->n--;
    if (!m->n) map_free(m);
    else if (!m->ovals && m->cap > MAP_SHRINK_MIN && m->n * 16 < m->cap)
        (void)map_resize(m, m->cap / 4);
}

static void *map_del(rt_map *m, const u128 *k) {
    if (!m->n) return NULL;
    map_migrate(m);
    uint64_t h = key_hash(k, m->nk);
    int64_t found = map_find_old(m, k, h);
    if (found >= 0) {
        void *old = m->ovals[found];
        m->ovals[found] = MAP_GONE;
        map_deleted(m);
        return old;
    }
    found = map_find_new(m, k, h);
    if (found < 0) return NULL;
    uint32_t mask = m->cap - 1, i = (uint32_t)found;
    void *old = m->vals[i];
    m->vals[i] = NULL;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->vals[j]) break;
        uint32_t home = (uint32_t)m->hs[j] & mask;
        /* move j back to i when its home is not in (i, j] cyclically */
        int move = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
        if (move) {
            m->vals[i] = m->vals[j];
            m->hs[i] = m->hs[j];
            memcpy(&m->keys[(size_t)i * m->nk], &m->keys[(size_t)j * m->nk], sizeof(u128) * m->nk);
            m->vals[j] = NULL;
            i = j;
        }
    }
    map_deleted(m);
    return old;
}

/* Each value of the map (both arrays while growing), for teardown. */
#define MAP_EACH(m, v, body) do { \
    for (uint32_t _i = 0; _i < (m)->cap; _i++) { void *v = (m)->vals[_i]; if (v) { body; } } \
    for (uint32_t _i = 0; _i < (m)->ocap; _i++) { \
        void *v = (m)->ovals[_i]; if (v && v != MAP_GONE) { body; } } \
} while (0)

/* ------------------------------------------------------------------ tables */
enum { TM_EXACT = 0, TM_LPM = 1, TM_MASKED = 2, TM_SORTED = 3 };
enum { A_NONE = -1, A_EMPTY_GROUP = -2 };

typedef struct {
    int32_t action;
    uint32_t nargs;
    u128 *args;
} rt_member;

typedef struct rt_entry {
    int64_t handle;
    int64_t priority;
    uint64_t order;
    int plen;
    u128 *v;          /* per key: value (masked), or range low */
    u128 *m;          /* per key: mask, or range high */
    int32_t action;
    uint32_t nargs;
    u128 *args;
    uint32_t ngroup;  /* action selector group members (0: a direct action) */
    rt_member *group;
    uint64_t packets, bytes, last_hit;
    PyObject *py;     /* the interpreter's Entry (direct meters run on it) */
    struct rt_entry *bnext;   /* masked mode: next in the bucket, best first */
    int has_meter;
} rt_entry;

typedef struct {
    u128 *mask;
    rt_map map;       /* masked values -> best entry of the bucket (a list) */
    int64_t bprio;    /* bound: the best rank ever in the group (early exit) */
    uint64_t border;
    uint32_t count;
} rt_mgroup;

typedef struct {
    int mode;
    uint32_t nk;
    uint8_t *range;   /* per key: 1 for a range key (sorted mode) */
    int li, lw;       /* lpm key index and width */
    rt_map exact;
    rt_map *lpm;      /* lw + 1 maps */
    int *plens;       /* present prefix lengths, longest first */
    int nplens;
    rt_mgroup *groups;
    uint32_t ngroups, capgroups;
    rt_entry **sorted;
    uint32_t nsorted, capsorted;
    rt_map by_handle;
    int32_t def_action;
    uint32_t def_nargs;
    u128 *def_args;
    uint64_t color;   /* direct meter colour of the last hit (read by direct_meter.read) */
    uint64_t n;
} rt_table;

/* rank: higher priority first, then older first (the interpreter's _rank) */
static inline int better(const rt_entry *a, const rt_entry *b) {
    return a->priority > b->priority || (a->priority == b->priority && a->order < b->order);
}

static inline int better_than_bound(const rt_entry *a, int64_t prio, uint64_t order) {
    return a->priority > prio || (a->priority == prio && a->order < order);
}

static inline u128 lpm_mask(int plen, int width) {
    if (plen <= 0) return 0;
    u128 ones = (plen >= 128) ? ~(u128)0 : (((u128)1 << plen) - 1);
    return ones << (width - plen);
}

static void table_init(rt_table *t, int mode, uint32_t nk, const uint8_t *range, int li, int lw) {
    memset(t, 0, sizeof(*t));
    t->mode = mode;
    t->nk = nk;
    t->range = (uint8_t *)calloc(nk ? nk : 1, 1);
    if (range) memcpy(t->range, range, nk);
    t->li = li;
    t->lw = lw;
    map_init(&t->exact, nk);
    map_init(&t->by_handle, 1);
    if (mode == TM_LPM) {
        t->lpm = (rt_map *)calloc((size_t)lw + 1, sizeof(rt_map));
        for (int i = 0; i <= lw; i++) map_init(&t->lpm[i], nk);
        t->plens = (int *)calloc((size_t)lw + 1, sizeof(int));
    }
    t->def_action = A_NONE;
}

/* A new entry of table t with its key arrays (16-byte aligned after the struct) and
 * the action; it owns av. NULL with MemoryError set (av freed) when out of memory. */
static rt_entry *entry_new(rt_table *t, int64_t handle, int32_t action, uint32_t nargs,
                           u128 *av) {
    uint32_t nk = t->nk ? t->nk : 1;
    rt_entry *e = (rt_entry *)calloc(1, sizeof(rt_entry) + 2 * sizeof(u128) * nk + 16);
    if (!e) { free(av); PyErr_NoMemory(); return NULL; }
    uintptr_t base = ((uintptr_t)(e + 1) + 15) & ~(uintptr_t)15;
    e->v = (u128 *)base;
    e->m = e->v + nk;
    e->handle = handle;
    e->action = action;
    e->nargs = nargs;
    e->args = av;
    return e;
}

static void entry_free(rt_entry *e) {
    if (!e) return;
    for (uint32_t i = 0; i < e->ngroup; i++) free(e->group[i].args);
    free(e->group);
    free(e->args);
    Py_XDECREF(e->py);
    free(e);
}

static rt_entry *table_lookup(rt_table *t, const u128 *key) {
    uint32_t nk = t->nk;
    switch (t->mode) {
    case TM_EXACT:
        return (rt_entry *)map_get(&t->exact, key);
    case TM_LPM: {
        u128 k[nk ? nk : 1];
        memcpy(k, key, sizeof(u128) * nk);
        for (int i = 0; i < t->nplens; i++) {
            int p = t->plens[i];
            k[t->li] = key[t->li] & lpm_mask(p, t->lw);
            rt_entry *e = (rt_entry *)map_get(&t->lpm[p], k);
            if (e) return e;
        }
        return NULL;
    }
    case TM_MASKED: {
        rt_entry *best = NULL;
        u128 k[nk ? nk : 1];
        for (uint32_t g = 0; g < t->ngroups; g++) {
            rt_mgroup *grp = &t->groups[g];
            if (best && better_than_bound(best, grp->bprio, grp->border)) break;
            for (uint32_t i = 0; i < nk; i++) k[i] = key[i] & grp->mask[i];
            rt_entry *e = (rt_entry *)map_get(&grp->map, k);
            if (e && (!best || better(e, best))) best = e;
        }
        return best;
    }
    default:
        for (uint32_t j = 0; j < t->nsorted; j++) {
            rt_entry *e = t->sorted[j];
            uint32_t i = 0;
            for (; i < nk; i++) {
                if (t->range[i]) {
                    if (key[i] < e->v[i] || key[i] > e->m[i]) break;
                } else if ((key[i] & e->m[i]) != e->v[i]) break;
            }
            if (i == nk) return e;
        }
        return NULL;
    }
}

static void lpm_refresh(rt_table *t) {
    t->nplens = 0;
    for (int p = t->lw; p >= 0; p--) if (t->lpm[p].n) t->plens[t->nplens++] = p;
}

static int group_cmp(const void *a, const void *b) {
    const rt_mgroup *x = (const rt_mgroup *)a, *y = (const rt_mgroup *)b;
    if (x->bprio != y->bprio) return x->bprio > y->bprio ? -1 : 1;
    if (x->border != y->border) return x->border < y->border ? -1 : 1;
    return 0;
}

static int table_insert(rt_table *t, rt_entry *e) {
    uint32_t nk = t->nk;
    switch (t->mode) {
    case TM_EXACT:
        if (map_put(&t->exact, e->v, e)) return -1;
        break;
    case TM_LPM: {
        if (e->plen < 0 || e->plen > t->lw) return -2;
        /* the prefix lengths in use change only when a length's map fills or empties:
         * they are refreshed (a walk over every length) then, not on each write */
        uint32_t had = t->lpm[e->plen].n;
        if (map_put(&t->lpm[e->plen], e->v, e)) return -1;
        if (!had) lpm_refresh(t);
        break;
    }
    case TM_MASKED: {
        rt_mgroup *grp = NULL;
        for (uint32_t g = 0; g < t->ngroups; g++)
            if (key_eq(t->groups[g].mask, e->m, nk)) { grp = &t->groups[g]; break; }
        if (!grp) {
            if (t->ngroups == t->capgroups) {
                uint32_t nc = t->capgroups ? t->capgroups * 2 : 4;
                rt_mgroup *ng = (rt_mgroup *)realloc(t->groups, nc * sizeof(rt_mgroup));
                if (!ng) return -1;
                t->groups = ng;
                t->capgroups = nc;
            }
            grp = &t->groups[t->ngroups++];
            memset(grp, 0, sizeof(*grp));
            grp->mask = (u128 *)malloc(sizeof(u128) * (nk ? nk : 1));
            memcpy(grp->mask, e->m, sizeof(u128) * nk);
            map_init(&grp->map, nk);
            grp->bprio = e->priority;
            grp->border = e->order;
        }
        rt_entry *head = (rt_entry *)map_get(&grp->map, e->v);
        if (!head || better(e, head)) {
            e->bnext = head;
            if (map_put(&grp->map, e->v, e)) return -1;
        } else {
            rt_entry *p = head;
            while (p->bnext && better(p->bnext, e)) p = p->bnext;
            e->bnext = p->bnext;
            p->bnext = e;
        }
        grp->count++;
        if (better_than_bound(e, grp->bprio, grp->border)) {
            grp->bprio = e->priority;
            grp->border = e->order;
        }
        qsort(t->groups, t->ngroups, sizeof(rt_mgroup), group_cmp);
        break;
    }
    default: {
        if (t->nsorted == t->capsorted) {
            uint32_t nc = t->capsorted ? t->capsorted * 2 : 16;
            rt_entry **ns = (rt_entry **)realloc(t->sorted, nc * sizeof(rt_entry *));
            if (!ns) return -1;
            t->sorted = ns;
            t->capsorted = nc;
        }
        uint32_t lo = 0, hi = t->nsorted;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (better(t->sorted[mid], e)) lo = mid + 1; else hi = mid;
        }
        memmove(&t->sorted[lo + 1], &t->sorted[lo], (t->nsorted - lo) * sizeof(rt_entry *));
        t->sorted[lo] = e;
        t->nsorted++;
    }
    }
    u128 hk = (u128)(uint64_t)e->handle;
    if (map_put(&t->by_handle, &hk, e)) return -1;
    t->n++;
    return 0;
}

static rt_entry *table_get(rt_table *t, int64_t handle) {
    u128 hk = (u128)(uint64_t)handle;
    return (rt_entry *)map_get(&t->by_handle, &hk);
}

static void table_remove(rt_table *t, rt_entry *e) {
    uint32_t nk = t->nk;
    switch (t->mode) {
    case TM_EXACT:
        map_del(&t->exact, e->v);
        break;
    case TM_LPM:
        map_del(&t->lpm[e->plen], e->v);
        if (!t->lpm[e->plen].n) lpm_refresh(t);
        break;
    case TM_MASKED:
        for (uint32_t g = 0; g < t->ngroups; g++) {
            rt_mgroup *grp = &t->groups[g];
            if (!key_eq(grp->mask, e->m, nk)) continue;
            rt_entry *head = (rt_entry *)map_get(&grp->map, e->v);
            if (head == e) {
                if (e->bnext) map_put(&grp->map, e->v, e->bnext);
                else map_del(&grp->map, e->v);
            } else {
                for (rt_entry *p = head; p; p = p->bnext)
                    if (p->bnext == e) { p->bnext = e->bnext; break; }
            }
            if (--grp->count == 0) {
                map_free(&grp->map);
                free(grp->mask);
                t->groups[g] = t->groups[--t->ngroups];
                qsort(t->groups, t->ngroups, sizeof(rt_mgroup), group_cmp);
            }
            break;
        }
        break;
    default:
        for (uint32_t j = 0; j < t->nsorted; j++) {
            if (t->sorted[j] != e) continue;
            memmove(&t->sorted[j], &t->sorted[j + 1], (t->nsorted - j - 1) * sizeof(rt_entry *));
            t->nsorted--;
            break;
        }
    }
    u128 hk = (u128)(uint64_t)e->handle;
    map_del(&t->by_handle, &hk);
    t->n--;
}

static void table_clear(rt_table *t) {
    MAP_EACH(&t->by_handle, v, entry_free((rt_entry *)v));
    map_free(&t->by_handle);
    map_free(&t->exact);
    if (t->lpm) for (int p = 0; p <= t->lw; p++) map_free(&t->lpm[p]);
    t->nplens = 0;
    for (uint32_t g = 0; g < t->ngroups; g++) { map_free(&t->groups[g].map); free(t->groups[g].mask); }
    t->ngroups = 0;
    t->nsorted = 0;
    t->n = 0;
}

static void table_free(rt_table *t) {
    table_clear(t);
    free(t->groups);
    free(t->sorted);
    free(t->lpm);
    free(t->plens);
    free(t->range);
    free(t->def_args);
}

/* ------------------------------------------------------------------ externs */
typedef struct { uint64_t size; uint64_t *pk, *by; } rt_counter;
typedef struct { uint64_t size; int width, sign; u128 *cells; } rt_register;
typedef struct { uint64_t session; int kind; uint64_t target, cos; } rt_mirror;
typedef struct { uint64_t mgrp; uint32_t n; uint64_t *rid, *port; } rt_mcgroup;

/* The interpreter's PacketState. */
typedef struct {
    uint64_t length;
    uint64_t clone_session;
    int clone_type;
    int has_clone_fl;
    int64_t clone_fl;
    uint64_t checksum_error;
    int has_resubmit;
    int64_t resubmit_fl;
    int has_recirc;
    int64_t recirc_fl;
    int has_trunc;
    uint64_t trunc;
} rt_pkt;

typedef struct {
    PyObject *objs;          /* tuple: Python objects the generated code calls back */
    PyObject *clock;         /* softswitch.core.externs.Clock */
    double origin;
    int fixed_valid;         /* clock frozen for this call: fixed_us */
    uint64_t fixed_us;
    int idle_real_time;      /* hits stamped on the wall clock (softswitch run) */
    rt_pkt pkt;
    const uint8_t *payload;
    size_t payload_len;
    int64_t perr;            /* error code of the last ST_PERR (-1: reject) */
    uint32_t ntables, ncounters, nregisters;
    rt_table *tables;
    rt_counter *counters;
    rt_register *registers;
    uint32_t nmirror, nmc;
    rt_mirror *mirror;
    rt_mcgroup *mc;
    int64_t priority_queues; /* -1: no check */
    uint64_t priority_drops;
    uint8_t *scratch;        /* checksum-with-payload buffer */
    size_t scratch_cap;
    int busy;                /* a packet is in the pipeline (Python callbacks may run) */
    rt_writer wr;            /* the deparser's buffer, all zero between packets */
    PyObject **sinkv;        /* native loop: port -> list of frames held for it, or NULL */
    long long sunk;          /* frames appended to sinkv lists */
} rt_ctx;

#define SINK_PORTS 512

/* Zero the first n bytes written to the context's writer, for the next packet. */
static void wr_clear(rt_writer *w, size_t n) {
    if (w->buf) memset(w->buf, 0, n < w->cap ? n : w->cap);
}

static PyObject *STR_FIXED;

static void clock_snapshot(rt_ctx *c) {
    c->fixed_valid = 0;
    PyObject *v = PyObject_GetAttr(c->clock, STR_FIXED);
    if (!v) { PyErr_Clear(); return; }
    if (v != Py_None) {
        c->fixed_us = PyLong_AsUnsignedLongLongMask(v);
        if (!PyErr_Occurred()) c->fixed_valid = 1; else PyErr_Clear();
    }
    Py_DECREF(v);
}

/* The wall clock on the switch clock's origin, in µs (Python's time.monotonic()). */
static inline uint64_t rt_wall_us(const rt_ctx *c) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    double us = (t - c->origin) * 1e6;
    return us > 0 ? (uint64_t)us : 0;
}

static inline uint64_t rt_now(rt_ctx *c) {
    if (c->fixed_valid) return c->fixed_us;
    return rt_wall_us(c);
}

/* When a table entry is hit: the switch clock, or the wall clock once the switch keeps
 * idle times in real time (idle_real_time), which a packet's frozen time does not stop. */
static inline uint64_t rt_hit_now(rt_ctx *c) {
    return c->idle_real_time ? rt_wall_us(c) : rt_now(c);
}

static uint8_t *rt_scratch(rt_ctx *c, size_t n) {
    if (n > c->scratch_cap) {
        size_t cap = c->scratch_cap ? c->scratch_cap : 2048;
        while (cap < n) cap *= 2;
        uint8_t *p = (uint8_t *)realloc(c->scratch, cap);
        if (!p) return NULL;
        c->scratch = p;
        c->scratch_cap = cap;
    }
    return c->scratch;
}

/* Python ints <-> u128 */
static PyObject *u128_to_py(u128 v) {
    if ((v >> 64) == 0) return PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(v >> 64));
    PyObject *sh = PyLong_FromLong(64);
    PyObject *h2 = hi && sh ? PyNumber_Lshift(hi, sh) : NULL;
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *r = h2 && lo ? PyNumber_Or(h2, lo) : NULL;
    Py_XDECREF(hi); Py_XDECREF(sh); Py_XDECREF(h2); Py_XDECREF(lo);
    return r;
}

static PyObject *i128_to_py(i128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX) return PyLong_FromLongLong((long long)v);
    if (v >= 0) return u128_to_py((u128)v);
    PyObject *pos = u128_to_py((u128)(-(v + 1)));
    if (!pos) return NULL;
    PyObject *r = PyNumber_Invert(pos);
    Py_DECREF(pos);
    return r;
}

/* low 128 bits of a Python int (two's complement for negatives); -1 + error on failure */
static int py_to_u128(PyObject *o, u128 *out) {
    if (!PyLong_Check(o)) {
        if (PyBool_Check(o)) { *out = (o == Py_True); return 0; }
        PyErr_SetString(PyExc_TypeError, "int expected");
        return -1;
    }
    int overflow;
    long long small = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) {                    /* fits 64 bits signed: no shift object needed */
        if (small == -1 && PyErr_Occurred()) return -1;
        *out = (u128)(__int128)small;   /* sign-extended: two's complement on 128 bits */
        return 0;
    }
    unsigned long long lo = PyLong_AsUnsignedLongLongMask(o);
    if (lo == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    PyObject *sh = PyLong_FromLong(64);
    PyObject *h = sh ? PyNumber_Rshift(o, sh) : NULL;
    Py_XDECREF(sh);
    if (!h) return -1;
    unsigned long long hi = PyLong_AsUnsignedLongLongMask(h);
    Py_DECREF(h);
    if (hi == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = ((u128)hi << 64) | lo;
    return 0;
}

/* ------------------------------------------------------------------ callbacks */
static int cb_abort(rt_ctx *c, int obj_what, int obj_loc, const char *method) {
    PyObject *rt = PyTuple_GET_ITEM(c->objs, 0);
    PyObject *r;
    if (obj_what >= 0)
        r = PyObject_CallMethod(rt, method, "OO", PyTuple_GET_ITEM(c->objs, obj_what),
                                PyTuple_GET_ITEM(c->objs, obj_loc));
    else
        r = PyObject_CallMethod(rt, method, "O", PyTuple_GET_ITEM(c->objs, obj_loc));
    if (r) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_RuntimeError, "softswitch fast path: abort did not raise");
    }
    return ST_ABORT;
}

static int cb_random(rt_ctx *c, i128 lo, i128 hi, i128 *out) {
    PyObject *rt = PyTuple_GET_ITEM(c->objs, 0);
    PyObject *a = i128_to_py(lo), *b = i128_to_py(hi);
    PyObject *r = (a && b) ? PyObject_CallMethod(rt, "random", "OO", a, b) : NULL;
    Py_XDECREF(a); Py_XDECREF(b);
    if (!r) return ST_ABORT;
    u128 v;
    int bad = py_to_u128(r, &v);
    Py_DECREF(r);
    if (bad) return ST_ABORT;
    *out = (i128)v;
    return ST_OK;
}

static int cb_hash_random(rt_ctx *c, const uint8_t *d, size_t n, uint64_t *out) {
    PyObject *rt = PyTuple_GET_ITEM(c->objs, 0);
    PyObject *r = PyObject_CallMethod(rt, "hash", "sy#", "random", (const char *)d, (Py_ssize_t)n);
    if (!r) return ST_ABORT;
    *out = PyLong_AsUnsignedLongLongMask(r);
    Py_DECREF(r);
    return PyErr_Occurred() ? ST_ABORT : ST_OK;
}

/* obj.method(*args) -> int: meters, value sets */
static int cb_int(PyObject *res, u128 *out) {
    if (!res) return ST_ABORT;
    int bad = py_to_u128(res, out);
    Py_DECREF(res);
    return bad ? ST_ABORT : ST_OK;
}

static int cb_call_obj(rt_ctx *c, PyObject *fn, PyObject *args) {
    if (!args) return ST_ABORT;
    PyObject *r = PyObject_CallObject(fn, args);
    Py_DECREF(args);
    if (!r) return ST_ABORT;
    Py_DECREF(r);
    return ST_OK;
}

/* a direct meter: the interpreter's entry.meter.execute(length) */
static int cb_entry_meter(rt_ctx *c, rt_entry *e, uint64_t *color) {
    PyObject *m = PyObject_GetAttrString(e->py, "meter");
    if (!m) return ST_ABORT;
    PyObject *r = PyObject_CallMethod(m, "execute", "K", (unsigned long long)c->pkt.length);
    Py_DECREF(m);
    u128 v;
    int st = cb_int(r, &v);
    if (st) return st;
    *color = (uint64_t)v;
    return ST_OK;
}

/* a parser value set: the interpreter's ValueSet.match(key tuple) -> 1/0, -1 on error */
static int cb_vs_match(rt_ctx *c, int obj, int n, const u128 *keys) {
    PyObject *t = PyTuple_New(n);
    if (!t) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *x = u128_to_py(keys[i]);
        if (!x) { Py_DECREF(t); return -1; }
        PyTuple_SET_ITEM(t, i, x);
    }
    PyObject *name = PyUnicode_FromString("match");
    PyObject *r = name ? PyObject_CallMethodObjArgs(PyTuple_GET_ITEM(c->objs, obj), name, t, NULL)
                       : NULL;
    Py_XDECREF(name);
    Py_DECREF(t);
    if (!r) return -1;
    int ok = PyObject_IsTrue(r);
    Py_DECREF(r);
    return ok;
}
