#include "model/features/sparse_coder.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace attnscope {

namespace {

/// Per-row state of the input normalisation, undone on the output.
struct RowNorm {
    Vector scale; ///< x_in = (x − shift)·scale per row
    Vector shift;
};

Matrix normaliseInput(const SparseCoder& sae, const Matrix& x, RowNorm& norm) {
    Matrix y = x;
    const Eigen::Index S = x.rows(), D = x.cols();
    norm.scale = Vector::Constant(S, 1.0f);
    norm.shift = Vector::Zero(S);
    if (sae.normalization == InputNormalization::ConstantNormRescale) {
        for (Eigen::Index p = 0; p < S; ++p) {
            const double n = x.row(p).cast<double>().norm();
            norm.scale(p) = float(std::sqrt(double(D)) / n);
            y.row(p) *= norm.scale(p);
        }
    } else if (sae.normalization == InputNormalization::LayerNorm) {
        for (Eigen::Index p = 0; p < S; ++p) {
            const Eigen::RowVectorXd r = x.row(p).cast<double>();
            const double mu = r.mean();
            const double sd = D > 1 ? std::sqrt((r.array() - mu).square().sum() / double(D - 1)) : 0.0;
            norm.shift(p) = float(mu);
            norm.scale(p) = float(1.0 / (sd + 1e-5));
            y.row(p) = ((r.array() - mu) / (sd + 1e-5)).cast<float>().matrix();
        }
    }
    if (sae.inputScale != 1.0) y *= float(sae.inputScale);
    return y;
}

RowVector rowOfWeight(const Weight& w) {
    return w.empty() ? RowVector() : w.rowVector(0);
}

/// ‖W_dec[f]‖ for every feature [d_sae].
RowVector decoderNorms(const SparseCoder& sae) {
    RowVector n(sae.d_sae);
    RowVector row(sae.d_out);
    for (int f = 0; f < sae.d_sae; ++f) {
        sae.W_dec.copyRow(f, row.data());
        n(f) = float(row.cast<double>().norm());
    }
    return n;
}

/// True when one of the 16 floats at p is > t (four 4-lane compares: GCC vector extensions, so SSE2 on x86-64 and
/// NEON on arm64 without per-ISA code).
bool anyAbove16(const float* p, float t) {
    typedef float f32x4 __attribute__((vector_size(16)));
    typedef int i32x4 __attribute__((vector_size(16)));
    f32x4 v[4];
    std::memcpy(v, p, sizeof v);
    const f32x4 tv = {t, t, t, t};
    const i32x4 m = (v[0] > tv) | (v[1] > tv) | (v[2] > tv) | (v[3] > tv);
    return (m[0] | m[1] | m[2] | m[3]) != 0;
}

/// Calls visit(i) for each i in [0, n) with p[i] != 0 (NaN included), a block of 16 zeros skipped after one vector
/// compare: an SAE's activations are > 99 % zeros, which a scalar scan pays for one by one.
template <typename F>
void forEachNonZero(const float* p, Eigen::Index n, F&& visit) {
    typedef float f32x4 __attribute__((vector_size(16)));
    typedef int i32x4 __attribute__((vector_size(16)));
    const f32x4 zero = {0, 0, 0, 0};
    Eigen::Index i = 0;
    for (; i + 16 <= n; i += 16) {
        f32x4 v[4];
        std::memcpy(v, p + i, sizeof v);
        const i32x4 m = (v[0] != zero) | (v[1] != zero) | (v[2] != zero) | (v[3] != zero);
        if ((m[0] | m[1] | m[2] | m[3]) == 0) continue;
        for (Eigen::Index j = i; j < i + 16; ++j)
            if (p[j] != 0.0f) visit(j);
    }
    for (; i < n; ++i)
        if (p[i] != 0.0f) visit(i);
}

/// The k best entries of row [0, n) (k ≤ n), best first: value desc, then feature id asc. A heap of k with the
/// worst kept entry on top; once full, a block of 16 with no entry above that worst is skipped after one vector
/// compare, which after the first few hundred entries is nearly every block (about 1 ms against 4.5 for 128 rows of
/// 24 576 here; a heap over all ids with std::partial_sort took 4.5, std::nth_element 5× that). A later entry
/// equal to the worst does not displace it (its id is larger). NaN entries never enter.
void topKOfRow(const float* row, int n, int k, std::vector<FeatureValue>& kept) {
    const auto better = [](const FeatureValue& a, const FeatureValue& b) {
        return a.activation > b.activation || (a.activation == b.activation && a.feature < b.feature);
    };
    kept.clear();
    int j = 0;
    for (; j < n && int(kept.size()) < k; ++j)
        if (row[j] == row[j]) {
            kept.push_back({j, row[j]});
            std::push_heap(kept.begin(), kept.end(), better);
        }
    const auto consider = [&](int i) {
        if (row[i] > kept.front().activation) {
            std::pop_heap(kept.begin(), kept.end(), better);
            kept.back() = {i, row[i]};
            std::push_heap(kept.begin(), kept.end(), better);
        }
    };
    if (int(kept.size()) == k && k > 0) {
        for (; j < n && j % 16 != 0; ++j) consider(j);
        for (; j + 16 <= n; j += 16)
            if (anyAbove16(row + j, kept.front().activation))
                for (int i = j; i < j + 16; ++i) consider(i);
        for (; j < n; ++j) consider(j);
    }
    std::sort_heap(kept.begin(), kept.end(), better);
}

/// Matching pursuit of each row of `residual` [pos, d_in] (x_in − b_dec·apply_b_dec_to_input) over the rows of W_dec,
/// as SAELens's _encode_matching_pursuit (decoderesearch/SAELens sae_lens/saes/matching_pursuit_sae.py @ 9d00e77):
/// per iteration, the feature i = argmax ReLU(r·W_dec[i]) (the first on ties) takes a = ReLU(r·W_dec[i]), f_i += a,
/// r −= a·W_dec[i]; a row stops once an iteration leaves its support {f ≠ 0} unchanged (stop_on_duplicate_support),
/// its ‖r‖ < residual_threshold (when > 0), or after max_iterations (d_in when unset). Rows are independent (SAELens
/// masks the finished rows of a batch). f [pos, d_sae].
Matrix matchingPursuit(const SparseCoder& sae, Matrix residual) {
    const Eigen::Index S = residual.rows(), F = sae.d_sae;
    Matrix acts = Matrix::Zero(S, F);
    const int iterations = sae.maxIterations < 0 ? sae.d_in : sae.maxIterations;
    std::vector<Eigen::Index> active(static_cast<size_t>(S));
    std::iota(active.begin(), active.end(), Eigen::Index(0));
    RowVector dec(sae.d_out);
    Matrix rows, scores;
    for (int it = 0; it < iterations && !active.empty(); ++it) {
        rows.resize(Eigen::Index(active.size()), residual.cols());
        for (size_t a = 0; a < active.size(); ++a) rows.row(Eigen::Index(a)) = residual.row(active[a]);
        weightGemm(rows, sae.W_enc, Weight{}, scores); // r·W_decᵀ: W_enc is the transposed view of W_dec
        std::vector<Eigen::Index> still;
        for (size_t a = 0; a < active.size(); ++a) {
            const Eigen::Index p = active[a];
            const float* s = scores.row(Eigen::Index(a)).data();
            Eigen::Index best = 0;
            float top = std::max(s[0], 0.0f);
            for (Eigen::Index i = 1; i < F; ++i)
                if (std::max(s[i], 0.0f) > top) {
                    top = s[i];
                    best = i;
                }
            sae.W_dec.copyRow(best, dec.data());
            const float value = std::max(residual.row(p).dot(dec), 0.0f);
            const bool grew = value > 0.0f && acts(p, best) == 0.0f; // activations only grow: the support changes iff a new one fires
            acts(p, best) += value;
            residual.row(p) -= value * dec;
            bool done = sae.stopOnDuplicateSupport && !grew;
            if (sae.residualThreshold > 0 && residual.row(p).cast<double>().norm() < sae.residualThreshold) done = true;
            if (!done) still.push_back(p);
        }
        active.swap(still);
    }
    return acts;
}

} // namespace

Matrix encodeFeatures(const SparseCoder& sae, const Matrix& x) {
    if (x.cols() != sae.d_in)
        throw InputError(QStringLiteral("%1: the dictionary reads %2 values per position (d_in) but %3 has %4")
                             .arg(sae.path).arg(sae.d_in).arg(sae.hookIn).arg(x.cols()));
    RowNorm norm;
    Matrix xin = normaliseInput(sae, x, norm);
    if (sae.applyBDecToInput) xin.rowwise() -= rowOfWeight(sae.b_dec);
    if (sae.activation == FeatureActivation::MatchingPursuit) return matchingPursuit(sae, std::move(xin));
    Matrix pre;
    weightGemm(xin, sae.W_enc, sae.activation == FeatureActivation::Gated ? Weight{} : sae.b_enc, pre);
    const Eigen::Index S = pre.rows(), F = pre.cols();
    switch (sae.activation) {
    case FeatureActivation::ReLU: pre = pre.cwiseMax(0.0f); break;
    case FeatureActivation::JumpReLU: {
        const RowVector theta = sae.threshold.empty() ? RowVector::Constant(F, sae.thresholdScalar) : rowOfWeight(sae.threshold);
        for (Eigen::Index p = 0; p < S; ++p)
            for (Eigen::Index f = 0; f < F; ++f) {
                const float v = pre(p, f);
                pre(p, f) = (v > theta(f) && (v > 0.0f || !sae.relu)) ? v : 0.0f;
            }
        break;
    }
    case FeatureActivation::Gated: {
        const RowVector bGate = rowOfWeight(sae.b_gate), bMag = rowOfWeight(sae.b_mag);
        const RowVector rMag = rowOfWeight(sae.r_mag).array().exp().matrix();
        for (Eigen::Index p = 0; p < S; ++p)
            for (Eigen::Index f = 0; f < F; ++f) {
                const float xw = pre(p, f);
                const float mag = std::max(xw * rMag(f) + bMag(f), 0.0f);
                pre(p, f) = (xw + bGate(f) > 0.0f) ? mag : 0.0f;
            }
        break;
    }
    case FeatureActivation::TopK: {
        RowVector norms;
        if (sae.rescaleActsByDecoderNorm) {
            norms = decoderNorms(sae);
            pre.array().rowwise() *= norms.array();
        }
        const int k = std::min<int>(sae.k, int(F));
        std::vector<FeatureValue> kept;
        for (Eigen::Index p = 0; p < S; ++p) {
            float* row = pre.row(p).data();
            topKOfRow(row, int(F), k, kept);
            std::fill(row, row + F, 0.0f);
            for (const FeatureValue& e : kept) row[e.feature] = sae.relu ? std::max(e.activation, 0.0f) : e.activation;
        }
        break;
    }
    case FeatureActivation::MatchingPursuit: break; // returned above
    }
    return pre;
}

Matrix decodeFeatures(const SparseCoder& sae, const Matrix& f, const Matrix& x) {
    Matrix rescaled; // f ÷ ‖W_dec[i]‖ for TopK SAEs that rescale; else f itself is decoded
    if (sae.activation == FeatureActivation::TopK && sae.rescaleActsByDecoderNorm) {
        rescaled = f;
        rescaled.array().rowwise() /= decoderNorms(sae).array();
    }
    const Matrix& acts = rescaled.size() ? rescaled : f;
    Matrix out;
    Eigen::Index nnz = 0;
    forEachNonZero(acts.data(), acts.size(), [&](Eigen::Index) { ++nnz; });
    if (nnz * 8 < acts.size()) { // sparse (the usual case): x̂ = b_dec + Σ_i f_i·W_dec[i] over the firing features only
        out = Matrix::Zero(acts.rows(), sae.d_out);
        RowVector row(sae.d_out);
        for (Eigen::Index p = 0; p < acts.rows(); ++p) {
            const float* ap = acts.row(p).data();
            forEachNonZero(ap, acts.cols(), [&](Eigen::Index i) {
                const float a = ap[i];
                if (sae.W_dec.isF32View()) out.row(p) += a * Eigen::Map<const RowVector>(sae.W_dec.data() + i * sae.W_dec.stride, sae.d_out);
                else {
                    sae.W_dec.copyRow(i, row.data());
                    out.row(p) += a * row;
                }
            });
        }
        if (!sae.b_dec.empty()) out.rowwise() += rowOfWeight(sae.b_dec);
    } else {
        weightGemm(acts, sae.W_dec, sae.b_dec, out);
    }
    if (sae.inputScale != 1.0) out /= float(sae.inputScale);
    if (sae.normalization != InputNormalization::None && !sae.isTranscoder()) { // SAELens undoes it for SAEs only
        RowNorm norm;
        normaliseInput(sae, x, norm);
        for (Eigen::Index p = 0; p < out.rows(); ++p) {
            out.row(p) /= norm.scale(p);
            out.row(p).array() += norm.shift(p);
        }
    }
    if (!sae.W_skip.empty()) {
        Matrix skip;
        weightGemm(x, sae.W_skip, Weight{}, skip);
        out += skip;
    }
    return out;
}

void requireFeature(const SparseCoder& sae, int feature) {
    if (feature < 0 || feature >= sae.d_sae)
        throw InputError(QStringLiteral("feature %1 is out of range: the dictionary has %2 features (0..%3)")
                             .arg(feature).arg(sae.d_sae).arg(sae.d_sae - 1));
}

RowVector decoderDirection(const SparseCoder& sae, int feature) {
    requireFeature(sae, feature);
    RowVector r(sae.d_out);
    sae.W_dec.copyRow(feature, r.data());
    if (sae.inputScale != 1.0) r /= float(sae.inputScale);
    return r;
}

RowVector decoderDirectionAt(const SparseCoder& sae, int feature, const Eigen::Ref<const RowVector>& x) {
    RowVector d = decoderDirection(sae, feature); // ÷ inputScale included
    if (sae.activation == FeatureActivation::TopK && sae.rescaleActsByDecoderNorm) {
        RowVector raw(sae.d_out);
        sae.W_dec.copyRow(feature, raw.data());
        d /= float(raw.cast<double>().norm());
    }
    if (sae.normalization != InputNormalization::None && !sae.isTranscoder()) {
        RowNorm norm;
        normaliseInput(sae, Matrix(x), norm);
        d /= norm.scale(0);
    }
    return d;
}

RowVector encoderDirection(const SparseCoder& sae, int feature) {
    requireFeature(sae, feature);
    RowVector r(sae.d_in);
    const Weight col = sae.W_enc.t().rowBlock(feature, 1);
    col.copyRow(0, r.data());
    if (sae.inputScale != 1.0) r *= float(sae.inputScale);
    return r;
}

std::vector<FeatureValue> firingFeatures(const Eigen::Ref<const RowVector>& f, int top) {
    std::vector<FeatureValue> v;
    if (f.innerStride() == 1)
        forEachNonZero(f.data(), f.size(), [&](Eigen::Index i) { v.push_back({int(i), f(i)}); });
    else
        for (Eigen::Index i = 0; i < f.size(); ++i)
            if (f(i) != 0.0f) v.push_back({int(i), f(i)});
    std::sort(v.begin(), v.end(), [](const FeatureValue& a, const FeatureValue& b) {
        return a.activation > b.activation || (a.activation == b.activation && a.feature < b.feature);
    });
    if (top > 0 && int(v.size()) > top) v.resize(size_t(top));
    return v;
}

} // namespace attnscope
