/*
 *    Licensed under the Apache License, Version 2.0 (the "License"); you may
 *    not use this file except in compliance with the License. You may obtain
 *    a copy of the License at
 *
 *         http://www.apache.org/licenses/LICENSE-2.0
 *
 *    Unless required by applicable law or agreed to in writing, software
 *    distributed under the License is distributed on an "AS IS" BASIS,
 *    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 *    See the License for the specific language governing permissions and
 *    limitations under the License.
 *
 * The cache simulator behind resq_profiler.trace.llc (a shared library
 * loaded with ctypes; llc.py documents the model, this is its engine).
 *
 * One LLC of `sets` x `ways` lines, optionally preceded by a private L2
 * per member (core). A core's access that misses its L2 looks the line up
 * in every way of its set (a hit anywhere is a hit); a miss fills only a
 * way of the member's class of service (its way mask): an invalid one
 * first, else the least recently used one (or a random one). A DMA write
 * updates the line in place when it is cached and otherwise fills one of
 * the I/O ways (DDIO's), and invalidates the core's L2 copy. The LLC is
 * inclusive: a line it evicts leaves its member's L2 too.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RQ_RECORDS_ONLY 1
#include "resq_trace.h"

#define INVALID (~(uint64_t)0)
#define NO_OWNER 0xffff

enum {
    RQ_L2_HIT = 0,
    RQ_LLC_HIT = 1,
    RQ_LLC_MISS = 2,
    RQ_DMA_UPDATE = 3,
    RQ_DMA_ALLOC = 4
};

struct rq_params {
    uint32_t sets;
    uint32_t ways;
    uint32_t sets_per_slice;   /* sets indexed by address bits; the slice */
    uint32_t l2_sets;          /* 0: no L2 */
    uint32_t l2_ways;
    uint32_t policy;           /* 0: LRU, 1: random */
    uint32_t io_mask;
    uint32_t n_members;
    uint64_t seed;
    double cpi;
    double t_l2;
    double t_llc;
    double t_mem;
    uint64_t warm;             /* packets each member runs first */
    uint64_t measure;          /* packets each member is measured for */
};

struct rq_member {
    const uint64_t *trace;
    uint64_t len;
    uint32_t mask;
    uint32_t pad;
    /* Measured: */
    uint64_t packets;
    uint64_t insns;
    uint64_t accesses;         /* L1 misses */
    uint64_t l2_hits;
    uint64_t llc_hits;
    uint64_t llc_misses;
    uint64_t dma_lines;
    uint64_t dma_allocs;
    uint64_t occupancy;        /* LLC lines it holds at the end */
    double cycles;
    /* Internal: */
    uint64_t pos;
    uint64_t done;
    double now;
};

struct rq_sim {
    struct rq_params p;
    uint64_t *tag;
    uint64_t *stamp;
    uint16_t *owner;
    uint64_t *l2_tag;          /* n_members x l2_sets x l2_ways */
    uint64_t *l2_stamp;
    uint64_t clock;
    uint64_t rng;
};

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t next_random(struct rq_sim *s)
{
    s->rng += 0x9e3779b97f4a7c15ULL;
    return mix(s->rng);
}

/* The LLC set of a line: its low bits within a slice, and a hash of the
 * whole address for the slice (Intel's slice selection hashes the physical
 * address; the hash stands for it). */
static uint32_t set_of(const struct rq_sim *s, uint64_t line)
{
    uint32_t sps = s->p.sets_per_slice;
    uint32_t slices = s->p.sets / sps;
    if (slices <= 1)
        return (uint32_t)(line % s->p.sets);
    return (uint32_t)(mix(line) % slices) * sps + (uint32_t)(line % sps);
}

void rq_free(struct rq_sim *s)
{
    if (!s)
        return;
    free(s->tag);
    free(s->stamp);
    free(s->owner);
    free(s->l2_tag);
    free(s->l2_stamp);
    free(s);
}

struct rq_sim *rq_new(const struct rq_params *p)
{
    struct rq_sim *s;
    size_t n, l2n;
    if (!p->sets || !p->ways || p->ways > 32 || !p->sets_per_slice
        || p->sets % p->sets_per_slice || !p->n_members
        || p->n_members >= NO_OWNER)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->p = *p;
    n = (size_t)p->sets * p->ways;
    l2n = (size_t)p->n_members * p->l2_sets * p->l2_ways;
    s->tag = malloc(n * sizeof(*s->tag));
    s->stamp = calloc(n, sizeof(*s->stamp));
    s->owner = malloc(n * sizeof(*s->owner));
    s->l2_tag = malloc((l2n ? l2n : 1) * sizeof(*s->l2_tag));
    s->l2_stamp = calloc(l2n ? l2n : 1, sizeof(*s->l2_stamp));
    if (!s->tag || !s->stamp || !s->owner || !s->l2_tag || !s->l2_stamp) {
        rq_free(s);
        return NULL;
    }
    memset(s->tag, 0xff, n * sizeof(*s->tag));
    memset(s->owner, 0xff, n * sizeof(*s->owner));
    memset(s->l2_tag, 0xff, (l2n ? l2n : 1) * sizeof(*s->l2_tag));
    s->rng = p->seed;
    return s;
}

static uint64_t *l2_set(struct rq_sim *s, uint32_t member, uint64_t line,
                        uint64_t **stamps)
{
    size_t base = ((size_t)member * s->p.l2_sets
                   + (size_t)(line % s->p.l2_sets)) * s->p.l2_ways;
    *stamps = s->l2_stamp + base;
    return s->l2_tag + base;
}

static void l2_invalidate(struct rq_sim *s, uint32_t member, uint64_t line)
{
    uint64_t *stamps, *tags;
    uint32_t w;
    if (!s->p.l2_sets)
        return;
    tags = l2_set(s, member, line, &stamps);
    for (w = 0; w < s->p.l2_ways; w++) {
        if (tags[w] == line) {
            tags[w] = INVALID;
            stamps[w] = 0;
        }
    }
}

/* 1 on an L2 hit; on a miss, fills the L2 (LRU). */
static int l2_access(struct rq_sim *s, uint32_t member, uint64_t line)
{
    uint64_t *stamps, *tags;
    uint32_t w, victim = 0;
    tags = l2_set(s, member, line, &stamps);
    for (w = 0; w < s->p.l2_ways; w++) {
        if (tags[w] == line) {
            stamps[w] = ++s->clock;
            return 1;
        }
        if (stamps[w] < stamps[victim])
            victim = w;
    }
    tags[victim] = line;
    stamps[victim] = ++s->clock;
    return 0;
}

/* The way of `line` in its set, or -1. */
static int llc_find(const struct rq_sim *s, uint32_t set, uint64_t line)
{
    const uint64_t *tags = s->tag + (size_t)set * s->p.ways;
    uint32_t w;
    for (w = 0; w < s->p.ways; w++)
        if (tags[w] == line)
            return (int)w;
    return -1;
}

/* Fill `line` into a way of `mask` in `set`; returns the way. */
static int llc_fill(struct rq_sim *s, uint32_t set, uint64_t line,
                    uint32_t mask, uint16_t owner)
{
    size_t base = (size_t)set * s->p.ways;
    uint32_t w, candidates = 0;
    int victim = -1;
    for (w = 0; w < s->p.ways; w++) {
        if (!(mask & (1u << w)))
            continue;
        if (s->tag[base + w] == INVALID) {
            victim = (int)w;
            break;
        }
        candidates++;
        if (s->p.policy == 1) {
            /* Reservoir choice: each candidate with equal chance. */
            if (next_random(s) % candidates == 0)
                victim = (int)w;
        } else if (victim < 0
                   || s->stamp[base + w] < s->stamp[base + (uint32_t)victim]) {
            victim = (int)w;
        }
    }
    if (victim < 0)
        return -1;
    if (s->tag[base + victim] != INVALID
        && s->owner[base + victim] != NO_OWNER)
        /* Inclusive: the evicted line leaves its core's L2. */
        l2_invalidate(s, s->owner[base + victim], s->tag[base + victim]);
    s->tag[base + victim] = line;
    s->stamp[base + victim] = ++s->clock;
    s->owner[base + victim] = owner;
    return victim;
}

/* A core access by `member` (after its L1 missed). */
int rq_access(struct rq_sim *s, uint32_t member, uint64_t line,
              uint32_t mask)
{
    uint32_t set;
    int w;
    if (s->p.l2_sets && l2_access(s, member, line))
        return RQ_L2_HIT;
    set = set_of(s, line);
    w = llc_find(s, set, line);
    if (w >= 0) {
        s->stamp[(size_t)set * s->p.ways + (uint32_t)w] = ++s->clock;
        return RQ_LLC_HIT;
    }
    llc_fill(s, set, line, mask, (uint16_t)member);
    return RQ_LLC_MISS;
}

/* The NIC writes `line` for `member` (DDIO). */
int rq_dma(struct rq_sim *s, uint32_t member, uint64_t line)
{
    uint32_t set = set_of(s, line);
    int w = llc_find(s, set, line);
    l2_invalidate(s, member, line);
    if (w >= 0) {
        s->stamp[(size_t)set * s->p.ways + (uint32_t)w] = ++s->clock;
        return RQ_DMA_UPDATE;
    }
    llc_fill(s, set, line, s->p.io_mask, (uint16_t)member);
    return RQ_DMA_ALLOC;
}

/* The way holding `line`, or -1 (for tests). */
int rq_where(const struct rq_sim *s, uint64_t line)
{
    return llc_find(s, set_of(s, line), line);
}

/* Lines of the LLC held by `member` (0xffff: invalid lines). */
uint64_t rq_occupancy(const struct rq_sim *s, uint32_t member)
{
    size_t i, n = (size_t)s->p.sets * s->p.ways;
    uint64_t count = 0;
    for (i = 0; i < n; i++)
        if (s->owner[i] == member && s->tag[i] != INVALID)
            count++;
    return count;
}

static void clear_stats(struct rq_member *m)
{
    m->packets = m->insns = m->accesses = m->l2_hits = 0;
    m->llc_hits = m->llc_misses = m->dma_lines = m->dma_allocs = 0;
    m->cycles = 0.0;
}

/* One packet of member `i`: its records up to its packet record. */
static void run_packet(struct rq_sim *s, struct rq_member *m, uint32_t i)
{
    uint64_t l2h = 0, llch = 0, miss = 0, acc = 0, dma = 0, dmaa = 0;
    /* Members are apart in the address space (they are processes). */
    uint64_t tag_bits = (uint64_t)i << 50;
    for (;;) {
        uint64_t r, line;
        int out;
        if (m->pos >= m->len)
            m->pos = 0;            /* the trace loops */
        r = m->trace[m->pos++];
        line = (r >> 2) ^ tag_bits;
        switch (r & 3) {
        case RQ_REC_LOAD:
        case RQ_REC_STORE:
            acc++;
            out = rq_access(s, i, line, m->mask);
            if (out == RQ_L2_HIT)
                l2h++;
            else if (out == RQ_LLC_HIT)
                llch++;
            else
                miss++;
            break;
        case RQ_REC_DMA:
            dma++;
            if (rq_dma(s, i, line) == RQ_DMA_ALLOC)
                dmaa++;
            break;
        default: {
            uint64_t insns = r >> 2;
            double cycles = (double)insns * s->p.cpi
                + (double)l2h * s->p.t_l2 + (double)llch * s->p.t_llc
                + (double)miss * s->p.t_mem;
            m->now += cycles;
            m->done++;
            m->packets++;
            m->insns += insns;
            m->accesses += acc;
            m->l2_hits += l2h;
            m->llc_hits += llch;
            m->llc_misses += miss;
            m->dma_lines += dma;
            m->dma_allocs += dmaa;
            m->cycles += cycles;
            return;
        }
        }
    }
}

/* Runs the members, interleaved by their simulated time: the member whose
 * clock is earliest runs its next packet. Counting starts once every
 * member has run `warm` packets and stops once every one has been
 * measured for `measure` packets. Each trace must end with a packet
 * record. Returns 0, or -1 on bad arguments. */
int rq_simulate(const struct rq_params *p, struct rq_member *m)
{
    struct rq_sim *s;
    uint32_t i, n = p->n_members;
    int measuring = 0;
    for (i = 0; i < n; i++)
        if (!m[i].len || (m[i].trace[m[i].len - 1] & 3) != RQ_REC_PACKET)
            return -1;
    s = rq_new(p);
    if (!s)
        return -1;
    for (i = 0; i < n; i++) {
        m[i].pos = m[i].done = 0;
        m[i].now = 0.0;
        clear_stats(&m[i]);
    }
    measuring = p->warm == 0;
    for (;;) {
        uint32_t next = 0;
        int all = 1;
        for (i = 1; i < n; i++)
            if (m[i].now < m[next].now)
                next = i;
        run_packet(s, &m[next], next);
        if (!measuring) {
            for (i = 0; i < n; i++)
                if (m[i].done < p->warm)
                    all = 0;
            if (all) {
                measuring = 1;
                for (i = 0; i < n; i++)
                    clear_stats(&m[i]);
            }
        } else {
            for (i = 0; i < n; i++)
                if (m[i].packets < p->measure)
                    all = 0;
            if (all)
                break;
        }
    }
    for (i = 0; i < n; i++)
        m[i].occupancy = rq_occupancy(s, i);
    rq_free(s);
    return 0;
}
