#include "views/residual/ablation_panel.h"

#include "model/core/csv_writer.h"
#include "views/common/top_tokens_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSet>
#include <QVBoxLayout>
#include <QtConcurrent>

namespace attnscope {

namespace {
constexpr int kLayerRole = Qt::UserRole;
constexpr int kHeadRole = Qt::UserRole + 1;

QVector<TopToken> toRows(const Model& model, const std::vector<TokenScore>& scores) {
    QVector<TopToken> rows;
    for (const TokenScore& t : scores) rows.push_back({t.id, model.tokenizer().displayToken(t.id), t.logit, t.prob});
    return rows;
}
} // namespace

AblationView::AblationView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    auto* left = new QVBoxLayout;
    left->addWidget(new QLabel(tr("Heads to ablate:")));
    heads_ = new QListWidget;
    heads_->setToolTip(tr("Tick the heads to knock out. Their z (pattern·V) is replaced before W_O; b_O is kept."));
    left->addWidget(heads_, 1);
    auto* clear = new QPushButton(tr("Clear"));
    left->addWidget(clear);
    kindCombo_ = new QComboBox;
    kindCombo_->addItem(tr("zero ablation"), int(HeadAblation::Kind::Zero));
    kindCombo_->addItem(tr("mean ablation"), int(HeadAblation::Kind::Mean));
    kindCombo_->setItemData(0, tr("z_h := 0 at every position"), Qt::ToolTipRole);
    kindCombo_->setItemData(1, tr("z_h := its mean over this prompt's positions"), Qt::ToolTipRole);
    left->addWidget(kindCombo_);
    runButton_ = new QPushButton(tr("Run ablation"));
    left->addWidget(runButton_);
    auto* csv = new QPushButton(tr("Export CSV…"));
    left->addWidget(csv);
    layout->addLayout(left);

    auto* right = new QVBoxLayout;
    result_ = new QLabel(tr("Tick heads and press Run ablation."));
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    right->addWidget(result_);
    auto* tables = new QHBoxLayout;
    auto* beforeBox = new QGroupBox(tr("Top next tokens, clean"));
    (new QVBoxLayout(beforeBox))->addWidget(before_ = new TopTokensView);
    auto* afterBox = new QGroupBox(tr("Top next tokens, ablated"));
    (new QVBoxLayout(afterBox))->addWidget(after_ = new TopTokensView);
    for (TopTokensView* t : {before_, after_}) t->setEmptyText(tr("Tick heads and press Run ablation."));
    tables->addWidget(beforeBox);
    tables->addWidget(afterBox);
    right->addLayout(tables, 1);
    layout->addLayout(right, 1);

    connect(runButton_, &QPushButton::clicked, this, &AblationView::run);
    connect(clear, &QPushButton::clicked, this, [this] { setAblatedHeads({}); });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export ablation"), "ablation.csv", tr("CSV (*.csv)"));
        if (!path.isEmpty())
            if (QString e = exportCsv(path); !e.isEmpty()) result_->setText(e);
    });
    connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, [this] {
        runButton_->setEnabled(model_ && cache_);
        const Outcome o = watcher_.result();
        if (watcher_.property("generation").toInt() != generation_) return; // stale: the prompt changed
        preview_ = o.preview;
        if (preview_) {
            before_->setTokens(toRows(*model_, preview_->topBefore));
            after_->setTokens(toRows(*model_, preview_->topAfter));
        }
        result_->setText(resultText().isEmpty() ? o.error : resultText());
        emit finished();
    });
    runButton_->setEnabled(false);
}

AblationView::~AblationView() { watcher_.waitForFinished(); }

void AblationView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache) {
    const auto checked = ablatedHeads();
    const bool newModel = model != model_;
    model_ = std::move(model);
    cache_ = std::move(cache);
    ++generation_;
    preview_.reset();
    before_->setRowCount(0);
    after_->setRowCount(0);
    result_->setText(tr("Tick heads and press Run ablation."));
    runButton_->setEnabled(model_ && cache_ && !watcher_.isRunning());
    if (newModel) {
        heads_->clear();
        if (model_)
            for (int l = 0; l < model_->config().n_layers; ++l)
                for (int h = 0; h < model_->config().n_heads; ++h) {
                    auto* item = new QListWidgetItem(QStringLiteral("L%1H%2").arg(l).arg(h), heads_);
                    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
                    item->setCheckState(Qt::Unchecked);
                    item->setData(kLayerRole, l);
                    item->setData(kHeadRole, h);
                }
        setAblatedHeads(checked);
    }
}

void AblationView::setTarget(int position, int token, int counterToken, const QString& description) {
    if (position == position_ && token == token_ && counterToken == counterToken_) return;
    position_ = position;
    token_ = token;
    counterToken_ = counterToken;
    description_ = description;
    ++generation_;
    preview_.reset();
    result_->setText(tr("Target: %1. Tick heads and press Run ablation.").arg(description_));
}

void AblationView::setAblatedHeads(const std::vector<std::pair<int, int>>& heads) {
    QSet<QPair<int, int>> want;
    for (auto [l, h] : heads) want.insert({l, h});
    for (int i = 0; i < heads_->count(); ++i) {
        QListWidgetItem* item = heads_->item(i);
        const QPair<int, int> key{item->data(kLayerRole).toInt(), item->data(kHeadRole).toInt()};
        item->setCheckState(want.contains(key) ? Qt::Checked : Qt::Unchecked);
    }
}

std::vector<std::pair<int, int>> AblationView::ablatedHeads() const {
    std::vector<std::pair<int, int>> out;
    for (int i = 0; i < heads_->count(); ++i)
        if (heads_->item(i)->checkState() == Qt::Checked)
            out.push_back({heads_->item(i)->data(kLayerRole).toInt(), heads_->item(i)->data(kHeadRole).toInt()});
    return out;
}

void AblationView::setKind(HeadAblation::Kind kind) { kindCombo_->setCurrentIndex(kind == HeadAblation::Kind::Zero ? 0 : 1); }

HeadAblation::Kind AblationView::kind() const { return HeadAblation::Kind(kindCombo_->currentData().toInt()); }

void AblationView::run() {
    if (!model_ || !cache_ || watcher_.isRunning()) return;
    AblationOptions opt;
    for (auto [l, h] : ablatedHeads()) opt.ablations.push_back({l, h, kind()});
    opt.position = position_;
    opt.token = token_;
    opt.counterToken = counterToken_;
    opt.topK = 10;
    result_->setText(tr("Running the ablated forward pass…"));
    runButton_->setEnabled(false);
    watcher_.setProperty("generation", generation_);
    auto model = model_;
    auto cache = cache_;
    watcher_.setFuture(QtConcurrent::run([model, cache, opt]() -> Outcome {
        try {
            // the app's cache keeps only the last position's logits: for another position the clean run is redone
            const int p = opt.position < 0 ? cache->nPositions() - 1 : opt.position;
            if (cache->logitRow(p) < 0) return {previewAblation(*model, cache->tokens, opt), {}};
            return {previewAblation(*model, *cache, opt), {}};
        } catch (const InputError& e) {
            return {std::nullopt, e.message()};
        } catch (const std::exception& e) {
            return {std::nullopt, QString::fromUtf8(e.what())};
        }
    }));
}

QString AblationView::resultText() const {
    if (!preview_) return {};
    const auto heads = ablatedHeads();
    QStringList names;
    for (auto [l, h] : heads) names << QStringLiteral("L%1H%2").arg(l).arg(h);
    return tr("%1 at position %2, %3 of %4:  %5 → %6  (Δ %7)")
        .arg(description_)
        .arg(preview_->position)
        .arg(kind() == HeadAblation::Kind::Zero ? tr("zero ablation") : tr("mean ablation"),
             names.isEmpty() ? tr("no heads") : names.join(QStringLiteral(", ")))
        .arg(preview_->before, 0, 'f', 4)
        .arg(preview_->after, 0, 'f', 4)
        .arg(preview_->delta, 0, 'f', 4);
}

QString AblationView::exportCsv(const QString& path) const {
    if (!preview_ || !model_) return tr("Nothing to export: run an ablation first.");
    std::vector<QStringList> rows;
    rows.push_back({"target", description_, QString::number(preview_->before, 'g', 9),
                    QString::number(preview_->after, 'g', 9), QString::number(preview_->delta, 'g', 9)});
    for (size_t i = 0; i < preview_->topBefore.size(); ++i)
        rows.push_back({QStringLiteral("top%1_clean").arg(i + 1), model_->tokenizer().displayToken(preview_->topBefore[i].id),
                        QString::number(preview_->topBefore[i].logit, 'g', 9), QString::number(preview_->topBefore[i].prob, 'g', 9), {}});
    for (size_t i = 0; i < preview_->topAfter.size(); ++i)
        rows.push_back({QStringLiteral("top%1_ablated").arg(i + 1), model_->tokenizer().displayToken(preview_->topAfter[i].id),
                        QString::number(preview_->topAfter[i].logit, 'g', 9), QString::number(preview_->topAfter[i].prob, 'g', 9), {}});
    QString error;
    writeCsv(path, {"row", "token", "before_or_logit", "after_or_prob", "delta"}, rows, &error);
    return error;
}

} // namespace attnscope
