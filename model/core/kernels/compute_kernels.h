#pragma once
// The compute kernels: the few vectorised routines every hot path runs through (the register-tile GEMM
// of the projections, Q·Kᵀ, pattern·V and the unembedding; the softmax and the activations; the int8
// candidate pass of the embedding-space top-k; the machine probes of the bench). One table per
// instruction set, each compiled in its own translation unit with its own target flags
// (kernels_avx512.cpp, kernels_avx2.cpp, kernels_portable.cpp), chosen once at start-up from what the
// CPU and the OS report (kernel_choice.h). Code above this table never names an ISA or a vector width.
//
// This header is included by the kernel translation units themselves, so it holds declarations only:
// no inline function, no template, no library header whose code could be compiled with a kernel's
// flags and then shared, through the linker's merging of identical inline definitions, with code
// that must run on every x86-64 CPU (a binary that dies with SIGILL on an older CPU).

#include "model/core/weight_type.h"

#include <cstddef>
#include <cstdint>

namespace attnscope {

/// The instruction sets AttnScope has kernels for, from the most portable up.
enum class KernelIsa {
    Portable, ///< no intrinsics: GCC/Clang vector extensions at the target's baseline (SSE2 on x86-64, NEON on arm64)
    Avx2,     ///< AVX2 + FMA + F16C (Intel Haswell and later, AMD Zen and later): 16 ymm registers
    Avx512,   ///< AVX-512 F/BW/DQ/VL (Intel Skylake-X and later, AMD Zen 4 and later): 32 zmm registers
};

/// The operands of the int8 candidate pass, as quantized_topk.cpp prepares them for a kernel (its
/// int8AOffset, int8BOffset and int8BMax). Dims k ∈ [0, 4·nkgHead) are the head, the rest the tail: a cell
/// whose head dot product plus ‖ã_i,tail‖₂·‖b̃_j,tail‖₂ (Cauchy–Schwarz) is below the threshold cannot
/// reach it, so its tail need not be computed.
struct Int8Operands {
    int aOffset = 0, bOffset = 0; ///< the offsets the bytes below carry (the kernel's int8AOffset, int8BOffset)
    const uint8_t* a = nullptr; ///< ã + aOffset, [rows, aStride] bytes (aStride = 4·nkg)
    long aStride = 0;
    const int* aTailNorm = nullptr;   ///< per row: an integer ≥ ‖ã_i‖₂ over the tail dims
    const int* aSum = nullptr;        ///< per row: Σ_k ã_ik over all dims (undoes int8BOffset)
    const int* aSumHead = nullptr;    ///< … over the head dims
    const uint8_t* b = nullptr; ///< b̃ + bOffset in groups of 64 columns: group g at b + g·nkg·256, for each
                                ///< k-group kg (4 dims) 64 columns × 4 bytes
    int nkg = 0;                ///< k-groups of 4 dims
    int nkgHead = 0;            ///< k-groups of the head (≤ nkg; = nkg: no tail)
    const int* bTailNormMax = nullptr;   ///< per group: an integer ≥ max over its columns of ‖b̃_j‖₂ over the tail dims
    const int* bSum = nullptr;           ///< per column (in packed order): Σ_k b̃_jk over all dims (undoes int8AOffset)
    const int* bSumHead = nullptr;       ///< … over the head dims
    /// The same values as signed int16 without offsets, for the portable loop (null for the others):
    const int16_t* a16 = nullptr; ///< ã, [rows, aStride] in the layout's dim order
    const int16_t* b16 = nullptr; ///< b̃ by packed column, [64 · groups, aStride] in the same dim order
};

/// An int8 candidate pass (ComputeKernels::int8FirstHit) with the quantisation it needs: a table's own,
/// or one that kernel_choice.cpp puts into a table (VNNI where the CPU has it), or a test-only twin.
struct Int8Pass {
    int aOffset, bOffset, aMax, bMax; ///< as ComputeKernels::int8AOffset … int8BMax
    const char* description;          ///< e.g. "AVX-VNNI vpdpbusd (ymm)"
    long (*firstHit)(const Int8Operands& ops, long row0, long g0, long g1, const int* thrDot);
};

/// One instruction set's kernels. Every function runs on the calling thread only; the callers
/// (weight_gemm.cpp, forward.cpp, quantized_topk.cpp, bench) own the threading. Matrices are row-major
/// float32 with explicit row strides (in elements).
struct ComputeKernels {
    KernelIsa isa;
    const char* name;        ///< "avx512", "avx2" or "portable" (the values of ATTNSCOPE_ISA)
    const char* description; ///< e.g. "AVX2+FMA, 6×16 register tile, int8 via vpmaddubsw" (About box, --version)

    // ---- GEMM y = x·W (weight_gemm.cpp drives these) -------------------------------------------------
    int mr;        ///< rows of x per register tile (and per packed panel)
    int nr;        ///< columns of W per micro-panel
    long rowBlock; ///< rows of packed x per L2-resident block (a multiple of mr)
    /// From this many rows of x on, a 16-bit (F16/BF16) weight stored [out, in] goes through gemmColumns
    /// (its micro-panels gathered once for all x panels); below, through dotRows. Float32 and block-quantized
    /// weights switch at kTransposedKernelMinRows (weight_gemm.h) on every kernel. Measured per kernel
    /// (docs/performance.md): on AVX2 the gather already wins at 12–16 rows of a BF16 weight (125 against
    /// 97 GFLOP/s at 20 rows of a 2048 × 8192 weight), on AVX-512 the dot products win up to 64.
    long transposedGemmMinRows16;
    /// The same threshold for a 16-bit weight stored [out, in] that has a packed copy (Weight::panels,
    /// weight_panels.h: no gather, each micro-panel one stretch of memory). Measured on Zen 5 with
    /// Llama-3.2-1B's BF16 shapes (docs/performance.md): the packed GEMM wins from 2 rows on AVX-512
    /// (8 rows: 84 against 111 ms per pass) and on AVX2 (4 rows: 100 against 130 ms); portable unmeasured.
    long packedGemmMinRows16;

    /// Packs x rows [p, p + min(mrPanel, rows − p)) (row stride ldx, `inner` columns) into pack + p·inner,
    /// k-major: element (p + r, k) at pack[p·inner + k·mr' + r], mr' = min(mrPanel, rows − p). mrPanel ≤ mr
    /// is the panel height the driver chose (weight_gemm.cpp: rows split into panels of equal height).
    void (*packPanel)(const float* x, long ldx, long rows, long inner, long p, long mrPanel, float* pack);

    /// y[:, c0:c1) = packed x [rows, inner] (panels of mrPanel rows) · W[:, c0:c1), W [inner, cols] of
    /// element type wType read in place (widened to float32 as it is read): stored row-major with row stride
    /// ldw, or with `transposed` stored as Wᵀ [cols, inner] (row stride ldw), each micro-panel then gathered
    /// into an L1 buffer first. Each y entry is one sequential float32 sum over k in a fixed order, so a
    /// row's result does not depend on the other rows, the panel height, c0/c1 or the thread.
    /// Block-quantized weights (wType Blocks, decoded by `dec`) must be stored transposed; ldw then counts
    /// elements of a stored row (a multiple of the block size).
    void (*gemmColumns)(const float* pack, long rows, long inner, long mrPanel, const void* W, WeightType wType,
                        const BlockDecoder* dec, long ldw, bool transposed, long c0, long c1, float* y, long ldy);

    /// The same product with W given as its packed copy (model/core/weight_panels.h): micro-panel
    /// p = columns [p·nr, p·nr + nr) of W [inner, cols] stored as inner × nr elements of wType (F32, F16 or
    /// BF16; columns past cols zero) at panels + p·inner·nr elements, so a micro-panel streams from
    /// consecutive addresses instead of from rows 3–12 KiB apart. c0 is a multiple of nr. Bitwise the
    /// result gemmColumns computes from the weight in place (the same kernels on the same values).
    void (*gemmPanels)(const float* pack, long rows, long inner, long mrPanel, const void* panels, WeightType wType,
                       long c0, long c1, float* y, long ldy);

    /// y[i, j] = x_i · wt_j for rows i < m of x (row stride ldx, k columns) and rows j ∈ [j0, j1) of
    /// wt (element type wType, row stride ldw): products with a weight stored [out, in] (the unembedding,
    /// nn.Linear weights) for few rows of x, streaming wt once per call. Each entry's summation order is
    /// fixed (lanes over k, then a fixed reduction tree): it does not depend on m or on the other rows.
    /// Block-quantized rows (wType Blocks, `dec`) are decoded four at a time; k ≤ 16384 for them.
    void (*dotRows)(const float* x, long m, long k, long ldx, const void* wt, WeightType wType, const BlockDecoder* dec,
                    long ldw, long j0, long j1, float* y, long ldy);

    // ---- elementwise ---------------------------------------------------------------------------------
    /// Causal softmax of one query row: scores[0, kept) *= scale in place; p[0, kept) = softmax of
    /// those; p[kept, n) = 0 and scores[kept, n) = −∞ (HF: masked_fill then softmax).
    void (*causalSoftmaxRow)(float* scores, float* p, long kept, long n, float scale);
    /// gelu_new in place: 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))), computed as x·σ(2u) (the same function).
    void (*geluNew)(float* x, long n);
    /// SiLU in place: x·σ(x) = x / (1 + e^−x).
    void (*silu)(float* x, long n);
    /// Σ_i exp(x_i − m) over n floats, the exps in float32, summed in double.
    double (*sumExp)(const float* x, long n, float m);

    // ---- int8 candidate pass of the low-rank top-k (quantized_topk.cpp) ---------------------------
    int int8AOffset;             ///< byte added to ã in Int8Operands::a (where A is the unsigned operand)
    int int8BOffset;             ///< byte added to b̃ in Int8Operands::b (where B is the unsigned operand)
    int int8AMax;                ///< |ã| ≤ this (127, or 63 where int16 sums of u8 × s8 pairs must not saturate)
    int int8BMax;                ///< |b̃| ≤ this (likewise)
    const char* int8Description; ///< e.g. "AVX512-VNNI vpdpbusd"
    /// Rows [row0, row0 + 6) of ã against column groups [g0, g1) of b̃ (Int8Operands): returns the first
    /// group g in which some cell (i, j) has the exact integer dot product ã_i·b̃_j ≥ thrDot[i − row0], or
    /// g1 when none has. thrDot ≥ 2³⁰ means the row never hits. May skip the tail dims of a cell when the
    /// head dims plus the Cauchy–Schwarz bound of the tail cannot reach the threshold (Int8Operands).
    long (*int8FirstHit)(const Int8Operands& ops, long row0, long g0, long g1, const int* thrDot);

    // ---- machine probes (bench/machine_bounds.cpp) --------------------------------------------------
    int lanes;  ///< float32 lanes per vector register
    /// `iterations` rounds of fmaChainCount independent vector FMA chains on registers; returns a sum of
    /// the results (so nothing is optimised away). FLOPs = iterations · fmaChainCount · lanes · 2.
    float (*fmaChains)(long iterations, float seed);
    int fmaChainCount;
    /// Σ of n floats (n a multiple of 4·lanes, p aligned to 64 bytes) with vector loads: the read-rate probe.
    float (*sumFloats)(const float* p, size_t n);
};

/// The kernels of one instruction set, or nullptr when this build has none for it (x86 kernels on arm64).
/// Does not check that the CPU can run them (kernel_choice.h does).
const ComputeKernels* kernelsFor(KernelIsa isa);

/// The kernels chosen at start-up (kernel_choice.h): ATTNSCOPE_ISA if set and runnable, else the best
/// the CPU and OS support. Chosen once, on first use; the same table for the whole process.
const ComputeKernels& computeKernels();

} // namespace attnscope
