// flint/tensor/isa.h — which instruction set the kernels run (scalar / AVX2 / AVX-512), chosen once at
// start-up from what the CPU supports (matmul.cpp holds the choice). Apart from matmul.h so that another
// kernel's dispatch (attention's) can name it without the matmul interface.
#pragma once
#include <string>

namespace flint {

enum class Isa { Scalar, AVX2, AVX512 };
Isa active_isa();              // what matmul uses now
Isa best_isa();                // the best this CPU supports
void set_isa(Isa isa);         // tests and benchmarks force a path; throws if the CPU lacks it
const char* isa_name(Isa isa);

// Whether the AVX-512 kernels for the sixteen-row layouts (the 32-element ones, Q4_K, Q5_K, IQ4_XS) prefetch
// their weight stream in software when they multiply a single token (decode). It pays on some cores and costs
// on others, so Auto decides by the CPU: on for Intel and AMD Zen 5, off for Zen 4 (measured both ways;
// BENCHMARKS.md, Twentieth, Twenty-sixth and Thirty-seventh sessions).
// Benchmarks force it to compare the two on one machine; results are the same bits either way.
enum class DecodePrefetch { Auto, On, Off };
void set_decode_prefetch(DecodePrefetch p);
bool decode_prefetch();  // whether the AVX-512 path prefetches for one token now (it has effect only there)
// A kernel path as stats lines and test names print it: the ISA's name, plus "+prefetch" with the one-token
// weight prefetch (which exists on AVX-512 only: pass whether it is on there).
std::string kernel_path_name(Isa isa, bool decode_prefetch);

}  // namespace flint
