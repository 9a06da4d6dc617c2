#pragma once
// The Graph tab: the attribution graph of the prompt's next-token prediction through a per-layer transcoder set
// (model/analysis/graphs: buildReplacementModel, attributeGraph, pruneGraph, graphScores as one BackgroundTool job
// with progress and Cancel, run after each prompt and on Build), drawn by GraphPlot; the replacement and
// completeness scores and the counts; a card for the hovered or selected node (kind, layer, position, token, feature,
// activation, influence, the feature's decoder row read in embedding space, its strongest incoming and outgoing
// edges); for a selected edge, the heads that carry it (edgeRoutes: each head's part, the query position and the
// pattern cell) and, for a head clicked there, why it attends (QkTraceView: the QK trace of its cell in the graph's
// features, whose pairs can be pinned in as QK-only nodes and whose sources can be ablated); pins, supernodes (a name and the pinned nodes), and interventions on a supernode — ablate it or
// scale it by k (interveneOnFeatures, Live, 8 greedy tokens) — shown as the top logits and the continuation before
// and after. Save graph JSON writes Neuronpedia's layout with the pins and supernodes; Open graph JSON shows a graph
// made elsewhere offline (the file's data only: no readings, routes or interventions).
// The window opens the transcoder sets (transcodersRequested → setTranscoders).

#include "model/analysis/common/top_tokens.h"
#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "views/common/analysis_panel.h"
#include "views/common/background_tool.h"
#include "views/graphs/built_graph.h"

#include <QHash>
#include <memory>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace attnscope {

class GraphPlot;
class QkTraceView;

/// What the last intervention showed.
struct GraphInterventionView {
    QString supernode;
    float factor = 0;
    std::vector<TokenScore> clean, after; ///< top 10 at the last position
    QString cleanText, afterText;         ///< the greedy continuations (8 tokens)
};

class GraphPanel : public AnalysisPanel {
    Q_OBJECT
public:
    explicit GraphPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Graph"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;
    void waitForIdle() override;

    /// The transcoder set the window opened for `path` (null with `error` when it could not).
    void setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path, const QString& error = {});
    /// Paths offered before any is opened (the demo's bundled transcoders).
    void setKnownTranscoders(const QStringList& paths);
    std::shared_ptr<const DictionarySet> transcoders() const { return set_; }

    /// Starts building the graph (the Build button).
    void build();
    /// Reads a graph file as a background job and shows it offline, or its error in the summary line.
    void openGraphFile(const QString& path);
    /// Writes the shown graph with its pins and supernodes; returns "" or the error.
    QString saveGraphFile(const QString& path);

    const BuiltGraph* built() const { return built_.get(); }
    const GraphDocument* document() const { return doc_.get(); }
    GraphPlot* plot() const { return plot_; }
    /// The card's text (HTML) and the summary line.
    QString cardText() const;
    QString summaryText() const;

    /// Selects a node (index into the document; −1: none) as a click does.
    void selectNode(int node);
    /// Selects a link (index into the document's links) and, for a built graph, computes its head routes.
    void selectLink(int link);
    void setPinned(int node, bool pinned);
    /// Groups the pinned nodes into a supernode `name`; returns its index (−1 when nothing is pinned).
    int groupPinned(const QString& name);
    /// Drops supernode `index` (its nodes stay pinned or not as they are).
    void removeSupernode(int index);
    /// Runs interveneOnFeatures on supernode `index` with its features × factor (0 ablates).
    void intervene(int supernode, double factor);
    const GraphInterventionView& lastIntervention() const { return intervention_; }
    /// The head-routes table (head, part, share, query, pattern).
    QTableWidget* routesTable() const { return routes_; }
    /// Shows why the head of the routes table's row `row` attends there (its QK trace at its query position and the
    /// source's position), as clicking the row does; rows that are not heads do nothing.
    void traceRoute(int row);
    /// Pins the nodes of QK trace sources `columns` (QkTracer::columns()): the graph's own when drawn, else appended to the
    /// document as QK-only nodes.
    void pinQkSources(const std::vector<int>& columns);
    QkTraceView* qkTrace() const { return qk_; }
    /// Labels for feature nodes (File → Open Feature Labels): put on the shown graph's unlabelled feature nodes as their
    /// clerp (applyFeatureLabels), and on every graph shown after; null drops them for graphs shown after.
    void setFeatureLabels(std::shared_ptr<const FeatureLabels> labels);

signals:
    /// Ask the window to open the transcoder set at `path`.
    void transcodersRequested(const QString& path);
    /// The set chosen here changed (opened by the window): other tabs trace in it too (the Circuits tab's Attend view).
    void transcodersChanged(std::shared_ptr<const DictionarySet> set, const QString& path);

private:
    void showDocument(std::shared_ptr<GraphDocument> doc, const QString& title);
    void showCard(int node);
    /// A feature's decoder row in embedding space and its corpus contexts (HTML lines).
    QString featureReadings(const BuiltGraph& built, const GraphDocumentNode& n) const;
    void refreshPins();
    void refreshSupernodes();
    std::vector<int> pinnedNodes() const;

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    std::shared_ptr<const DictionarySet> set_;
    QString setPath_;
    std::shared_ptr<const FeatureLabels> featureLabels_;
    std::shared_ptr<const BuiltGraph> built_;
    std::shared_ptr<GraphDocument> doc_;
    bool readingFile_ = false; ///< openGraphFile's read is running: a new prompt or set does not replace it with a build
    int selected_ = -1, hovered_ = -1, link_ = -1;
    QHash<int, QString> readings_; ///< featureReadings by node, for the shown document
    QString pendingSelection_; ///< a session's selected node id, until a graph holding it is shown
    GraphInterventionView intervention_;

    BackgroundTool tool_;
    BackgroundTool routesTool_;
    BackgroundTool interveneTool_;
    QComboBox* transcoderBox_ = nullptr;
    QPushButton* openSet_ = nullptr;
    QLineEdit* targets_ = nullptr;
    QSpinBox* maxFeatureNodes_ = nullptr;
    QDoubleSpinBox* nodeThreshold_ = nullptr;
    QDoubleSpinBox* edgeThreshold_ = nullptr;
    QLabel* summary_ = nullptr;
    GraphPlot* plot_ = nullptr;
    QCheckBox* pinnedOnly_ = nullptr;
    QLabel* card_ = nullptr;
    QTableWidget* edges_ = nullptr;
    QTableWidget* routes_ = nullptr;
    QkTraceView* qk_ = nullptr;
    QTabWidget* side_ = nullptr;
    QPushButton* pin_ = nullptr;
    QLineEdit* supernodeName_ = nullptr;
    QPushButton* group_ = nullptr;
    QTableWidget* supernodes_ = nullptr;
    QPushButton* ablate_ = nullptr;
    QDoubleSpinBox* factor_ = nullptr;
    QPushButton* scale_ = nullptr;
    QTableWidget* logits_ = nullptr;
    QLabel* continuation_ = nullptr;
};

} // namespace attnscope
