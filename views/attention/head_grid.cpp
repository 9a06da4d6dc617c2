#include "views/attention/head_grid.h"

#include "model/core/errors.h"
#include "views/figures/appearance.h"
#include "views/figures/figure_actions.h"
#include "views/figures/palettes.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope {

HeadGrid::HeadGrid(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setBackgroundRole(QPalette::Base);
    setAutoFillBackground(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    actions_ = new FigureActions(this, this, QStringLiteral("head_grid"));
    connect(&Appearance::instance(), &Appearance::changed, this, [this] {
        recolour();
        update();
    });
}

HeadGrid::Thumbnail HeadGrid::downsample(const Matrix& p, bool causal) {
    const int n = int(std::min(p.rows(), p.cols()));
    if (n == 0) return {};
    const int side = std::min(n, maxThumbnailSide());
    Thumbnail t;
    t.side = side;
    t.values.resize(size_t(side) * side);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Box average of the cells each thumbnail pixel covers; masked and NaN cells don't count.
    // Per thumbnail row, the query rows it covers are first summed column-wise (contiguous,
    // vectorised: one pass over the pattern), then each pixel sums its columns.
    std::vector<float> colSum(static_cast<size_t>(n)), colCount(static_cast<size_t>(n));
        const float* data = p.data();
    const Eigen::Index stride = p.outerStride();
    for (int ty = 0; ty < side; ++ty) {
        const int q0 = int(qint64(ty) * n / side), q1 = int(qint64(ty + 1) * n / side);
        std::fill(colSum.begin(), colSum.end(), 0.0f);
        std::fill(colCount.begin(), colCount.end(), 0.0f);
        for (int q = q0; q < q1; ++q) {
            const float* src = data + q * stride;
            const int kEnd = causal ? std::min(n, q + 1) : n; // key_pos > query_pos is masked
            float* __restrict sum = colSum.data();
            float* __restrict count = colCount.data();
            for (int k = 0; k < kEnd; ++k) {
                const float v = src[k];
                const bool ok = !std::isnan(v);
                sum[k] += ok ? v : 0.0f;
                count[k] += ok ? 1.0f : 0.0f;
            }
        }
        for (int tx = 0; tx < side; ++tx) {
            const int k0 = int(qint64(tx) * n / side), k1 = int(qint64(tx + 1) * n / side);
            double s = 0, c = 0;
            for (int k = k0; k < k1; ++k) {
                s += colSum[size_t(k)];
                c += colCount[size_t(k)];
            }
            t.values[size_t(ty) * side + tx] = c > 0 ? s / c : nan;
        }
    }
    return t;
}

QImage HeadGrid::colourise(const Thumbnail& t, const QCPColorGradient& gradient) {
    if (t.side == 0) return {};
    QImage img(t.side, t.side, QImage::Format_ARGB32_Premultiplied);
    QCPColorGradient g = gradient; // colorize() fills the colour table of its own copy once
    for (int ty = 0; ty < t.side; ++ty)
        g.colorize(t.values.data() + size_t(ty) * t.side, QCPRange(0, 1), reinterpret_cast<QRgb*>(img.scanLine(ty)), t.side);
    return img;
}

void HeadGrid::recolour() {
    const QCPColorGradient g = sequentialGradient(Appearance::instance().isDark());
    thumbs_.resize(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) thumbs_[i] = colourise(values_[i], g);
}

void HeadGrid::setPatterns(int nLayers, int nHeads, const std::function<Matrix(int, int)>& patternFor, bool causal) {
    if (nLayers < 0 || nHeads < 0) throw InputError(tr("negative layer or head count"));
    nLayers_ = nLayers;
    nHeads_ = nHeads;
    values_.clear();
    values_.reserve(size_t(nLayers) * nHeads);
    for (int l = 0; l < nLayers; ++l)
        for (int h = 0; h < nHeads; ++h) values_.push_back(downsample(patternFor(l, h), causal));
    recolour();
    scores_ = Matrix();
    scoreName_.clear();
    pending_.assign(size_t(nLayers), false);
    if (selLayer_ >= nLayers_ || selHead_ >= nHeads_) selLayer_ = selHead_ = -1;
    updateGeometry();
    update();
}

void HeadGrid::beginPatterns(int nLayers, int nHeads, bool causal) {
    setPatterns(nLayers, nHeads, [](int, int) { return Matrix(); }, causal);
    pending_.assign(size_t(nLayers), true);
    causal_ = causal;
}

void HeadGrid::setLayerPatterns(int layer, const std::vector<Matrix>& patterns) {
    if (layer < 0 || layer >= nLayers_ || int(patterns.size()) != nHeads_)
        throw InputError(tr("layer %1 with %2 heads does not fit the grid of %3 layers × %4 heads")
                             .arg(layer).arg(patterns.size()).arg(nLayers_).arg(nHeads_));
    const QCPColorGradient g = sequentialGradient(Appearance::instance().isDark());
    for (int h = 0; h < nHeads_; ++h) {
        const size_t i = size_t(layer) * nHeads_ + h;
        values_[i] = downsample(patterns[size_t(h)], causal_);
        thumbs_[i] = colourise(values_[i], g);
    }
    pending_[size_t(layer)] = false;
    update();
}

bool HeadGrid::isLayerPending(int layer) const {
    return layer >= 0 && layer < int(pending_.size()) && pending_[size_t(layer)];
}

int HeadGrid::pendingLayers() const { return int(std::count(pending_.begin(), pending_.end(), true)); }

void HeadGrid::setPatterns(const std::vector<std::vector<Matrix>>& perLayerPerHead, bool causal) {
    const int nHeads = perLayerPerHead.empty() ? 0 : int(perLayerPerHead.front().size());
    for (const auto& layer : perLayerPerHead)
        if (int(layer.size()) != nHeads) throw InputError(tr("layers have different numbers of heads"));
    setPatterns(int(perLayerPerHead.size()), nHeads,
                [&](int l, int h) { return perLayerPerHead[size_t(l)][size_t(h)]; }, causal);
}

void HeadGrid::clear() { setPatterns(0, 0, {}); }

void HeadGrid::setHeadScores(const Matrix& scores, const QString& name) {
    if (scores.size() != 0 && (scores.rows() != nLayers_ || scores.cols() != nHeads_))
        throw InputError(tr("head scores are %1×%2, the grid has %3 layers × %4 heads")
                             .arg(scores.rows()).arg(scores.cols()).arg(nLayers_).arg(nHeads_));
    scores_ = scores;
    scoreName_ = name;
    update();
}

void HeadGrid::setSelectedHead(int layer, int head) {
    const bool valid = layer >= 0 && head >= 0 && layer < nLayers_ && head < nHeads_;
    selLayer_ = valid ? layer : -1;
    selHead_ = valid ? head : -1;
    update();
}

std::optional<std::pair<int, int>> HeadGrid::selectedHead() const {
    if (selLayer_ < 0) return std::nullopt;
    return std::make_pair(selLayer_, selHead_);
}

HeadGrid::Geometry HeadGrid::geometry(QSize size) const {
    const QFontMetrics fm(font());
    Geometry g;
    g.gap = 4;
    g.left = fm.horizontalAdvance(QStringLiteral("L%1").arg(std::max(0, nLayers_ - 1))) + 10;
    g.top = fm.height() + 6;
    g.cell = 0;
    g.bar = 0;
    const int margin = 6;
    if (nLayers_ == 0 || nHeads_ == 0) return g;
    const int w = (size.width() - g.left - margin) / nHeads_ - g.gap;
    int h = (size.height() - g.top - margin) / nLayers_ - g.gap;
    if (scores_.size()) {
        g.bar = std::clamp(h / 12, 3, 6) + 2; // bar plus a 2 px gap above it
        h -= g.bar;
    }
    g.cell = std::max(4, std::min(w, h));
    // Centre the grid horizontally.
    g.left += std::max(0, (size.width() - g.left - margin - nHeads_ * g.pitchX()) / 2);
    return g;
}

QRect HeadGrid::cellRect(const Geometry& g, int layer, int head) const {
    return QRect(g.left + head * g.pitchX(), g.top + layer * g.pitchY(), g.cell, g.cell);
}

QRect HeadGrid::cellRect(int layer, int head) const { return cellRect(geometry(), layer, head); }

std::optional<std::pair<int, int>> HeadGrid::headAt(const QPoint& pos) const {
    const Geometry g = geometry();
    if (g.cell <= 0 || pos.x() < g.left || pos.y() < g.top) return std::nullopt;
    const int head = (pos.x() - g.left) / g.pitchX();
    const int layer = (pos.y() - g.top) / g.pitchY();
    if (layer >= nLayers_ || head >= nHeads_ || !cellRect(g, layer, head).contains(pos)) return std::nullopt;
    return std::make_pair(layer, head);
}

QSize HeadGrid::sizeHint() const {
    const int cell = 56, gap = 4;
    return QSize(40 + std::max(1, nHeads_) * (cell + gap), 30 + std::max(1, nLayers_) * (cell + gap));
}

QSize HeadGrid::minimumSizeHint() const {
    return QSize(40 + std::max(1, nHeads_) * 12, 30 + std::max(1, nLayers_) * 12);
}

void HeadGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paintGrid(p, size(), palette(), Appearance::instance().isDark(), thumbs_);
}

void HeadGrid::paintGrid(QPainter& p, QSize size, const QPalette& palette, bool dark,
                         const std::vector<QImage>& images) const {
    const Geometry g = geometry(size);
    if (g.cell <= 0) {
        p.setPen(palette.color(QPalette::PlaceholderText));
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Run a prompt to see every head's attention pattern here."));
        return;
    }
    p.setFont(font());
    p.setPen(palette.color(QPalette::Text));
    // Label every k-th row/column when cells are smaller than the labels.
    const QFontMetrics fm(font());
    const int colStep = std::max(1, int(std::ceil((fm.horizontalAdvance(QStringLiteral("H99")) + 2.0) / g.pitchX())));
    const int rowStep = std::max(1, int(std::ceil((fm.height() + 1.0) / g.pitchY())));
    for (int h = 0; h < nHeads_; h += colStep) {
        const QRect r = cellRect(g, 0, h);
        p.drawText(QRect(r.left() - g.gap, 0, r.width() + 2 * g.gap, g.top - 3), Qt::AlignHCenter | Qt::AlignBottom,
                   QStringLiteral("H%1").arg(h));
    }
    for (int l = 0; l < nLayers_; l += rowStep) {
        const QRect r = cellRect(g, l, 0);
        p.drawText(QRect(0, r.top(), g.left - 6, r.height()), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("L%1").arg(l));
    }
    for (int l = 0; l < nLayers_; ++l)
        for (int h = 0; h < nHeads_; ++h) {
            const QRect r = cellRect(g, l, h);
            const QImage& img = images[size_t(l) * nHeads_ + h];
            if (img.isNull()) {
                p.fillRect(r, maskedCellColor(dark));
                if (pending_[size_t(l)]) { // still being computed: hatched, "…"
                    p.fillRect(r, QBrush(palette.color(QPalette::Mid), Qt::BDiagPattern));
                    if (r.width() >= 24) p.drawText(r, Qt::AlignCenter, QStringLiteral("…"));
                }
                continue;
            }
            // Upscaled thumbnails stay blocky (crisp cells); downscaled ones are filtered.
            p.setRenderHint(QPainter::SmoothPixmapTransform, img.width() > r.width());
            p.drawImage(r, img);
            if (g.bar > 0) {
                const double s = std::clamp(double(scores_(l, h)), 0.0, 1.0);
                const QRect bar(r.left(), r.bottom() + 3, r.width(), g.bar - 2);
                p.fillRect(bar, palette.color(QPalette::Midlight));
                p.fillRect(QRect(bar.left(), bar.top(), int(std::lround(s * bar.width())), bar.height()),
                           QColor(0xff, 0x8c, 0x00));
            }
        }
    if (selLayer_ >= 0) {
        p.setRenderHint(QPainter::Antialiasing, false);
        p.setPen(QPen(QColor(0xe6, 0x19, 0x4b), 3));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cellRect(g, selLayer_, selHead_).adjusted(-2, -2, 1, 1 + g.bar)); // around thumbnail and bar
    }
}

QString HeadGrid::figureTitle() const {
    return scoreName_.isEmpty() ? tr("Attention patterns of every head")
                                : tr("Attention patterns of every head (bars: %1 score)").arg(scoreName_);
}

QSize HeadGrid::figureSize() const { return size().isEmpty() ? sizeHint() : size(); }

void HeadGrid::paintFigure(QCPPainter& painter, QSize size, bool) {
    // light, like print: the thumbnails again in the light theme's colours
    const QPalette light = Appearance::lightPalette();
    const QCPColorGradient g = sequentialGradient(false);
    std::vector<QImage> images(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) images[i] = colourise(values_[i], g);
    painter.fillRect(QRect(QPoint(0, 0), size), light.color(QPalette::Base));
    paintGrid(painter, size, light, false, images);
}

ValueTable HeadGrid::figureValues() const {
    if (scores_.size() == 0) return {};
    QStringList layers, heads;
    for (int l = 0; l < nLayers_; ++l) layers << QStringLiteral("L%1").arg(l);
    for (int h = 0; h < nHeads_; ++h) heads << QStringLiteral("H%1").arg(h);
    return valueTableOf(scores_, layers, heads, tr("%1 score").arg(scoreName_));
}

void HeadGrid::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
    if (const auto hit = headAt(event->pos())) {
        setSelectedHead(hit->first, hit->second);
        emit headClicked(hit->first, hit->second);
    }
}

bool HeadGrid::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (const auto hit = headAt(help->pos())) {
            QString text = tr("layer %1, head %2").arg(hit->first).arg(hit->second);
            if (scores_.size())
                text += QStringLiteral("\n%1: %2").arg(scoreName_).arg(double(scores_(hit->first, hit->second)), 0, 'f', 2);
            QToolTip::showText(help->globalPos(), text, this);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace attnscope
