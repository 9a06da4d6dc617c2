#include "views/attention/attention_heatmap.h"

#include "model/core/errors.h"
#include "views/figures/figure_actions.h"
#include "views/figures/palettes.h"
#include "views/figures/token_axis.h"

#include <cmath>
#include <limits>

namespace attnscope {

AttentionHeatmap::AttentionHeatmap(QWidget* parent)
    : HeatmapView(tr("key position"), tr("query position"), tr("attention weight"), parent) {
    parts_.scale->setDataRange(QCPRange(0, 1));
    parts_.map->setDataRange(QCPRange(0, 1)); // fixed: weights are probabilities, compare across heads
    setEmptyText(tr("Run a prompt to see the attention pattern of the selected head."));
    figureActions()->setBaseName(QStringLiteral("attention"));
    setMinimumSize(240, 200);
    dataChanged();
}

void AttentionHeatmap::setData(const AttentionHeatmapData& data) {
    if (data.pattern.rows() != data.pattern.cols())
        throw InputError(tr("attention pattern must be square [query_pos, key_pos], got %1×%2")
                             .arg(data.pattern.rows()).arg(data.pattern.cols()));
    if (!data.tokens.isEmpty() && data.tokens.size() != data.pattern.rows())
        throw InputError(tr("%1 token labels for an attention pattern over %2 positions")
                             .arg(data.tokens.size()).arg(data.pattern.rows()));
    pattern_ = data.pattern;
    causal_ = data.causal;
    tokens_ = data.tokens;
    if (tokens_.isEmpty())
        for (int i = 0; i < pattern_.rows(); ++i) tokens_ << QString::number(i);
    xTicker_->setTokens(tokens_);
    yTicker_->setTokens(tokens_);
    titleText_ = data.title;
    setTitle(data.title);
    dataChanged();
}

QCPColorGradient AttentionHeatmap::gradient(bool dark) const { return sequentialGradient(dark); }

bool AttentionHeatmap::isMasked(int query, int key) const {
    return (causal_ && key > query) || std::isnan(pattern_(query, key));
}

double AttentionHeatmap::cellValue(int query, int key) const {
    return isMasked(query, key) ? std::numeric_limits<double>::quiet_NaN() : double(pattern_(query, key));
}

QString AttentionHeatmap::describeCell(int query, int key) const {
    const int n = positions();
    if (query < 0 || key < 0 || query >= n || key >= n) return {};
    const QString head = tr("query %1 %2 → key %3 %4").arg(query).arg(tokens_[query]).arg(key).arg(tokens_[key]);
    return isMasked(query, key) ? head + tr(": masked")
                                : head + QStringLiteral(": %1").arg(double(pattern_(query, key)), 0, 'f', 3);
}

ValueTable AttentionHeatmap::figureValues() const {
    ValueTable t;
    t.corner = tr("query \\ key");
    t.colLabels = tokens_;
    t.rowLabels = tokens_;
    for (int q = 0; q < positions(); ++q) {
        QStringList row;
        for (int k = 0; k < positions(); ++k) row << (isMasked(q, k) ? QString() : exactNumber(pattern_(q, k)));
        t.cells.push_back(row);
    }
    return t;
}

} // namespace attnscope
