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

// K<kFrom> .. K<kFrom + sizeof...(Ts) - 1>, the one that takes n tokens.
template <int G, typename B, template <int> class K, int kFrom, int... Ts>
void dispatch_groups(int n, int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, size_t as, float* y,
                     int64_t ldy, std::integer_sequence<int, Ts...>) {
    ((n == Ts + kFrom ? run_groups<G, B, K<Ts + kFrom>::run>(nb, w, gs, ng, a, as, y, ldy) : void()), ...);
}

// A one-token kernel for a whole tile: ng groups of G rows, gs bytes apart, against one activation row.
using DecodeTile = void (*)(int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, float* y);
template <DecodeTile D>
inline constexpr bool kHasDecode = true;
template <>
inline constexpr bool kHasDecode<nullptr> = false;

// A tile (nr a multiple of G) of a layout with blocks of kElems elements: the tokens in balanced passes of
// at most kMax (24 tokens with kMax 20: 12 + 12), as many as the group kernel keeps in registers. With a
// Decode kernel, one token goes to it (K<1> is then never instantiated); without, to K<1> group by group.
template <int G, typename B, template <int> class K, int kMax, int kElems, DecodeTile Decode = nullptr>
void tile_groups(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
                 int64_t ldy) {
    const int64_t nb = cols / kElems;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    constexpr int kFrom = kHasDecode<Decode> ? 2 : 1;
    static_assert(!kHasDecode<Decode> || kMax >= 3, "with kMax 2, 3 tokens would pass as 2 + 1 and need K<1>");
    if constexpr (kHasDecode<Decode>) {
        if (nt == 1) return Decode(nb, wb, G * ws, nr / G, ab, y);
    }
    const int passes = (nt + kMax - 1) / kMax;
    for (int t = 0, i = 0; t < nt; ++i) {
        const int n = nt / passes + (i < nt % passes);
        dispatch_groups<G, B, K, kFrom>(n, nb, wb, G * ws, nr / G, ab + size_t(t) * as, as, y + t * ldy, ldy,
                                        std::make_integer_sequence<int, kMax - kFrom + 1>{});
        t += n;
    }
}

}  // namespace flint::detail
