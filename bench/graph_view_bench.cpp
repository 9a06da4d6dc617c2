// The Graph tab on a large graph (issue 44, "the Graph tab stays responsive at 7 500 feature nodes"): a graph file
// opened in a GraphPanel as the window shows it, its first draw, and hovering node after node as a user sweeps the
// mouse across the figure (the move, the hit test, the node card, the repaint of what changed).
#include "model/analysis/graphs/graph_document.h"
#include "model/core/errors.h"
#include "views/graphs/graph_panel.h"
#include "views/graphs/graph_plot.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QMouseEvent>
#include <QTemporaryDir>
#include <algorithm>
#include <cstdio>
#include <vector>

namespace attnscope {

namespace {
double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}
} // namespace

/// Writes `doc` to a temporary graph file, opens it in a GraphPanel of the main window's default size (1500 × 920)
/// shown on the current QPA platform, and times: reading the file and the first draw of the figure; then hovering
/// `nHover` of the shown nodes, evenly spread, one after another, each a mouse move sent to the figure followed by
/// the event processing it causes (the node card, the repaint of what changed). Prints one row; returns
/// {nodes, links, shown_nodes, shown_links, open_ms, first_draw_ms, hover_median_ms, hover_p95_ms, hover_max_ms}.
/// `png` not empty: the panel, as it shows the last hovered node, saved there. Throws InputError when the file cannot
/// be written or the panel does not show the graph.
QJsonObject benchGraphView(const GraphDocument& doc, int nHover, const QString& what, const QString& png) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("graph.json"));
    writeGraphFile(doc, path);
    QElapsedTimer t;
    GraphPanel panel;
    panel.resize(1500, 920);
    panel.show();
    QCoreApplication::processEvents();
    t.start();
    panel.openGraphFile(path);
    panel.waitForIdle(); // read and checked on a worker thread; the document handed to the tab
    const double openMs = double(t.nsecsElapsed()) / 1e6;
    GraphPlot* plot = panel.plot();
    if (!plot->document() || plot->document()->nodes.size() != doc.nodes.size())
        throw InputError(QStringLiteral("the Graph tab did not show the %1-node graph").arg(doc.nodes.size()));
    t.restart();
    QCoreApplication::processEvents(); // the tab's layout, the card and the figure drawn into its picture
    plot->repaint();
    const double firstDrawMs = double(t.nsecsElapsed()) / 1e6;

    std::vector<int> shown;
    for (int i = 0; i < int(doc.nodes.size()); ++i)
        if (plot->isNodeShown(i)) shown.push_back(i);
    std::vector<double> hoverMs;
    const int n = std::min<int>(nHover, int(shown.size()));
    int hovered = 0;
    QObject::connect(plot, &GraphPlot::nodeHovered, plot, [&hovered](int node) { hovered += node >= 0; });
    for (int k = 0; k < n; ++k) {
        const int node = shown[size_t(k) * shown.size() / size_t(n)];
        const QPointF pos = plot->nodeCenter(node);
        t.restart();
        QMouseEvent move(QEvent::MouseMove, pos, plot->mapToGlobal(pos), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QCoreApplication::sendEvent(plot, &move);
        QCoreApplication::processEvents(); // the card's layout and the repaint the hover asked for
        hoverMs.push_back(double(t.nsecsElapsed()) / 1e6);
    }
    if (!png.isEmpty() && !panel.grab().save(png)) throw InputError(QStringLiteral("%1: cannot write the picture").arg(png));
    if (hovered < n / 2) throw InputError(QStringLiteral("only %1 of %2 hovers reached a node").arg(hovered).arg(n));
    QJsonObject out;
    out["nodes"] = int(doc.nodes.size());
    out["links"] = int(doc.links.size());
    out["shown_nodes"] = plot->shownNodeCount();
    out["shown_links"] = plot->shownLinkCount();
    out["open_ms"] = openMs;
    out["first_draw_ms"] = firstDrawMs;
    out["hovers"] = n;
    out["hover_median_ms"] = percentile(hoverMs, 0.5);
    out["hover_p95_ms"] = percentile(hoverMs, 0.95);
    out["hover_max_ms"] = percentile(hoverMs, 1.0);
    std::printf("  %-44s %10.1f ms  (open: read on a worker, show and draw %.0f ms, then %.0f ms of events; %d nodes, %d links; hover over %d nodes: "
                "median %.1f ms, 95th percentile %.1f ms, max %.1f ms)\n",
                qPrintable(QStringLiteral("Graph tab, %1").arg(what)), openMs + firstDrawMs, openMs, firstDrawMs,
                int(doc.nodes.size()), int(doc.links.size()), n, percentile(hoverMs, 0.5), percentile(hoverMs, 0.95),
                percentile(hoverMs, 1.0));
    std::fflush(stdout);
    return out;
}

} // namespace attnscope
