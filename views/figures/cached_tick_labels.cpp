#include "views/figures/cached_tick_labels.h"

#include <qcustomplot.h>

#include <QHash>
#include <QPaintEngine>
#include <QStaticText>

#include <vector>

namespace attnscope {
namespace {

constexpr int kMaxCachedLabels = 4096; // per axis: both the label layouts and QCustomPlot's label pixmaps

/// QCPAxisPainterPrivate (QCustomPlot 2.1's axis renderer, virtual hooks per tick label) with
/// per-text caches of the label layout and glyphs.
class CachedLabelPainter : public QCPAxisPainterPrivate {
public:
    CachedLabelPainter(QCustomPlot* plot, const QCPAxisPainterPrivate& from) : QCPAxisPainterPrivate(plot) {
        // The axis' setters write straight into these members, so carry over what was set so far.
        type = from.type;
        basePen = from.basePen;
        lowerEnding = from.lowerEnding;
        upperEnding = from.upperEnding;
        labelPadding = from.labelPadding;
        labelFont = from.labelFont;
        labelColor = from.labelColor;
        label = from.label;
        tickLabelPadding = from.tickLabelPadding;
        tickLabelRotation = from.tickLabelRotation;
        tickLabelSide = from.tickLabelSide;
        substituteExponent = from.substituteExponent;
        numberMultiplyCross = from.numberMultiplyCross;
        tickLengthIn = from.tickLengthIn;
        tickLengthOut = from.tickLengthOut;
        subTickLengthIn = from.subTickLengthIn;
        subTickLengthOut = from.subTickLengthOut;
        tickPen = from.tickPen;
        subTickPen = from.subTickPen;
        tickLabelFont = from.tickLabelFont;
        tickLabelColor = from.tickLabelColor;
        axisRect = from.axisRect;
        viewportRect = from.viewportRect;
        offset = from.offset;
        abbreviateDecimalPowers = from.abbreviateDecimalPowers;
        reversedEndings = from.reversedEndings;
        subTickPositions = from.subTickPositions;
        tickPositions = from.tickPositions;
        tickLabels = from.tickLabels;
        mLabelCache.setMaxCost(kMaxCachedLabels);
    }

    /// Largest rotated label box of `labels` in the tick-label font; kept as the minimum label size.
    void reserve(const QFont& font, const QStringList& labels) {
        reserved_ = QSize();
        for (const QString& text : labels)
            if (!text.isEmpty()) reserved_ = reserved_.expandedTo(getTickLabelData(font, text).rotatedTotalBounds.size());
    }

protected:
    void placeTickLabel(QCPPainter* painter, double position, int distanceToAxis, const QString& text,
                        QSize* tickLabelsSize) override {
        QCPAxisPainterPrivate::placeTickLabel(painter, position, distanceToAxis, text, tickLabelsSize);
        *tickLabelsSize = tickLabelsSize->expandedTo(reserved_); // axis title stays put
    }

    void getMaxTickLabelSize(const QFont& font, const QString& text, QSize* tickLabelsSize) const override {
        QCPAxisPainterPrivate::getMaxTickLabelSize(font, text, tickLabelsSize);
        *tickLabelsSize = tickLabelsSize->expandedTo(reserved_); // margin stays put
    }

    TickLabelData getTickLabelData(const QFont& font, const QString& text) const override {
        // The layout depends on the font (the margin pass gets the axis' font, the draw pass the
        // painter's device-resolved copy of it, which need not compare equal), the rotation and the
        // exponent splitting: one table per combination, a handful at most.
        Layouts* table = nullptr;
        for (Layouts& t : layouts_)
            if (t.font == font && t.rotation == tickLabelRotation && t.substitute == substituteExponent &&
                t.cross == numberMultiplyCross && t.abbreviate == abbreviateDecimalPowers)
                table = &t;
        if (!table) {
            if (layouts_.size() >= 4) layouts_.clear();
            layouts_.push_back({font, tickLabelRotation, substituteExponent, numberMultiplyCross, abbreviateDecimalPowers, {}});
            table = &layouts_.back();
        }
        if (const auto it = table->byText.constFind(text); it != table->byText.constEnd()) return *it;
        if (table->byText.size() >= kMaxCachedLabels) table->byText.clear();
        const TickLabelData d = QCPAxisPainterPrivate::getTickLabelData(font, text);
        table->byText.insert(text, d);
        return d;
    }

    void drawTickLabel(QCPPainter* painter, double x, double y, const TickLabelData& d) const override {
        const QPaintEngine* engine = painter->paintEngine();
        if (!d.expPart.isEmpty() || !engine || engine->type() != QPaintEngine::Raster)
            return QCPAxisPainterPrivate::drawTickLabel(painter, x, y, d);
        if (glyphs_.size() >= kMaxCachedLabels || d.baseFont != glyphFont_) {
            glyphs_.clear();
            glyphFont_ = d.baseFont;
        }
        QStaticText& text = glyphs_[d.basePart];
        if (text.text().isEmpty()) {
            text.setTextFormat(Qt::PlainText); // "<a&b>" is a token, not markup
            text.setText(d.basePart);
            text.prepare(QTransform(), d.baseFont); // lays out once, for size(); rotation is applied when drawn
        }
        // Same placement as the base class' drawText(0, 0, w, h, TextDontClip | AlignHCenter, text).
        const QTransform oldTransform = painter->transform();
        const QFont oldFont = painter->font();
        painter->translate(x, y);
        if (!qFuzzyIsNull(tickLabelRotation)) painter->rotate(tickLabelRotation);
        painter->setFont(d.baseFont);
        painter->drawStaticText(QPointF((d.totalBounds.width() - text.size().width()) / 2.0, 0.0), text);
        painter->setTransform(oldTransform);
        painter->setFont(oldFont);
    }

private:
    struct Layouts {
        QFont font;
        double rotation;
        bool substitute, cross, abbreviate;
        QHash<QString, TickLabelData> byText;
    };
    QSize reserved_;
    mutable std::vector<Layouts> layouts_;
    mutable QHash<QString, QStaticText> glyphs_; // prepared in glyphFont_
    mutable QFont glyphFont_;
};

/// Reaches QCPAxis' protected painter pointer (a pointer to member named through a derived class).
struct AxisPainterSlot : QCPAxis {
    static QCPAxisPainterPrivate*& of(QCPAxis* axis) { return axis->*(&AxisPainterSlot::mAxisPainter); }
};

} // namespace

void installCachedTickLabels(QCPAxis* axis) {
    QCPAxisPainterPrivate*& painter = AxisPainterSlot::of(axis);
    if (dynamic_cast<CachedLabelPainter*>(painter)) return;
    auto* cached = new CachedLabelPainter(axis->parentPlot(), *painter);
    delete painter;
    painter = cached;
}

void reserveTickLabelSpace(QCPAxis* axis, const QStringList& labels) {
    if (auto* painter = dynamic_cast<CachedLabelPainter*>(AxisPainterSlot::of(axis))) {
        painter->tickLabelRotation = axis->tickLabelRotation(); // as QCPAxis sets it before drawing
        painter->reserve(axis->tickLabelFont(), labels);
    }
}

} // namespace attnscope
