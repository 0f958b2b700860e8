/*
 * Capture inside a signal handler running on an alternate stack: from the
 * handler's ucontext (the first frame must be the faulting pc, then its
 * callers) and of the handler's own thread (the walk must get from the
 * alternate stack back onto the interrupted code's stack). Built with frame
 * pointers so every method, fp included, can see the chain.
 */
#include "../check.h"
#include "chain.h"

#include <btpack/btpack.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NMETHODS 6
#define MAXF 64

typedef struct shot {
    btp_status st;
    size_t n;
    btp_frame f[MAXF];
} shot;

static shot from_context[NMETHODS], from_handler[NMETHODS];
static uint8_t cbf[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
static size_t cbf_len;
static btp_status cbf_st;
static sigjmp_buf back;
static volatile int *volatile bad_ptr = (int *)16;

volatile int *target(void);
void fault_c(void);
void fault_b(void);
void fault_a(void);
void grab(int m);

NOINL volatile int *target(void)
{
    BARRIER();
    return bad_ptr;
}

/* The store faults (address 16 is never mapped). Not instrumented: the
 * sanitizers must not get there first. It calls target() so that it is not
 * a leaf: compilers give leaves no frame record even with
 * -fno-omit-frame-pointer, and a fault in a frameless leaf hides its caller
 * from the fp walk. */
__attribute__((no_sanitize_address)) NOINL void fault_c(void)
{
    *target() = 1;
    BARRIER();
}

NOINL void fault_b(void)
{
    fault_c();
    BARRIER();
}

NOINL void fault_a(void)
{
    fault_b();
    BARRIER();
}

NOINL void grab(int m)
{
    btp_capture_options o = {0};
    o.method = (btp_capture_method)m;
    o.flags = BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
    from_handler[m].st = btp_capture(&o, from_handler[m].f, MAXF, &from_handler[m].n);
    BARRIER();
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m))
            continue;
        btp_capture_options o = {0};
        o.method = (btp_capture_method)m;
        o.flags = BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
        from_context[m].st = btp_capture_context(&o, uc, from_context[m].f, MAXF,
                                                 &from_context[m].n);
        grab(m);
    }
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_FP;
    cbf_st = btp_capture_cbf(&o, uc, cbf, sizeof cbf, &cbf_len);
    siglongjmp(back, 1);
}

/* Some frame i is in fault_b and i+1 in fault_a. */
static int has_callers(const btp_frame *f, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (frame_in(f[i], "fault_b", 0) && frame_in(f[i + 1], "fault_a", 0))
            return 1;
    return 0;
}

int main(void)
{
    static uint8_t altstack[256 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0, "sigaction");
    CHECK(sigaction(SIGBUS, &sa, NULL) == 0, "sigaction");

    /* Load what the unwinders load on first use, outside the handler. */
    btp_capture_options o;
    btp_capture_options_init(&o);
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        btp_frame tmp[4];
        size_t n;
        btp_capture_options om = {0};
        om.method = (btp_capture_method)m;
        if (btp_capture_method_available(om.method))
            btp_capture(&om, tmp, 4, &n);
    }

    if (sigsetjmp(back, 1) == 0) {
        fault_a();
        CHECK(0, "no fault");
    }

    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m))
            continue;
        const char *name = btp_capture_method_name((btp_capture_method)m);
        shot *c = &from_context[m];
        CHECK(c->st == BTP_OK && c->n >= 3, "%s: context %s, %zu frames", name,
              btp_status_name(c->st), c->n);
        if (c->n >= 3) {
            CHECK(c->f[0].kind == BTP_FRAME_PC && frame_in(c->f[0], "fault_c", 1),
                  "%s: first frame 0x%llx in %s", name, (unsigned long long)c->f[0].value,
                  function_at((uintptr_t)c->f[0].value));
            CHECK(frame_in(c->f[1], "fault_b", 0) && frame_in(c->f[2], "fault_a", 0),
                  "%s: callers %s %s", name, function_at((uintptr_t)c->f[1].value - 1),
                  function_at((uintptr_t)c->f[2].value - 1));
        }
        shot *h = &from_handler[m];
        CHECK(h->st == BTP_OK && h->n >= 1 && frame_in(h->f[0], "grab", 0),
              "%s: handler capture %s, %zu frames", name, btp_status_name(h->st), h->n);
        CHECK(has_callers(h->f, h->n), "%s: handler capture does not reach fault_b/fault_a",
              name);
    }

    btp_frame dec[BTP_CAPTURE_CBF_MAX_FRAMES];
    btp_cbf_info info;
    CHECK(cbf_st == BTP_OK, "cbf %s", btp_status_name(cbf_st));
    btp_status ds = btp_cbf_decode(cbf, cbf_len, BTP_CBF_POLICY_STRICT, dec,
                                   BTP_CAPTURE_CBF_MAX_FRAMES, &info);
    CHECK(ds == BTP_OK && info.frames >= 3 && dec[0].kind == BTP_FRAME_PC &&
              frame_in(dec[0], "fault_c", 1) && frame_in(dec[1], "fault_b", 0),
          "cbf from context: %s", btp_status_name(ds));
    return check_finish();
}
