// The vectorised kernels, written once in GCC/Clang vector extensions and compiled once per instruction
// set: kernels_avx512.cpp, kernels_avx2.cpp and kernels_portable.cpp each include this file inside their
// own namespace (attnscope::kernels::<isa>) and an anonymous namespace, after defining
//   kLanes      float32 lanes per vector register (16, 8, 4),
//   kMr         rows of x per GEMM register tile (2·kMr accumulators + 2 W vectors + 1 broadcast must
//               fit the register file: 14 for 32 zmm, 6 for 16 ymm or xmm),
//   kDotRows    rows of x per dotRows tile (kDotRows × 4 accumulators),
//   kFmaChains  independent chains of the FMA-peak probe (≥ FMA latency × FMA ports),
//   kReadPackedInPlace  whether the GEMM's other x panels read a packed float32 micro-panel where it is
//               (true) or from the first panel's L1 copy (false), as measured faster for that kernel.
// No #pragma once and no #include but int8_thresholds.h (a fragment of the same kind): everything here gets
// internal linkage in each including file, so no code compiled for one instruction set can be shared with
// another through the linker (a kernel translation unit includes nothing but these fragments,
// compute_kernels.h and intrinsics headers).
//
// GEMM method (BLIS-style blocking, Van Zee & van de Geijn 2015, without packing W per call): x packed once
// into panels of kMr rows stored k-major; W read in place or from its packed copy (gemmPanels: micro-panels
// stored one after the other, model/core/weight_panels.h; with a short prompt's x, one micro-panel at all
// depths after the other), prefetched into L1 and, further ahead, L2, in
// micro-panels of kNr = 2·kLanes columns × kDepth rows by the first x panel's kernel, which also leaves a
// contiguous copy in L1 for the other x panels of the block (L2-resident); each output is one sequential
// float32 sum over k (fused multiply-adds where the instruction set has them).

typedef float vf __attribute__((vector_size(4 * kLanes)));
typedef float vfu __attribute__((vector_size(4 * kLanes), aligned(4), may_alias));
typedef int vi __attribute__((vector_size(4 * kLanes)));
typedef double vd __attribute__((vector_size(8 * kLanes)));

constexpr int kNr = 2 * kLanes;      // NR: columns per micro-panel (two vectors)
constexpr long kDepth = 256;         // KC: a W micro-panel of 256 × kNr floats stays in L1 (16–32 KiB)
constexpr long kBlockRows = 336;     // MC: 336 × 256 packed x floats = 336 KiB stay in L2 (a multiple of kMr)
// W rows prefetched ahead in the streaming micro-kernel, into L1 and, further ahead, into L2: a short
// prompt's pass is bound by how many W lines are in flight, so the distances are in bytes of micro-panel
// (1.5 KiB and 8 KiB: 12 and 64 rows of 32 floats, 24 and 128 rows of 16); not all into L1: W's rows
// 3–12 KiB apart share 1–4 L1 sets, which would evict them before use
constexpr long kPrefetch = 12 * 32 / kNr;
constexpr long kPrefetchL2 = 64 * 32 / kNr;
// Packed x of at most this many bytes (L2-resident: a short prompt) lets gemmPanels finish each micro-panel at
// all depths before the next, so each call streams one contiguous stretch of the packed copy instead of
// 32 KiB pieces 96 KiB apart. Measured on Zen 5 (20 × 768 × 3072 products, 40 weights in turn: avx512 280 →
// 303–317 GFLOP/s; gpt2-small at S = 20: avx512 2–3 %, avx2 4–5 % faster); same sums in the same order.
constexpr long kPanelOuterPackBytes = 256 * 1024;
static_assert(kBlockRows % kMr == 0, "the row block must hold whole panels");
/// The row block for panels of mr rows: the most whole panels within kBlockRows.
inline long blockRowsFor(long mr) { return kBlockRows / mr * mr; }
constexpr float kInf = __builtin_inff();

inline vf loadv(const float* p) { return *reinterpret_cast<const vfu*>(p); }
inline void storev(float* p, vf v) { *reinterpret_cast<vfu*>(p) = v; }
inline vf splat(float x) { return vf{} + x; }
inline long lmin(long a, long b) { return a < b ? a : b; }
inline long lmax(long a, long b) { return a > b ? a : b; }
inline vf vmax(vf a, vf b) { return a > b ? a : b; }

/// c + a·b per lane (a may be a broadcast float): one fused multiply-add where the instruction set has it (the x86
/// avx2 and avx512 kernels), written out rather than left to the compiler's contraction of `c += a * b`, which GCC and
/// Clang apply differently, and Clang not everywhere at -O1 under ASan: the packed and in-place paths of a product
/// must give the same bits with either compiler. Elsewhere a * b + c as written (x86-64's portable SSE2 kernel: a
/// multiply, then an add; arm64's NEON kernel: contracted, -ffp-contract=fast). Templates on the vector type, so that
/// only this kernel's width is compiled.
template <typename V = vf>
inline V madd(V a, V b, V c) {
#if defined(__FMA__) && defined(__x86_64__)
    if constexpr (sizeof(V) == 64) {
        return __builtin_bit_cast(V, _mm512_fmadd_ps(__builtin_bit_cast(__m512, a), __builtin_bit_cast(__m512, b), __builtin_bit_cast(__m512, c)));
    } else if constexpr (sizeof(V) == 32) {
        return __builtin_bit_cast(V, _mm256_fmadd_ps(__builtin_bit_cast(__m256, a), __builtin_bit_cast(__m256, b), __builtin_bit_cast(__m256, c)));
    } else {
        return __builtin_bit_cast(V, _mm_fmadd_ps(__builtin_bit_cast(__m128, a), __builtin_bit_cast(__m128, b), __builtin_bit_cast(__m128, c)));
    }
#else
    return a * b + c;
#endif
}
template <typename V = vf>
inline V madd(float a, V b, V c) {
#if defined(__FMA__) && defined(__x86_64__)
    if constexpr (sizeof(V) == 64) return madd<V>(__builtin_bit_cast(V, _mm512_set1_ps(a)), b, c);
    else if constexpr (sizeof(V) == 32) return madd<V>(__builtin_bit_cast(V, _mm256_set1_ps(a)), b, c);
    else return madd<V>(__builtin_bit_cast(V, _mm_set1_ps(a)), b, c);
#else
    return a * b + c;
#endif
}

/// Σ of the lanes in a fixed pairwise order (halves, quarters, …): the same bits for the same vector.
inline float hsum(vf v) {
#pragma GCC unroll 4
    for (int w = kLanes / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) v[i] += v[i + w];
    return v[0];
}
inline float hmax(vf v) {
    float m = v[0];
    for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
    return m;
}

/// e^x per lane (Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, a degree-6 polynomial for e^r, 2^n from the
/// exponent bits), within 2 ulp of the exact value; inputs are clamped to [−87.34, 88.38], so e^x of very
/// negative x is 2⁻¹²⁶ instead of a denormal or 0, and NaN stays NaN.
inline vf vexp(vf x) {
    const vf hi = splat(88.3762626647949f), lo = splat(-87.3365447505531f);
    x = x > hi ? hi : x;
    x = x < lo ? lo : x;
    const vf magic = splat(12582912.0f); // 1.5·2²³: adding and subtracting it rounds to the nearest integer
    const vf n = (x * 1.44269504088896341f + magic) - magic;
    x = x - n * 0.693359375f;
    x = x - n * -2.12194440e-4f;
    const vf z = x * x;
    vf y = splat(1.9875691500e-4f);
    y = y * x + 1.3981999507e-3f;
    y = y * x + 8.3334519073e-3f;
    y = y * x + 4.1665795894e-2f;
    y = y * x + 1.6666665459e-1f;
    y = y * x + 5.0000001201e-1f;
    y = y * z + x + 1.0f;
    const vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
    return y * __builtin_bit_cast(vf, bits);
}

// ---- register transposes ---------------------------------------------------------------------------

#if !defined(__clang__) && !(defined(__GNUC__) && __GNUC__ >= 12)
#error "the kernels need __builtin_shufflevector (GCC 12 or later, or Clang)"
#endif
template <int... I>
struct Seq {};
template <int N, int... I>
struct MakeSeq {
    using type = typename MakeSeq<N - 1, N - 1, I...>::type;
};
template <int... I>
struct MakeSeq<0, I...> {
    using type = Seq<I...>;
};

/// One stage of a kLanes × kLanes register transpose: rows a = r_i, b = r_{i+h} (bit h of i clear) become
/// the rows whose element e swaps bit h of its row index with bit h of its column index. After the stages
/// h = kLanes/2, …, 2, 1 every element (i, e) sits at (e, i). Each output is one two-source shuffle.
template <int h, int... E>
inline void transposeStage(vf& a, vf& b, Seq<E...>) {
    const vf lo = __builtin_shufflevector(a, b, ((E & h) == 0 ? E : kLanes + E - h)...);
    const vf hi = __builtin_shufflevector(a, b, ((E & h) == 0 ? E + h : kLanes + E)...);
    a = lo;
    b = hi;
}

template <int h>
inline void transposeStages(vf (&r)[kLanes]) {
    if constexpr (h >= 1) {
#pragma GCC unroll 16
        for (int i = 0; i < kLanes; ++i)
            if ((i & h) == 0) transposeStage<h>(r[i], r[i + h], typename MakeSeq<kLanes>::type{});
        transposeStages<h / 2>(r);
    }
}

/// dst[k·ldd + c] = src[c·lds + k] for c < nRows ≤ kLanes rows of kLanes floats (k < kLanes); each of the
/// kLanes stores writes kLanes floats, lanes c ≥ nRows zero (with ldd < kLanes they spill into the next
/// store's place).
inline void transposeRows(const float* src, long lds, int nRows, float* dst, long ldd) {
    vf r[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) r[i] = i < nRows ? loadv(src + i * lds) : vf{};
    transposeStages<kLanes / 2>(r);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) storev(dst + i * ldd, r[i]);
}

// ---- weight element types (model/core/weight_type.h): widened to float32 as they are loaded ----------

typedef unsigned short vh __attribute__((vector_size(2 * kLanes)));
typedef unsigned short vhu __attribute__((vector_size(2 * kLanes), aligned(2), may_alias));
typedef unsigned int vu __attribute__((vector_size(4 * kLanes)));

/// IEEE binary16 bits → float32, kLanes at a time, exact (normals, subnormals, ±0, ±Inf, NaN): the bits
/// shifted into a float32's place, the exponent rebiased by a multiply with 2¹¹² (which also turns a
/// subnormal half into a normal float, exactly), Inf/NaN exponents restored, the sign put back.
inline vf halfBitsToFloat(vu h) {
    const vu bits = (h & 0x7fffu) << 13;
    vf f = __builtin_bit_cast(vf, bits) * 5.192296858534828e33f;
    vu out = __builtin_bit_cast(vu, f);
    const vi infNan = __builtin_bit_cast(vi, (h & 0x7c00u)) == 0x7c00;
    out = infNan ? (0x7f800000u | ((h & 0x3ffu) << 13)) : out;
    return __builtin_bit_cast(vf, out | ((h & 0x8000u) << 16));
}
inline float halfToFloat(unsigned short h) {
    vu v{};
    v[0] = h;
    return halfBitsToFloat(v)[0];
}

struct ElemF32 {
    using T = float;
    static vf load(const T* p) { return loadv(p); }
    static float scalar(T x) { return x; }
};
struct ElemBF16 {
    using T = unsigned short;
    static vf load(const T* p) {
        const vu w = __builtin_convertvector(*reinterpret_cast<const vhu*>(p), vu) << 16;
        return __builtin_bit_cast(vf, w);
    }
    static float scalar(T x) {
        const unsigned bits = unsigned(x) << 16;
        return __builtin_bit_cast(float, bits);
    }
};
struct ElemF16 {
    using T = unsigned short;
    static vf load(const T* p) {
#if defined(ATTNSCOPE_KERNEL_F16C)
        return ATTNSCOPE_KERNEL_F16C(p); // vcvtph2ps (the including file's F16C instruction)
#else
        return halfBitsToFloat(__builtin_convertvector(*reinterpret_cast<const vhu*>(p), vu));
#endif
    }
    static float scalar(T x) { return halfToFloat(x); }
};

/// Element i of a row of E's type.
template <typename E>
inline const typename E::T* at(const void* p, long i) {
    return static_cast<const typename E::T*>(p) + i;
}

// ---- GEMM ---------------------------------------------------------------------------------------------

/// c [MR, kNr] (+)= a [MR, kc] · b [kc, kNr]. a packed k-major (a[k·MR + r]); b rows ldb floats apart.
/// With `copy` (not null), the b rows it reads are also stored there contiguously (copy[k·kNr + j]): the
/// first x panel leaves an L1-resident copy of the micro-panel for the others (W's rows in place are
/// 3–12 KiB apart, which maps a micro-panel's rows onto 1–4 L1 sets, so it never stays in L1).
/// Stream = false: b is such an L1 copy (or another L1-resident panel); then `next` (when not null) is the
/// micro-panel the next streaming call will read (rows ldn bytes apart), prefetched into L2 row by row, so
/// that the DRAM traffic of a short prompt's pass is spread over all x panels' calls, not only the first
/// (with 16 ymm registers the streaming call covers 6 of 20 rows).
/// Stream = true: the prefetches run ahead of b's rows and past its last row into the micro-panel the next
/// streaming call reads: `next` with the same row stride ldb when not null (a packed weight's next panel),
/// else the kNr columns right of b.
template <int MR, bool Stream, typename E>
void microKernel(const float* __restrict a, const void* __restrict bRaw, long ldb, long kc, float* __restrict c,
                 long ldc, bool accumulate, float* __restrict copy, const void* next, long ldn) {
    using T = typename E::T;
    const T* b = static_cast<const T*>(bRaw);
    // prefetch distances in bytes of micro-panel, so in rows: 12 and 64 rows of 32 floats
    constexpr long rowBytes = kNr * long(sizeof(T)), pf1 = 12 * 128 / rowBytes, pf2 = 64 * 128 / rowBytes;
    vf acc0[MR], acc1[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = vf{};
    for (long k = 0; k < kc; ++k) {
        if constexpr (Stream) {
            // W rows ahead: the first x panel streams each micro-panel from DRAM; past the panel's last row,
            // the first rows of the next micro-panel (the next kNr columns), which the next call streams
            const T* after = next ? static_cast<const T*>(next) : b + kNr;
            const T* l1 = k + pf1 < kc ? b + (k + pf1) * ldb : after + (k + pf1 - kc) * ldb;
            const T* l2 = k + pf2 < kc ? b + (k + pf2) * ldb : after + (k + pf2 - kc) * ldb;
#pragma GCC unroll 2
            for (long byte = 0; byte < rowBytes; byte += 64) {
                __builtin_prefetch(reinterpret_cast<const char*>(l1) + byte);
                __builtin_prefetch(reinterpret_cast<const char*>(l2) + byte, 0, 2);
            }
        }
        if constexpr (!Stream) {
            if (next)
#pragma GCC unroll 2
                for (long byte = 0; byte < kNr * 4; byte += 64)
                    __builtin_prefetch(static_cast<const char*>(next) + k * ldn + byte, 0, 2);
        }
        const vf b0 = E::load(b + k * ldb), b1 = E::load(b + k * ldb + kLanes);
        if (Stream && copy) {
            storev(copy + k * kNr, b0);
            storev(copy + k * kNr + kLanes, b1);
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const float ar = a[k * MR + r];
            acc0[r] = madd(ar, b0, acc0[r]);
            acc1[r] = madd(ar, b1, acc1[r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
        float* row = c + r * ldc;
        if (accumulate) {
            acc0[r] += loadv(row);
            acc1[r] += loadv(row + kLanes);
        }
        storev(row, acc0[r]);
        storev(row + kLanes, acc1[r]);
    }
}

using MicroKernelFn = void (*)(const float*, const void*, long, long, float*, long, bool, float*, const void*, long);

template <bool Stream, typename E, int... R>
struct MicroKernelTable {
    static constexpr MicroKernelFn fns[sizeof...(R)] = {&microKernel<R + 1, Stream, E>...};
};
template <bool Stream, typename E, int... R>
constexpr const MicroKernelFn* microKernels(Seq<R...>) {
    return MicroKernelTable<Stream, E, R...>::fns;
}
/// Micro-kernels by rows − 1: on an L1 micro-panel copy (float32), and streaming W in place per element type.
const MicroKernelFn* const kL1Kernels = microKernels<false, ElemF32>(typename MakeSeq<kMr>::type{});
template <typename E>
const MicroKernelFn* const kStreamKernels = microKernels<true, E>(typename MakeSeq<kMr>::type{});

/// compute_kernels.h, packPanel. Full panels go kLanes columns of x at a time through a register
/// transpose (a copy: the same bits either way) when a panel's rows fit one vector.
void packPanel(const float* x, long ldx, long rows, long inner, long p, long mrFull, float* pack) {
    const long mr = lmin(mrFull, rows - p);
    float* dst = pack + p * inner;
    long kDone = 0;
    if (mr == mrFull && mr <= kLanes) {
        // kLanes k-vectors of mr rows per step, stored mr floats apart in ascending order: each store's
        // kLanes − mr padding lanes land where the next stores (or the next step) write; the last steps stay
        // scalar so that nothing is written past this panel (the last store spills into ⌈(kLanes − mr)/mr⌉
        // more k-rows)
        const long spill = (kLanes - mr + mr - 1) / mr;
        for (; kDone + kLanes + spill <= inner; kDone += kLanes)
            transposeRows(x + p * ldx + kDone, ldx, int(mr), dst + kDone * mr, mr);
    }
    for (long r = 0; r < mr; ++r) {
        const float* src = x + (p + r) * ldx;
        for (long k = kDone; k < inner; ++k) dst[k * mr + r] = src[k];
    }
}

/// The micro-panel of a transposed weight: pad[k·kNr + c] = wt[c·ldw + k] (widened) for c < w, k < kc, and 0
/// for the columns c ≥ w. Full panels go through kLanes × kLanes register transposes (a plain copy either
/// way, so the panel is bitwise the same), the rest element by element. `next`, when not null, is the next
/// full panel's wt: its lines are prefetched into L2 while this panel's kernel calls run (Wᵀ streams from
/// DRAM, one piece of each of kNr rows per panel).
template <typename E>
void transposeIntoPanel(const typename E::T* wt, long ldw, long w, long kc, float* pad, const typename E::T* next) {
    long kDone = 0;
    if (w == kNr) {
        for (; kDone + kLanes <= kc; kDone += kLanes) {
            for (int half = 0; half < 2; ++half) {
                vf r[kLanes];
#pragma GCC unroll 16
                for (int i = 0; i < kLanes; ++i) r[i] = E::load(wt + (half * kLanes + i) * ldw + kDone);
                transposeStages<kLanes / 2>(r);
#pragma GCC unroll 16
                for (int i = 0; i < kLanes; ++i) storev(pad + (kDone + i) * kNr + half * kLanes, r[i]);
            }
            if (next && (kDone * long(sizeof(typename E::T))) % 64 == 0)
                for (long c = 0; c < kNr; ++c) __builtin_prefetch(next + c * ldw + kDone, 0, 2);
        }
    }
    for (long c = 0; c < w; ++c) {
        const typename E::T* src = wt + c * ldw;
        for (long k = kDone; k < kc; ++k) pad[k * kNr + c] = E::scalar(src[k]);
    }
    for (long k = 0; k < kc; ++k)
        for (long c = w; c < kNr; ++c) pad[k * kNr + c] = 0.0f;
}

/// The last w < kNr columns of y at rows [0, mr): the L1 kernel on a zero-padded kNr-column copy of them
/// (b: a float32 micro-panel, its padding columns zero), then the w real columns copied back.
inline void narrowTile(const float* a, const float* b, long ldb, long kc, float* c, long ldy, bool accumulate, long mr, long w) {
    alignas(64) float padC[kMr * kNr];
    for (long r = 0; r < mr; ++r) {
        __builtin_memcpy(padC + r * kNr, c + r * ldy, size_t(w) * sizeof(float));
        for (long cc = w; cc < kNr; ++cc) padC[r * kNr + cc] = 0.0f;
    }
    kL1Kernels[mr - 1](a, b, ldb, kc, padC, kNr, accumulate, nullptr, nullptr, 0);
    for (long r = 0; r < mr; ++r) __builtin_memcpy(c + r * ldy, padC + r * kNr, size_t(w) * sizeof(float));
}

/// compute_kernels.h, gemmColumns (panelMajor false) and gemmPanels (panelMajor true: W is the packed copy,
/// micro-panel p = columns [p·kNr, p·kNr + kNr) stored as inner × kNr elements at W + p·inner·kNr, so each
/// micro-panel block streams from consecutive addresses; ldw and transposed are unused), for weights of
/// element type E. Both run the same kernels on the same values in the same order: the same bits.
template <typename E>
void gemmColumnsOf(const float* pack, long rows, long inner, long mrFull, const void* Wraw, long ldw, bool transposed,
                   bool panelMajor, long c0, long c1, float* y, long ldy) {
    using T = typename E::T;
    const T* W = static_cast<const T*>(Wraw);
    // where column j's micro-panel starts at depth k, and its row stride
    const auto panelAt = [&](long j, long k) { return panelMajor ? W + (j / kNr * inner + k) * kNr : W + k * ldw + j; };
    const long ldp = panelMajor ? kNr : ldw;
    const long blockRows = blockRowsFor(mrFull);
    alignas(64) float padB[kDepth * kNr];
    // one micro-panel step: rows [m0, m1) times columns [j, j + kNr) at depths [k0, k0 + kDepth); `next` is
    // the micro-panel the next streaming call reads (prefetched into L2 by the calls that use the L1 copy)
    const auto step = [&](long k0, long m0, long m1, long j, const void* next) {
        const long kc = lmin(kDepth, inner - k0);
        const bool accumulate = k0 > 0;
        const long w = lmin(kNr, c1 - j);
        const void* b = panelAt(j, k0);
        long ldb = ldp;
        bool inPlace = true; // b points into W (type E); else into padB (float32)
        if (transposed && !panelMajor) { // W(k, j) = Wᵀ(j, k): gather kNr rows of Wᵀ into a k-major micro-panel
            const bool nextFull = j + 2 * kNr <= c1;
            transposeIntoPanel<E>(W + j * ldw + k0, ldw, w, kc, padB, nextFull ? W + (j + kNr) * ldw + k0 : nullptr);
            b = padB, ldb = kNr, inPlace = false;
        } else if (w < kNr) { // tail columns: a zero-padded float32 copy of the micro-panel
            const T* src = panelAt(j, k0);
            for (long k = 0; k < kc; ++k) {
                for (long cc = 0; cc < w; ++cc) padB[k * kNr + cc] = E::scalar(src[k * ldp + cc]);
                for (long cc = w; cc < kNr; ++cc) padB[k * kNr + cc] = 0.0f;
            }
            b = padB, ldb = kNr, inPlace = false;
        }
        for (long p = m0; p < m1; p += mrFull) {
            const long mr = lmin(mrFull, rows - p);
            const float* a = pack + p * inner + k0 * mr;
            float* c = y + p * ldy + j;
            if (w == kNr) {
                // in place: the first of several x panels copies the micro-panel (widened) for the rest
                // a packed float32 micro-panel already has the copy's layout (contiguous rows): where
                // kReadPackedInPlace, the other x panels read it where it is instead of from a copy
                const bool contiguous = kReadPackedInPlace && panelMajor && sizeof(T) == 4;
                const bool copy = inPlace && p == m0 && m1 - m0 > mrFull && !contiguous;
                if (inPlace)
                    kStreamKernels<E>[mr - 1](a, b, ldb, kc, c, ldy, accumulate, copy ? padB : nullptr,
                                              panelMajor ? next : nullptr, 0);
                else kL1Kernels[mr - 1](a, b, ldb, kc, c, ldy, accumulate, nullptr, next, ldp * long(sizeof(T)));
                if (copy) b = padB, ldb = kNr, inPlace = false;
                else if (contiguous) inPlace = false;
            } else {
                narrowTile(a, static_cast<const float*>(b), ldb, kc, c, ldy, accumulate, mr, w);
            }
        }
    };
    if (panelMajor && rows * inner * long(sizeof(float)) <= kPanelOuterPackBytes) {
        // a short prompt on a packed weight: each micro-panel at all depths before the next, so that a call
        // streams one contiguous stretch of the packed copy (its micro-panels are stored one after the
        // other), which the packed x, all in L2, does not mind; each y entry is the same sum in the same order
        for (long j = c0; j < c1; j += kNr)
            for (long k0 = 0; k0 < inner; k0 += kDepth) {
                const long kn = k0 + kDepth < inner ? k0 + kDepth : 0, jn = kn ? j : j + kNr;
                step(k0, 0, rows, j, jn < c1 ? panelAt(jn, kn) : nullptr);
            }
        return;
    }
    for (long k0 = 0; k0 < inner; k0 += kDepth)
        for (long m0 = 0; m0 < rows; m0 += blockRows) {
            const long m1 = lmin(rows, m0 + blockRows);
            for (long j = c0; j < c1; j += kNr) {
                // the next one of this block, or the first of the next depth block (a packed weight's rows are
                // contiguous, so any element type; in place, float32 only, where its row bytes are those the
                // prefetch loop covers)
                const void* next = nullptr;
                if ((panelMajor || !transposed) && m0 == 0 && (panelMajor || sizeof(T) == 4)) {
                    if (j + kNr < c1) next = panelAt(j + kNr, k0);
                    else if (k0 + kDepth < inner) next = panelAt(c0, k0 + kDepth);
                }
                step(k0, m0, m1, j, next);
            }
        }
}

/// gemmColumns for a block-quantized weight stored transposed: each micro-panel's kNr stored rows are
/// decoded (kc elements each, from a block boundary: k0 is a multiple of kDepth, a multiple of every block
/// size) into a float32 buffer, then transposed into the L1 micro-panel; the rest as for float32.
void gemmColumnsBlocks(const float* pack, long rows, long inner, long mrFull, const void* W, const BlockDecoder* dec,
                       long ldw, long c0, long c1, float* y, long ldy) {
    const long blockRows = blockRowsFor(mrFull), B = dec->blockElements;
    const long rowBytes = ldw / B * dec->blockBytes;
    alignas(64) float decoded[kNr * kDepth];
    alignas(64) float padB[kDepth * kNr];
    for (long k0 = 0; k0 < inner; k0 += kDepth) {
        const long kc = lmin(kDepth, inner - k0);
        const bool accumulate = k0 > 0;
        for (long m0 = 0; m0 < rows; m0 += blockRows) {
            const long m1 = lmin(rows, m0 + blockRows);
            for (long j = c0; j < c1; j += kNr) {
                const long w = lmin(kNr, c1 - j);
                for (long r = 0; r < w; ++r)
                    dec->decode(static_cast<const char*>(W) + (j + r) * rowBytes + k0 / B * dec->blockBytes, (kc + B - 1) / B,
                                decoded + r * kDepth);
                transposeIntoPanel<ElemF32>(decoded, kDepth, w, kc, padB, nullptr);
                for (long p = m0; p < m1; p += mrFull) {
                    const long mr = lmin(mrFull, rows - p);
                    const float* a = pack + p * inner + k0 * mr;
                    float* c = y + p * ldy + j;
                    if (w == kNr) {
                        kL1Kernels[mr - 1](a, padB, kNr, kc, c, ldy, accumulate, nullptr, nullptr, 0);
                    } else {
                        narrowTile(a, padB, kNr, kc, c, ldy, accumulate, mr, w);
                    }
                }
            }
        }
    }
}

void gemmColumns(const float* pack, long rows, long inner, long mrFull, const void* W, WeightType type,
                 const BlockDecoder* dec, long ldw, bool transposed, long c0, long c1, float* y, long ldy) {
    switch (type) {
    case WeightType::F32:
        return gemmColumnsOf<ElemF32>(pack, rows, inner, mrFull, W, ldw, transposed, false, c0, c1, y, ldy);
    case WeightType::BF16:
        return gemmColumnsOf<ElemBF16>(pack, rows, inner, mrFull, W, ldw, transposed, false, c0, c1, y, ldy);
    case WeightType::F16:
        return gemmColumnsOf<ElemF16>(pack, rows, inner, mrFull, W, ldw, transposed, false, c0, c1, y, ldy);
    case WeightType::Blocks:
        return gemmColumnsBlocks(pack, rows, inner, mrFull, W, dec, ldw, c0, c1, y, ldy);
    }
}

/// compute_kernels.h, gemmPanels.
void gemmPanels(const float* pack, long rows, long inner, long mrFull, const void* panels, WeightType type, long c0,
                long c1, float* y, long ldy) {
    switch (type) {
    case WeightType::F32:
        return gemmColumnsOf<ElemF32>(pack, rows, inner, mrFull, panels, 0, false, true, c0, c1, y, ldy);
    case WeightType::BF16:
        return gemmColumnsOf<ElemBF16>(pack, rows, inner, mrFull, panels, 0, false, true, c0, c1, y, ldy);
    case WeightType::F16:
        return gemmColumnsOf<ElemF16>(pack, rows, inner, mrFull, panels, 0, false, true, c0, c1, y, ldy);
    case WeightType::Blocks:
        return; // never packed (weight_panels.h)
    }
}

// ---- few-row products with a transposed weight (the unembedding of a few positions) -----------------

/// y[r, j] = x_r · wt_j for R rows of x and nj ≤ 4 rows of wt: R × 4 vector accumulators over k, then a
/// fixed reduction of the lanes; a partial last vector of k is zero-padded (same arithmetic), so each
/// entry is computed the same way whatever R, nj and the neighbouring rows are.
template <int R, typename E>
void dotTile(const float* x, long ldx, long k, const void* wtRaw, long ldw, int nj, float* y, long ldy) {
    using T = typename E::T;
    constexpr int J = 4;
    const T* w[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) w[j] = static_cast<const T*>(wtRaw) + (j < nj ? j : nj - 1) * ldw;
    vf acc[R][J];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) acc[r][j] = vf{};
    long kk = 0;
    for (; kk + kLanes <= k; kk += kLanes) {
        vf xv[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) xv[r] = loadv(x + r * ldx + kk);
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
            const vf wv = E::load(w[j] + kk);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][j] = madd(xv[r], wv, acc[r][j]);
        }
    }
    if (kk < k) {
        const long n = k - kk;
        vf xv[R], wv[J];
        for (int r = 0; r < R; ++r) {
            xv[r] = vf{};
            for (long i = 0; i < n; ++i) xv[r][i] = x[r * ldx + kk + i];
        }
        for (int j = 0; j < J; ++j) {
            wv[j] = vf{};
            for (long i = 0; i < n; ++i) wv[j][i] = E::scalar(w[j][kk + i]);
        }
        for (int j = 0; j < J; ++j)
            for (int r = 0; r < R; ++r) acc[r][j] = madd(xv[r], wv[j], acc[r][j]);
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < nj; ++j) y[r * ldy + j] = hsum(acc[r][j]);
}

using DotTileFn = void (*)(const float*, long, long, const void*, long, int, float*, long);
template <typename E, int... R>
struct DotTileTable {
    static constexpr DotTileFn fns[sizeof...(R)] = {&dotTile<R + 1, E>...};
};
template <typename E, int... R>
constexpr const DotTileFn* dotTiles(Seq<R...>) {
    return DotTileTable<E, R...>::fns;
}
template <typename E>
const DotTileFn* const kDotTiles = dotTiles<E>(typename MakeSeq<kDotRows>::type{});

/// compute_kernels.h, dotRows, for weights of element type E. wt is taken in blocks of rows that stay in
/// L2 (≈ 128 KiB as float32) while every group of kDotRows rows of x runs over them: wt is read from
/// memory once per call.
template <typename E>
void dotRowsOf(const float* x, long m, long k, long ldx, const void* wt, long ldw, long j0, long j1, float* y, long ldy) {
    const long blockRows = lmax(4, (32768 / lmax(1, k)) / 4 * 4);
    for (long jb = j0; jb < j1; jb += blockRows) {
        const long je = lmin(j1, jb + blockRows);
        for (long i0 = 0; i0 < m; i0 += kDotRows) {
            const long nr = lmin(kDotRows, m - i0);
            for (long j = jb; j < je; j += 4)
                kDotTiles<E>[nr - 1](x + i0 * ldx, ldx, k, at<E>(wt, j * ldw), ldw, int(lmin(4, je - j)), y + i0 * ldy + j, ldy);
        }
    }
}

/// dotRows for block-quantized rows: four rows decoded into a float32 buffer, then every group of x rows
/// against them (the same dot tiles as float32, so each entry is computed the same way).
void dotRowsBlocks(const float* x, long m, long k, long ldx, const void* wt, const BlockDecoder* dec, long ldw, long j0,
                   long j1, float* y, long ldy) {
    constexpr long kMaxK = 16384;
    alignas(64) float decoded[4 * kMaxK];
    const long B = dec->blockElements, rowBytes = ldw / B * dec->blockBytes;
    if (k > kMaxK) __builtin_trap(); // compute_kernels.h: k ≤ 16384 (checked by the callers)
    for (long j = j0; j < j1; j += 4) {
        const long nj = lmin(4, j1 - j);
        for (long r = 0; r < nj; ++r)
            dec->decode(static_cast<const char*>(wt) + (j + r) * rowBytes, (k + B - 1) / B, decoded + r * k);
        for (long i0 = 0; i0 < m; i0 += kDotRows) {
            const long nr = lmin(kDotRows, m - i0);
            kDotTiles<ElemF32>[nr - 1](x + i0 * ldx, ldx, k, decoded, k, int(nj), y + i0 * ldy + j, ldy);
        }
    }
}

void dotRows(const float* x, long m, long k, long ldx, const void* wt, WeightType type, const BlockDecoder* dec, long ldw,
             long j0, long j1, float* y, long ldy) {
    switch (type) {
    case WeightType::F32:
        return dotRowsOf<ElemF32>(x, m, k, ldx, wt, ldw, j0, j1, y, ldy);
    case WeightType::BF16:
        return dotRowsOf<ElemBF16>(x, m, k, ldx, wt, ldw, j0, j1, y, ldy);
    case WeightType::F16:
        return dotRowsOf<ElemF16>(x, m, k, ldx, wt, ldw, j0, j1, y, ldy);
    case WeightType::Blocks:
        return dotRowsBlocks(x, m, k, ldx, wt, dec, ldw, j0, j1, y, ldy);
    }
}

// ---- elementwise ----------------------------------------------------------------------------------

/// compute_kernels.h, causalSoftmaxRow.
void causalSoftmaxRow(float* s, float* p, long kept, long n, float scale) {
    long i = 0;
    vf vm = splat(-kInf);
    for (; i + kLanes <= kept; i += kLanes) {
        const vf v = loadv(s + i) * scale;
        storev(s + i, v);
        vm = vmax(vm, v);
    }
    float m = hmax(vm);
    for (; i < kept; ++i) {
        s[i] *= scale;
        m = s[i] > m ? s[i] : m;
    }
    vf vsum{};
    i = 0;
    for (; i + kLanes <= kept; i += kLanes) {
        const vf e = vexp(loadv(s + i) - m);
        storev(p + i, e);
        vsum += e;
    }
    float sum = hsum(vsum);
    if (i < kept) { // the tail through the same exp, lanes beyond `kept` left out of the sum
        vf t = splat(m);
        for (long l = 0; l < kept - i; ++l) t[l] = s[i + l];
        const vf e = vexp(t - m);
        for (long l = 0; l < kept - i; ++l) {
            p[i + l] = e[l];
            sum += e[l];
        }
    }
    const vf vs = splat(sum);
    for (i = 0; i + kLanes <= kept; i += kLanes) storev(p + i, loadv(p + i) / vs);
    for (; i < kept; ++i) p[i] /= sum;
    for (i = kept; i < n; ++i) {
        p[i] = 0.0f;
        s[i] = -kInf;
    }
}

/// x / (1 + e^(−c·x)) in place, elementwise: gelu_new with c·x = 2u, SiLU with c = 1.
template <bool Gelu>
void sigmoidGate(float* x, long n) {
    auto f = [](vf v) {
        vf t = v;
        if constexpr (Gelu) t = (v + 0.044715f * v * v * v) * (2.0f * 0.7978845608028654f); // 2u, u = √(2/π)(x + 0.044715x³)
        return v / (1.0f + vexp(-t));
    };
    long i = 0;
    for (; i + kLanes <= n; i += kLanes) storev(x + i, f(loadv(x + i)));
    if (i < n) {
        vf t{};
        for (long l = 0; l < n - i; ++l) t[l] = x[i + l];
        t = f(t);
        for (long l = 0; l < n - i; ++l) x[i + l] = t[l];
    }
}
void geluNew(float* x, long n) { sigmoidGate<true>(x, n); }
void silu(float* x, long n) { sigmoidGate<false>(x, n); }

/// compute_kernels.h, sumExp.
double sumExp(const float* x, long n, float m) {
    vd acc{};
    long i = 0;
    for (; i + kLanes <= n; i += kLanes) acc += __builtin_convertvector(vexp(loadv(x + i) - m), vd);
    double s = 0;
    for (int l = 0; l < kLanes; ++l) s += acc[l];
    if (i < n) {
        vf t = splat(m);
        for (long l = 0; l < n - i; ++l) t[l] = x[i + l];
        const vf e = vexp(t - m);
        for (long l = 0; l < n - i; ++l) s += double(e[l]);
    }
    return s;
}

// ---- machine probes -----------------------------------------------------------------------------------

/// compute_kernels.h, fmaChains: kFmaChains independent multiply-add chains on registers.
float fmaChains(long iterations, float seed) {
    vf acc[kFmaChains];
    for (int i = 0; i < kFmaChains; ++i) acc[i] = splat(seed * float(i));
    volatile float va = 0.999999f, vb = 1e-7f; // unknown to the compiler: nothing folds
    const vf a = splat(va), b = splat(vb);
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int i = 0; i < kFmaChains; ++i) acc[i] = madd(acc[i], a, b);
    }
    vf s{};
    for (int i = 0; i < kFmaChains; ++i) s += acc[i];
    return hsum(s);
}

/// compute_kernels.h, sumFloats: four independent vector sums, so the loads set the pace.
float sumFloats(const float* p, size_t n) {
    vf a{}, b{}, c{}, d{};
    for (size_t i = 0; i + 4 * kLanes <= n; i += 4 * kLanes) {
        a += loadv(p + i);
        b += loadv(p + i + kLanes);
        c += loadv(p + i + 2 * kLanes);
        d += loadv(p + i + 3 * kLanes);
    }
    return hsum(a + b + c + d);
}

// ---- int8 candidate pass: shared pieces and the portable loop (the x86 tables use intrinsics) ------

#include "model/core/kernels/int8_thresholds.h"

/// Σ_k a_r[k]·b[k] over n int16 for the six rows a_r = a + r·lda, in one loop: six reductions of widened
/// products, which compilers vectorise into multiply-adds of int16 pairs (pmaddwd on SSE2, smlal on NEON).
inline void int16Dots6(const int16_t* __restrict a, long lda, const int16_t* __restrict b, int n, int* __restrict out) {
    int s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
    for (int k = 0; k < n; ++k) {
        const int bk = b[k];
        s0 += a[k] * bk;
        s1 += a[lda + k] * bk;
        s2 += a[2 * lda + k] * bk;
        s3 += a[3 * lda + k] * bk;
        s4 += a[4 * lda + k] * bk;
        s5 += a[5 * lda + k] * bk;
    }
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3, out[4] = s4, out[5] = s5;
}
inline int int16Dot(const int16_t* __restrict a, const int16_t* __restrict b, int n) {
    int s = 0;
    for (int k = 0; k < n; ++k) s += a[k] * b[k];
    return s;
}

/// compute_kernels.h, int8FirstHit, in plain C++ on the operands' int16 copies (Int8Operands a16, b16; any
/// offsets): per column, the six rows' head dot products in one vectorised loop, the tail only for the cells
/// whose head passes.
[[maybe_unused]] long int8FirstHitLoop(const Int8Operands& o, long row0, long g0, long g1, const int* thrDot) {
    const long stride = o.aStride;
    const int headDims = 4 * o.nkgHead, tailDims = 4 * (o.nkg - o.nkgHead);
    const int16_t* a = o.a16 + row0 * stride;
    bool live = false;
    for (int r = 0; r < 6; ++r) live = live || thrDot[r] < kInt8Never;
    if (!live) return g1;
    for (long g = g0; g < g1; ++g) {
        int thrHead[6];
        for (int r = 0; r < 6; ++r) thrHead[r] = int8HeadThreshold(o, row0 + r, g, thrDot[r]);
        for (long j = g * 64; j < (g + 1) * 64; ++j) {
            const int16_t* b = o.b16 + j * stride;
            int head[6];
            int16Dots6(a, stride, b, headDims, head);
            for (int r = 0; r < 6; ++r)
                if (head[r] >= thrHead[r] && head[r] + int16Dot(a + r * stride + headDims, b + headDims, tailDims) >= thrDot[r])
                    return g;
        }
    }
    return g1;
}
