#pragma once
// "Attention by hand" tab: the textbook self-attention worksheet (model/analysis/attention/attention_sandbox.h).
// Editable grids for X (d_in × n, default 6 × 4) and W_Q, W_K, W_V (d_k × d_in, d_k = 3 by default);
// every intermediate (Q, K, V, scores, scaled, A, Z) as a table that updates as the user types;
// a switch between the worksheet's column convention and GPT-2's row convention; a "worksheet
// arithmetic" switch that shows the hand simplifications (⌊x / round(√d_k)⌋, 3^x) next to the exact
// values; export of the whole worksheet as PNG or PDF, filled or as a blank template.

#include "model/analysis/attention/attention_sandbox.h"
#include "views/common/analysis_panel.h"

#include <QMap>

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QSpinBox;
class QTableView;

namespace attnscope {

class MatrixTableModel;

class AttentionSandboxPanel : public AnalysisPanel {
    Q_OBJECT
public:
    explicit AttentionSandboxPanel(QWidget* parent = nullptr);

    QString title() const override { return tr("Attention by hand"); }
    /// The sandbox does not use the model; the call is ignored.
    void setContext(std::shared_ptr<const Model>, std::shared_ptr<const ActivationCache>, const QStringList&) override {}
    /// Saved settings: convention, worksheet arithmetic, causal mask and the four given matrices.
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;

    /// Matrix names shown: "X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "A", "Z".
    static QStringList matrixNames();
    /// The table model of a matrix (exact values); worksheet = true gives the hand-arithmetic table
    /// of "scaled", "A" or "Z" (null for other names). Input models are editable.
    MatrixTableModel* tableModel(const QString& name, bool worksheet = false) const;
    QTableView* tableView(const QString& name, bool worksheet = false) const;

    const SandboxInputs& inputs() const { return inputs_; }
    /// Replaces the inputs (Columns convention) and recomputes.
    void setInputs(const SandboxInputs& inputs);
    const SandboxResult& result() const { return result_; }
    void setConvention(SandboxConvention c);
    SandboxConvention convention() const { return convention_; }
    void setWorksheetArithmetic(bool on);
    bool worksheetArithmetic() const { return worksheetArithmetic_; }

    /// The worksheet widget that the exports draw.
    QWidget* worksheet() const { return worksheet_; }
    /// Writes the worksheet as PNG (`scale`× its on-screen size) or PDF (one landscape page, vector
    /// text). blank = true: the given matrices filled, every computed cell empty. Returns "" or
    /// "<file>: <problem>".
    QString exportWorksheet(const QString& path, bool blank, double scale = 2.0);

private:
    struct Card;
    void buildWorksheet();
    void recompute(bool refreshInputs);
    void onInputEdited(const QString& name, int row, int col, double value);
    void resizeInputs();
    void exportDialog(bool blank);
    /// Colours of the editable and hand-arithmetic tables for the theme.
    void applyTints(bool dark);
    QStringList labelsFor(const QString& axis, int n) const;

    SandboxInputs inputs_;
    SandboxResult result_;
    SandboxConvention convention_ = SandboxConvention::Columns;
    bool worksheetArithmetic_ = false;

    QComboBox* conventionBox_ = nullptr;
    QCheckBox* worksheetBox_ = nullptr;
    QCheckBox* causalBox_ = nullptr;
    QSpinBox* dIn_ = nullptr;
    QSpinBox* nTokens_ = nullptr;
    QSpinBox* dK_ = nullptr;
    QLabel* error_ = nullptr;
    QWidget* worksheet_ = nullptr;
    QLabel* intro_ = nullptr;
    QMap<QString, QLabel*> captions_;
    QMap<QString, MatrixTableModel*> models_, worksheetModels_;
    QMap<QString, QTableView*> views_, worksheetViews_;
    QMap<QString, QLabel*> worksheetCaptions_;
};

} // namespace attnscope
