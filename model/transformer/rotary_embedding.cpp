#include "model/transformer/rotary_embedding.h"

#include "model/core/parallel_threshold.h"
#include "model/core/team_loop.h"

#include <cmath>
#include <mutex>

namespace attnscope {

std::vector<double> ropeInverseFrequencies(const ModelConfig& cfg, int layer) {
    const int half = cfg.d_head / 2;
    std::vector<double> inv(static_cast<size_t>(half));
    const double base = cfg.rotaryBaseOf(layer);
    for (int i = 0; i < half; ++i) inv[size_t(i)] = std::pow(base, -2.0 * i / cfg.d_head);
    const RopeScaling& s = cfg.ropeScalingOf(layer);
    switch (s.kind) {
    case RopeScaling::Kind::None:
        break;
    case RopeScaling::Kind::Linear:
        for (double& f : inv) f /= s.factor;
        break;
    case RopeScaling::Kind::Factors:
        for (int i = 0; i < half && i < int(s.freq_factors.size()); ++i) inv[size_t(i)] /= s.freq_factors[size_t(i)];
        break;
    case RopeScaling::Kind::Llama3: {
        const double oldContext = s.original_max_position_embeddings;
        const double lowWavelen = oldContext / s.low_freq_factor, highWavelen = oldContext / s.high_freq_factor;
        for (double& f : inv) {
            const double wavelen = 2 * M_PI / f;
            if (wavelen > lowWavelen) {
                f /= s.factor; // long wavelengths: scaled
            } else if (wavelen >= highWavelen) { // medium: interpolated
                const double smooth = (oldContext / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
                f = (1 - smooth) * f / s.factor + smooth * f;
            } // short wavelengths: kept
        }
        break;
    }
    }
    return inv;
}

std::shared_ptr<const RopeTable> ropeTable(const ModelConfig& cfg, int layer, int S) {
    struct Entry {
        int d_head;
        double base;
        RopeScaling scaling;
        std::shared_ptr<const RopeTable> table;
    };
    static std::mutex mutex;
    static std::vector<Entry> cache; // most recent last, a few entries (one or two per open model, typically)
    const double base = cfg.rotaryBaseOf(layer);
    const RopeScaling& scaling = cfg.ropeScalingOf(layer);
    auto same = [&](const Entry& e) {
        return e.d_head == cfg.d_head && e.base == base && e.scaling.kind == scaling.kind && e.scaling.factor == scaling.factor &&
               e.scaling.low_freq_factor == scaling.low_freq_factor && e.scaling.high_freq_factor == scaling.high_freq_factor &&
               e.scaling.original_max_position_embeddings == scaling.original_max_position_embeddings &&
               e.scaling.freq_factors == scaling.freq_factors;
    };
    std::lock_guard lock(mutex);
    for (const Entry& e : cache)
        if (same(e) && e.table->positions >= S) return e.table;
    auto t = std::make_shared<RopeTable>();
    t->positions = std::max(S, 64);
    const std::vector<double> inv = ropeInverseFrequencies(cfg, layer);
    const int half = cfg.d_head / 2;
    t->cos.resize(t->positions, half);
    t->sin.resize(t->positions, half);
    for (int p = 0; p < t->positions; ++p)
        for (int i = 0; i < half; ++i) {
            const double a = double(p) * inv[size_t(i)];
            t->cos(p, i) = float(std::cos(a));
            t->sin(p, i) = float(std::sin(a));
        }
    std::erase_if(cache, same);
    cache.push_back({cfg.d_head, base, scaling, t});
    if (cache.size() > 8) cache.erase(cache.begin());
    return t;
}

namespace {

/// Rotates every head of row `row` of x as position p.
void rotateRow(const ModelConfig& cfg, const RopeTable& table, Matrix& x, Eigen::Index row, Eigen::Index p) {
    const int L = cfg.d_head, half = L / 2;
    const Eigen::Index heads = x.cols() / L;
    const bool interleaved = cfg.rope_layout == RopeLayout::Interleaved;
    const float* c = table.cos.data() + p * half;
    const float* s = table.sin.data() + p * half;
    for (Eigen::Index h = 0; h < heads; ++h) {
        float* v = x.data() + row * x.cols() + h * L;
        for (int i = 0; i < half; ++i) {
            float& a = interleaved ? v[2 * i] : v[i];
            float& b = interleaved ? v[2 * i + 1] : v[i + half];
            const float x0 = a, x1 = b;
            a = x0 * c[i] - x1 * s[i];
            b = x1 * c[i] + x0 * s[i];
        }
    }
}

} // namespace

void applyRotary(const ModelConfig& cfg, const RopeTable& table, Matrix& x) {
    const Eigen::Index S = x.rows();
    teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(x.cols())),
                                  [&](Eigen::Index p) { rotateRow(cfg, table, x, p, p); });
}

void applyRotary(const ModelConfig& cfg, const RopeTable& table, Matrix& x, std::span<const int> positions) {
    const Eigen::Index S = x.rows();
    teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(x.cols())),
                                  [&](Eigen::Index r) { rotateRow(cfg, table, x, r, positions[size_t(r)]); });
}

} // namespace attnscope
