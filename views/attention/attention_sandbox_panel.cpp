#include "views/attention/attention_sandbox_panel.h"

#include "model/analysis/attention/steps_json.h"
#include "model/core/errors.h"
#include "views/figures/appearance.h"
#include "views/attention/matrix_table_model.h"
#include "views/figures/table_figure.h"
#include "views/common/panel_state.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QPdfWriter>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {
namespace {

bool isInput(const QString& name) {
    return name == QLatin1String("X") || name.startsWith(QLatin1String("W_"));
}

bool hasWorksheetVariant(const QString& name) {
    return name == QLatin1String("scaled") || name == QLatin1String("A") || name == QLatin1String("Z");
}

QTableView* makeTable(MatrixTableModel* model, bool editable) {
    auto* view = new QTableView;
    view->setModel(model);
    view->horizontalHeader()->setMinimumSectionSize(38);
    view->verticalHeader()->setMinimumSectionSize(22);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(editable ? QAbstractItemView::AllEditTriggers : QAbstractItemView::NoEditTriggers);
    installTableFigure(view, QStringLiteral("sandbox"));
    return view;
}

} // namespace

QStringList AttentionSandboxPanel::matrixNames() {
    return {"X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "A", "Z"};
}

AttentionSandboxPanel::AttentionSandboxPanel(QWidget* parent) : AnalysisPanel(parent) {
    inputs_ = defaultSandboxInputs();

    conventionBox_ = new QComboBox;
    conventionBox_->addItem(tr("columns = tokens (worksheet)"));
    conventionBox_->addItem(tr("rows = tokens (GPT-2)"));
    conventionBox_->setToolTip(tr("Worksheet: tokens are the columns of X, scores = KᵀQ, softmax per column.\n"
                                  "GPT-2: tokens are rows, scores = Q·Kᵀ, softmax per row (every matrix transposed)."));
    worksheetBox_ = new QCheckBox(tr("worksheet arithmetic"));
    worksheetBox_->setToolTip(tr("Show the hand simplifications next to the exact values:\n"
                                 "⌊scores / round(√d_k)⌋ instead of scores / √d_k, and 3^x instead of e^x."));
    causalBox_ = new QCheckBox(tr("causal mask"));
    causalBox_->setToolTip(tr("A query may only attend to keys at its own or earlier positions (as in GPT-2)."));
    dIn_ = new QSpinBox;
    nTokens_ = new QSpinBox;
    dK_ = new QSpinBox;
    for (QSpinBox* s : {dIn_, nTokens_, dK_}) s->setRange(1, 16);
    dIn_->setValue(int(inputs_.X.rows()));
    nTokens_->setValue(int(inputs_.X.cols()));
    dK_->setValue(int(inputs_.W_Q.rows()));
    auto* reset = new QPushButton(tr("Reset example"));
    auto* png = new QPushButton(tr("Export PNG…"));
    auto* pdf = new QPushButton(tr("Export PDF…"));
    auto* blank = new QPushButton(tr("Blank template…"));
    blank->setToolTip(tr("Export the worksheet with the given matrices filled and every result cell empty (PNG or PDF)."));
    error_ = new QLabel;
    error_->hide();

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Convention:")));
    controls->addWidget(conventionBox_);
    controls->addWidget(worksheetBox_);
    controls->addWidget(causalBox_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("d_in")));
    controls->addWidget(dIn_);
    controls->addWidget(new QLabel(tr("tokens n")));
    controls->addWidget(nTokens_);
    controls->addWidget(new QLabel(tr("d_k = d_v")));
    controls->addWidget(dK_);
    controls->addStretch(1);
    controls->addWidget(reset);
    controls->addWidget(png);
    controls->addWidget(pdf);
    controls->addWidget(blank);

    buildWorksheet();
    applyTints(Appearance::instance().isDark());
    connect(&Appearance::instance(), &Appearance::changed, this, [this] { applyTints(Appearance::instance().isDark()); });
    auto* scroll = new QScrollArea;
    scroll->setWidget(worksheet_);
    scroll->setWidgetResizable(false);
    scroll->setBackgroundRole(QPalette::Base);
    auto* outer = new QVBoxLayout(this);
    outer->addLayout(controls);
    outer->addWidget(error_);
    outer->addWidget(scroll, 1);

    connect(conventionBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        setConvention(i == 0 ? SandboxConvention::Columns : SandboxConvention::Rows);
    });
    connect(worksheetBox_, &QCheckBox::toggled, this, &AttentionSandboxPanel::setWorksheetArithmetic);
    connect(causalBox_, &QCheckBox::toggled, this, [this](bool on) {
        inputs_.causal = on;
        recompute(false);
    });
    for (QSpinBox* s : {dIn_, nTokens_, dK_}) connect(s, &QSpinBox::valueChanged, this, [this] { resizeInputs(); });
    connect(reset, &QPushButton::clicked, this, [this] { setInputs(defaultSandboxInputs()); });
    connect(png, &QPushButton::clicked, this, [this] { exportDialog(false); });
    connect(pdf, &QPushButton::clicked, this, [this] { exportDialog(false); });
    connect(blank, &QPushButton::clicked, this, [this] { exportDialog(true); });
    recompute(true);
}

void AttentionSandboxPanel::buildWorksheet() {
    worksheet_ = new QWidget;
    worksheet_->setAutoFillBackground(true);
    QPalette pal = worksheet_->palette();
    pal.setColor(QPalette::Window, Qt::white);
    worksheet_->setPalette(pal);
    auto* grid = new QGridLayout(worksheet_);
    grid->setHorizontalSpacing(18);
    grid->setVerticalSpacing(14);
    grid->setContentsMargins(16, 12, 16, 16);
    intro_ = new QLabel;
    intro_->setWordWrap(true);
    QFont big = intro_->font();
    big.setPointSizeF(big.pointSizeF() * 1.15);
    intro_->setFont(big);
    grid->addWidget(intro_, 0, 0, 1, 4);
    // [given] X W_Q W_K W_V / [projections] Q K V / scores scaled / A Z: narrow enough for one screen
    // even with the hand-arithmetic tables next to scaled, A and Z.
    const QList<QStringList> rows{{"X", "W_Q", "W_K", "W_V"}, {"Q", "K", "V"}, {"scores", "scaled"}, {"A", "Z"}};
    for (int r = 0; r < rows.size(); ++r)
        for (int c = 0; c < rows[r].size(); ++c) {
            const QString name = rows[r][c];
            auto* card = new QFrame;
            card->setFrameShape(QFrame::StyledPanel);
            auto* v = new QVBoxLayout(card);
            auto* caption = new QLabel;
            caption->setTextFormat(Qt::RichText);
            v->addWidget(caption);
            auto* tables = new QHBoxLayout;
            v->addLayout(tables);
            auto* model = new MatrixTableModel(this);
            model->setEditable(isInput(name));
            model->setPrecision(isInput(name) ? 6 : 3);
            auto* view = makeTable(model, isInput(name));
            tables->addWidget(view, 0, Qt::AlignTop | Qt::AlignLeft);
            captions_[name] = caption;
            models_[name] = model;
            views_[name] = view;
            if (isInput(name))
                connect(model, &MatrixTableModel::cellEdited, this,
                        [this, name](int row, int col, double value) { onInputEdited(name, row, col, value); });
            if (hasWorksheetVariant(name)) {
                auto* wsBox = new QVBoxLayout;
                auto* wsCaption = new QLabel;
                auto* wsModel = new MatrixTableModel(this);
                if (name != QLatin1String("scaled")) wsModel->setFormatter([](double x) { return fractionText(x); });
                auto* wsView = makeTable(wsModel, false);
                wsBox->addWidget(wsCaption);
                wsBox->addWidget(wsView, 0, Qt::AlignTop | Qt::AlignLeft);
                wsBox->addStretch(1);
                tables->addLayout(wsBox);
                worksheetCaptions_[name] = wsCaption;
                worksheetModels_[name] = wsModel;
                worksheetViews_[name] = wsView;
            }
            tables->addStretch(1);
            v->addStretch(1);
            grid->addWidget(card, r + 1, c, Qt::AlignTop);
        }
}

MatrixTableModel* AttentionSandboxPanel::tableModel(const QString& name, bool worksheet) const {
    return (worksheet ? worksheetModels_ : models_).value(name, nullptr);
}

QTableView* AttentionSandboxPanel::tableView(const QString& name, bool worksheet) const {
    return (worksheet ? worksheetViews_ : views_).value(name, nullptr);
}

void AttentionSandboxPanel::setInputs(const SandboxInputs& inputs) {
    inputs_ = inputs;
    for (QSpinBox* s : {dIn_, nTokens_, dK_}) s->blockSignals(true);
    dIn_->setValue(int(inputs_.X.rows()));
    nTokens_->setValue(int(inputs_.X.cols()));
    dK_->setValue(int(inputs_.W_Q.rows()));
    for (QSpinBox* s : {dIn_, nTokens_, dK_}) s->blockSignals(false);
    causalBox_->blockSignals(true);
    causalBox_->setChecked(inputs_.causal);
    causalBox_->blockSignals(false);
    recompute(true);
}

void AttentionSandboxPanel::setConvention(SandboxConvention c) {
    convention_ = c;
    conventionBox_->blockSignals(true);
    conventionBox_->setCurrentIndex(c == SandboxConvention::Columns ? 0 : 1);
    conventionBox_->blockSignals(false);
    recompute(true);
}

void AttentionSandboxPanel::setWorksheetArithmetic(bool on) {
    worksheetArithmetic_ = on;
    worksheetBox_->blockSignals(true);
    worksheetBox_->setChecked(on);
    worksheetBox_->blockSignals(false);
    recompute(false);
}

void AttentionSandboxPanel::resizeInputs() {
    try {
        setInputs(resizedSandboxInputs(inputs_, dIn_->value(), nTokens_->value(), dK_->value(), dK_->value()));
    } catch (const InputError& e) {
        error_->setText(e.message());
        error_->show();
    }
}

void AttentionSandboxPanel::onInputEdited(const QString& name, int row, int col, double value) {
    // Tables show the displayed convention; the inputs are stored in the Columns convention.
    if (convention_ == SandboxConvention::Rows) std::swap(row, col);
    Matrix* m = name == QLatin1String("X") ? &inputs_.X
              : name == QLatin1String("W_Q") ? &inputs_.W_Q
              : name == QLatin1String("W_K") ? &inputs_.W_K : &inputs_.W_V;
    (*m)(row, col) = float(value);
    recompute(false);
}

QStringList AttentionSandboxPanel::labelsFor(const QString& axis, int n) const {
    QStringList out;
    for (int i = 1; i <= n; ++i) out << (axis.isEmpty() ? QString::number(i) : axis + QString::number(i));
    return out;
}

void AttentionSandboxPanel::recompute(bool refreshInputs) {
    try {
        result_ = runSandbox(inputs_, convention_);
        error_->hide();
    } catch (const InputError& e) {
        error_->setText(e.message());
        error_->show();
        return;
    }
    const bool cols = convention_ == SandboxConvention::Columns;
    const int n = int(inputs_.X.cols()), dIn = int(inputs_.X.rows()), dK = int(inputs_.W_Q.rows());
    const int dV = int(inputs_.W_V.rows());
    const QStringList tok = labelsFor(QStringLiteral("t"), n), keys = labelsFor(QStringLiteral("k"), n),
                      queries = labelsFor(QStringLiteral("q"), n), in = labelsFor({}, dIn), k = labelsFor({}, dK),
                      v = labelsFor({}, dV);
    // [rows, cols] labels in the Columns convention; Rows swaps them.
    struct Shown { const Matrix* exact; const Matrix* hand; QStringList rows, cols; QString caption, handCaption; };
    const QString root = QString::number(result_.exactDivisor, 'g', 4);
    const QString softmaxAxis = cols ? tr("each column") : tr("each row");
    const SandboxMatrices& e = result_.exact;
    const SandboxMatrices& h = result_.worksheet;
    auto shape = [cols](int r, int c, const QString& rn, const QString& cn) {
        return cols ? QStringLiteral("%1×%2 [%3, %4]").arg(r).arg(c).arg(rn, cn)
                    : QStringLiteral("%1×%2 [%3, %4]").arg(c).arg(r).arg(cn, rn);
    };
    const QMap<QString, Shown> shown{
        {"X", {&result_.X, nullptr, in, tok, tr("<b>X</b> (given) %1").arg(shape(dIn, n, "d_in", "token")), {}}},
        {"W_Q", {&result_.W_Q, nullptr, k, in, tr("<b>W_Q</b> (given) %1").arg(shape(dK, dIn, "d_k", "d_in")), {}}},
        {"W_K", {&result_.W_K, nullptr, k, in, tr("<b>W_K</b> (given) %1").arg(shape(dK, dIn, "d_k", "d_in")), {}}},
        {"W_V", {&result_.W_V, nullptr, v, in, tr("<b>W_V</b> (given) %1").arg(shape(dV, dIn, "d_v", "d_in")), {}}},
        {"Q", {&e.Q, nullptr, k, tok, tr("<b>Q = %1</b> %2").arg(cols ? "W_Q·X" : "X·W_Q", shape(dK, n, "d_k", "token")), {}}},
        {"K", {&e.K, nullptr, k, tok, tr("<b>K = %1</b> %2").arg(cols ? "W_K·X" : "X·W_K", shape(dK, n, "d_k", "token")), {}}},
        {"V", {&e.V, nullptr, v, tok, tr("<b>V = %1</b> %2").arg(cols ? "W_V·X" : "X·W_V", shape(dV, n, "d_v", "token")), {}}},
        {"scores", {&e.scores, nullptr, keys, queries,
                    tr("<b>scores = %1</b> %2").arg(cols ? "KᵀQ" : "Q·Kᵀ", shape(n, n, "key", "query")), {}}},
        {"scaled", {&e.scaled, &h.scaled, keys, queries,
                    tr("<b>scaled = scores / √%1</b> (÷ %2)").arg(result_.d_k).arg(root),
                    tr("by hand: ⌊scores / %1⌋").arg(result_.worksheetDivisor)}},
        {"A", {&e.A, &h.A, keys, queries, tr("<b>A = softmax</b> of %1 (e^x)").arg(softmaxAxis),
               tr("by hand: 3^x / Σ 3^x")}},
        {"Z", {&e.Z, &h.Z, v, queries,
               tr("<b>Z = %1</b> %2 — attention-weighted features").arg(cols ? "V·A" : "A·V", shape(dV, n, "d_v", "query")),
               tr("by hand")}},
    };
    for (auto it = shown.begin(); it != shown.end(); ++it) {
        const QString& name = it.key();
        const Shown& s = it.value();
        captions_[name]->setText(s.caption);
        const QStringList rl = cols ? s.rows : s.cols, cl = cols ? s.cols : s.rows;
        if (!isInput(name) || refreshInputs) {
            models_[name]->setMatrix(*s.exact, rl, cl);
            fitTableToContents(views_[name]);
        }
        if (s.hand) {
            worksheetModels_[name]->setMatrix(*s.hand, rl, cl);
            worksheetCaptions_[name]->setText(s.handCaption);
            fitTableToContents(worksheetViews_[name]);
            worksheetViews_[name]->setVisible(worksheetArithmetic_);
            worksheetCaptions_[name]->setVisible(worksheetArithmetic_);
        }
    }
    intro_->setText(cols ? tr("<b>Self-attention by hand.</b> The %1 tokens are the <i>columns</i> of X. "
                              "Q = W_Q·X, K = W_K·X, V = W_V·X; scores = KᵀQ (row = key, column = query); "
                              "scale by √d_k; softmax down each column; Z = V·A. Yellow cells are editable.")
                               .arg(n)
                         : tr("<b>Self-attention, GPT-2 layout.</b> The %1 tokens are the <i>rows</i> of X "
                              "(every matrix is the transpose of the worksheet's). Q = X·W_Q; scores = Q·Kᵀ "
                              "(row = query, column = key); scale by √d_k; softmax along each row; Z = A·V. "
                              "Yellow cells are editable.").arg(n));
    worksheet_->adjustSize();
}

QString AttentionSandboxPanel::exportWorksheet(const QString& path, bool blank, double scale) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("pdf"))
        return path + tr(": the worksheet exports as .png or .pdf");
    if (!(scale > 0 && scale <= 8)) return path + tr(": scale %1 must be in (0, 8]").arg(scale);
    for (const QString& name : matrixNames())
        if (!isInput(name)) {
            models_[name]->setBlank(blank);
            if (MatrixTableModel* ws = worksheetModels_.value(name)) ws->setBlank(blank);
        }
    const bool dark = Appearance::instance().isDark();
    if (dark) { // the worksheet is printed: drawn light whatever the screen's theme
        worksheet_->setPalette(Appearance::lightPalette());
        applyTints(false);
    }
    worksheet_->ensurePolished();
    worksheet_->layout()->activate();
    worksheet_->adjustSize();
    const QSize size = worksheet_->size();
    QString error;
    if (suffix == QLatin1String("png")) {
        QImage image(QSize(int(std::ceil(size.width() * scale)), int(std::ceil(size.height() * scale))),
                     QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(scale);
        image.fill(Qt::white);
        worksheet_->render(&image);
        if (!image.save(path, "PNG")) error = path + tr(": cannot write PNG (folder missing or not writable?)");
    } else {
        QPdfWriter pdf(path);
        pdf.setPageSize(QPageSize(QPageSize::A4));
        pdf.setPageOrientation(QPageLayout::Landscape);
        pdf.setPageMargins(QMarginsF(10, 10, 10, 10), QPageLayout::Millimeter);
        pdf.setTitle(blank ? tr("Self-attention by hand (blank)") : tr("Self-attention by hand"));
        pdf.setCreator(QStringLiteral("AttnScope"));
        QPainter painter;
        if (!painter.begin(&pdf)) {
            error = path + tr(": cannot write PDF (folder missing or not writable?)");
        } else {
            const double fit = std::min(double(pdf.width()) / size.width(), double(pdf.height()) / size.height());
            painter.scale(fit, fit);
            worksheet_->render(&painter);
            painter.end();
        }
    }
    for (const QString& name : matrixNames()) {
        if (MatrixTableModel* m = models_.value(name)) m->setBlank(false);
        if (MatrixTableModel* ws = worksheetModels_.value(name)) ws->setBlank(false);
    }
    if (dark) {
        worksheet_->setPalette(QPalette()); // the application's (dark) palette again
        applyTints(true);
    }
    return error;
}

void AttentionSandboxPanel::applyTints(bool dark) {
    // editable inputs yellow, the hand-arithmetic tables orange: light tints on the light theme, dark ones on the dark
    const QString text = dark ? QStringLiteral("#e6e6e6") : QStringLiteral("#000000");
    const QString input = QStringLiteral("QTableView { background: %1; color: %2; }").arg(dark ? "#3b3520" : "#fffbe6", text);
    const QString hand = QStringLiteral("QTableView { background: %1; color: %2; }").arg(dark ? "#3d2c1a" : "#fff3e0", text);
    for (auto it = views_.cbegin(); it != views_.cend(); ++it)
        if (isInput(it.key())) it.value()->setStyleSheet(input);
    for (QTableView* v : std::as_const(worksheetViews_)) v->setStyleSheet(hand);
    for (QLabel* l : std::as_const(worksheetCaptions_))
        l->setStyleSheet(QStringLiteral("color: %1;").arg(dark ? "#f0b060" : "#7a4b00"));
    error_->setStyleSheet(QStringLiteral("color: %1;").arg(dark ? "#ff8080" : "#b00000"));
}

void AttentionSandboxPanel::exportDialog(bool blank) {
    const QString path = QFileDialog::getSaveFileName(
        this, blank ? tr("Export blank worksheet") : tr("Export worksheet"),
        blank ? QStringLiteral("attention_worksheet_blank.pdf") : QStringLiteral("attention_worksheet.png"),
        tr("PNG image (*.png);;PDF (*.pdf)"));
    if (path.isEmpty()) return;
    const QString error = exportWorksheet(path, blank);
    emit statusMessage(error.isEmpty() ? tr("Wrote %1").arg(path) : error);
}

namespace {
const QStringList kConventionNames{QStringLiteral("columns"), QStringLiteral("rows")}; // session files
} // namespace

QJsonObject AttentionSandboxPanel::saveState() const {
    return {{QStringLiteral("convention"), kConventionNames.value(convention_ == SandboxConvention::Columns ? 0 : 1)},
            {QStringLiteral("worksheetArithmetic"), worksheetArithmetic_},
            {QStringLiteral("causal"), inputs_.causal},
            {QStringLiteral("X"), matrixToJson(inputs_.X)},
            {QStringLiteral("W_Q"), matrixToJson(inputs_.W_Q)},
            {QStringLiteral("W_K"), matrixToJson(inputs_.W_K)},
            {QStringLiteral("W_V"), matrixToJson(inputs_.W_V)}};
}

void AttentionSandboxPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    SandboxInputs in = inputs_;
    bool changed = false;
    for (auto [key, m] : {std::pair{QStringLiteral("X"), &in.X}, std::pair{QStringLiteral("W_Q"), &in.W_Q},
                          std::pair{QStringLiteral("W_K"), &in.W_K}, std::pair{QStringLiteral("W_V"), &in.W_V}})
        if (auto v = r.matrix(key, 16, 16)) {
            *m = *v;
            changed = true;
        }
    if (auto c = r.boolean(QStringLiteral("causal"))) {
        in.causal = *c;
        changed = true;
    }
    if (changed) {
        try {
            runSandbox(in); // the sizes must fit together
            setInputs(in);
        } catch (const InputError& e) {
            r.problem(tr("the saved matrices do not fit together (%1); kept the current ones").arg(e.message()));
        }
    }
    if (auto c = r.choice(QStringLiteral("convention"), kConventionNames))
        setConvention(*c == 0 ? SandboxConvention::Columns : SandboxConvention::Rows);
    if (auto w = r.boolean(QStringLiteral("worksheetArithmetic"))) setWorksheetArithmetic(*w);
}

} // namespace attnscope
