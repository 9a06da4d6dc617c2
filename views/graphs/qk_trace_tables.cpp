#include "views/graphs/qk_trace_tables.h"

#include "model/analysis/graphs/graph_document.h"
#include "views/common/background_tool.h"
#include "views/common/score_tables.h"

#include <QCoreApplication>
#include <QHeaderView>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <cmath>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("QkTraceView", text); }

/// The share of the score, "12.3%" (empty for a score of 0).
QTableWidgetItem* shareCell(double value, double score) {
    auto* item = new QTableWidgetItem(std::abs(score) > 0 ? QString::number(100 * value / score, 'f', 1) + QLatin1Char('%') : QString());
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

QTableWidgetItem* nodeCell(int column) {
    auto* item = new QTableWidgetItem;
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    item->setData(kQkColumnRole, column);
    return item;
}

} // namespace

QkTraceTables makeQkTraceTables(const QString& baseName) {
    QkTraceTables t;
    t.pairs = makeScoreTable({tr("q side"), tr("k side"), tr("attribution"), tr("share")}, baseName + QStringLiteral("_pairs"), tr("No trace yet."));
    t.pairs->setToolTip(tr("The largest terms scale·c_q(s)·c_k(s') of the score: what q-side source s and k-side source s' "
                           "contribute together; share: of the score"));
    t.qMarginals = makeScoreTable({tr("q side"), tr("attribution"), tr("share")}, baseName + QStringLiteral("_q_marginals"), QString());
    t.qMarginals->setToolTip(tr("q-side marginals: scale·c_q(s)·k, source s's part of the query against the whole key"));
    t.kMarginals = makeScoreTable({tr("k side"), tr("attribution"), tr("share")}, baseName + QStringLiteral("_k_marginals"), QString());
    t.kMarginals->setToolTip(tr("k-side marginals: scale·q·c_k(s'), source s''s part of the key against the whole query"));
    for (QTableWidget* table : {t.pairs, t.qMarginals, t.kMarginals}) {
        table->setSelectionMode(QAbstractItemView::SingleSelection);
        table->setWordWrap(false);
        // the node columns share the width left by the numbers (their labels elided; the tooltip names them in full)
        QHeaderView* header = table->horizontalHeader();
        header->setStretchLastSection(false);
        header->setSectionResizeMode(QHeaderView::ResizeToContents);
        for (int c = 0; c < (table == t.pairs ? 2 : 1); ++c) header->setSectionResizeMode(c, QHeaderView::Stretch);
    }
    auto* marginals = new QTabWidget;
    marginals->addTab(t.qMarginals, tr("q-side marginals"));
    marginals->addTab(t.kMarginals, tr("k-side marginals"));
    marginals->setDocumentMode(true);
    t.marginals = marginals;
    t.widget = splitPanes(Qt::Vertical, {{t.pairs, 3}, {marginals, 2}});
    // one selected row across the three tables
    for (QTableWidget* table : {t.pairs, t.qMarginals, t.kMarginals})
        QObject::connect(table, &QTableWidget::currentCellChanged, table, [t, table](int row) {
            if (row < 0) return;
            for (QTableWidget* other : {t.pairs, t.qMarginals, t.kMarginals})
                if (other != table) {
                    const QSignalBlocker quiet(other);
                    other->setCurrentCell(-1, -1);
                    other->clearSelection();
                }
        });
    return t;
}

void fillQkTraceTables(const QkTraceTables& tables, const QkTrace& trace, const std::function<void(QTableWidgetItem*, int)>& label) {
    {
        const QSignalBlocker quiet(tables.pairs);
        tables.pairs->setRowCount(int(trace.pairs.size()));
        for (int r = 0; r < int(trace.pairs.size()); ++r) {
            const QkPair& p = trace.pairs[size_t(r)];
            tables.pairs->setItem(r, 0, nodeCell(p.q));
            tables.pairs->setItem(r, 1, nodeCell(p.k));
            tables.pairs->setItem(r, 2, scoreCell(p.attribution));
            tables.pairs->setItem(r, 3, shareCell(p.attribution, trace.score));
        }
    }
    for (auto [table, list] : {std::pair{tables.qMarginals, &trace.qMarginals}, std::pair{tables.kMarginals, &trace.kMarginals}}) {
        const QSignalBlocker quiet(table);
        table->setRowCount(int(list->size()));
        for (int r = 0; r < int(list->size()); ++r) {
            const QkContributor& m = (*list)[size_t(r)];
            table->setItem(r, 0, nodeCell(m.column));
            table->setItem(r, 1, scoreCell(m.attribution));
            table->setItem(r, 2, shareCell(m.attribution, trace.score));
        }
    }
    labelQkTraceTables(tables, label);
}

void labelQkTraceTables(const QkTraceTables& tables, const std::function<void(QTableWidgetItem*, int)>& label) {
    for (QTableWidget* t : {tables.pairs, tables.qMarginals, tables.kMarginals}) {
        for (int r = 0; r < t->rowCount(); ++r)
            for (int c = 0; c < t->columnCount(); ++c)
                if (QTableWidgetItem* item = t->item(r, c); item && item->data(kQkColumnRole).isValid())
                    label(item, item->data(kQkColumnRole).toInt());
    }
}

QString qkTraceCheckText(const QkTrace& t, const QStringList& tokens) {
    return tr("L%1H%2 attends %3 “%4” → %5 “%6” (pattern %7). Score %8 = Σ pairs %9 (the %10 largest listed) + q constant %11 + "
              "k constant %12 + constant %13; check error %14.")
        .arg(t.layer).arg(t.head).arg(t.query).arg(tokens.value(t.query)).arg(t.key).arg(tokens.value(t.key))
        .arg(double(t.pattern), 0, 'f', 4).arg(t.score, 0, 'g', 6).arg(t.pairsTotal, 0, 'g', 6).arg(t.pairs.size())
        .arg(t.qConstant, 0, 'g', 4).arg(t.kConstant, 0, 'g', 4).arg(t.constant, 0, 'g', 4).arg(t.checkError, 0, 'g', 3);
}

QString qkSourceLabel(const GraphNode& c, const QStringList& tokens) {
    GraphDocumentNode n;
    n.kind = c.kind;
    n.layer = c.layer;
    n.ctxIdx = c.position;
    n.feature = c.id;
    return documentNodeLabel(n, tokens);
}

} // namespace attnscope
