#pragma once
// Per-prompt component readout (Dar et al. 2022): what one head (z_h·W_O^h) or one MLP writes at the
// selected position, read through W_U (no ln_final, no bias) — the tokens it promotes and suppresses.
// Computed in the background (model/analysis/embedding_space/component_readout.h).

#include "model/analysis/embedding_space/component_readout.h"
#include "views/common/background_tool.h"

#include <QStringList>
#include <QWidget>
#include <memory>

class QComboBox;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class ComponentReadoutView : public QWidget {
    Q_OBJECT
public:
    enum class Component { Head, Mlp };
    explicit ComponentReadoutView(QWidget* parent = nullptr);

    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels);
    /// Selects a head (or, for Component::Mlp, the layer) and recomputes.
    void setComponent(Component component, int layer, int head = 0);
    void setPosition(int position);
    int position() const;

    /// Rank, token, score (x·W_U) — highest first / lowest first.
    QTableWidget* promotedTable() const { return promoted_; }
    QTableWidget* suppressedTable() const { return suppressed_; }
    /// The last result shown (empty lists before the first).
    const ComponentReadout& result() const { return result_; }
    BackgroundTask& task() { return tool_.task(); }

private:
    void recompute();
    void display(const ComponentReadout& r);

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    ComponentReadout result_;
    BackgroundTool tool_; ///< its status line is the caption
    QComboBox* component_ = nullptr;
    QSpinBox* layer_ = nullptr;
    QSpinBox* head_ = nullptr;
    QSpinBox* position_ = nullptr;
    QSpinBox* k_ = nullptr;
    QTableWidget* promoted_ = nullptr;
    QTableWidget* suppressed_ = nullptr;
};

} // namespace attnscope
