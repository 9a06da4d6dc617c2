#pragma once
// The Features tab: a sparse dictionary (SAE or transcoder, model/features) run on the prompt. For each token
// its firing features (largest first) and the reconstruction error; for the chosen feature its activation
// across the prompt as coloured text, its decoder direction read in embedding space (promoted / suppressed
// tokens), its encoder direction read through W_E, its direct logit attribution to the prediction at the
// chosen position, and steering: the continuation with α·W_dec[f] added, beside the clean one. The prompt's
// loss with the reconstruction spliced in, against clean and zero-ablated, heads the tab.
// The window opens dictionaries (dictionaryRequested → setDictionaries); the math runs as BackgroundTool jobs.

#include "model/analysis/features/feature_activations.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "views/common/analysis_panel.h"
#include "views/common/background_tool.h"

#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class FeatureDashboard;

class FeaturesPanel : public AnalysisPanel {
    Q_OBJECT
public:
    explicit FeaturesPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Features"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;
    void waitForIdle() override;

    /// The dictionaries the window opened for `path` (null with `error` when it could not).
    void setDictionaries(std::shared_ptr<const DictionarySet> set, const QString& path, const QString& error = {});
    /// Names offered in the dictionary list before any is opened (the bundled demo dictionaries).
    void setKnownDictionaries(const QStringList& paths);
    std::shared_ptr<const DictionarySet> dictionaries() const { return set_; }
    /// Selects a position and a feature (tests, sessions).
    void selectPosition(int position);
    void selectFeature(int feature);
    int selectedFeature() const { return feature_; }
    /// Labels for the dictionary's features (File → Open Feature Labels), looked up at the layer the dictionary reads:
    /// shown beside each firing feature and above the chosen one's card. Null: none.
    void setFeatureLabels(std::shared_ptr<const FeatureLabels> labels);
    /// The label of `feature` ("" when none is known).
    QString featureLabel(int feature) const;
    /// Starts the steering job with α (the tests and the Steer button).
    void steer(double alpha);
    /// The chosen feature's dashboard (histogram, contexts, promoted / suppressed tokens).
    FeatureDashboard* dashboard() const { return dashboard_; }

signals:
    /// Ask the window to open the dictionaries at `path`.
    void dictionaryRequested(const QString& path);
    /// Ask the window to run `prompt` (a corpus context clicked in the dashboard).
    void promptRequested(const QString& prompt);

private:
    void run();
    void showRun();
    void showFeature();
    void showCorpus(const SparseCoder& sae);
    const SparseCoder* coder() const;

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    std::shared_ptr<const DictionarySet> set_;
    QString setPath_;
    std::shared_ptr<const FeatureRun> run_;
    std::shared_ptr<const FeatureLabels> featureLabels_;
    ReconstructionQuality quality_;
    int position_ = -1;
    int feature_ = -1;

    BackgroundTool tool_;
    BackgroundTool steerTool_;
    BackgroundTool contextsTool_;
    QString corpusShown_; ///< the database, its modification time and the feature the dashboard shows
    FeatureDashboard* dashboard_ = nullptr;
    QComboBox* dictionary_ = nullptr;
    QPushButton* open_ = nullptr;
    QSpinBox* layer_ = nullptr;
    QSpinBox* top_ = nullptr;
    QLabel* summary_ = nullptr;
    QTableWidget* positions_ = nullptr;
    QTableWidget* firing_ = nullptr;
    QLabel* card_ = nullptr;
    QLabel* activationText_ = nullptr;
    QDoubleSpinBox* alpha_ = nullptr;
    QLabel* steered_ = nullptr;
};

} // namespace attnscope
