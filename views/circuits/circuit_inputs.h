#pragma once
// The inputs every causal circuit tool shares (Circuits tab): the clean prompt (empty = the prompt of the
// last forward pass), the corrupted prompt (tokenized the same way: BOS when the clean run starts with it),
// the metric (logit difference of two tokens, the logit or probability of one, or the KL divergence to the
// clean distribution) and the direction (denoise: clean activations into the corrupted run; noise: the
// reverse). Both tokenizations are shown; a token-length mismatch is the message of requireSameTokenLength.
// Math: model/analysis/{patching_metric,activation_patching}.h.

#include "model/analysis/circuits/activation_patching.h"

#include <QWidget>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QLineEdit;

namespace attnscope {

class TokenPicker;

/// What the clean and corrupted runs of one experiment are, as the inputs read them.
struct CircuitRunSpec {
    std::vector<int> clean, corrupt; ///< token ids; corrupt empty when no corrupted prompt was given
    PatchingMetric metric;
    PatchDirection direction = PatchDirection::Denoise;
    QString metricDescription;       ///< "logit[␣Mary] − logit[␣John]"
};

class CircuitInputs : public QWidget {
    Q_OBJECT
public:
    explicit CircuitInputs(QWidget* parent = nullptr);
    /// New model or forward pass: the clean prompt defaults to the cache's tokens.
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache);

    /// The prompts as text (clean "" = the last forward pass).
    void setPrompts(const QString& clean, const QString& corrupt);
    /// Token ids instead of text (as the CLI's --token-ids / --corrupt-token-ids); cleared by setPrompts or
    /// by typing.
    void setTokenIds(const std::vector<int>& clean, const std::vector<int>& corrupt);
    /// Ids of another prompt tokenized as the corrupted one is (reference prompts of the ablations).
    std::vector<int> tokenize(const QString& text) const;
    void setMetricKind(PatchingMetricKind kind);
    PatchingMetricKind metricKind() const;
    void setDirection(PatchDirection d);
    PatchDirection direction() const;
    TokenPicker* tokenPicker() const { return token_; }
    TokenPicker* counterPicker() const { return counter_; }
    QLineEdit* cleanEdit() const { return cleanEdit_; }
    QLineEdit* corruptEdit() const { return corruptEdit_; }

    /// The experiment as entered. Throws InputError: no model or run, a metric token missing, or prompts of
    /// different token lengths (requireSameTokenLength: the message shows both tokenizations). With
    /// `needCorrupt` a missing corrupted prompt is an error too.
    CircuitRunSpec spec(bool needCorrupt) const;
    /// The tokenization line as shown: "clean (N tokens): a|b|…   corrupted (M tokens): …", or the mismatch.
    QString tokenizationText() const;

signals:
    /// Something the runs depend on changed (results shown are now stale).
    void changed();

private:
    std::vector<int> cleanIds() const;
    std::vector<int> corruptIds() const;
    bool prependBos() const;
    void updateTokenization();
    void clearOverride();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::optional<std::vector<int>> cleanOverride_, corruptOverride_;
    QLineEdit* cleanEdit_;
    QLineEdit* corruptEdit_;
    QLabel* tokenization_;
    QComboBox* metricCombo_;
    TokenPicker* token_;
    TokenPicker* counter_;
    QComboBox* directionCombo_;
};

} // namespace attnscope
