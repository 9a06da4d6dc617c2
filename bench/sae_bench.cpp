// SAE encode + decode rows (issue 34 "Speed"): a TopK (k = 32) SAE on the gpt2-small shape (d_in 768) for several
// d_sae at S = 128, the way a Features tab or a corpus pass runs it — f = top-k of ReLU((x − b_dec)·W_enc + b_enc), the
// firing features per position, x̂ = f·W_dec + b_dec — timed per stage; bench/torch_sae.py times the same in PyTorch.

#include "model/features/sparse_coder.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <algorithm>
#include <random>
#include <vector>

namespace attnscope {

namespace {

double medianMs(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

QJsonObject benchSae(int dIn, int dSae, int S, int k, int runs) {
    std::mt19937 g(1);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> wEnc(static_cast<size_t>(dIn) * dSae), wDec(static_cast<size_t>(dSae) * dIn), bEnc(static_cast<size_t>(dSae)),
        bDec(static_cast<size_t>(dIn));
    for (float& v : wEnc) v = n(g) / std::sqrt(float(dIn));
    for (float& v : wDec) v = n(g) / std::sqrt(float(dSae));
    for (float& v : bEnc) v = 0.01f * n(g);
    for (float& v : bDec) v = 0.01f * n(g);
    SparseCoder sae;
    sae.d_in = sae.d_out = dIn;
    sae.d_sae = dSae;
    sae.activation = FeatureActivation::TopK;
    sae.k = k;
    sae.applyBDecToInput = true;
    sae.W_enc = Weight{wEnc.data(), dIn, dSae, dSae, WeightType::F32, false};
    sae.W_dec = Weight{wDec.data(), dSae, dIn, dIn, WeightType::F32, false};
    sae.b_enc = Weight{bEnc.data(), 1, dSae, dSae, WeightType::F32, false};
    sae.b_dec = Weight{bDec.data(), 1, dIn, dIn, WeightType::F32, false};
    Matrix x(S, dIn);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = n(g);
    std::vector<double> enc, dec, tops;
    for (int r = 0; r <= runs; ++r) {
        QElapsedTimer t;
        t.start();
        const Matrix f = encodeFeatures(sae, x);
        const double e = t.nsecsElapsed() / 1e6;
        t.restart();
        size_t listed = 0;
        for (Eigen::Index p = 0; p < S; ++p) listed += firingFeatures(f.row(p), k).size();
        const double l = t.nsecsElapsed() / 1e6;
        t.restart();
        const Matrix xhat = decodeFeatures(sae, f, x);
        const double d = t.nsecsElapsed() / 1e6;
        if (listed == 0 || xhat.rows() != S) return {};
        if (r == 0) continue; // warm-up
        enc.push_back(e);
        tops.push_back(l);
        dec.push_back(d);
    }
    const double gflop = 2.0 * S * dIn * double(dSae) / 1e9;
    return QJsonObject{{"d_in", dIn}, {"d_sae", dSae}, {"S", S}, {"k", k}, {"encode_ms", medianMs(enc)}, {"list_ms", medianMs(tops)},
                       {"decode_ms", medianMs(dec)}, {"total_ms", medianMs(enc) + medianMs(tops) + medianMs(dec)},
                       {"encode_gemm_gflop", gflop}};
}

} // namespace attnscope
