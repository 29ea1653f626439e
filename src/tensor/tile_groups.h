// flint/tensor/tile_groups.h — the tile driver of the interleaved layouts (tensor/repack.h), shared by the
// AVX-512 (sixteen-row) and AVX2 (eight-row) kernels. No intrinsics here: each ISA's file instantiates it
// with its own group kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

namespace flint::detail {

// Every group of G rows of the tile against T tokens: K<T>::run(nb, blocks, a, as, y, ldy).
template <int G, typename B, void (*Group)(int64_t, const B*, const uint8_t*, size_t, float*, int64_t)>
void run_groups(int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    for (int g = 0; g < ng; ++g) Group(nb, reinterpret_cast<const B*>(w + size_t(g) * gs), a, as, y + G * g, ldy);
}

template <int G, typename B, template <int> class K, int... Ts>
void dispatch_groups(int n, int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, size_t as, float* y,
                     int64_t ldy, std::integer_sequence<int, Ts...>) {
    ((n == Ts + 1 ? run_groups<G, B, K<Ts + 1>::run>(nb, w, gs, ng, a, as, y, ldy) : void()), ...);
}

// A tile (nr a multiple of G) of a layout with blocks of kElems elements: the tokens in balanced passes of
// at most kMax (24 tokens with kMax 20: 12 + 12), as many as the group kernel keeps in registers.
template <int G, typename B, template <int> class K, int kMax, int kElems>
void tile_groups(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
                 int64_t ldy) {
    const int64_t nb = cols / kElems;
    const auto* ab = static_cast<const uint8_t*>(a);
    const int passes = (nt + kMax - 1) / kMax;
    for (int t = 0, i = 0; t < nt; ++i) {
        const int n = nt / passes + (i < nt % passes);
        dispatch_groups<G, B, K>(n, nb, static_cast<const uint8_t*>(w), G * ws, nr / G, ab + size_t(t) * as, as,
                                 y + t * ldy, ldy, std::make_integer_sequence<int, kMax>{});
        t += n;
    }
}

}  // namespace flint::detail
