#include "views/attention/attention_steps_panel.h"

#include "model/core/csv_writer.h"
#include "model/core/errors.h"
#include "views/attention/block_diagram.h"
#include "views/attention/matrix_table_model.h"
#include "views/figures/figure_actions.h"
#include "views/figures/table_figure.h"
#include "views/common/panel_state.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace attnscope {
namespace {

bool isSquareStep(const QString& name) {
    return name == QLatin1String("scores") || name == QLatin1String("scaled") || name == QLatin1String("softcapped") ||
           name == QLatin1String("masked") ||
           name == QLatin1String("pattern");
}

/// Name of the column axis: "key position", "d_head", "head · d_head", "d_model".
QString columnTitle(const AttentionStep& s) {
    if (isSquareStep(s.name)) return QObject::tr("key position");
    if (s.name == QLatin1String("q") || s.name == QLatin1String("k") || s.name == QLatin1String("v") ||
        s.name == QLatin1String("q_rot") || s.name == QLatin1String("k_rot") || s.name == QLatin1String("q_norm") ||
        s.name == QLatin1String("k_norm") || s.name == QLatin1String("z"))
        return QObject::tr("d_head");
    if (s.name == QLatin1String("concat")) return QObject::tr("head · d_head");
    return QObject::tr("d_model");
}

QLabel* wrappedLabel(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

} // namespace

AttentionStepsPanel::AttentionStepsPanel(QWidget* parent) : AnalysisPanel(parent) {
    diagram_ = new BlockDiagram;
    list_ = new QListWidget;
    list_->setMaximumWidth(200);
    list_->setToolTip(tr("Steps of the attention computation (Alt+Left/Right or P/N to move)"));
    prev_ = new QPushButton(tr("◀ Previous"));
    next_ = new QPushButton(tr("Next ▶"));
    prev_->setToolTip(tr("Previous step (Alt+Left or P)"));
    next_->setToolTip(tr("Next step (Alt+Right or N)"));
    export_ = new QPushButton(tr("Export step…"));
    export_->setToolTip(tr("Save this step's matrix as PNG, SVG, PDF or CSV"));

    name_ = new QLabel;
    QFont big = name_->font();
    big.setPointSizeF(big.pointSizeF() * 1.35);
    big.setBold(true);
    name_->setFont(big);
    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    mono.setPointSizeF(big.pointSizeF());
    formula_ = wrappedLabel(this);
    formula_->setFont(mono);
    shape_ = wrappedLabel(this);
    shape_->setFont(mono);
    meaning_ = wrappedLabel(this);
    note_ = wrappedLabel(this);
    note_->setForegroundRole(QPalette::PlaceholderText); // muted in both themes
    empty_ = new QLabel(tr("Run a prompt to step through the attention computation of the selected head."));
    empty_->setAlignment(Qt::AlignCenter);

    heatmap_ = new MatrixHeatmap;
    heatmap_->setEmptyText(tr("Run a prompt to step through the attention computation of the selected head."));
    compare_ = new MatrixHeatmap;
    compare_->hide();
    table_ = new QTableView;
    tableModel_ = new MatrixTableModel(this);
    table_->setModel(tableModel_);
    installTableFigure(table_, QStringLiteral("step"));
    table_->horizontalHeader()->setDefaultSectionSize(64);
    table_->verticalHeader()->setDefaultSectionSize(22);
    // [heatmap over comparison heatmap (additive step only)] | table
    auto* maps = new QSplitter(Qt::Vertical);
    maps->addWidget(heatmap_);
    maps->addWidget(compare_);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(maps);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto* head = new QHBoxLayout;
    head->addWidget(name_, 1);
    head->addWidget(export_);
    auto* text = new QVBoxLayout;
    text->addLayout(head);
    text->addWidget(formula_);
    text->addWidget(shape_);
    text->addWidget(meaning_);
    text->addWidget(note_);
    text->addWidget(split, 1);
    text->addWidget(empty_, 1);

    auto* nav = new QVBoxLayout;
    nav->addWidget(list_, 1);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(prev_);
    buttons->addWidget(next_);
    nav->addLayout(buttons);

    auto* body = new QHBoxLayout;
    body->addLayout(nav);
    body->addLayout(text, 1);
    auto* outer = new QVBoxLayout(this);
    outer->addWidget(diagram_);
    outer->addLayout(body, 1);

    connect(prev_, &QPushButton::clicked, this, &AttentionStepsPanel::previous);
    connect(next_, &QPushButton::clicked, this, &AttentionStepsPanel::next);
    connect(export_, &QPushButton::clicked, this, &AttentionStepsPanel::exportDialog);
    connect(list_, &QListWidget::currentRowChanged, this, [this](int row) { if (row >= 0) setCurrentIndex(row); });
    connect(diagram_, &BlockDiagram::boxClicked, this, [this](int box) {
        for (int i = 0; i < int(steps_.size()); ++i)
            if (BlockDiagram::boxForStep(steps_[size_t(i)].name, diagram_->rotary()) == box) return setCurrentIndex(i);
    });
    const auto shortcut = [this](QKeySequence key, void (AttentionStepsPanel::*slot)()) {
        auto* s = new QShortcut(key, this);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, slot);
    };
    shortcut(QKeySequence(Qt::ALT | Qt::Key_Right), &AttentionStepsPanel::next);
    shortcut(QKeySequence(Qt::ALT | Qt::Key_Left), &AttentionStepsPanel::previous);
    shortcut(QKeySequence(Qt::Key_N), &AttentionStepsPanel::next);
    shortcut(QKeySequence(Qt::Key_P), &AttentionStepsPanel::previous);
    showCurrent();
}

void AttentionStepsPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                                     const QStringList& tokenLabels) {
    model_ = std::move(model);
    cache_ = std::move(cache);
    tokens_ = tokenLabels;
    diagram_->setRotary(model_ && model_->config().positions == PositionKind::Rotary);
    rebuild();
}

void AttentionStepsPanel::setSelectedHead(int layer, int head) {
    if (layer == layer_ && head == head_ && !steps_.empty()) return;
    layer_ = layer;
    head_ = head;
    rebuild();
}

void AttentionStepsPanel::rebuild() {
    const QString keep = current_ < int(steps_.size()) ? steps_[size_t(current_)].name : QString();
    steps_.clear();
    if (model_ && cache_ && layer_ >= 0 && layer_ < cache_->nLayers() && !cache_->isLayerReady(layer_)) {
        // residuals-only cache: the main window recomputes the layer in the background, then selects it again
        emit statusMessage(tr("Computing layer %1…").arg(layer_));
    } else if (model_ && cache_) {
        try {
            steps_ = attentionSteps(*model_, *cache_, layer_, head_);
        } catch (const InputError& e) {
            emit statusMessage(e.message());
        }
    }
    if (!tokens_.isEmpty() && !steps_.empty() && tokens_.size() != steps_.front().rows) tokens_.clear();
    {
        const QSignalBlocker block(list_);
        list_->clear();
        for (size_t i = 0; i < steps_.size(); ++i)
            list_->addItem(QStringLiteral("%1. %2").arg(i + 1).arg(steps_[i].name));
    }
    current_ = 0;
    for (int i = 0; i < int(steps_.size()); ++i)
        if (steps_[size_t(i)].name == keep) current_ = i;
    showCurrent();
}

void AttentionStepsPanel::setCurrentIndex(int index) {
    if (steps_.empty()) return;
    index = std::clamp(index, 0, int(steps_.size()) - 1);
    if (index == current_ && list_->currentRow() == index) return;
    current_ = index;
    showCurrent();
}

void AttentionStepsPanel::next() { setCurrentIndex(current_ + 1); }
void AttentionStepsPanel::previous() { setCurrentIndex(current_ - 1); }

MatrixFigure AttentionStepsPanel::figureForStep(int index) const {
    MatrixFigure f;
    if (index < 0 || index >= int(steps_.size())) return f;
    const AttentionStep& s = steps_[size_t(index)];
    f.values = s.values;
    const bool tokenAxes = tokens_.size() == s.rows;
    if (s.rowAxis == AttentionStep::AxisKind::Tokens && tokenAxes) f.rowLabels = tokens_;
    if (s.colAxis == AttentionStep::AxisKind::Tokens && tokenAxes && s.cols == s.rows) f.colLabels = tokens_;
    f.rowTitle = isSquareStep(s.name) ? tr("query position") : tr("position");
    f.colTitle = columnTitle(s);
    f.title = tr("layer %1, head %2 — %3 = %4").arg(layer_).arg(head_).arg(s.name, s.formula);
    f.valueTitle = s.kind == AttentionStep::ValueKind::Probability ? tr("attention weight") : tr("value of %1").arg(s.name);
    f.scale = s.kind == AttentionStep::ValueKind::Probability ? MatrixFigure::Scale::Probability
                                                              : MatrixFigure::Scale::Signed;
    return f;
}

void AttentionStepsPanel::showCurrent() {
    const bool have = !steps_.empty();
    for (QWidget* w : std::initializer_list<QWidget*>{heatmap_, name_, formula_, shape_, meaning_, note_})
        w->setVisible(have);
    empty_->setVisible(!have);
    prev_->setEnabled(have && current_ > 0);
    next_->setEnabled(have && current_ + 1 < int(steps_.size()));
    export_->setEnabled(have);
    if (!have) {
        diagram_->setCurrentBox(-1);
        table_->hide();
        compare_->hide();
        heatmap_->setFigure({});
        return;
    }
    const AttentionStep& s = steps_[size_t(current_)];
    {
        const QSignalBlocker block(list_);
        list_->setCurrentRow(current_);
    }
    name_->setText(tr("Step %1 of %2: %3   (layer %4, head %5)")
                       .arg(current_ + 1).arg(steps_.size()).arg(s.name).arg(layer_).arg(head_));
    formula_->setText(s.formula);
    shape_->setText(tr("shape: %1    result %2×%3").arg(s.shape).arg(s.rows).arg(s.cols));
    meaning_->setText(s.meaning);
    QString note = s.note;
    if (!s.tokenIds.empty()) {
        QStringList ids;
        for (int id : s.tokenIds) ids << QString::number(id);
        note = tr("token ids (the rows of the one-hot B×S×V input, never built densely): [%1]").arg(ids.join(", ")) +
               (note.isEmpty() ? QString() : QStringLiteral("\n") + note);
    }
    note_->setText(note);
    note_->setVisible(!note.isEmpty());
    diagram_->setCurrentBox(BlockDiagram::boxForStep(s.name, diagram_->rotary()));

    const MatrixFigure figure = figureForStep(current_);
    heatmap_->setFigure(figure);
    const QString base = QStringLiteral("L%1_H%2_%3").arg(layer_).arg(head_).arg(s.name);
    heatmap_->figureActions()->setBaseName(base);
    tableFigureOf(table_)->figureActions()->setBaseName(base + QStringLiteral("_table"));
    tableFigureOf(table_)->setTitle(figure.title);
    // The additive step: show the concat·W_O result next to the per-head sum.
    const bool additive = s.name == QLatin1String("attn_out_additive");
    compare_->setVisible(additive);
    if (additive)
        for (int i = 0; i < int(steps_.size()); ++i)
            if (steps_[size_t(i)].name == QLatin1String("attn_out")) {
                MatrixFigure other = figureForStep(i);
                other.title = tr("attn_out = %1 (concat path)").arg(steps_[size_t(i)].formula);
                compare_->setFigure(other);
            }
    const bool small = s.rows <= kMaxTableSide && s.cols <= kMaxTableSide;
    table_->setVisible(small && !additive);
    if (small)
        tableModel_->setMatrix(s.values, figure.rowLabels.isEmpty() ? QStringList() : figure.rowLabels,
                               figure.colLabels);
    table_->resizeColumnsToContents();
}

QString AttentionStepsPanel::displayedName() const { return steps_.empty() ? QString() : steps_[size_t(current_)].name; }
QString AttentionStepsPanel::displayedFormula() const { return formula_->text(); }
QString AttentionStepsPanel::displayedShape() const { return shape_->text(); }
QString AttentionStepsPanel::displayedMeaning() const { return meaning_->text(); }
QString AttentionStepsPanel::displayedNote() const { return note_->text(); }

QString AttentionStepsPanel::exportCurrentStep(const QString& path, QSize size, double scale) {
    if (steps_.empty()) return path + tr(": no step to export (run a prompt first)");
    const MatrixFigure figure = figureForStep(current_);
    QString error;
    if (QFileInfo(path).suffix().compare(QLatin1String("csv"), Qt::CaseInsensitive) == 0) {
        writeMatrixCsv(path, figure.values, figure.rowLabels, figure.colLabels, &error);
        return error;
    }
    const std::optional<ImageFormat> format = imageFormatFromName(path);
    if (!format) return path + tr(": unknown format (use .png, .svg, .pdf or .csv)");
    exportMatrixFigure(figure, path, *format, size, scale, &error);
    return error;
}

void AttentionStepsPanel::exportDialog() {
    if (steps_.empty()) return;
    const QString suggested = QStringLiteral("L%1_H%2_%3.png").arg(layer_).arg(head_).arg(steps_[size_t(current_)].name);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export step"), suggested,
                                                      tr("PNG image (*.png);;SVG (*.svg);;PDF (*.pdf);;CSV (*.csv)"));
    if (path.isEmpty()) return;
    const QString error = exportCurrentStep(path);
    emit statusMessage(error.isEmpty() ? tr("Wrote %1").arg(path) : error);
}

QJsonObject AttentionStepsPanel::saveState() const {
    if (current_ >= int(steps_.size())) return {};
    return {{QStringLiteral("step"), steps_[size_t(current_)].name}};
}

void AttentionStepsPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    const auto name = r.string(QStringLiteral("step"));
    if (!name) return;
    for (int i = 0; i < int(steps_.size()); ++i)
        if (steps_[size_t(i)].name == *name) return setCurrentIndex(i);
    r.problem(steps_.empty() ? tr("step \"%1\" not shown: no steps to show yet").arg(*name)
                             : tr("this head has no step \"%1\"").arg(*name));
}

} // namespace attnscope
