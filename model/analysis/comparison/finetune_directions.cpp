#include "model/analysis/comparison/finetune_directions.h"

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/comparison/model_comparison.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("analysis", text); }

/// Squared norms of (after − before) and of before, per row or per column of a tensor [rows, cols], in float64.
struct Squares {
    Eigen::VectorXd delta, norm;
    double totalDelta() const { return delta.sum(); }
    double totalNorm() const { return norm.sum(); }
};

enum class Axis { Rows, Cols };

/// Row chunks of both tensors converted to float32 (any stored type), differences taken in float64.
Squares squares(const Weight& before, const Weight& after, Axis axis, const QString& name) {
    if (before.empty() != after.empty())
        throw InputError(tr("%1 is present in only one of the two checkpoints.").arg(name));
    Squares s;
    if (before.empty()) return s;
    if (before.rows != after.rows || before.cols != after.cols)
        throw InputError(tr("%1 is %2 × %3 in the first checkpoint but %4 × %5 in the second.")
                             .arg(name).arg(before.rows).arg(before.cols).arg(after.rows).arg(after.cols));
    const Eigen::Index n = axis == Axis::Rows ? before.rows : before.cols;
    s.delta = Eigen::VectorXd::Zero(n);
    s.norm = Eigen::VectorXd::Zero(n);
    constexpr Eigen::Index kChunk = 1024;
    for (Eigen::Index r0 = 0; r0 < before.rows; r0 += kChunk) {
        const Eigen::Index m = std::min(kChunk, before.rows - r0);
        const Eigen::MatrixXd b = before.rowBlock(r0, m).toMatrix().cast<double>();
        const Eigen::MatrixXd d = after.rowBlock(r0, m).toMatrix().cast<double>() - b;
        if (axis == Axis::Cols) {
            s.delta += d.colwise().squaredNorm().transpose();
            s.norm += b.colwise().squaredNorm().transpose();
        } else {
            s.delta.segment(r0, m) = d.rowwise().squaredNorm();
            s.norm.segment(r0, m) = b.rowwise().squaredNorm();
        }
    }
    return s;
}

double relativeOf(double delta, double norm) {
    if (delta == 0) return 0;
    return norm > 0 ? delta / norm : std::numeric_limits<double>::infinity();
}

/// Σ of entries [i0, i0 + n) of a Squares vector (0 for an absent tensor).
double part(const Eigen::VectorXd& v, Eigen::Index i0, Eigen::Index n) { return v.size() ? v.segment(i0, n).sum() : 0.0; }

void finish(ComponentChange& c) {
    double d2 = 0, n2 = 0;
    for (size_t i = 0; i < c.partDelta.size(); ++i) {
        d2 += c.partDelta[i];
        n2 += c.partNorm[i];
        c.partDelta[i] = std::sqrt(c.partDelta[i]);
        c.partNorm[i] = std::sqrt(c.partNorm[i]);
    }
    c.delta = std::sqrt(d2);
    c.norm = std::sqrt(n2);
    c.relative = relativeOf(c.delta, c.norm);
}

bool moreChanged(const ComponentChange& x, const ComponentChange& y) {
    if (x.relative != y.relative) return x.relative > y.relative;
    if (x.delta != y.delta) return x.delta > y.delta;
    if (x.kind != y.kind) return x.kind == ComponentChange::Kind::Head;
    if (x.layer != y.layer) return x.layer < y.layer;
    return x.index < y.index;
}

void addTensor(std::vector<TensorChange>& out, const QString& name, int layer, const Squares& s) {
    if (s.norm.size() == 0) return;
    TensorChange t{name, layer, std::sqrt(s.totalDelta()), std::sqrt(s.totalNorm()), 0};
    t.relative = relativeOf(t.delta, t.norm);
    out.push_back(t);
}

} // namespace

QString ComponentChange::name() const {
    return kind == Kind::Head ? QStringLiteral("L%1H%2").arg(layer).arg(index) : QStringLiteral("L%1N%2").arg(layer).arg(index);
}

std::array<const char*, 4> ComponentChange::partNames(Kind kind) {
    if (kind == Kind::Head) return {"Q", "K", "V", "O"};
    return {"key", "gate", "value", ""};
}

std::vector<ComponentChange> FinetuneRanking::components() const {
    std::vector<ComponentChange> all = heads;
    all.insert(all.end(), neurons.begin(), neurons.end());
    std::sort(all.begin(), all.end(), moreChanged);
    return all;
}

FinetuneRanking rankFinetuneChanges(const Model& before, const Model& after, const Progress& progress) {
    checkSameArchitecture(before, after);
    const ModelConfig& cfg = before.config();
    if (cfg.gatedMlp != after.config().gatedMlp)
        throw InputError(tr("One checkpoint has a gated MLP and the other does not."));
    const int nL = cfg.n_layers, H = cfg.n_heads, L = cfg.d_head, M = cfg.d_mlp;
    FinetuneRanking r;
    r.headRelative.resize(nL, H);
    r.neuronRelative.resize(nL, M);
    progress.step(0, nL + 1, tr("embeddings"));
    {
        const GlobalWeights &g = before.globals(), &h = after.globals();
        addTensor(r.tensors, QStringLiteral("W_E"), -1, squares(g.W_E, h.W_E, Axis::Rows, QStringLiteral("W_E")));
        addTensor(r.tensors, QStringLiteral("W_pos"), -1, squares(g.W_pos, h.W_pos, Axis::Rows, QStringLiteral("W_pos")));
        addTensor(r.tensors, QStringLiteral("ln_final.w"), -1, squares(g.ln_final_w, h.ln_final_w, Axis::Cols, QStringLiteral("ln_final.w")));
        addTensor(r.tensors, QStringLiteral("ln_final.b"), -1, squares(g.ln_final_b, h.ln_final_b, Axis::Cols, QStringLiteral("ln_final.b")));
        if (!unembeddingTied(before) || !unembeddingTied(after))
            addTensor(r.tensors, QStringLiteral("W_U"), -1, squares(g.W_U_T, h.W_U_T, Axis::Rows, QStringLiteral("W_U")));
        addTensor(r.tensors, QStringLiteral("b_U"), -1, squares(g.b_U, h.b_U, Axis::Cols, QStringLiteral("b_U")));
    }
    for (int l = 0; l < nL; ++l) {
        progress.step(l + 1, nL + 1, tr("layer %1").arg(l));
        const LayerWeights &a = before.layer(l), &b = after.layer(l);
        const QString p = QStringLiteral("L%1.").arg(l);
        auto sq = [&](const Weight LayerWeights::*w, Axis axis, const char* name) {
            Squares s = squares(a.*w, b.*w, axis, p + QLatin1String(name));
            addTensor(r.tensors, p + QLatin1String(name), l, s);
            return s;
        };
        sq(&LayerWeights::ln1_w, Axis::Cols, "ln1.w");
        sq(&LayerWeights::ln1_b, Axis::Cols, "ln1.b");
        const Squares q = sq(&LayerWeights::W_Q, Axis::Cols, "W_Q"), bq = sq(&LayerWeights::b_Q, Axis::Cols, "b_Q");
        const Squares k = sq(&LayerWeights::W_K, Axis::Cols, "W_K"), bk = sq(&LayerWeights::b_K, Axis::Cols, "b_K");
        const Squares v = sq(&LayerWeights::W_V, Axis::Cols, "W_V"), bv = sq(&LayerWeights::b_V, Axis::Cols, "b_V");
        const Squares o = sq(&LayerWeights::W_O, Axis::Rows, "W_O");
        sq(&LayerWeights::b_O, Axis::Cols, "b_O");
        sq(&LayerWeights::ln2_w, Axis::Cols, "ln2.w");
        sq(&LayerWeights::ln2_b, Axis::Cols, "ln2.b");
        const Squares in = sq(&LayerWeights::W_in, Axis::Cols, "W_in"), bin = sq(&LayerWeights::b_in, Axis::Cols, "b_in");
        const Squares gate = sq(&LayerWeights::W_gate, Axis::Cols, "W_gate");
        const Squares out = sq(&LayerWeights::W_out, Axis::Rows, "W_out");
        sq(&LayerWeights::b_out, Axis::Cols, "b_out");
        for (int hd = 0; hd < H; ++hd) {
            ComponentChange c;
            c.kind = ComponentChange::Kind::Head;
            c.layer = l;
            c.index = hd;
            const Eigen::Index qc = Eigen::Index(hd) * L, kc = Eigen::Index(cfg.kvHeadOf(hd)) * L;
            const Squares* parts[4][2] = {{&q, &bq}, {&k, &bk}, {&v, &bv}, {&o, nullptr}};
            for (int i = 0; i < 4; ++i) {
                const Eigen::Index c0 = i == 0 || i == 3 ? qc : kc;
                for (const Squares* s : parts[i])
                    if (s) {
                        c.partDelta[size_t(i)] += part(s->delta, c0, L);
                        c.partNorm[size_t(i)] += part(s->norm, c0, L);
                    }
            }
            finish(c);
            r.headRelative(l, hd) = float(c.relative);
            r.heads.push_back(c);
        }
        for (int n = 0; n < M; ++n) {
            ComponentChange c;
            c.kind = ComponentChange::Kind::Neuron;
            c.layer = l;
            c.index = n;
            c.partDelta = {part(in.delta, n, 1) + part(bin.delta, n, 1), part(gate.delta, n, 1), part(out.delta, n, 1), 0};
            c.partNorm = {part(in.norm, n, 1) + part(bin.norm, n, 1), part(gate.norm, n, 1), part(out.norm, n, 1), 0};
            finish(c);
            r.neuronRelative(l, n) = float(c.relative);
            r.neurons.push_back(c);
        }
    }
    std::sort(r.heads.begin(), r.heads.end(), moreChanged);
    std::sort(r.neurons.begin(), r.neurons.end(), moreChanged);
    progress.step(nL + 1, nL + 1, tr("done"));
    return r;
}

} // namespace attnscope
