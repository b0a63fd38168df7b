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
 * The client requests between an NF harness (nf.c) and the trace tool
 * (vgtool.c), and the trace's record format.
 *
 * A trace is a stream of little-endian 64-bit records; the low 2 bits are
 * the kind, the rest the payload:
 *
 *   RQ_REC_LOAD   a load that missed the modelled L1D: payload = line address
 *   RQ_REC_STORE  a store (read for ownership) that missed it: line address
 *   RQ_REC_DMA    a line the "NIC" wrote (DDIO): line address
 *   RQ_REC_PACKET the end of one packet: payload = guest instructions the
 *                 traced thread executed since the previous packet's end
 *
 * Line address = byte address >> 6 (64-byte lines).
 */

#ifndef RESQ_TRACE_H
#define RESQ_TRACE_H

#define RQ_REC_LOAD 0
#define RQ_REC_STORE 1
#define RQ_REC_DMA 2
#define RQ_REC_PACKET 3
#define RQ_LINE_SHIFT 6

/* The simulator needs only the record format. */
#ifndef RQ_RECORDS_ONLY

#ifndef RQ_TOOL_SIDE
#include <string.h>
#include <valgrind/valgrind.h>
#endif

enum {
    RQ_USERREQ_START = VG_USERREQ_TOOL_BASE('R', 'Q'),
    RQ_USERREQ_STOP,
    RQ_USERREQ_PACKET,
    RQ_USERREQ_DMA,
    RQ_USERREQ_PAUSE,
    RQ_USERREQ_RESUME
};

#ifndef RQ_TOOL_SIDE
/* Start recording (the steady state begins). */
#define RQ_START() \
    VALGRIND_DO_CLIENT_REQUEST_STMT(RQ_USERREQ_START, 0, 0, 0, 0, 0)
/* Stop recording. */
#define RQ_STOP() \
    VALGRIND_DO_CLIENT_REQUEST_STMT(RQ_USERREQ_STOP, 0, 0, 0, 0, 0)
/* One packet is done. */
#define RQ_PACKET() \
    VALGRIND_DO_CLIENT_REQUEST_STMT(RQ_USERREQ_PACKET, 0, 0, 0, 0, 0)

/* Not the NF's work (the traffic generator's): neither its accesses nor its
 * instructions count, until RQ_RESUME(). */
#define RQ_PAUSE() \
    VALGRIND_DO_CLIENT_REQUEST_STMT(RQ_USERREQ_PAUSE, 0, 0, 0, 0, 0)
#define RQ_RESUME() \
    VALGRIND_DO_CLIENT_REQUEST_STMT(RQ_USERREQ_RESUME, 0, 0, 0, 0, 0)

/* The NIC writes len bytes of src at dst. Under the tool, the tool copies
 * (unseen by the core's trace) and records dst's lines as DMA writes;
 * natively (no tool) the request returns 0 and we copy. */
static inline void rq_dma(void *dst, const void *src, unsigned long len)
{
    unsigned long done = VALGRIND_DO_CLIENT_REQUEST_EXPR(
        0, RQ_USERREQ_DMA, dst, src, len, 0, 0);
    if (!done)
        memcpy(dst, src, len);
}
#endif

#endif /* RQ_RECORDS_ONLY */

#endif
