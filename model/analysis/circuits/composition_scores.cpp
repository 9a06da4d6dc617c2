#include "model/analysis/circuits/composition_scores.h"

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/common/index_checks.h"
#include "model/analysis/common/quantized_topk.h"
#include "model/core/errors.h"
#include "model/core/weight_gemm.h"

#include <Eigen/QR>
#include <QCoreApplication>
#include <limits>
#include <mutex>
#include <random>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("analysis", text); }

using MatD = Eigen::MatrixXd;

/// R of the thin QR of A [n, r] (n ≥ r): [r, r] upper triangular with AᵀA = RᵀR.
MatD qrR(const MatD& A) {
    Eigen::HouseholderQR<MatD> qr(A);
    return qr.matrixQR().topRows(A.cols()).triangularView<Eigen::Upper>();
}

/// The factors of one head: W_OV = A_ov·B_ov, and the right factors of each kind.
struct HeadFactors {
    MatD WQ, WK, WV, WO; ///< [d_model, d_head] ×3, [d_head, d_model]
};
HeadFactors headFactors(const Model& model, int layer, int head) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    const int L = cfg.d_head, kv = cfg.kvHeadOf(head);
    return {w.W_Q_head(head, L).toMatrix().cast<double>(), w.W_K_head(kv, L).toMatrix().cast<double>(),
            w.W_V_head(kv, L).toMatrix().cast<double>(), w.W_O_head(head, L).toMatrix().cast<double>()};
}

/// Left (earlier head, W_OV) factor R_a·B_a [d_head, d_model] with A_a = W_V, B_a = W_O.
MatD leftFactor(const HeadFactors& f) { return qrR(f.WV) * f.WO; }

/// Right (later head) factor A_b·R_bᵀ [d_model, d_head] of W_QK (Q), W_QKᵀ (K) or W_OV (V).
MatD rightFactor(const HeadFactors& f, CompositionKind kind) {
    switch (kind) {
    case CompositionKind::Q: return f.WQ * qrR(f.WK).transpose();               // W_Q·W_Kᵀ
    case CompositionKind::K: return f.WK * qrR(f.WQ).transpose();               // W_K·W_Qᵀ
    case CompositionKind::V: break;
    }
    return f.WV * qrR(f.WO.transpose()).transpose(); // W_V·W_O
}

/// ‖L·R‖_F / (‖L‖_F·‖R‖_F) of the small factors.
double factorScore(const MatD& left, const MatD& right) { return (left * right).norm() / (left.norm() * right.norm()); }

struct CacheEntry {
    std::weak_ptr<const Model> model;
    const Model* address;
    CompositionKind kind;
    std::shared_ptr<const CompositionScores> scores;
};

} // namespace

QString compositionKindName(CompositionKind kind) {
    return kind == CompositionKind::Q ? QStringLiteral("q") : kind == CompositionKind::K ? QStringLiteral("k") : QStringLiteral("v");
}

std::optional<CompositionKind> compositionKindFromName(const QString& name) {
    for (CompositionKind k : {CompositionKind::Q, CompositionKind::K, CompositionKind::V})
        if (compositionKindName(k) == name.toLower()) return k;
    return std::nullopt;
}

CompositionBaseline randomCompositionBaseline(int d_model, int d_head, int samples, unsigned seed) {
    static std::mutex mutex;
    static std::vector<std::pair<std::array<int, 4>, CompositionBaseline>> cache;
    const std::array<int, 4> key{d_model, d_head, samples, int(seed)};
    {
        std::lock_guard lock(mutex);
        for (const auto& [k, b] : cache)
            if (k == key) return b;
    }
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto random = [&](int r, int c) { return MatD::NullaryExpr(r, c, [&] { return normal(rng); }); };
    std::vector<double> s;
    for (int i = 0; i < samples; ++i) {
        const MatD A1 = random(d_model, d_head), B1 = random(d_head, d_model), A2 = random(d_model, d_head), B2 = random(d_head, d_model);
        s.push_back(factorScore(qrR(A1) * B1, A2 * qrR(B2.transpose()).transpose()));
    }
    CompositionBaseline b;
    b.samples = samples;
    for (double v : s) b.mean += v / samples;
    for (double v : s) b.sd += (v - b.mean) * (v - b.mean) / std::max(1, samples - 1);
    b.sd = std::sqrt(b.sd);
    std::lock_guard lock(mutex);
    cache.push_back({key, b});
    return b;
}

std::shared_ptr<const CompositionScores> compositionScores(const Model& model, CompositionKind kind, const Progress& progress) {
    static std::mutex mutex;
    static std::vector<CacheEntry> cache;
    const std::weak_ptr<const Model> self = model.weak_from_this();
    {
        std::lock_guard lock(mutex);
        std::erase_if(cache, [](const CacheEntry& e) { return e.model.expired(); });
        for (const CacheEntry& e : cache)
            if (e.address == &model && e.kind == kind && !e.model.expired()) return e.scores;
    }
    const ModelConfig& cfg = model.config();
    const int nL = cfg.n_layers, H = cfg.n_heads, L = cfg.d_head;
    const Eigen::Index D = cfg.d_model, HL = Eigen::Index(H) * L;
    auto out = std::make_shared<CompositionScores>();
    out->kind = kind;
    out->nLayers = nL;
    out->nHeads = H;
    out->baseline = randomCompositionBaseline(int(D), L);
    out->scores = Eigen::MatrixXf::Constant(nL * H, nL * H, std::numeric_limits<float>::quiet_NaN());

    // per head: left factors stacked by layer [n_layers·H·L, D], right factors [D, n_layers·H·L], their norms
    Matrix left(nL * HL, D), right(D, nL * HL);
    std::vector<double> leftNorm(size_t(nL * H)), rightNorm(size_t(nL * H));
    progress.step(0, nL, tr("composition scores: factors"));
#pragma omp parallel for schedule(dynamic)
    for (int a = 0; a < nL * H; ++a) {
        const HeadFactors f = headFactors(model, a / H, a % H);
        const MatD l = leftFactor(f), r = rightFactor(f, kind);
        left.middleRows(Eigen::Index(a) * L, L) = l.cast<float>();
        right.middleCols(Eigen::Index(a) * L, L) = r.cast<float>();
        leftNorm[size_t(a)] = l.norm();
        rightNorm[size_t(a)] = r.norm();
    }
    for (int la = 0; la + 1 < nL; ++la) {
        progress.step(la, nL, tr("composition scores: layer %1").arg(la));
        const Eigen::Index c0 = Eigen::Index(la + 1) * HL, cols = Eigen::Index(nL) * HL - c0;
        Matrix P(HL, cols); // [heads of la × d_head, heads of later layers × d_head]
        weightGemm(left.data() + Eigen::Index(la) * HL * D, HL, D, D, f32Weight(right.data() + c0, D, cols, right.cols()), P.data(),
                   cols, true);
        for (int ha = 0; ha < H; ++ha)
            for (Eigen::Index b = 0; b < cols / L; ++b) {
                const int A = la * H + ha, B = int(c0 / L + b);
                const double n = double(P.block(Eigen::Index(ha) * L, b * L, L, L).norm());
                out->scores(A, B) = float(n / (leftNorm[size_t(A)] * rightNorm[size_t(B)]));
            }
    }
    progress.step(nL, nL, tr("composition scores"));
    if (!self.expired()) {
        std::lock_guard lock(mutex);
        cache.push_back({self, &model, kind, out});
    }
    return out;
}

double compositionScoreDirect(const Model& model, CompositionKind kind, int la, int ha, int lb, int hb) {
    checkHead(model.config(), la, ha);
    checkHead(model.config(), lb, hb);
    const HeadFactors a = headFactors(model, la, ha), b = headFactors(model, lb, hb);
    const MatD OVa = a.WV * a.WO;
    const MatD right = kind == CompositionKind::Q   ? MatD(b.WQ * b.WK.transpose())
                       : kind == CompositionKind::K ? MatD(b.WK * b.WQ.transpose())
                                                    : MatD(b.WV * b.WO);
    return (OVa * right).norm() / (OVa.norm() * right.norm());
}

std::vector<ScoredPair> virtualOvCircuit(const Model& model, int la, int ha, int lb, int hb, int k, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    checkHead(cfg, la, ha);
    checkHead(cfg, lb, hb);
    if (la >= lb)
        throw InputError(tr("A virtual circuit runs from an earlier head to a later one: L%1H%2 is not before L%3H%4.")
                             .arg(la).arg(ha).arg(lb).arg(hb));
    const int L = cfg.d_head;
    const LowRankScores first = pairFactors(model, PairProjectionKind::OV, la, ha);  // A = E·W_V^a
    const LowRankScores second = pairFactors(model, PairProjectionKind::OV, lb, hb); // B = E·W_O^bᵀ
    const Matrix M = model.layer(la).W_O_head(ha, L).toMatrix() * model.layer(lb).W_V_head(cfg.kvHeadOf(hb), L).toMatrix();
    Matrix A(first.A.rows(), L);
    weightGemm(first.A.data(), first.A.rows(), L, L, f32Weight(M.data(), L, L), A.data(), L, true);
    return topKOfProductQuantized(A, second.B, k, progress,
                                  QStringLiteral("L%1H%2 → L%3H%4 virtual OV").arg(la).arg(ha).arg(lb).arg(hb));
}

} // namespace attnscope
