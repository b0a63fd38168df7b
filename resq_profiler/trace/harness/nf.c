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
 * The NF harness: DPDK's own lookup libraries on a synthetic packet stream.
 *
 *   nf [EAL options] -- MODE FLOWS PACKETS SEED SIZE
 *
 * MODE is one of
 *   lpm   rte_lpm (DIR-24-8) routing table of SIZE prefixes; an IPv4 router
 *   acl   rte_acl 5-tuple classifier of SIZE rules (scalar classify)
 *   hash  rte_hash exact-match flow table of FLOWS 5-tuples with per-flow
 *         NAT state (128 B a flow); a NAT's fast path
 *   sad   rte_ipsec_sad (SPI, DIP, SIP) table of SIZE security
 *         associations with per-SA state (128 B); inbound IPsec's lookup
 *
 * FLOWS flows are drawn with SEED (each one aimed at a random prefix, rule
 * or SA, so that lookups hit the table as real traffic does); each packet
 * belongs to a flow drawn uniformly with SEED. Packets are 64 bytes.
 *
 * The packet path: a ring of RXD receive descriptors (16 B each, written
 * by the "NIC") and NBUF = RXD + TXD real rte_mbufs from an rte_mempool.
 * The NIC's writes (the frame into the mbuf's data room, the descriptor)
 * are DMA writes (rq_dma), made RXD packets before the core reads them, as
 * on a saturated port whose receive ring is full. The core then does what
 * a poll-mode driver and the NF do: reads the descriptor, fills the mbuf's
 * fields, reads the headers, looks up, rewrites the header where the NF
 * does (TTL, NAT's source), and writes a transmit descriptor.
 *
 * The first RXD + WARM packets run untraced; RQ_START()/RQ_STOP() bracket
 * PACKETS packets, and RQ_PACKET() ends each. Building the tables and the
 * NIC's own work (drawing the next packet) are not traced.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ipsec_sad.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_random.h>

#include "resq_trace.h"

#define RXD 2048
#define TXD 2048
#define NBUF (RXD + TXD)
#define WARM 4096
#define FRAME 64
#define STATE_BYTES 128

struct rx_desc {               /* a write-back receive descriptor */
    uint64_t addr;
    uint32_t rss;
    uint16_t len;
    uint16_t status;
};

struct tx_desc {
    uint64_t addr;
    uint32_t len;
    uint32_t cmd;
};

struct flow {
    uint32_t sip, dip;         /* host order */
    uint16_t sport, dport;
    uint8_t proto;
    uint32_t spi;
};

struct nf_key {                /* rte_hash key: a 5-tuple, padded */
    uint32_t sip, dip;
    uint16_t sport, dport;
    uint8_t proto;
    uint8_t pad[3];
};

struct nf_state {              /* per flow (NAT) or per SA (IPsec) */
    uint32_t new_ip;
    uint16_t new_port;
    uint16_t flags;
    uint8_t key_material[56];
    uint64_t packets;
    uint64_t bytes;
    uint64_t last_seen;
    uint64_t seq;
    uint8_t replay[32];
} __rte_cache_aligned;

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
    return (uint32_t)(rnd() % n);
}

static char mode[8];
static uint32_t n_flows, n_size;
static uint64_t n_packets;
static struct flow *flows;

static struct rte_lpm *lpm;
static struct rte_acl_ctx *acl;
static struct rte_hash *hash;
static struct rte_ipsec_sad *sad;
static struct nf_state *state;
static uint64_t sink;

static void die(const char *what)
{
    fprintf(stderr, "nf: %s: %s\n", what, rte_strerror(rte_errno));
    exit(1);
}

static uint32_t in_prefix(uint32_t ip, uint8_t depth)
{
    uint32_t host = depth >= 32 ? 0 : (uint32_t)(~0U >> depth);
    return (ip & ~host) | (uint32_t)(rnd() & host);
}

/* A prefix length with roughly the shape of an IPv4 BGP table: more than
 * half /24s, most of the rest /16-/23, a few shorter, and a few
 * more-specific internal routes beyond /24 (which use rte_lpm's tbl8). */
static uint8_t route_depth(void)
{
    uint32_t r = rnd_below(1000);
    if (r < 580)
        return 24;
    if (r < 700)
        return 23;
    if (r < 800)
        return 22;
    if (r < 960)
        return (uint8_t)(16 + rnd_below(6));
    if (r < 990)
        return (uint8_t)(8 + rnd_below(8));
    return (uint8_t)(25 + rnd_below(8));
}

static void setup_lpm(void)
{
    struct rte_lpm_config cfg = {
        .max_rules = n_size + 16, .number_tbl8s = 4096 + n_size / 50,
        .flags = 0};
    uint32_t *net = malloc(sizeof(*net) * n_size);
    uint8_t *len = malloc(n_size);
    uint32_t i, added = 0;
    lpm = rte_lpm_create("nf_lpm", SOCKET_ID_ANY, &cfg);
    if (!lpm)
        die("rte_lpm_create");
    for (i = 0; i < n_size; i++) {
        len[i] = route_depth();
        /* Unicast space 1.0.0.0 - 223.255.255.255. */
        net[i] = in_prefix((uint32_t)(1 + rnd_below(223)) << 24 |
                           (uint32_t)(rnd() & 0xffffff), len[i]);
        net[i] &= len[i] ? ~0U << (32 - len[i]) : 0;
        if (rte_lpm_add(lpm, net[i], len[i], (uint32_t)rnd_below(64)) == 0)
            added++;
    }
    rte_lpm_add(lpm, 0, 0, 63);    /* the default route */
    for (i = 0; i < n_flows; i++) {
        uint32_t r = rnd_below(n_size);
        flows[i].dip = in_prefix(net[r], len[r]);
        flows[i].sip = (uint32_t)rnd();
        flows[i].proto = 17;
    }
    fprintf(stderr, "nf: lpm: %u prefixes\n", added);
    free(net);
    free(len);
}

enum { F_PROTO, F_SRC, F_DST, F_SPORT, F_DPORT, N_FIELDS };

RTE_ACL_RULE_DEF(nf_acl_rule, N_FIELDS);

static struct rte_acl_field_def acl_defs[N_FIELDS] = {
    {.type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1,
     .field_index = F_PROTO, .input_index = 0, .offset = 9},
    {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
     .field_index = F_SRC, .input_index = 1, .offset = 12},
    {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
     .field_index = F_DST, .input_index = 2, .offset = 16},
    {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
     .field_index = F_SPORT, .input_index = 3, .offset = 20},
    {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
     .field_index = F_DPORT, .input_index = 3, .offset = 22},
};

/* A ClassBench-like prefix length: many hosts and /24s, some wildcards. */
static uint8_t acl_prefix(void)
{
    uint32_t r = rnd_below(100);
    if (r < 30)
        return 32;
    if (r < 55)
        return 24;
    if (r < 75)
        return (uint8_t)(16 + rnd_below(8));
    if (r < 90)
        return (uint8_t)(8 + rnd_below(8));
    return 0;
}

static const uint16_t well_known[] = {22, 25, 53, 80, 110, 123, 143, 443,
                                      993, 3306, 5060, 8080};

static void setup_acl(void)
{
    struct rte_acl_param prm = {
        .name = "nf_acl", .socket_id = SOCKET_ID_ANY,
        .rule_size = RTE_ACL_RULE_SZ(N_FIELDS), .max_rule_num = n_size};
    struct rte_acl_config cfg = {.num_categories = 1,
                                 .num_fields = N_FIELDS};
    struct nf_acl_rule *rules = calloc(n_size, sizeof(*rules));
    uint32_t i;
    acl = rte_acl_create(&prm);
    if (!acl)
        die("rte_acl_create");
    for (i = 0; i < n_size; i++) {
        struct nf_acl_rule *r = &rules[i];
        uint32_t p = rnd_below(10);
        uint8_t sl = acl_prefix(), dl = acl_prefix();
        r->data.category_mask = 1;
        r->data.priority = (int32_t)(n_size - i);
        r->data.userdata = i + 1;
        if (p < 7) {
            r->field[F_PROTO].value.u8 = 6;
            r->field[F_PROTO].mask_range.u8 = 0xff;
        } else if (p < 9) {
            r->field[F_PROTO].value.u8 = 17;
            r->field[F_PROTO].mask_range.u8 = 0xff;
        }
        r->field[F_SRC].value.u32 =
            sl ? (uint32_t)rnd() & (~0U << (32 - sl)) : 0;
        r->field[F_SRC].mask_range.u32 = sl;
        r->field[F_DST].value.u32 =
            dl ? (uint32_t)rnd() & (~0U << (32 - dl)) : 0;
        r->field[F_DST].mask_range.u32 = dl;
        r->field[F_SPORT].value.u16 = 0;
        r->field[F_SPORT].mask_range.u16 = 0xffff;
        if (rnd_below(5) == 0) {
            r->field[F_SPORT].value.u16 = 1024;
            r->field[F_SPORT].mask_range.u16 = 0xffff;
        }
        p = rnd_below(10);
        if (p < 5) {
            uint16_t port = well_known[rnd_below(12)];
            r->field[F_DPORT].value.u16 = port;
            r->field[F_DPORT].mask_range.u16 = port;
        } else if (p < 7) {
            uint16_t lo = (uint16_t)(1024 + rnd_below(60000));
            r->field[F_DPORT].value.u16 = lo;
            r->field[F_DPORT].mask_range.u16 =
                (uint16_t)(lo + rnd_below(1000));
        } else {
            r->field[F_DPORT].value.u16 = 0;
            r->field[F_DPORT].mask_range.u16 = 0xffff;
        }
    }
    if (rte_acl_add_rules(acl, (struct rte_acl_rule *)rules, n_size))
        die("rte_acl_add_rules");
    memcpy(cfg.defs, acl_defs, sizeof(acl_defs));
    if (rte_acl_build(acl, &cfg))
        die("rte_acl_build");
    if (rte_acl_set_ctx_classify(acl, RTE_ACL_CLASSIFY_SCALAR))
        die("rte_acl_set_ctx_classify");
    /* Each flow is aimed at a rule: a tuple inside its fields. */
    for (i = 0; i < n_flows; i++) {
        struct nf_acl_rule *r = &rules[rnd_below(n_size)];
        uint16_t lo, hi;
        flows[i].proto = r->field[F_PROTO].mask_range.u8 ?
            r->field[F_PROTO].value.u8 : (rnd_below(2) ? 6 : 17);
        flows[i].sip = in_prefix(r->field[F_SRC].value.u32,
                                 (uint8_t)r->field[F_SRC].mask_range.u32);
        flows[i].dip = in_prefix(r->field[F_DST].value.u32,
                                 (uint8_t)r->field[F_DST].mask_range.u32);
        lo = r->field[F_SPORT].value.u16;
        hi = r->field[F_SPORT].mask_range.u16;
        flows[i].sport = (uint16_t)(lo + rnd_below(hi - lo + 1U));
        lo = r->field[F_DPORT].value.u16;
        hi = r->field[F_DPORT].mask_range.u16;
        flows[i].dport = (uint16_t)(lo + rnd_below(hi - lo + 1U));
    }
    free(rules);
    fprintf(stderr, "nf: acl: %u rules\n", n_size);
}

static void make_key(struct nf_key *k, const struct flow *f)
{
    memset(k, 0, sizeof(*k));
    k->sip = f->sip;
    k->dip = f->dip;
    k->sport = f->sport;
    k->dport = f->dport;
    k->proto = f->proto;
}

static void setup_hash(void)
{
    struct rte_hash_parameters prm = {
        .name = "nf_hash", .entries = 2 * n_flows,
        .key_len = sizeof(struct nf_key), .hash_func = rte_hash_crc,
        .hash_func_init_val = 0, .socket_id = SOCKET_ID_ANY};
    uint32_t i;
    hash = rte_hash_create(&prm);
    if (!hash)
        die("rte_hash_create");
    state = rte_zmalloc("nf_state", sizeof(*state) * n_flows,
                        RTE_CACHE_LINE_SIZE);
    if (!state)
        die("rte_zmalloc");
    for (i = 0; i < n_flows; i++) {
        struct nf_key k;
        flows[i].sip = (uint32_t)rnd();
        flows[i].dip = (uint32_t)rnd();
        flows[i].sport = (uint16_t)rnd();
        flows[i].dport = well_known[rnd_below(12)];
        flows[i].proto = rnd_below(4) ? 6 : 17;
        make_key(&k, &flows[i]);
        state[i].new_ip = 0xc6336400 | (i & 0xff);  /* 198.51.100.0/24 */
        state[i].new_port = (uint16_t)(1024 + i % 60000);
        if (rte_hash_add_key_data(hash, &k, &state[i]) < 0)
            die("rte_hash_add_key_data");
    }
    fprintf(stderr, "nf: hash: %u flows\n", n_flows);
}

static void setup_sad(void)
{
    struct rte_ipsec_sad_conf cfg;
    uint32_t i;
    memset(&cfg, 0, sizeof(cfg));
    cfg.socket_id = SOCKET_ID_ANY;
    cfg.max_sa[RTE_IPSEC_SAD_SPI_DIP_SIP] = n_size;
    sad = rte_ipsec_sad_create("nf_sad", &cfg);
    if (!sad)
        die("rte_ipsec_sad_create");
    state = rte_zmalloc("nf_state", sizeof(*state) * n_size,
                        RTE_CACHE_LINE_SIZE);
    if (!state)
        die("rte_zmalloc");
    /* SA i: SPI 0x1000 + i between a peer and one of 16 local gateways. */
    for (i = 0; i < n_size; i++) {
        union rte_ipsec_sad_key k;
        memset(&k, 0, sizeof(k));
        k.v4.spi = rte_cpu_to_be_32(0x1000 + i);
        k.v4.dip = rte_cpu_to_be_32(0xcb007100 | (i & 15));
        k.v4.sip = rte_cpu_to_be_32(0x0a000000 | i);
        if (rte_ipsec_sad_add(sad, &k, RTE_IPSEC_SAD_SPI_DIP_SIP,
                              &state[i]))
            die("rte_ipsec_sad_add");
    }
    for (i = 0; i < n_flows; i++) {
        uint32_t sa = rnd_below(n_size);
        flows[i].spi = 0x1000 + sa;
        flows[i].dip = 0xcb007100 | (sa & 15);
        flows[i].sip = 0x0a000000 | sa;
        flows[i].proto = 50;   /* ESP */
    }
    fprintf(stderr, "nf: sad: %u SAs\n", n_size);
}

/* ---- the packet path ---------------------------------------------- */

static struct rte_mbuf *bufs[NBUF];
static struct rx_desc *rx_ring;
static struct tx_desc *tx_ring;
static uint32_t *sequence;      /* the flow of each packet */

static void build_frame(uint8_t *fr, const struct flow *f)
{
    uint8_t *ip = fr + 14;
    memset(fr, 0, FRAME);
    fr[12] = 0x08;                                  /* IPv4 */
    ip[0] = 0x45;
    ip[3] = FRAME - 14;
    ip[8] = 64;                                     /* TTL */
    ip[9] = f->proto;
    *(uint32_t *)(ip + 12) = rte_cpu_to_be_32(f->sip);
    *(uint32_t *)(ip + 16) = rte_cpu_to_be_32(f->dip);
    if (f->proto == 50) {
        *(uint32_t *)(ip + 20) = rte_cpu_to_be_32(f->spi);
        *(uint32_t *)(ip + 24) = rte_cpu_to_be_32(1);
    } else {
        *(uint16_t *)(ip + 20) = rte_cpu_to_be_16(f->sport);
        *(uint16_t *)(ip + 22) = rte_cpu_to_be_16(f->dport);
    }
}

/* An mbuf pool packed as on huge pages: rte_pktmbuf_pool_create() would
 * keep each 2.3 KB mbuf inside one 4 KiB page under --no-huge, one mbuf a
 * page, which would make every mbuf's lines alias in a few cache sets. One
 * contiguous chunk lays them out at the pool's own object size. */
static struct rte_mempool *packed_pool(unsigned int n)
{
    struct rte_pktmbuf_pool_private priv = {
        .mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE,
        .mbuf_priv_size = 0};
    uint32_t elt = sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE;
    struct rte_mempool_objsz sz;
    struct rte_mempool *mp;
    size_t len;
    char *mem;
    int added;
    mp = rte_mempool_create_empty("nf_pool", n, elt, 0, sizeof(priv),
                                  SOCKET_ID_ANY,
                                  RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    if (!mp)
        die("rte_mempool_create_empty");
    if (rte_mempool_set_ops_byname(mp, "ring_mp_mc", NULL))
        die("rte_mempool_set_ops_byname");
    rte_pktmbuf_pool_init(mp, &priv);
    len = (size_t)rte_mempool_calc_obj_size(
        elt, RTE_MEMPOOL_F_NO_IOVA_CONTIG, &sz) * n + 4096;
    mem = rte_malloc("nf_pool_mem", len, 4096);
    if (!mem)
        die("rte_malloc");
    added = rte_mempool_populate_iova(mp, mem, RTE_BAD_IOVA, len, NULL,
                                      NULL);
    if (added != (int)n) {
        fprintf(stderr, "nf: the pool took %d of %u mbufs\n", added, n);
        exit(1);
    }
    rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
    return mp;
}

/* The NIC receives packet p: frame into its buffer, then the descriptor.
 * Everything but the two DMA writes is the traffic generator's and the
 * NIC's own work, none of it the core's: the tracer looks away (and the
 * generator's arrays come from malloc, whose addresses vary). */
static void nic_receive(uint64_t p)
{
    uint8_t frame[FRAME];
    struct rx_desc d;
    struct rx_desc *slot;
    void *data;
    const struct flow *f;
    RQ_PAUSE();
    f = &flows[sequence[p]];
    build_frame(frame, f);
    data = rte_pktmbuf_mtod(bufs[p % NBUF], void *);
    slot = &rx_ring[p % RXD];
    d.addr = (uint64_t)(uintptr_t)data;
    d.rss = (f->sip ^ f->dip) * 2654435761U;
    d.len = FRAME;
    d.status = 1;
    RQ_RESUME();
    rq_dma(data, frame, FRAME);
    rq_dma(slot, &d, sizeof(d));
}

static inline uint32_t nf_process(struct rte_mbuf *m, uint64_t p)
{
    uint8_t *ip = rte_pktmbuf_mtod(m, uint8_t *) + 14;
    uint32_t out = 0;
    if (mode[0] == 'l') {
        uint32_t dip = rte_be_to_cpu_32(*(uint32_t *)(ip + 16));
        uint32_t hop;
        if (rte_lpm_lookup(lpm, dip, &hop) == 0)
            out = hop;
        ip[8]--;                                    /* TTL */
        *(uint16_t *)(ip + 10) += 1;                /* checksum */
    } else if (mode[0] == 'a') {
        const uint8_t *data[1] = {ip};
        uint32_t res = 0;
        rte_acl_classify(acl, data, &res, 1, 1);
        out = res;
    } else if (mode[0] == 'h') {
        struct nf_key k;
        struct nf_state *s = NULL;
        memset(&k, 0, sizeof(k));
        k.sip = rte_be_to_cpu_32(*(uint32_t *)(ip + 12));
        k.dip = rte_be_to_cpu_32(*(uint32_t *)(ip + 16));
        k.sport = rte_be_to_cpu_16(*(uint16_t *)(ip + 20));
        k.dport = rte_be_to_cpu_16(*(uint16_t *)(ip + 22));
        k.proto = ip[9];
        if (rte_hash_lookup_data(hash, &k, (void **)&s) >= 0) {
            *(uint32_t *)(ip + 12) = rte_cpu_to_be_32(s->new_ip);
            *(uint16_t *)(ip + 20) = rte_cpu_to_be_16(s->new_port);
            s->packets++;
            s->bytes += m->pkt_len;
            s->last_seen = p;
            out = 1;
        }
    } else {
        union rte_ipsec_sad_key k;
        const union rte_ipsec_sad_key *keys[1] = {&k};
        void *sa[1] = {NULL};
        memset(&k, 0, sizeof(k));
        k.v4.spi = *(uint32_t *)(ip + 20);
        k.v4.dip = *(uint32_t *)(ip + 16);
        k.v4.sip = *(uint32_t *)(ip + 12);
        rte_ipsec_sad_lookup(sad, keys, sa, 1);
        if (sa[0]) {
            struct nf_state *s = sa[0];
            uint32_t seq = rte_be_to_cpu_32(*(uint32_t *)(ip + 24));
            s->replay[seq & 31] = 1;                /* replay window */
            s->seq = seq;
            s->packets++;
            s->bytes += m->pkt_len;
            out = 1;
        }
    }
    return out;
}

/* The core's work for packet p: driver receive, NF, driver transmit. */
static void core_packet(uint64_t p)
{
    struct rx_desc *rxd = &rx_ring[p % RXD];
    struct rte_mbuf *m = bufs[p % NBUF];
    struct tx_desc *txd = &tx_ring[p % TXD];
    uint32_t out;
    if (!rxd->status)
        return;
    m->data_len = rxd->len;
    m->pkt_len = rxd->len;
    m->hash.rss = rxd->rss;
    m->ol_flags = RTE_MBUF_F_RX_RSS_HASH;
    m->packet_type = RTE_PTYPE_L3_IPV4;
    rxd->status = 0;
    out = nf_process(m, p);
    txd->addr = rte_mbuf_data_iova(m);
    txd->len = m->data_len;
    txd->cmd = out;
    sink += out;
}

static int __attribute__((noinline)) run(int argc, char **argv)
{
    struct rte_mempool *pool;
    uint64_t p, total;
    uint32_t seed, i;
    int n = rte_eal_init(argc, argv);
    if (n < 0)
        die("rte_eal_init");
    argc -= n;
    argv += n;
    if (argc != 6) {
        fprintf(stderr, "usage: nf [EAL options] -- lpm|acl|hash|sad "
                "FLOWS PACKETS SEED SIZE\n");
        return 2;
    }
    snprintf(mode, sizeof(mode), "%s", argv[1]);
    n_flows = (uint32_t)strtoul(argv[2], NULL, 10);
    n_packets = strtoull(argv[3], NULL, 10);
    seed = (uint32_t)strtoul(argv[4], NULL, 10);
    n_size = (uint32_t)strtoul(argv[5], NULL, 10);
    if (!n_flows || !n_size || (strcmp(mode, "lpm") && strcmp(mode, "acl")
                                && strcmp(mode, "hash")
                                && strcmp(mode, "sad"))) {
        fprintf(stderr, "nf: bad arguments\n");
        return 2;
    }
    rng_state = seed * 0x100000001b3ULL + 17;
    /* DPDK's own generator (rte_ipsec_sad draws its hash seed from it) is
     * seeded from the TSC at init: seed it from ours, so that a seed's
     * trace is the same on every run. */
    rte_srand(seed * 0x9e3779b97f4a7c15ULL + 1);
    flows = calloc(n_flows, sizeof(*flows));
    if (mode[0] == 'l')
        setup_lpm();
    else if (mode[0] == 'a')
        setup_acl();
    else if (mode[0] == 'h')
        setup_hash();
    else
        setup_sad();

    total = RXD + WARM + n_packets;
    sequence = malloc(sizeof(*sequence) * (total + RXD));
    for (p = 0; p < total + RXD; p++)
        sequence[p] = rnd_below(n_flows);
    pool = packed_pool(NBUF + 512);
    for (i = 0; i < NBUF; i++) {
        bufs[i] = rte_pktmbuf_alloc(pool);
        if (!bufs[i])
            die("rte_pktmbuf_alloc");
    }
    rx_ring = rte_zmalloc("nf_rx", sizeof(*rx_ring) * RXD, 4096);
    tx_ring = rte_zmalloc("nf_tx", sizeof(*tx_ring) * TXD, 4096);
    if (!rx_ring || !tx_ring)
        die("rte_zmalloc");

    /* The receive ring starts full. */
    for (p = 0; p < RXD; p++)
        nic_receive(p);
    for (p = 0; p < RXD + WARM + n_packets; p++) {
        if (p == RXD + WARM)
            RQ_START();
        core_packet(p);
        if (p >= RXD + WARM)
            RQ_PACKET();
        nic_receive(p + RXD);
    }
    RQ_STOP();
    printf("nf: %s %" PRIu64 " packets, checksum %" PRIu64 "\n", mode,
           n_packets, sink);
    rte_eal_cleanup();
    return 0;
}

/* The stack starts below argv and the environment, whose lengths differ
 * from run to run (paths, a pid in --file-prefix), and its addresses are
 * in the trace. The harness runs on a stack of its own at a fixed address
 * instead, so that a seed's trace is the same bit for bit on every run. */
#define RUN_STACK_AT ((void *)0x7e0000000000UL)
#define RUN_STACK_BYTES (16UL << 20)

static ucontext_t main_ctx, run_ctx;
static int run_argc, run_rc;
static char **run_argv;

static void run_on_own_stack(void)
{
    run_rc = run(run_argc, run_argv);
}

int main(int argc, char **argv)
{
    void *stack = mmap(RUN_STACK_AT, RUN_STACK_BYTES,
                       PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack != RUN_STACK_AT) {
        fprintf(stderr, "nf: no stack at %p; traces will depend on the "
                "environment\n", RUN_STACK_AT);
        return run(argc, argv);
    }
    run_argc = argc;
    run_argv = argv;
    if (getcontext(&run_ctx))
        return run(argc, argv);
    run_ctx.uc_stack.ss_sp = stack;
    run_ctx.uc_stack.ss_size = RUN_STACK_BYTES;
    run_ctx.uc_link = &main_ctx;
    makecontext(&run_ctx, run_on_own_stack, 0);
    if (swapcontext(&main_ctx, &run_ctx))
        return run(argc, argv);
    return run_rc;
}
