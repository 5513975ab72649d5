/* A small C reference of hroof's cache simulation, for benchmarks only.
 *
 * Not part of the package: bench/c_reference.py compiles it with the system
 * compiler and runs it on the same streams as hroof, to say how far hroof's
 * Numba kernels are from plain C doing the same work the same way.
 *
 * The model is the subset of docs/cache-model.md that the benchmark streams
 * use: loads and stores (no non-temporal stores), every level write-back and
 * write-allocate, LRU sets kept in recency order (MRU first, moved with one
 * memmove), writebacks that allocate without a fill, and the final flush
 * (level by level, set by set, LRU to MRU). Every access must lie within one
 * line. Like hroof it runs one level at a time: L1 over the whole stream,
 * appending the requests and writebacks it sends below to an event array,
 * then L2 over those events, and so on.
 *
 * Input file: int64 n, then n int64 byte addresses, then n uint8 kinds
 * (0 load, 1 store). Arguments: FILE LINE SIZE:WAYS [SIZE:WAYS ...].
 * Output: one line per level "name lookups misses writebacks_in writebacks",
 * then "seconds S" (simulation and flush, not the file read).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EV_LOAD = 0, EV_STORE = 1, EV_RFO = 2, EV_WB = 3 };

typedef struct {
    int64_t *tags; /* (line << 1) | dirty, -1 empty; MRU first */
    int64_t ways, nsets, mask;
    int64_t lookups, misses, wb_in, wb_out;
} Level;

static inline int64_t *set_of(Level *L, int64_t line) {
    int64_t s = L->mask >= 0 ? (line & L->mask) : (line % L->nsets);
    return L->tags + s * L->ways;
}

/* One event through level L; appends what it sends below to out. */
static inline int64_t step(Level *L, int64_t line, int t, int64_t *out, int64_t nout) {
    int64_t *set = set_of(L, line);
    int64_t w = L->ways, p;
    if (t == EV_WB) {
        L->wb_in++;
    } else {
        L->lookups++;
    }
    for (p = 0; p < w; p++)
        if ((set[p] >> 1) == line) break;
    if (p < w) { /* hit */
        int64_t v = set[p] | (t == EV_STORE || t == EV_WB);
        memmove(set + 1, set, (size_t)p * sizeof(int64_t));
        set[0] = v;
        return nout;
    }
    if (t != EV_WB) {
        L->misses++;
        if (out) out[nout++] = (line << 2) | (t == EV_LOAD ? EV_LOAD : EV_RFO);
    }
    int64_t victim = set[w - 1];
    memmove(set + 1, set, (size_t)(w - 1) * sizeof(int64_t));
    set[0] = (line << 1) | (t == EV_STORE || t == EV_WB);
    if (victim >= 0 && (victim & 1)) {
        L->wb_out++;
        if (out) out[nout++] = ((victim >> 1) << 2) | EV_WB;
    }
    return nout;
}

static int64_t *bufs[16];
static int64_t bufcap[16];

/* The output buffer of level l, with room for the two events per input event it may send. */
static int64_t *buffer(int l, int64_t n) {
    if (bufcap[l] < 2 * n + 16) {
        free(bufs[l]);
        bufcap[l] = 2 * n + 16;
        bufs[l] = malloc((size_t)bufcap[l] * 8);
    }
    return bufs[l];
}

static void run_below(Level *lv, int nlev, int from, int64_t *ev, int64_t n) {
    for (int l = from; l < nlev && n; l++) {
        int64_t *out = l < nlev - 1 ? buffer(l, n) : NULL;
        int64_t nout = 0;
        for (int64_t i = 0; i < n; i++)
            nout = step(&lv[l], ev[i] >> 2, (int)(ev[i] & 3), out, nout);
        ev = out;
        n = nout;
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s FILE LINE SIZE:WAYS [SIZE:WAYS ...]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    int64_t n;
    if (fread(&n, 8, 1, f) != 1) return 2;
    int64_t *addr = malloc((size_t)n * 8);
    uint8_t *kind = malloc((size_t)n);
    if (fread(addr, 8, (size_t)n, f) != (size_t)n || fread(kind, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "short file\n");
        return 2;
    }
    fclose(f);
    int64_t line = atoll(argv[2]);
    int line_bits = 0;
    while ((1LL << line_bits) < line) line_bits++;
    int nlev = argc - 3;
    if (nlev > 16) return 2;
    Level lv[16];
    for (int l = 0; l < nlev; l++) {
        int64_t size, ways;
        if (sscanf(argv[3 + l], "%ld:%ld", &size, &ways) != 2) return 2;
        Level *L = &lv[l];
        memset(L, 0, sizeof *L);
        L->ways = ways;
        L->nsets = size / (line * ways);
        L->mask = (L->nsets & (L->nsets - 1)) == 0 ? L->nsets - 1 : -1;
        L->tags = malloc((size_t)(L->nsets * ways) * 8);
        memset(L->tags, 0xff, (size_t)(L->nsets * ways) * 8);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* L1 over the trace itself. */
    int64_t nout = 0;
    int64_t *out1 = nlev > 1 ? buffer(0, n) : NULL;
    for (int64_t i = 0; i < n; i++)
        nout = step(&lv[0], addr[i] >> line_bits, kind[i] ? EV_STORE : EV_LOAD, out1, nout);
    run_below(lv, nlev, 1, out1, nout);
    /* Final flush, level by level: set by set, LRU to MRU. */
    int64_t *fbuf = malloc(8 * 1024);
    for (int l = 0; l < nlev; l++) {
        Level *L = &lv[l];
        int64_t cap = 1024;
        int64_t nf = 0;
        for (int64_t s = 0; s < L->nsets; s++) {
            int64_t *set = L->tags + s * L->ways;
            for (int64_t p = L->ways - 1; p >= 0; p--) {
                if (set[p] >= 0 && (set[p] & 1)) {
                    set[p] ^= 1;
                    L->wb_out++;
                    if (nf == cap) fbuf = realloc(fbuf, (size_t)(cap *= 2) * 8);
                    fbuf[nf++] = ((set[p] >> 1) << 2) | EV_WB;
                }
            }
        }
        if (l < nlev - 1) {
            run_below(lv, nlev, l + 1, fbuf, nf);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int l = 0; l < nlev; l++)
        printf("L%d %ld %ld %ld %ld\n", l + 1, lv[l].lookups, lv[l].misses, lv[l].wb_in,
               lv[l].wb_out);
    printf("seconds %.6f\n", (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    return 0;
}
