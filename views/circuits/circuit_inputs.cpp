#include "views/circuits/circuit_inputs.h"

#include "model/transformer/prompt.h"
#include "views/common/token_picker.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

namespace attnscope {

namespace {
QString joined(const Tokenizer& tok, const std::vector<int>& ids) { return tokenLabels(tok, ids).join(QLatin1Char('|')); }
} // namespace

CircuitInputs::CircuitInputs(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    cleanEdit_ = new QLineEdit;
    cleanEdit_->setPlaceholderText(tr("empty = the prompt of the last run"));
    cleanEdit_->setToolTip(tr("The clean prompt: the run whose behaviour is to be explained."));
    corruptEdit_ = new QLineEdit;
    corruptEdit_->setPlaceholderText(tr("same number of tokens, e.g. with one name swapped"));
    corruptEdit_->setToolTip(tr("The corrupted prompt, tokenized like the clean one (BOS when the clean run starts with it)."));
    form->addRow(tr("Clean prompt:"), cleanEdit_);
    form->addRow(tr("Corrupted prompt:"), corruptEdit_);
    tokenization_ = new QLabel;
    tokenization_->setTextFormat(Qt::PlainText); // token texts such as "<s>" are not markup
    tokenization_->setWordWrap(true);
    tokenization_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(tr("Tokens:"), tokenization_);

    auto* metricRow = new QHBoxLayout;
    metricCombo_ = new QComboBox;
    metricCombo_->addItem(tr("logit difference"), int(PatchingMetricKind::LogitDiff));
    metricCombo_->addItem(tr("logit"), int(PatchingMetricKind::Logit));
    metricCombo_->addItem(tr("probability"), int(PatchingMetricKind::Prob));
    metricCombo_->addItem(tr("log-probability"), int(PatchingMetricKind::LogProb));
    metricCombo_->addItem(tr("KL(clean ‖ run)"), int(PatchingMetricKind::KL));
    metricCombo_->setItemData(0, tr("logit[t] − logit[t′] at the last position (raw logits, b_U included)"), Qt::ToolTipRole);
    metricCombo_->setItemData(4, tr("Σ_v P_clean(v)·(log P_clean(v) − log P_run(v)), nats"), Qt::ToolTipRole);
    token_ = new TokenPicker;
    token_->setPlaceholderText(tr("token t, e.g. ␣Mary"));
    counter_ = new TokenPicker;
    counter_->setPlaceholderText(tr("token t′, e.g. ␣John"));
    directionCombo_ = new QComboBox;
    directionCombo_->addItem(tr("denoise (clean → corrupted run)"), int(PatchDirection::Denoise));
    directionCombo_->addItem(tr("noise (corrupted → clean run)"), int(PatchDirection::Noise));
    metricRow->addWidget(metricCombo_);
    metricRow->addWidget(token_, 1);
    metricRow->addWidget(counter_, 1);
    metricRow->addWidget(directionCombo_);
    form->addRow(tr("Metric:"), metricRow);

    connect(cleanEdit_, &QLineEdit::textEdited, this, [this] { clearOverride(); });
    connect(corruptEdit_, &QLineEdit::textEdited, this, [this] { clearOverride(); });
    connect(metricCombo_, &QComboBox::currentIndexChanged, this, [this] {
        const PatchingMetricKind k = metricKind();
        token_->setVisible(k != PatchingMetricKind::KL);
        counter_->setVisible(k == PatchingMetricKind::LogitDiff);
        emit changed();
    });
    connect(directionCombo_, &QComboBox::currentIndexChanged, this, &CircuitInputs::changed);
    connect(token_, &TokenPicker::tokenChanged, this, &CircuitInputs::changed);
    connect(counter_, &TokenPicker::tokenChanged, this, &CircuitInputs::changed);
    updateTokenization();
}

void CircuitInputs::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache) {
    const bool newModel = model != model_;
    model_ = std::move(model);
    cache_ = std::move(cache);
    if (newModel) {
        const Tokenizer* tok = model_ ? &model_->tokenizer() : nullptr;
        token_->setTokenizer(tok);
        counter_->setTokenizer(tok);
        cleanOverride_.reset();
        corruptOverride_.reset();
    }
    updateTokenization();
    emit changed();
}

void CircuitInputs::clearOverride() {
    cleanOverride_.reset();
    corruptOverride_.reset();
    updateTokenization();
    emit changed();
}

void CircuitInputs::setPrompts(const QString& clean, const QString& corrupt) {
    cleanEdit_->setText(clean);
    corruptEdit_->setText(corrupt);
    clearOverride();
}

void CircuitInputs::setTokenIds(const std::vector<int>& clean, const std::vector<int>& corrupt) {
    cleanOverride_ = clean;
    corruptOverride_ = corrupt;
    updateTokenization();
    emit changed();
}

void CircuitInputs::setMetricKind(PatchingMetricKind kind) { metricCombo_->setCurrentIndex(metricCombo_->findData(int(kind))); }
PatchingMetricKind CircuitInputs::metricKind() const { return PatchingMetricKind(metricCombo_->currentData().toInt()); }
void CircuitInputs::setDirection(PatchDirection d) { directionCombo_->setCurrentIndex(directionCombo_->findData(int(d))); }
PatchDirection CircuitInputs::direction() const { return PatchDirection(directionCombo_->currentData().toInt()); }

bool CircuitInputs::prependBos() const {
    if (!model_) return false;
    const auto bos = model_->tokenizer().bosId();
    if (cache_ && !cache_->tokens.empty()) return bos && cache_->tokens.front() == *bos;
    return model_->tokenizer().addsBos();
}

std::vector<int> CircuitInputs::tokenize(const QString& text) const {
    return model_ ? tokenizePrompt(model_->tokenizer(), text, prependBos()) : std::vector<int>();
}

std::vector<int> CircuitInputs::cleanIds() const {
    if (cleanOverride_) return *cleanOverride_;
    if (!cleanEdit_->text().isEmpty()) return tokenize(cleanEdit_->text());
    return cache_ ? cache_->tokens : std::vector<int>();
}

std::vector<int> CircuitInputs::corruptIds() const {
    if (corruptOverride_) return *corruptOverride_;
    return corruptEdit_->text().isEmpty() ? std::vector<int>() : tokenize(corruptEdit_->text());
}

QString CircuitInputs::tokenizationText() const { return tokenization_->text(); }

void CircuitInputs::updateTokenization() {
    if (!model_) {
        tokenization_->setText(tr("Open a model."));
        return;
    }
    const Tokenizer& tok = model_->tokenizer();
    const std::vector<int> clean = cleanIds(), corrupt = corruptIds();
    if (!corrupt.empty() && corrupt.size() != clean.size()) {
        try {
            requireSameTokenLength(tok, clean, corrupt);
        } catch (const InputError& e) {
            tokenization_->setText(e.message());
            tokenization_->setStyleSheet(QStringLiteral("color: #c62828;"));
            return;
        }
    }
    tokenization_->setStyleSheet({});
    QString text = tr("clean (%1 tokens): %2").arg(clean.size()).arg(clean.empty() ? tr("run a prompt first") : joined(tok, clean));
    text += QStringLiteral("\n") + (corrupt.empty() ? tr("corrupted: none (only the ablations can run)")
                                                    : tr("corrupted (%1 tokens): %2").arg(corrupt.size()).arg(joined(tok, corrupt)));
    tokenization_->setText(text);
}

CircuitRunSpec CircuitInputs::spec(bool needCorrupt) const {
    if (!model_) throw InputError(tr("Open a model first."));
    CircuitRunSpec s;
    s.clean = cleanIds();
    s.corrupt = corruptIds();
    if (s.clean.empty()) throw InputError(tr("No clean prompt: type one or run a prompt."));
    if (needCorrupt && s.corrupt.empty()) throw InputError(tr("Type a corrupted prompt (the same number of tokens as the clean one)."));
    if (!s.corrupt.empty()) requireSameTokenLength(model_->tokenizer(), s.clean, s.corrupt);
    s.metric.kind = metricKind();
    if (s.metric.kind != PatchingMetricKind::KL) {
        if (!token_->tokenId())
            throw InputError(tr("Metric: pick the token t%1").arg(token_->problem().isEmpty() ? QString() : QStringLiteral(" (") + token_->problem() + QStringLiteral(")")));
        s.metric.token = *token_->tokenId();
    }
    if (s.metric.kind == PatchingMetricKind::LogitDiff) {
        if (!counter_->tokenId()) throw InputError(tr("Metric: pick the second token t′ of the logit difference"));
        s.metric.counterToken = *counter_->tokenId();
    }
    s.direction = direction();
    s.metricDescription = describePatchingMetric(s.metric, model_->tokenizer());
    return s;
}

} // namespace attnscope
