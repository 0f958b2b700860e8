// LLVM gwp_asan's stack-trace compressor, as compiled into compiler-rt
// (libclang_rt.gwp_asan), made callable from C for the `gwp-asan` codec.
// The two functions are declared here as compiler-rt's
// gwp_asan/stack_trace_compressor.h declares them (that header is not
// installed); the definitions come from the static library.
#include <cstddef>
#include <cstdint>

namespace gwp_asan {
namespace compression {
size_t pack(const uintptr_t *Unpacked, size_t UnpackedSize, uint8_t *Packed,
            size_t PackedMaxSize);
size_t unpack(const uint8_t *Packed, size_t PackedSize, uintptr_t *Unpacked,
              size_t UnpackedMaxSize);
} // namespace compression
} // namespace gwp_asan

extern "C" size_t bench_gwp_pack(const uintptr_t *frames, size_t n, uint8_t *out, size_t cap)
{
    return gwp_asan::compression::pack(frames, n, out, cap);
}

extern "C" size_t bench_gwp_unpack(const uint8_t *in, size_t len, uintptr_t *frames, size_t max)
{
    return gwp_asan::compression::unpack(in, len, frames, max);
}
