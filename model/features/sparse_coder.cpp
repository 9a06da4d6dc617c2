#include "model/features/sparse_coder.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"

#include <algorithm>
#include <cmath>
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

} // namespace

Matrix encodeFeatures(const SparseCoder& sae, const Matrix& x) {
    if (x.cols() != sae.d_in)
        throw InputError(QStringLiteral("%1: the dictionary reads %2 values per position (d_in) but %3 has %4")
                             .arg(sae.path).arg(sae.d_in).arg(sae.hookIn).arg(x.cols()));
    RowNorm norm;
    Matrix xin = normaliseInput(sae, x, norm);
    if (sae.applyBDecToInput) xin.rowwise() -= rowOfWeight(sae.b_dec);
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
        // per row: the k best (value desc, then id asc) by a heap of k over the row (std::partial_sort: most entries are
        // rejected by one comparison with the heap's top; 5× faster here than selecting with std::nth_element)
        const int k = std::min<int>(sae.k, int(F));
        std::vector<int> order(static_cast<size_t>(F));
        std::vector<float> kept(static_cast<size_t>(k));
        for (Eigen::Index p = 0; p < S; ++p) {
            float* row = pre.row(p).data();
            std::iota(order.begin(), order.end(), 0);
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
            for (int i = 0; i < k; ++i) kept[size_t(i)] = row[order[size_t(i)]];
            std::fill(row, row + F, 0.0f);
            for (int i = 0; i < k; ++i) row[order[size_t(i)]] = sae.relu ? std::max(kept[size_t(i)], 0.0f) : kept[size_t(i)];
        }
        break;
    }
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
    const Eigen::Index nnz = (acts.array() != 0.0f).count();
    if (nnz * 8 < acts.size()) { // sparse (the usual case): x̂ = b_dec + Σ_i f_i·W_dec[i] over the firing features only
        out = Matrix::Zero(acts.rows(), sae.d_out);
        RowVector row(sae.d_out);
        for (Eigen::Index p = 0; p < acts.rows(); ++p) {
            const float* ap = acts.row(p).data();
            for (Eigen::Index i = 0; i < acts.cols(); ++i) {
                const float a = ap[i];
                if (a == 0.0f) continue;
                if (sae.W_dec.isF32View()) out.row(p) += a * Eigen::Map<const RowVector>(sae.W_dec.data() + i * sae.W_dec.stride, sae.d_out);
                else {
                    sae.W_dec.copyRow(i, row.data());
                    out.row(p) += a * row;
                }
            }
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
    for (Eigen::Index i = 0; i < f.size(); ++i)
        if (f(i) != 0.0f) v.push_back({int(i), f(i)});
    std::sort(v.begin(), v.end(), [](const FeatureValue& a, const FeatureValue& b) {
        return a.activation > b.activation || (a.activation == b.activation && a.feature < b.feature);
    });
    if (top > 0 && int(v.size()) > top) v.resize(size_t(top));
    return v;
}

} // namespace attnscope
