/*
 * Size probes: each build of this file (PROBE=n) calls one piece of the
 * library, so that a --gc-sections link keeps exactly what that piece needs.
 * tests/embedded/code_size.py reads the link maps. Never run: the entry
 * point only keeps everything reachable. Arguments come through volatiles
 * so that nothing is folded away.
 */
#include <btpack/btpack.h>
#if defined(__arm__)
#include <btpack/cortex_m.h>
#endif

#define PROBE_BASE 0
#define PROBE_CBF_ENCODE 1 /* streaming encoder: init, add, finish */
#define PROBE_CBF_DECODE 2 /* one-shot decoder */
#define PROBE_LWS_ENCODE 3
#define PROBE_LWS_DECODE 4
#define PROBE_BASE64 5     /* encode and decode */
#define PROBE_FAULT 6       /* fault entry, frame, scan capture, CBF line record */
#define PROBE_FAULT_FP 7    /* the same with the frame record walk */
#define PROBE_FAULT_EHABI 8 /* the same with the EHABI method (and libgcc's unwinder) */
#define PROBE_CBF_CHAIN32 9 /* the 32-bit chain encoder (what the fault path uses) */
#define PROBE_HEAP_FP 10    /* an allocator's records: here, fp capture, alloc and free lines */
#define PROBE_IS_FAULT (PROBE == PROBE_FAULT || PROBE == PROBE_FAULT_FP || PROBE == PROBE_FAULT_EHABI)

extern volatile uintptr_t probe_sink;
extern volatile uint32_t in[8];
extern uint8_t buf[512];
volatile uintptr_t probe_sink;
volatile uint32_t in[8];
uint8_t buf[512];
int probe_main(void);

#if PROBE_IS_FAULT || PROBE == PROBE_HEAP_FP
static int sink(void *ctx, const void *bytes, size_t n)
{
    probe_sink = (uintptr_t)ctx + (uintptr_t)bytes + n;
    return 0;
}

void btp_cm_on_fault(uint32_t frame, const btp_cm_entry *entry)
{
    btp_cm_fault f;
    btp_cm_layout l = {{in[0], in[1]}, {in[2], in[3]}, 0};
    uint32_t addrs[32];
    size_t n = 0;
    int trunc = 0;
    if (btp_cm_fault_read(&f, frame, entry, l.stack) == BTP_OK)
        btp_cm_capture(&f, &l,
#if PROBE == PROBE_FAULT
                       btp_cm_walk_scan,
#elif PROBE == PROBE_FAULT_FP
                       btp_cm_walk_fp,
#else
                       btp_cm_walk_ehabi,
#endif
                       addrs, 32, &n, &trunc);
    btp_cm_record_cbf_line(addrs, n, trunc, sink, 0);
}
#endif

#if PROBE == PROBE_HEAP_FP
/* What an instrumented malloc and free add (fw/heap.c). */
static void heap_records(void)
{
    static btp_cm_fault f;
    static uint32_t addrs[16];
    btp_cm_layout l = {{in[0], in[1]}, {in[2], in[3]}, 0};
    size_t n = 0;
    int trunc = 0;
    btp_cm_here(&f);
    btp_cm_capture(&f, &l, btp_cm_walk_fp, addrs, 16, &n, &trunc);
    btp_cm_record_alloc_line(in[4], in[5], addrs, n, trunc, sink, 0);
    btp_cm_record_free_line(in[5], sink, 0);
}
#endif

int probe_main(void)
{
#if PROBE == PROBE_CBF_CHAIN32
    size_t len;
    probe_sink = btp_cbf_encode_chain32((const uint32_t *)in, in[0], 0, 0, buf, sizeof buf, &len,
                                        0);
#elif PROBE == PROBE_CBF_ENCODE
    btp_cbf_encoder e;
    size_t len;
    btp_cbf_encoder_init(&e, buf, sizeof buf, 32, 0);
    btp_frame f = {in[0], BTP_FRAME_RA};
    btp_cbf_encoder_add(&e, f, 1);
    btp_cbf_encoder_finish(&e, 0, &len);
    probe_sink = len;
#elif PROBE == PROBE_CBF_DECODE
    btp_frame out[8];
    probe_sink = btp_cbf_decode(buf, in[0], 0, out, 8, 0);
#elif PROBE == PROBE_LWS_ENCODE
    btp_frame f[2] = {{in[0], BTP_FRAME_RA}, {in[1], BTP_FRAME_RA}};
    size_t len;
    probe_sink = btp_lws_encode(f, 2, 0, 32, 0, buf, sizeof buf, &len, 0);
#elif PROBE == PROBE_LWS_DECODE
    btp_frame out[8];
    probe_sink = btp_lws_decode(buf, in[0], 32, out, 8, 0);
#elif PROBE == PROBE_BASE64
    size_t len;
    probe_sink = btp_base64_encode(buf, in[0], (char *)buf + 256, 256, 0, &len);
    probe_sink = btp_base64_decode((const char *)buf, in[1], buf + 256, 256, 0, &len, 0);
#elif PROBE == PROBE_HEAP_FP
    heap_records();
#elif PROBE_IS_FAULT
    /* What a vector table entry does: keep the entry. */
    probe_sink = (uintptr_t)btp_cm_fault_entry;
#endif
    return (int)probe_sink;
}
