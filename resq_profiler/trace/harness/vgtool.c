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
 * resqtrace: a Valgrind tool that records an NF's data accesses as a
 * compact binary trace of cache lines (the format is in resq_trace.h).
 *
 * Why not lackey --trace-mem=yes: lackey prints every access from the
 * first instruction on, as text, and cannot be switched off. The harness
 * spends most of its instructions building its tables (hundreds of
 * thousands of routes, tens of thousands of ACL rules); lackey would print
 * billions of lines for them. This tool instruments nothing until the
 * harness says RQ_START (a client request), then discards the translations
 * made so far so that the code is translated again with instrumentation,
 * and does the same at RQ_STOP: the set-up runs at Valgrind's core speed.
 *
 * While recording, every load and store of the thread that started the
 * recording goes through a private L1D filter (32 KiB, 8 ways, 64-byte
 * lines, LRU: the Broadwell core's L1D), and only its misses are written
 * out. An L1 hit never reaches L2 or the LLC, so this loses nothing the
 * cache simulator needs, and it keeps the trace a few records per packet.
 * Instruction fetches are not recorded (the NF loop's code stays in L1I).
 *
 * Options: --out=FILE (the trace), --l1=no (record every access).
 */

#define RQ_TOOL_SIDE 1

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_transtab.h"
#include "pub_tool_vki.h"
#include "valgrind.h"

#include "resq_trace.h"

#define L1_SETS 64
#define L1_WAYS 8
#define BUF_RECORDS (1 << 16)

static const HChar *clo_out = NULL;
static Bool clo_l1 = True;

static Bool active = False;
static Bool paused = False;
static ULong pause_mark = 0;
static ThreadId traced_tid = 0;
static Int out_fd = -1;
static ULong buf[BUF_RECORDS];
static Int buf_used = 0;
static ULong n_insns = 0;          /* updated by inline IR */
static ULong insns_at_packet = 0;
static ULong n_records = 0;
static ULong n_packets = 0;

static ULong l1_tag[L1_SETS][L1_WAYS];
static ULong l1_age[L1_SETS][L1_WAYS];
static ULong l1_clock = 0;

static void flush(void)
{
    if (buf_used == 0)
        return;
    Int want = buf_used * (Int)sizeof(ULong);
    Int got = VG_(write)(out_fd, buf, want);
    if (got != want)
        VG_(tool_panic)("resqtrace: short write to --out");
    buf_used = 0;
}

static inline void emit(ULong record)
{
    if (buf_used == BUF_RECORDS)
        flush();
    buf[buf_used++] = record;
    n_records++;
}

static void l1_reset(void)
{
    VG_(memset)(l1_tag, 0xff, sizeof(l1_tag));
    VG_(memset)(l1_age, 0, sizeof(l1_age));
}

/* True on an L1 hit; on a miss, fills the line (LRU victim). */
static inline Bool l1_access(ULong line)
{
    UInt set = (UInt)(line % L1_SETS);
    Int w, victim = 0;
    l1_clock++;
    for (w = 0; w < L1_WAYS; w++) {
        if (l1_tag[set][w] == line) {
            l1_age[set][w] = l1_clock;
            return True;
        }
        if (l1_age[set][w] < l1_age[set][victim])
            victim = w;
    }
    l1_tag[set][victim] = line;
    l1_age[set][victim] = l1_clock;
    return False;
}

static inline void l1_invalidate(ULong line)
{
    UInt set = (UInt)(line % L1_SETS);
    Int w;
    for (w = 0; w < L1_WAYS; w++) {
        if (l1_tag[set][w] == line) {
            l1_tag[set][w] = ~0ULL;
            l1_age[set][w] = 0;
        }
    }
}

static VG_REGPARM(2) void rq_access(Addr addr, UWord size_kind)
{
    UWord size = size_kind >> 1;
    ULong kind = size_kind & 1;
    ULong first, last, line;
    if (!active || paused || VG_(get_running_tid)() != traced_tid
        || size == 0)
        return;
    first = (ULong)addr >> RQ_LINE_SHIFT;
    last = ((ULong)addr + size - 1) >> RQ_LINE_SHIFT;
    for (line = first; line <= last; line++) {
        if (clo_l1 && l1_access(line))
            continue;
        emit((line << 2) | kind);
    }
}

static void add_access(IRSB *sb, IRExpr *addr, Int size, Int is_store,
                       IRExpr *guard)
{
    IRExpr **argv = mkIRExprVec_2(
        addr, mkIRExpr_HWord((HWord)((size << 1) | (is_store ? 1 : 0))));
    IRDirty *di = unsafeIRDirty_0_N(2, "rq_access",
                                    VG_(fnptr_to_fnentry)(rq_access), argv);
    if (guard)
        di->guard = guard;
    addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static void add_insns(IRSB *sb, ULong n)
{
    IRTemp t1, t2;
    if (n == 0)
        return;
    t1 = newIRTemp(sb->tyenv, Ity_I64);
    t2 = newIRTemp(sb->tyenv, Ity_I64);
    addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(
        Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&n_insns))));
    addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(
        Iop_Add64, IRExpr_RdTmp(t1), IRExpr_Const(IRConst_U64(n)))));
    addStmtToIRSB(sb, IRStmt_Store(Iend_LE,
                                   mkIRExpr_HWord((HWord)&n_insns),
                                   IRExpr_RdTmp(t2)));
}

static Int loadg_size(IRLoadGOp cvt)
{
    switch (cvt) {
    case ILGop_IdentV128: return 16;
    case ILGop_Ident64: return 8;
    case ILGop_Ident32: return 4;
    case ILGop_16Uto32: case ILGop_16Sto32: return 2;
    case ILGop_8Uto32: case ILGop_8Sto32: return 1;
    default: return 8;
    }
}

static IRSB *rq_instrument(VgCallbackClosure *closure, IRSB *sb_in,
                           const VexGuestLayout *layout,
                           const VexGuestExtents *vge,
                           const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
    IRSB *sb;
    Int i;
    ULong pending = 0;
    if (!active)
        return sb_in;
    sb = deepCopyIRSBExceptStmts(sb_in);
    for (i = 0; i < sb_in->stmts_used; i++) {
        IRStmt *st = sb_in->stmts[i];
        if (!st)
            continue;
        switch (st->tag) {
        case Ist_IMark:
            pending++;
            break;
        case Ist_WrTmp: {
            IRExpr *data = st->Ist.WrTmp.data;
            if (data->tag == Iex_Load)
                add_access(sb, data->Iex.Load.addr,
                           sizeofIRType(data->Iex.Load.ty), 0, NULL);
            break;
        }
        case Ist_Store:
            add_access(sb, st->Ist.Store.addr,
                       sizeofIRType(typeOfIRExpr(sb_in->tyenv,
                                                 st->Ist.Store.data)),
                       1, NULL);
            break;
        case Ist_StoreG: {
            IRStoreG *sg = st->Ist.StoreG.details;
            add_access(sb, sg->addr,
                       sizeofIRType(typeOfIRExpr(sb_in->tyenv, sg->data)),
                       1, sg->guard);
            break;
        }
        case Ist_LoadG: {
            IRLoadG *lg = st->Ist.LoadG.details;
            add_access(sb, lg->addr, loadg_size(lg->cvt), 0, lg->guard);
            break;
        }
        case Ist_Dirty: {
            IRDirty *d = st->Ist.Dirty.details;
            if (d->mFx != Ifx_None && d->mAddr)
                add_access(sb, d->mAddr, d->mSize,
                           d->mFx != Ifx_Read, NULL);
            break;
        }
        case Ist_CAS: {
            IRCAS *cas = st->Ist.CAS.details;
            Int size = sizeofIRType(typeOfIRExpr(sb_in->tyenv, cas->dataLo));
            if (cas->dataHi)
                size *= 2;
            add_access(sb, cas->addr, size, 1, NULL);
            break;
        }
        case Ist_LLSC:
            if (st->Ist.LLSC.storedata == NULL)
                add_access(sb, st->Ist.LLSC.addr,
                           sizeofIRType(typeOfIRTemp(sb_in->tyenv,
                                                     st->Ist.LLSC.result)),
                           0, NULL);
            else
                add_access(sb, st->Ist.LLSC.addr,
                           sizeofIRType(typeOfIRExpr(sb_in->tyenv,
                                                     st->Ist.LLSC.storedata)),
                           1, NULL);
            break;
        case Ist_Exit:
            /* What ran before a side exit ran whether it is taken or not. */
            add_insns(sb, pending);
            pending = 0;
            break;
        default:
            break;
        }
        addStmtToIRSB(sb, st);
    }
    add_insns(sb, pending);
    return sb;
}

static void retranslate(void)
{
    VG_(discard_translations_safely)((Addr)0x1000, ~(SizeT)0xfff,
                                     "resqtrace");
}

static Bool rq_client_request(ThreadId tid, UWord *arg, UWord *ret)
{
    if (!VG_IS_TOOL_USERREQ('R', 'Q', arg[0]))
        return False;
    *ret = 0;
    switch (arg[0]) {
    case RQ_USERREQ_START:
        if (!active) {
            active = True;
            paused = False;
            traced_tid = tid;
            l1_reset();
            insns_at_packet = n_insns;
            retranslate();
        }
        break;
    case RQ_USERREQ_STOP:
        if (active) {
            active = False;
            flush();
            retranslate();
        }
        break;
    case RQ_USERREQ_PACKET:
        if (active) {
            emit(((n_insns - insns_at_packet) << 2) | RQ_REC_PACKET);
            insns_at_packet = n_insns;
            n_packets++;
        }
        break;
    case RQ_USERREQ_PAUSE:
        if (active && !paused) {
            paused = True;
            pause_mark = n_insns;
        }
        break;
    case RQ_USERREQ_RESUME:
        if (active && paused) {
            paused = False;
            insns_at_packet += n_insns - pause_mark;
        }
        break;
    case RQ_USERREQ_DMA: {
        HChar *dst = (HChar *)arg[1];
        const HChar *src = (const HChar *)arg[2];
        UWord len = arg[3];
        ULong line;
        VG_(memcpy)(dst, src, len);
        if (active && len) {
            for (line = (ULong)(Addr)dst >> RQ_LINE_SHIFT;
                 line <= ((ULong)(Addr)dst + len - 1) >> RQ_LINE_SHIFT;
                 line++) {
                /* The NIC's write invalidates the core's copy. */
                l1_invalidate(line);
                emit((line << 2) | RQ_REC_DMA);
            }
        }
        *ret = 1;
        break;
    }
    default:
        return False;
    }
    return True;
}

static Bool rq_process_cmd_line_option(const HChar *arg)
{
    if VG_STR_CLO(arg, "--out", clo_out) {}
    else if VG_BOOL_CLO(arg, "--l1", clo_l1) {}
    else
        return False;
    return True;
}

static void rq_print_usage(void)
{
    VG_(printf)("    --out=<file>   where the binary trace goes [required]\n"
                "    --l1=no|yes    filter through a 32 KiB L1D [yes]\n");
}

static void rq_print_debug_usage(void)
{
    VG_(printf)("    (none)\n");
}

static void rq_post_clo_init(void)
{
    if (clo_out == NULL)
        VG_(fmsg_bad_option)("--out", "resqtrace needs --out=<file>\n");
    out_fd = VG_(fd_open)(clo_out,
                          VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC, 0644);
    if (out_fd < 0)
        VG_(fmsg_bad_option)("--out", "cannot open %s\n", clo_out);
    l1_reset();
}

static void rq_fini(Int exitcode)
{
    flush();
    if (out_fd >= 0)
        VG_(close)(out_fd);
    VG_(umsg)("resqtrace: %llu records, %llu packets\n", n_records,
              n_packets);
}

static void rq_pre_clo_init(void)
{
    VG_(details_name)("resqtrace");
    VG_(details_version)(NULL);
    VG_(details_description)("resq-nova's cache-line trace of an NF");
    VG_(details_copyright_author)("resq-nova contributors");
    VG_(details_bug_reports_to)("the resq-nova project");
    VG_(details_avg_translation_sizeB)(275);
    VG_(basic_tool_funcs)(rq_post_clo_init, rq_instrument, rq_fini);
    VG_(needs_command_line_options)(rq_process_cmd_line_option,
                                    rq_print_usage, rq_print_debug_usage);
    VG_(needs_client_requests)(rq_client_request);
}

VG_DETERMINE_INTERFACE_VERSION(rq_pre_clo_init)
