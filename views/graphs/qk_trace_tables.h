#pragma once
// The tables a QK trace is read in (qk_trace.h), shared by the Graph tab's "Why it attends" pane and the Circuits tab's
// Attend view: the largest (q-side, k-side) pairs — q side, k side, attribution, share of the score — above the q-side
// and k-side marginals as two tabs (node, attribution, share), every table as wide as its pane (node labels elided); the check line (score = Σ pairs + constants, the check
// error); and a source's label when no graph draws it.

#include "model/analysis/graphs/qk_trace.h"

#include <QString>
#include <QStringList>
#include <functional>

class QTableWidget;
class QTableWidgetItem;
class QTabWidget;
class QWidget;

namespace attnscope {

/// A node cell's QkTracer::columns() index (Qt item data role).
inline constexpr int kQkColumnRole = Qt::UserRole + 1;

struct QkTraceTables {
    QTableWidget* pairs = nullptr;      ///< q side, k side, attribution, share
    QTableWidget* qMarginals = nullptr; ///< q side, attribution, share
    QTableWidget* kMarginals = nullptr; ///< k side, attribution, share
    QTabWidget* marginals = nullptr;    ///< the two marginal tables as tabs
    QWidget* widget = nullptr;          ///< the pairs above the marginals (a vertical splitter)
};

/// The three tables, empty, their exported files named `baseName`_pairs, …; one row selected at a time.
QkTraceTables makeQkTraceTables(const QString& baseName);

/// Fills the tables with `trace` (attributions exact in Qt::UserRole, shares of trace.score), each node cell holding its
/// column in kQkColumnRole; `label` then sets each node cell's text (and font, tooltip).
void fillQkTraceTables(const QkTraceTables& tables, const QkTrace& trace, const std::function<void(QTableWidgetItem*, int column)>& label);

/// Calls `label` on every node cell again (labels that changed).
void labelQkTraceTables(const QkTraceTables& tables, const std::function<void(QTableWidgetItem*, int column)>& label);

/// "L1H2 attends 5 “x” → 3 “y” (pattern …). Score S = Σ pairs … (the N largest listed) + q constant … + k constant … +
/// constant …; check error …." `tokens` name the positions.
QString qkTraceCheckText(const QkTrace& trace, const QStringList& tokens);

/// A source's label built from its column, as GraphDocument::nodeLabel labels nodes: "L1 F17 @3", "error L0 @2",
/// "emb @0 ' the'".
QString qkSourceLabel(const GraphNode& column, const QStringList& tokens);

} // namespace attnscope
