#include "views/features/feature_dashboard.h"

#include "model/analysis/features/context_store.h"
#include "views/figures/chart_figure.h"

#include <qcustomplot.h>

#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

QLabel* richLabel() {
    auto* l = new QLabel;
    l->setTextFormat(Qt::RichText);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

QCustomPlot* plot(int minimumHeight) {
    auto* p = new QCustomPlot;
    p->setMinimumHeight(minimumHeight);
    return p;
}

} // namespace

QString FeatureDashboard::tintedTokens(const QStringList& tokens, const Eigen::VectorXf& activations, float max, int bold) {
    QString html;
    const float m = std::max(max, 1e-12f);
    for (int p = 0; p < int(tokens.size()) && p < activations.size(); ++p) {
        const double alpha = std::clamp(double(activations(p) / m), 0.0, 1.0);
        const QString t = tokens[p].toHtmlEscaped();
        html += QStringLiteral("<span style=\"background-color: rgba(255,140,0,%1)\" title=\"%2\">%3</span>")
                    .arg(alpha, 0, 'f', 2)
                    .arg(double(activations(p)), 0, 'f', 3)
                    .arg(p == bold ? QStringLiteral("<b>%1</b>").arg(t) : t);
    }
    return html;
}

FeatureDashboard::FeatureDashboard(QWidget* parent) : QWidget(parent) {
    strip_ = richLabel();
    firing_ = richLabel();
    hint_ = richLabel();
    hint_->hide();
    histogramPlot_ = plot(170);
    histogram_ = new ChartFigure(histogramPlot_, QStringLiteral("feature_histogram"),
                                 tr("No contexts database: see above how to make one."));
    histogram_->setValues([this] {
        ValueTable t;
        t.colLabels = {tr("bin"), tr("count")};
        for (int b = 0; b < int(counts_.size()); ++b) t.cells.push_back({QString::number(b), QString::number(counts_[size_t(b)])});
        return t;
    });
    histogramPlot_->setToolTip(histogramConvention());
    logitsPlot_ = plot(170);
    logits_ = new ChartFigure(logitsPlot_, QStringLiteral("feature_logits"), tr("This dictionary writes no direction W_U reads."));
    logits_->setValues([this] {
        ValueTable t;
        t.colLabels = {tr("token"), tr("score")};
        for (int i = 0; i < int(logitTokens_.size()); ++i) t.cells.push_back({logitTokens_[i], QString::number(logitScores_[size_t(i)])});
        return t;
    });
    contextsTable_ = new QTableWidget(0, 2);
    contextsTable_->setHorizontalHeaderLabels({tr("max"), tr("context (click to run it)")});
    contextsTable_->verticalHeader()->setVisible(false);
    contextsTable_->horizontalHeader()->setStretchLastSection(true);
    contextsTable_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    contextsTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    contextsTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
    contextsTable_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    contextsTable_->setMinimumHeight(110);
    connect(contextsTable_, &QTableWidget::cellClicked, this, [this](int row) {
        if (row >= 0 && row < int(contexts_.size())) emit promptRequested(contexts_[size_t(row)].prompt);
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(strip_);
    layout->addWidget(hint_);
    auto* grid = new QGridLayout;
    grid->addWidget(firing_, 0, 0);
    grid->addWidget(histogramPlot_, 1, 0);
    grid->addWidget(logitsPlot_, 0, 1, 2, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    layout->addLayout(grid, 2);
    layout->addWidget(contextsTable_, 2);
}

void FeatureDashboard::setHistogram(const std::vector<qint64>& counts, qint64 firing, qint64 positions, const QString& source) {
    hint_->hide();
    counts_ = counts;
    histogramPlot_->clearPlottables();
    auto* bars = new QCPBars(histogramPlot_->xAxis, histogramPlot_->yAxis);
    QVector<double> keys, values;
    double top = 1;
    for (int b = 0; b < int(counts.size()); ++b) {
        keys << b;
        values << double(counts[size_t(b)]);
        top = std::max(top, double(counts[size_t(b)]));
    }
    bars->setData(keys, values, true);
    bars->setWidth(0.9);
    bars->setPen(Qt::NoPen);
    bars->setBrush(QColor(255, 140, 0, 200));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int d = -4; d <= 4; d += 2) ticker->addTick(1 + (d + 4) * 8, QStringLiteral("1e%1").arg(d));
    histogramPlot_->xAxis->setTicker(ticker);
    histogramPlot_->xAxis->setLabel(tr("activation (log bins)"));
    histogramPlot_->yAxis->setLabel(tr("tokens"));
    const double fraction = positions > 0 ? double(firing) / double(positions) : 0.0;
    firing_->setText(tr("<b>Fires on %1 of %2 tokens</b> (%3 %) in %4").arg(firing).arg(positions)
                         .arg(fraction * 100, 0, 'g', 4).arg(source.toHtmlEscaped()));
    firing_->setProperty("fraction", fraction);
    histogram_->setHasData(true);
    histogram_->restyle();
    histogram_->setHomeRanges(QCPRange(-1, kHistogramBins), QCPRange(0, top * 1.05));
}

void FeatureDashboard::setNoDatabase(const QString& hint) {
    counts_.clear();
    contexts_.clear();
    contextsTable_->setRowCount(0);
    histogramPlot_->clearPlottables();
    histogram_->setHasData(false);
    firing_->clear();
    firing_->setProperty("fraction", QVariant());
    hint_->setText(hint);
    hint_->show();
}

void FeatureDashboard::setContextsStatus(const QString& text) {
    contexts_.clear();
    contextsTable_->setRowCount(1);
    auto* item = new QTableWidgetItem(text);
    contextsTable_->setItem(0, 0, new QTableWidgetItem);
    contextsTable_->setItem(0, 1, item);
}

void FeatureDashboard::setContexts(const std::vector<DashboardContext>& contexts) {
    contexts_ = contexts;
    if (contexts.empty()) {
        setContextsStatus(tr("The feature never fired in the corpus."));
        return;
    }
    float max = 0;
    for (const DashboardContext& c : contexts) max = std::max(max, c.activations.size() ? c.activations.maxCoeff() : 0.0f);
    contextsTable_->setRowCount(int(contexts.size()));
    for (int i = 0; i < int(contexts.size()); ++i) {
        const DashboardContext& c = contexts[size_t(i)];
        auto* value = new QTableWidgetItem(QString::number(double(c.stored), 'f', 3));
        value->setData(Qt::UserRole, double(c.stored));
        contextsTable_->setItem(i, 0, value);
        contextsTable_->setItem(i, 1, new QTableWidgetItem);
        // the tokens around the max-activating one, tinted against the largest activation of all contexts shown
        const int from = std::max(1, c.position - 16), to = std::min(int(c.tokens.size()), c.position + 6);
        auto* label = new QLabel(QStringLiteral("…") + tintedTokens(c.tokens.mid(from, to - from), c.activations.segment(from, to - from), max,
                                                                   c.position - from) + QStringLiteral("…"));
        label->setTextFormat(Qt::RichText);
        label->setAttribute(Qt::WA_TransparentForMouseEvents);
        label->setToolTip(c.prompt);
        contextsTable_->setCellWidget(i, 1, label);
    }
    contextsTable_->resizeRowsToContents();
}

void FeatureDashboard::setLogits(const QStringList& promotedTokens, const std::vector<ScoredToken>& allPromoted,
                                 const QStringList& suppressedTokens, const std::vector<ScoredToken>& allSuppressed) {
    const std::vector<ScoredToken> promoted(allPromoted.begin(), allPromoted.begin() + std::min<size_t>(allPromoted.size(), kBarsPerSide));
    const std::vector<ScoredToken> suppressed(allSuppressed.begin(), allSuppressed.begin() + std::min<size_t>(allSuppressed.size(), kBarsPerSide));
    logitsPlot_->clearPlottables();
    logitTokens_.clear();
    logitScores_.clear();
    if (promoted.empty() && suppressed.empty()) {
        logits_->setHasData(false);
        return;
    }
    // rows top to bottom: promoted (largest first), then suppressed (most negative last)
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    QVector<double> upKeys, upValues, downKeys, downValues;
    const int n = int(promoted.size() + suppressed.size());
    double extent = 1e-6;
    for (int i = 0; i < n; ++i) {
        const bool up = i < int(promoted.size());
        const ScoredToken& t = up ? promoted[size_t(i)] : suppressed[size_t(int(suppressed.size()) - 1 - (i - int(promoted.size())))];
        const QString text = up ? promotedTokens.value(i) : suppressedTokens.value(int(suppressed.size()) - 1 - (i - int(promoted.size())));
        const double key = n - 1 - i;
        ticker->addTick(key, text);
        (up ? upKeys : downKeys) << key;
        (up ? upValues : downValues) << double(t.score);
        logitTokens_ << text;
        logitScores_.push_back(double(t.score));
        extent = std::max(extent, std::abs(double(t.score)));
    }
    for (const bool up : {true, false}) {
        auto* bars = new QCPBars(logitsPlot_->yAxis, logitsPlot_->xAxis); // horizontal: keys on the y axis
        bars->setName(up ? tr("promoted") : tr("suppressed"));
        bars->setData(up ? upKeys : downKeys, up ? upValues : downValues, true);
        bars->setWidth(0.75);
        bars->setPen(Qt::NoPen);
        bars->setBrush(up ? QColor(40, 120, 200, 200) : QColor(200, 60, 40, 200));
    }
    logitsPlot_->yAxis->setTicker(ticker);
    logitsPlot_->yAxis->setSubTicks(false);
    logitsPlot_->xAxis->setLabel(tr("W_U · W_dec[f]"));
    logits_->setHasData(true);
    logits_->restyle();
    logits_->setHomeRanges(QCPRange(-extent * 1.1, extent * 1.1), QCPRange(-0.7, n - 0.3));
}

} // namespace attnscope
