#include "views/graphs/node_card.h"

#include <QCoreApplication>

namespace attnscope {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("GraphPanel", text); }
} // namespace

QString graphNodeKindName(GraphNodeKind k) {
    switch (k) {
    case GraphNodeKind::Feature: return tr("Feature");
    case GraphNodeKind::Error: return tr("Error node");
    case GraphNodeKind::Token: return tr("Token embedding");
    case GraphNodeKind::Logit: break;
    }
    return tr("Logit");
}

QString nodeCardFacts(const GraphDocumentNode& n, const QStringList& promptTokens, bool customTarget) {
    QString html = QStringLiteral("<b>%1</b> <tt>%2</tt><br>").arg(graphNodeKindName(n.kind), n.nodeId.toHtmlEscaped());
    QStringList facts;
    if (n.kind == GraphNodeKind::Feature || n.kind == GraphNodeKind::Error) facts << tr("layer %1").arg(n.layer);
    if (n.kind == GraphNodeKind::Logit) // the prediction made at that position, after its token
        facts << tr("position %1, after “%2”").arg(n.ctxIdx).arg(promptTokens.value(n.ctxIdx).toHtmlEscaped());
    else
        facts << tr("position %1").arg(n.ctxIdx) << tr("token “%1”").arg(promptTokens.value(n.ctxIdx).toHtmlEscaped());
    html += facts.join(QStringLiteral(" · ")) + QStringLiteral("<br>");
    facts.clear();
    if (n.kind == GraphNodeKind::Feature) facts << tr("feature %1").arg(n.feature) << tr("activation %1").arg(n.activation, 0, 'f', 4);
    if (n.kind == GraphNodeKind::Logit)
        facts << (customTarget ? tr("custom target, weight %1") : tr("probability %1")).arg(n.tokenProb, 0, 'f', 4);
    const bool beyondBound = n.qkOnly && n.graphIndex < 0;
    if (n.kind != GraphNodeKind::Logit && !beyondBound)
        facts << tr("influence %1 (cumulative: smaller is more influential)").arg(n.influence, 0, 'f', 4);
    html += facts.join(QStringLiteral(" · ")) + QStringLiteral("<br>");
    if (!n.clerp.isEmpty()) html += tr("label: %1<br>").arg(n.clerp.toHtmlEscaped());
    if (n.qkOnly)
        html += (beyondBound ? tr("<i>QK-only: a QK trace's contributor beyond the graph's feature-node bound (not a node of the graph).</i><br>")
                             : tr("<i>QK-only: a QK trace's contributor that pruning left out of the graph.</i><br>"));
    return html;
}

} // namespace attnscope
