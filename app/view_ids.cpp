#include "app/view_ids.h"

#include "views/common/analysis_panel.h"

#include <QHash>

namespace attnscope {

QString viewIdOf(const AnalysisPanel* panel) {
    static const QHash<QString, QString> ids{
        {QStringLiteral("attnscope::ResidualPanel"), QStringLiteral("logit-attribution")},
        {QStringLiteral("attnscope::AttentionStepsPanel"), QStringLiteral("attention-steps")},
        {QStringLiteral("attnscope::AttentionSandboxPanel"), QStringLiteral("attention-by-hand")},
        {QStringLiteral("attnscope::LogitLensPanel"), QStringLiteral("logit-lens")},
        {QStringLiteral("attnscope::ProjectionsPanel"), QStringLiteral("embedding-space")},
        {QStringLiteral("attnscope::ModelComparePanel"), QStringLiteral("compare-models")},
        {QStringLiteral("attnscope::CircuitsPanel"), QStringLiteral("circuits")},
        {QStringLiteral("attnscope::FeaturesPanel"), QStringLiteral("features")},
        {QStringLiteral("attnscope::GraphPanel"), QStringLiteral("graphs")},
    };
    const QString cls = QString::fromLatin1(panel->metaObject()->className());
    return ids.value(cls, cls.section(QStringLiteral("::"), -1).toLower());
}

} // namespace attnscope
