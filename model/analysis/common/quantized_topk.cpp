#include "model/analysis/common/quantized_topk.h"

#include "model/core/kernels/compute_kernels.h"
#include "model/core/parallel_scan.h"

#include <QCoreApplication>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>


namespace attnscope {

namespace {

constexpr int kTileRows = 6;      // rows of a register tile (6 × 4 accumulators + 4 B vectors of 32 zmm)
constexpr int kGroupCols = 64;    // columns of a register tile: 4 vectors of 16 int32 lanes
constexpr int kChunkCols = 2048;  // B columns scanned per pass over a panel (2048·64 B = 128 KiB, stays in L2)
constexpr int kPanelRows = 96;    // rows per work unit handed to a thread (multiple of kTileRows)
constexpr int kSeedRows = 256, kSeedCols = 4096; // seed of exact scores for the first lower bound
constexpr int kNever = 1 << 30;   // an int threshold no dot product reaches (|dot| ≤ r·127² < 2^30 for r ≤ 4096)
constexpr int kMaxWidth = 4096;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <typename T>
struct AlignedBuffer {
    explicit AlignedBuffer(size_t n) : n_(n), p_(static_cast<T*>(::operator new[](std::max<size_t>(1, n) * sizeof(T), std::align_val_t(64)))) {
        std::memset(static_cast<void*>(p_), 0, n_ * sizeof(T));
    }
    ~AlignedBuffer() { ::operator delete[](p_, std::align_val_t(64)); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    T* data() { return p_; }
    const T* data() const { return p_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    size_t n_;
    T* p_;
};

/// The quantised factors and per-row bounds (rows of A in order of decreasing ‖a_i‖₂, "sorted rows"), and
/// the operands of the kernel's int8 pass (compute_kernels.h Int8Operands): B's columns in order of
/// decreasing tail norm ("packed columns"), so that a group's largest tail norm is close to its others.
struct Quantized {
    int rows = 0, cols = 0, r = 0;
    int rPad = 0;     ///< r rounded up to a multiple of 4 (zero padding adds nothing to dot products)
    int rowsPad = 0;  ///< rows rounded up to a multiple of kTileRows (padding rows never match)
    int colsPad = 0;  ///< cols rounded up to a multiple of kGroupCols (padding columns are skipped)
    int nkg = 0;      ///< k-groups of 4 dims
    int nkgHead = 0;  ///< k-groups of the head (compute_kernels.h Int8Operands): 3/4 of the dims (48 of 64; of
                      ///< 32, 40, 48, 56 and 64 the fastest on random Gaussian factors of the GPT-2 shape)
    std::vector<int> dimAt;      ///< position in aBytes/bPacked → dim of A/B (dims by decreasing Σa²·Σb²: the
                                 ///< head holds the dims that contribute most, the tail bound is tight)
    std::vector<int> order;      ///< sorted row → row of A
    std::vector<double> aNorm;   ///< ‖a_i‖₂ per sorted row
    std::vector<double> scale;   ///< s_i·t per sorted row
    std::vector<double> err;     ///< err_i per sorted row (file comment of quantized_topk.h)
    double bMaxNorm = 0;         ///< max_j ‖b_j‖₂
    AlignedBuffer<int8_t> aq;    ///< ã [rowsPad, rPad], sorted rows
    AlignedBuffer<int8_t> bq;    ///< b̃ [colsPad, rPad] by column of B (the exact recomputation of a flagged group)
    std::vector<int> colOf;      ///< packed column → column of B (−1 for padding)
    AlignedBuffer<uint8_t> aBytes;  ///< ã + aOffset [rowsPad, rPad], sorted rows
    AlignedBuffer<uint8_t> bPacked; ///< b̃ + bOffset of the packed columns, [colsPad/64][rPad/4][64 columns][4 bytes]
    bool int16Copies = false;       ///< whether a16/b16 are filled (the portable loop's operands)
    AlignedBuffer<int16_t> a16;     ///< ã [rowsPad, rPad] in the layout's dim order, sorted rows
    AlignedBuffer<int16_t> b16;     ///< b̃ [colsPad, rPad] by packed column, in the layout's dim order
    std::vector<int> aTailNorm;     ///< per sorted row
    std::vector<int> aSum, aSumHead;
    std::vector<int> bTailNormMax;  ///< per group of packed columns
    std::vector<int> bSum, bSumHead; ///< per packed column

    Quantized(int rows_, int cols_, int r_, bool int16Copies_)
        : rows(rows_), cols(cols_), r(r_), rPad((r_ + 3) / 4 * 4),
          rowsPad((rows_ + kTileRows - 1) / kTileRows * kTileRows),
          colsPad((cols_ + kGroupCols - 1) / kGroupCols * kGroupCols), nkg(rPad / 4), nkgHead(nkg >= 4 ? (3 * nkg + 3) / 4 : nkg),
          aq(size_t(rowsPad) * size_t(rPad)), bq(size_t(colsPad) * size_t(rPad)),
          aBytes(size_t(rowsPad) * size_t(rPad)), bPacked(size_t(colsPad) * size_t(rPad)), int16Copies(int16Copies_),
          a16(int16Copies_ ? size_t(rowsPad) * size_t(rPad) : 0), b16(int16Copies_ ? size_t(colsPad) * size_t(rPad) : 0) {}

    Int8Operands operands(const ComputeKernels& K) const {
        Int8Operands o;
        o.aOffset = K.int8AOffset;
        o.bOffset = K.int8BOffset;
        o.a = aBytes.data();
        o.aStride = rPad;
        o.aTailNorm = aTailNorm.data();
        o.aSum = aSum.data();
        o.aSumHead = aSumHead.data();
        o.b = bPacked.data();
        o.nkg = nkg;
        o.nkgHead = nkgHead;
        o.bTailNormMax = bTailNormMax.data();
        o.bSum = bSum.data();
        o.bSumHead = bSumHead.data();
        o.a16 = int16Copies ? a16.data() : nullptr;
        o.b16 = int16Copies ? b16.data() : nullptr;
        return o;
    }

    /// Lowest integer dot product ã_i·b̃_j that can still be a candidate under the lower bound L, i.e. an
    /// int ≤ ceil((L − err_i) / (s_i t)); kNever for padding rows, −kNever when every cell is a candidate.
    int dotThreshold(int i, float L) const {
        if (i >= rows) return kNever;
        if (!(L > kNegInf)) return -kNever;
        const double sc = scale[size_t(i)], e = err[size_t(i)];
        if (sc == 0) return e >= double(L) ? -kNever : kNever; // all approximate scores are 0
        const double x = (double(L) - e) / sc;
        if (x > kNever) return kNever;
        if (x < -kNever) return -kNever;
        return int(std::floor(x - 1e-9 * std::abs(x)));
    }
};

/// True when no entry is NaN or ±Inf (one contiguous pass; Eigen's allFinite walks a row-major
/// matrix column by column).
bool allFinite(const Matrix& m) {
    const float* p = m.data();
    int ok = 1;
    for (Eigen::Index i = 0; i < m.size(); ++i) ok &= int(std::abs(p[i]) <= std::numeric_limits<float>::max());
    return ok != 0;
}

/// γ_n = n·u/(1 − n·u), u = 2⁻²⁴: bound on the relative rounding error of an n-term F32 dot product.
double gammaF32(int n) {
    const double nu = double(n) * std::ldexp(1.0, -24);
    return nu / (1 - nu);
}

/// An integer ≥ ‖v‖₂ for int8 v over [k0, k1): ⌈√(Σ v²)⌉ (the square root of an exact integer sum,
/// rounded up, and checked by squaring).
int tailNorm(const int8_t* v, int k0, int k1) {
    qint64 s = 0;
    for (int k = k0; k < k1; ++k) s += qint64(v[k]) * v[k];
    qint64 n = qint64(std::ceil(std::sqrt(double(s))));
    while (n * n < s) ++n;
    return int(n);
}

/// Quantises A (per row, ±K.int8AMax) and B (one scale, ±K.int8BMax) and lays them out for K's int8 pass.
void quantize(const Matrix& A, const Matrix& B, const ComputeKernels& K, Quantized& q) {
    const int rows = q.rows, cols = q.cols, r = q.r, rPad = q.rPad, bLimit = K.int8BMax;
    const int headDims = 4 * q.nkgHead;
    // the dims in the kernels' layout: by decreasing Σ_i a_ik²·Σ_j b_jk² (stable), then the zero padding
    {
        std::vector<double> energy(static_cast<size_t>(r), 0.0), eB(static_cast<size_t>(r), 0.0);
        for (Eigen::Index i = 0; i < A.rows(); ++i)
            for (int k = 0; k < r; ++k) energy[size_t(k)] += double(A(i, k)) * A(i, k);
        for (Eigen::Index j = 0; j < B.rows(); ++j)
            for (int k = 0; k < r; ++k) eB[size_t(k)] += double(B(j, k)) * B(j, k);
        for (int k = 0; k < r; ++k) energy[size_t(k)] *= eB[size_t(k)];
        q.dimAt.resize(size_t(rPad));
        std::iota(q.dimAt.begin(), q.dimAt.end(), 0);
        std::stable_sort(q.dimAt.begin(), q.dimAt.begin() + r, [&](int x, int y) { return energy[size_t(x)] > energy[size_t(y)]; });
    }
    // ‖v‖₂ of the tail positions of an int8 vector in original dim order
    auto tail = [&](const int8_t* v) {
        std::vector<int8_t> t;
        for (int p = headDims; p < rPad; ++p) t.push_back(v[q.dimAt[size_t(p)]]);
        return tailNorm(t.data(), 0, int(t.size()));
    };
    // B: one global scale t.
    float bMax = 0;
    for (Eigen::Index i = 0; i < B.size(); ++i) bMax = std::max(bMax, std::abs(B.data()[i]));
    const float t = bMax / float(bLimit);
    double eb = 0, bq1Max = 0; // max_jk |e^b_jk|, max_j ‖t·b̃_j‖₁
    int bqMax = 0;             // max_jk |b̃_jk|
    q.bMaxNorm = 0;
    std::vector<int> bTail(static_cast<size_t>(cols));
    for (int j = 0; j < cols; ++j) {
        const float* b = B.data() + size_t(j) * size_t(r);
        int8_t* dst = q.bq.data() + size_t(j) * size_t(rPad);
        double l1 = 0, l2 = 0;
        for (int k = 0; k < r; ++k) {
            const int v = t > 0 ? std::clamp(int(std::lrint(b[k] / t)), -bLimit, bLimit) : 0;
            dst[k] = int8_t(v);
            eb = std::max(eb, std::abs(double(b[k]) - double(t) * v));
            l1 += std::abs(v);
            l2 += double(b[k]) * b[k];
            bqMax = std::max(bqMax, std::abs(v));
        }
        bq1Max = std::max(bq1Max, double(t) * l1);
        q.bMaxNorm = std::max(q.bMaxNorm, std::sqrt(l2));
        bTail[size_t(j)] = tail(dst);
    }
    // packed columns by decreasing tail norm (stable), then the kernels' layout: for column group g,
    // k-group kg, packed column jp of the group: bytes b̃[colOf[jp]][4kg..4kg+3] + bOffset
    q.colOf.assign(size_t(q.colsPad), -1);
    std::iota(q.colOf.begin(), q.colOf.begin() + cols, 0);
    std::stable_sort(q.colOf.begin(), q.colOf.begin() + cols, [&](int x, int y) { return bTail[size_t(x)] > bTail[size_t(y)]; });
    const int nkg = q.nkg;
    q.bSum.assign(size_t(q.colsPad), 0);
    q.bSumHead.assign(size_t(q.colsPad), 0);
    q.bTailNormMax.assign(size_t(q.colsPad / kGroupCols), 0);
    for (int jp = 0; jp < q.colsPad; ++jp) {
        const int j = q.colOf[size_t(jp)], g = jp / kGroupCols, jg = jp % kGroupCols;
        const int8_t* src = j >= 0 ? q.bq.data() + size_t(j) * size_t(rPad) : nullptr;
        for (int k = 0; k < rPad; ++k) { // k: position in the layout
            const int v = src ? src[q.dimAt[size_t(k)]] : 0;
            q.bPacked[(size_t(g) * size_t(nkg) + size_t(k / 4)) * 256 + size_t(jg) * 4 + size_t(k % 4)] = uint8_t(v + K.int8BOffset);
            if (q.int16Copies) q.b16[size_t(jp) * size_t(rPad) + size_t(k)] = int16_t(v);
            q.bSum[size_t(jp)] += v;
            if (k < headDims) q.bSumHead[size_t(jp)] += v;
        }
        if (j >= 0) q.bTailNormMax[size_t(g)] = std::max(q.bTailNormMax[size_t(g)], bTail[size_t(j)]);
    }

    // A: rows by decreasing norm (stable: ties by row index), one scale per row.
    std::vector<double> norm(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) {
        double l2 = 0;
        for (int k = 0; k < r; ++k) l2 += double(A(i, k)) * A(i, k);
        norm[size_t(i)] = std::sqrt(l2);
    }
    q.order.resize(size_t(rows));
    std::iota(q.order.begin(), q.order.end(), 0);
    std::stable_sort(q.order.begin(), q.order.end(), [&](int x, int y) { return norm[size_t(x)] > norm[size_t(y)]; });
    q.aNorm.resize(size_t(rows));
    q.scale.resize(size_t(rows));
    q.err.resize(size_t(rows));
    q.aSum.assign(size_t(q.rowsPad), 0);
    q.aSumHead.assign(size_t(q.rowsPad), 0);
    q.aTailNorm.assign(size_t(q.rowsPad), 0);
    for (size_t i = 0; i < size_t(q.rowsPad) * size_t(rPad); ++i) q.aBytes[i] = uint8_t(K.int8AOffset);
    const double gamma = gammaF32(r);
    // rows are independent: both threads (a short region of its own; the scan is the main one)
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; ++i) {
        const int src = q.order[size_t(i)];
        const float* a = A.data() + size_t(src) * size_t(r);
        float aMax = 0;
        for (int k = 0; k < r; ++k) aMax = std::max(aMax, std::abs(a[k]));
        const float s = aMax / float(K.int8AMax);
        int8_t* dst = q.aq.data() + size_t(i) * size_t(rPad);
        uint8_t* bytes = q.aBytes.data() + size_t(i) * size_t(rPad);
        double a1 = 0, ea1 = 0, eaMax = 0;
        for (int k = 0; k < r; ++k) {
            const int v = s > 0 ? std::clamp(int(std::lrint(a[k] / s)), -K.int8AMax, K.int8AMax) : 0;
            dst[k] = int8_t(v);
            q.aSum[size_t(i)] += v;
            const double e = std::abs(double(a[k]) - double(s) * v);
            ea1 += e;
            eaMax = std::max(eaMax, e);
            a1 += std::abs(double(a[k]));
        }
        for (int p = 0; p < rPad; ++p) { // p: position in the layout
            const int v = dst[q.dimAt[size_t(p)]];
            bytes[p] = uint8_t(v + K.int8AOffset);
            if (q.int16Copies) q.a16[size_t(i) * size_t(rPad) + size_t(p)] = int16_t(v);
            if (p < headDims) q.aSumHead[size_t(i)] += v;
        }
        q.aTailNorm[size_t(i)] = tail(dst);
        q.aNorm[size_t(i)] = norm[size_t(src)];
        q.scale[size_t(i)] = double(s) * double(t);
        const double bound = a1 * eb + std::min(eaMax * bq1Max, ea1 * double(t) * bqMax) + gamma * norm[size_t(src)] * q.bMaxNorm;
        q.err[size_t(i)] = bound * (1 + 1e-9) + std::numeric_limits<double>::denorm_min();
    }
}

/// Lower bound of the k-th best exact score: the k-th best Eigen GEMM score of the kSeedRows rows of
/// largest norm × the kSeedCols columns of largest norm, minus 2γ_r·max‖a‖·max‖b‖ (any two F32
/// evaluations of a dot product differ by at most that). −inf if the seed has fewer than k cells.
float seedThreshold(const Matrix& A, const Matrix& B, const Quantized& q, int k) {
    const int nr = std::min(kSeedRows, q.rows), nc = std::min(kSeedCols, q.cols);
    if (qint64(nr) * nc < k) return kNegInf;
    std::vector<int> colOrder(size_t(q.cols));
    std::iota(colOrder.begin(), colOrder.end(), 0);
    const Vector bNorm = B.rowwise().norm();
    std::partial_sort(colOrder.begin(), colOrder.begin() + nc, colOrder.end(),
                      [&](int x, int y) { return bNorm(x) > bNorm(y); });
    Matrix As(nr, q.r), Bs(q.r, nc);
    for (int i = 0; i < nr; ++i) As.row(i) = A.row(q.order[size_t(i)]);
    for (int j = 0; j < nc; ++j) Bs.col(j) = B.row(colOrder[size_t(j)]).transpose();
    Matrix S(nr, nc);
    S.noalias() = As * Bs;
    std::vector<float> v(S.data(), S.data() + S.size());
    std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<float>());
    const double slack = 2 * gammaF32(q.r) * q.aNorm.front() * q.bMaxNorm * (1 + 1e-6);
    return float(double(v[size_t(k - 1)]) - slack - std::abs(double(v[size_t(k - 1)])) * 1e-7);
}

/// Exact F32 score a·b: the sequential FMA chain over k (quantized_topk.h).
float exactScore(const float* a, const float* b, int r) {
    float acc = 0;
    for (int k = 0; k < r; ++k) acc = std::fma(a[k], b[k], acc);
    return acc;
}

/// Per-thread scan state.
struct alignas(64) Scanner { // one cache line or more per thread: no false sharing of `candidates`
    const Matrix& A;
    const Matrix& B;
    const Quantized& q;
    TopKAccumulator& acc;
    std::atomic<float>& shared;
    float seed;
    qint64 candidates = 0;

    float bound() const { return std::max({seed, acc.threshold(), shared.load(std::memory_order_relaxed)}); }

    void publish() {
        float s = shared.load();
        const float mine = acc.threshold();
        while (mine > s && !shared.compare_exchange_weak(s, mine)) {}
    }

    /// Rescore cell (sorted row i, column j) exactly and offer it.
    void rescore(int i, int j) {
        if (j >= q.cols) return;
        ++candidates;
        const int src = q.order[size_t(i)];
        const float s = exactScore(A.data() + size_t(src) * size_t(q.r), B.data() + size_t(j) * size_t(q.r), q.r);
        if (s >= bound()) acc.offer(src, j, s);
    }

    /// Integer dot products ã_i·b̃_j of rows [i0, i0 + kTileRows) × the packed columns of group g in plain
    /// C++; the cells reaching their row's threshold are rescored (row by row, column by column).
    void rescoreGroup(int i0, long g, const int* thrDot) {
        const int rPad = q.rPad;
        bool hit[kTileRows][kGroupCols] = {};
        for (int r = 0; r < kTileRows; ++r) {
            if (thrDot[r] >= kNever) continue;
            const int8_t* a = q.aq.data() + size_t(i0 + r) * size_t(rPad);
            for (int jg = 0; jg < kGroupCols; ++jg) {
                const int j = q.colOf[size_t(g * kGroupCols + jg)];
                if (j < 0) continue;
                const int8_t* b = q.bq.data() + size_t(j) * size_t(rPad);
                int dot = 0;
                for (int k = 0; k < rPad; ++k) dot += int(a[k]) * int(b[k]);
                hit[r][jg] = dot >= thrDot[r];
            }
        }
        for (int r = 0; r < kTileRows; ++r)
            for (int jg = 0; jg < kGroupCols; ++jg)
                if (hit[r][jg]) rescore(i0 + r, q.colOf[size_t(g * kGroupCols + jg)]);
    }

    /// Rows [i0, i0 + kTileRows) × packed columns [c0, c1) (multiples of 64) through the kernel's int8 pass,
    /// which reports the next group of 64 columns with a cell reaching its row's threshold; that group's
    /// cells are recomputed exactly and the flagged ones rescored, then the thresholds refreshed (every
    /// kernel flags the same cells: the integer dot products are exact).
    void tile(const Int8Operands& ops, decltype(ComputeKernels::int8FirstHit) firstHit, int i0, int c0, int c1) {
        int thrDot[kTileRows];
        auto setThresholds = [&] {
            const float L = bound();
            for (int r = 0; r < kTileRows; ++r) thrDot[r] = q.dotThreshold(i0 + r, L);
        };
        setThresholds();
        const long g1 = c1 / kGroupCols;
        for (long g = c0 / kGroupCols; g < g1; ++g) {
            g = firstHit(ops, i0, g, g1, thrDot);
            if (g >= g1) break;
            rescoreGroup(i0, g, thrDot);
            setThresholds();
        }
        publish();
    }
};

} // namespace

bool quantizedTopKHasSimd() { return computeKernels().isa != KernelIsa::Portable; }

std::vector<ScoredPair> topKOfProductQuantized(const Matrix& A, const Matrix& B, int k, const Progress& progress,
                                               const QString& what, QuantizedKernel kernel, QuantizedTopKStats* stats) {
    if (A.cols() != B.cols())
        throw InputError(QCoreApplication::translate("topk", "Low-rank factors differ in width: %1 vs %2 columns.")
                             .arg(A.cols()).arg(B.cols()));
    QuantizedTopKStats st;
    const int rows = int(A.rows()), cols = int(B.rows()), r = int(A.cols());
    const int kk = int(std::min<qint64>(k, qint64(rows) * cols));
    const qint64 nPanels = (qint64(rows) + kPanelRows - 1) / kPanelRows;
    if (kk <= 0 || rows == 0 || cols == 0) {
        progress.step(nPanels, nPanels, what);
        if (stats) *stats = st;
        return {};
    }
    if (r == 0 || r > kMaxWidth || !allFinite(A) || !allFinite(B)) {
        // NaN/Inf have no int8 image (and zero width has nothing to quantise): the exact scan handles them.
        st.exactFallback = true;
        if (stats) *stats = st;
        return topKOfProduct(A, B, k, 1024, progress, what);
    }
    // the quantisation of the kernel in use; its int8 pass, or the portable loop on the same operands
    const ComputeKernels& K = computeKernels();
    const ComputeKernels& pass = kernel == QuantizedKernel::Portable ? *kernelsFor(KernelIsa::Portable) : K;
    st.simd = pass.isa != KernelIsa::Portable;
    st.int8Kernel = pass.int8Description;

    Quantized q(rows, cols, r, pass.isa == KernelIsa::Portable);
    quantize(A, B, K, q);
    const Int8Operands ops = q.operands(K);
    const float seed = seedThreshold(A, B, q, kk);
    st.seedThreshold = seed;

    const int nThreads = parallelScanThreads();
    std::vector<TopKAccumulator> accs;
    std::vector<Scanner> scanners;
    accs.reserve(size_t(nThreads));
    for (int t = 0; t < nThreads; ++t) accs.emplace_back(kk);
    std::vector<qint64> rowsScanned(size_t(nThreads), 0);
    std::atomic<float> shared(kNegInf);
    for (int t = 0; t < nThreads; ++t) scanners.push_back(Scanner{A, B, q, accs[size_t(t)], shared, seed});
    const double stopSlack = 1 + 2 * gammaF32(r) + 1e-6;
    parallelScan(nPanels, progress, what, [&](int t, qint64 p) {
        Scanner& sc = scanners[size_t(t)];
        const int i0 = int(p * kPanelRows), i1 = std::min(q.rowsPad, i0 + kPanelRows);
        // |f_ij| ≤ (1 + γ_r)·‖a_i‖·‖b_j‖ and rows are sorted by ‖a_i‖: nothing from here on can enter.
        if (q.aNorm[size_t(i0)] * q.bMaxNorm * stopSlack < double(sc.bound())) return false;
        for (int c0 = 0; c0 < q.colsPad; c0 += kChunkCols) {
            const int c1 = std::min(q.colsPad, c0 + kChunkCols);
            for (int i = i0; i < i1; i += kTileRows) sc.tile(ops, pass.int8FirstHit, i, c0, c1);
        }
        rowsScanned[size_t(t)] += std::min(i1, rows) - i0;
        return true;
    });
    TopKAccumulator merged(kk);
    for (const TopKAccumulator& a : accs)
        for (const ScoredPair& p : a.sorted()) merged.offer(p.row, p.col, p.score);
    st.candidates = 0;
    for (const Scanner& sc : scanners) st.candidates += sc.candidates;
    st.rowsScanned = std::accumulate(rowsScanned.begin(), rowsScanned.end(), qint64(0));
    if (stats) *stats = st;
    return merged.sorted();
}

} // namespace attnscope
