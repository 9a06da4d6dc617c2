// The Features tab offscreen on the demo model with a random SAE the test writes: the token table, each token's
// firing features, the headline FVU and losses, the coloured activation text and the feature card equal what
// the library computes directly; Steer writes the continuation greedyContinuation writes with the same edit; a
// folder that is no dictionary says why; feature labels (a layer,feature,label CSV) appear beside the firing features and
// over the card, at the layer the SAE reads only.

#include "model/analysis/features/context_activations.h"
#include "model/analysis/features/context_store.h"
#include "model/analysis/features/feature_contexts.h"
#include "model/analysis/features/feature_intervention.h"
#include "model/analysis/common/top_tokens.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/generate.h"
#include "model/transformer/prompt.h"
#include "support/dictionary_fixtures.h"
#include "support/reference_forward64.h"
#include "support/test_paths.h"
#include "views/features/feature_dashboard.h"
#include "views/features/features_panel.h"
#include "views/figures/chart_figure.h"
#include "views/figures/figure_actions.h"

#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestGuiFeatures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void tablesShowTheRun();
    void featureCard();
    void steeringWritesTheEditedContinuation();
    void dashboardWithoutDatabase();
    void dashboardShowsCorpusContexts();
    void dashboardBarsAreTheReadout();
    void badFolderSaysWhy();
    void labelsBesideFeatures();

private:
    QLabel* labelContaining(const QString& text) const {
        for (QLabel* l : panel_->findChildren<QLabel*>())
            if (l->text().contains(text)) return l;
        return nullptr;
    }
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::shared_ptr<const DictionarySet> set_;
    QTemporaryDir tmp_;
    std::unique_ptr<FeaturesPanel> panel_;
    FeatureRun run_;
};

void TestGuiFeatures::initTestCase() {
    model_ = loadModel(demoDir());
    ForwardOptions o;
    o.allLogits = false; // as the window runs a prompt: the last position's logits only
    cache_ = std::make_shared<const ActivationCache>(
        runForward(*model_, tokenizePrompt(model_->tokenizer(), QStringLiteral("In the beginning God created the heaven"), true), o));
    DictionaryParams p = roundedTo(randomParams(128, 64, 128, 5), QStringLiteral("F32"));
    p.W_enc *= 0.5;
    writeSaeLensFolder(tmp_.filePath(QStringLiteral("sae")), p, QStringLiteral("topk"),
                       QJsonObject{{"architecture", "topk"}, {"k", 6}, {"d_in", 128}, {"d_sae", 64}, {"apply_b_dec_to_input", true},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.1.hook_resid_post"}}}});
    set_ = std::make_shared<const DictionarySet>(openDictionaries(tmp_.filePath(QStringLiteral("sae"))));
    run_ = runDictionary(*model_, *cache_, set_->coders[0]);
    panel_ = std::make_unique<FeaturesPanel>();
    panel_->resize(1500, 900);
    panel_->show();
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->setDictionaries(set_, tmp_.filePath(QStringLiteral("sae")));
    panel_->waitForIdle();
    QCoreApplication::processEvents();
}

void TestGuiFeatures::tablesShowTheRun() {
    QList<QTableWidget*> tables = panel_->findChildren<QTableWidget*>();
    tables.removeAll(panel_->dashboard()->contextsTable());
    QCOMPARE(tables.size(), 2);
    QTableWidget* positions = tables[0]->columnCount() == 4 ? tables[0] : tables[1]; // pos, token, firing, ‖x − x̂‖²
    QTableWidget* firing = tables[0]->columnCount() == 4 ? tables[1] : tables[0];    // feature, activation
    const int S = cache_->nPositions();
    QCOMPARE(positions->rowCount(), S);
    for (int p = 0; p < S; ++p) { // TopK: at most k = 6 fire (the ReLU'd top k)
        QCOMPARE(positions->item(p, 2)->text().toInt(), int(run_.firing(p, 0).size()));
        QVERIFY(run_.firing(p, 0).size() <= 6 && !run_.firing(p, 0).empty());
    }
    panel_->selectPosition(3);
    const std::vector<FeatureValue> top = run_.firing(3, 10);
    QCOMPARE(firing->rowCount(), int(top.size()));
    for (int i = 0; i < firing->rowCount(); ++i) {
        QCOMPARE(firing->item(i, 0)->text().toInt(), top[size_t(i)].feature);
        QVERIFY(std::abs(firing->item(i, 1)->text().toDouble() - top[size_t(i)].activation) < 1e-3);
    }
    const ReconstructionQuality q = reconstructionQuality(*model_, cache_->tokens, *cache_, run_);
    QVERIFY(labelContaining(QStringLiteral("FVU %1").arg(q.fvu, 0, 'f', 4)));
    QVERIFY(labelContaining(QStringLiteral("%1 with x̂ spliced in").arg(q.lossSpliced, 0, 'f', 4)));
}

void TestGuiFeatures::featureCard() {
    const int f = run_.firing(2, 1).front().feature;
    panel_->selectFeature(f);
    QLabel* text = labelContaining(QStringLiteral("<b>Feature %1</b> across the prompt").arg(f));
    QVERIFY(text);
    QCOMPARE(text->text().count(QStringLiteral("<span")), cache_->nPositions()); // one coloured span per token
    const FeatureReadout r = readFeature(*model_, set_->coders[0], f, 8);
    QLabel* card = labelContaining(QStringLiteral("<b>Writes</b>"));
    QVERIFY(card);
    QVERIFY(card->text().contains(tokenLabels(model_->tokenizer(), {r.decoderTop[0].id}).value(0).toHtmlEscaped()));
    // DLA at the selected position (3; the window's pass kept only the last logits: the lens row gives them) to the top
    // prediction there, from the independent float64 forward's logits
    const Matrix64 logits = logits64(*model_, blocks64(*model_, embeddings64(*model_, cache_->tokens), 0, 2));
    Eigen::Index target;
    logits.row(3).maxCoeff(&target);
    const double dla = featureLogitAttribution(*model_, *cache_, set_->coders[0], run_, f, 3, int(target));
    QVERIFY(card->text().contains(QStringLiteral("at position 3 to the prediction %1").arg(tokenLabels(model_->tokenizer(), {int(target)}).value(0).toHtmlEscaped())));
    QVERIFY2(card->text().contains(QStringLiteral(": %1").arg(dla, 0, 'f', 4)), qPrintable(card->text()));
}

void TestGuiFeatures::steeringWritesTheEditedContinuation() {
    const int f = panel_->selectedFeature();
    panel_->steer(20.0);
    panel_->waitForIdle();
    QCoreApplication::processEvents();
    const auto hooks = featureEditHooks(*model_, set_->coders[0], {FeatureEdit{f, FeatureEditKind::Steer, 20.0, {}}});
    const QString steered = model_->tokenizer().decode(greedyContinuation(*model_, cache_->tokens, 12, hooks)).toHtmlEscaped();
    const QString clean = model_->tokenizer().decode(greedyContinuation(*model_, cache_->tokens, 12)).toHtmlEscaped();
    QVERIFY(steered != clean);
    QLabel* out = labelContaining(QStringLiteral("<b>Without</b>"));
    QVERIFY(out);
    QVERIFY2(out->text().contains(clean) && out->text().contains(steered), qPrintable(out->text()));
}

void TestGuiFeatures::dashboardWithoutDatabase() {
    FeatureDashboard* d = panel_->dashboard();
    QVERIFY(!d->hintLabel()->isHidden());
    QVERIFY(d->hintLabel()->text().contains(QStringLiteral("--sae %1 --feature-contexts CORPUS").arg(set_->coders[0].path)));
    QVERIFY(!d->histogramFigure()->hasFigureData());
    QCOMPARE(d->contextsTable()->rowCount(), 0);
}

void TestGuiFeatures::dashboardShowsCorpusContexts() {
    const int f = panel_->selectedFeature();
    QFile corpus(tmp_.filePath(QStringLiteral("corpus.txt")));
    QVERIFY(corpus.open(QIODevice::WriteOnly));
    corpus.write("In the beginning God created the heaven and the earth.\nAnd the earth was without form, and void.\n"
                 "And God said, Let there be light: and there was light.\n");
    corpus.close();
    FeatureContextsOptions o;
    o.corpus = corpus.fileName();
    o.modelLabel = QStringLiteral("demo");
    o.top = 3;
    o.windowTokens = 16;
    runFeatureContexts(*model_, set_->coders[0], o);
    const ContextStore store(defaultContextsDb(set_->coders[0], 0, 1), false);
    const std::vector<FeatureContext> top = store.topContexts(f, 5);
    QVERIFY(!top.empty());
    panel_->selectFeature(f);
    panel_->waitForIdle();
    QCoreApplication::processEvents();
    FeatureDashboard* d = panel_->dashboard();
    QVERIFY(d->hintLabel()->isHidden());
    // the histogram's bars are the database's counts, bin by bin
    const auto [firing, counts] = store.histogram(f);
    QVERIFY(firing > 0);
    auto* bars = qobject_cast<QCPBars*>(d->histogramFigure()->plot()->plottable(0));
    QVERIFY(bars);
    QCOMPARE(bars->data()->size(), int(counts.size()));
    for (int b = 0; b < int(counts.size()); ++b) {
        QCOMPARE(bars->data()->at(b)->key, double(b));
        QCOMPARE(bars->data()->at(b)->value, double(counts[size_t(b)]));
    }
    const qint64 positions = contextsSummary(store).positions;
    QCOMPARE(d->firingLabel()->property("fraction").toDouble(), double(firing) / double(positions));
    QVERIFY2(d->firingLabel()->text().contains(QStringLiteral("Fires on %1 of %2 tokens").arg(firing).arg(positions)), qPrintable(d->firingLabel()->text()));
    // the contexts: the library's recomputed activations, the stored value in the first column, tints a / max
    QCOMPARE(int(d->contexts().size()), int(top.size()));
    QCOMPARE(d->contextsTable()->rowCount(), int(top.size()));
    float max = 0;
    for (size_t i = 0; i < top.size(); ++i) {
        const Eigen::VectorXf a = contextActivations(*model_, set_->coders[0], top[i].ids, f);
        QCOMPARE(d->contexts()[i].activations.size(), a.size());
        for (Eigen::Index p = 0; p < a.size(); ++p) QCOMPARE(d->contexts()[i].activations(p), a(p));
        QVERIFY(std::abs(a(top[i].position) - top[i].activation) <= 1e-5f * std::max(1.0f, top[i].activation));
        QCOMPARE(d->contextsTable()->item(int(i), 0)->data(Qt::UserRole).toDouble(), double(top[i].activation));
        max = std::max(max, a.maxCoeff());
    }
    auto* first = qobject_cast<QLabel*>(d->contextsTable()->cellWidget(0, 1));
    QVERIFY(first);
    const Eigen::VectorXf a0 = contextActivations(*model_, set_->coders[0], top[0].ids, f);
    const QString tint = QStringLiteral("rgba(255,140,0,%1)\" title=\"%2\"><b>").arg(std::clamp(double(a0(top[0].position) / max), 0.0, 1.0), 0, 'f', 2)
                             .arg(double(a0(top[0].position)), 0, 'f', 3);
    QVERIFY2(first->text().contains(tint), qPrintable(first->text() + QStringLiteral(" lacks ") + tint));
    // clicking a context asks for its text (without BOS) as the prompt
    QSignalSpy spy(panel_.get(), &FeaturesPanel::promptRequested);
    QTableWidget* t = d->contextsTable();
    QTest::mouseClick(t->viewport(), Qt::LeftButton, {}, t->visualItemRect(t->item(0, 0)).center());
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), model_->tokenizer().decode(std::vector<int>(top[0].ids.begin() + 1, top[0].ids.end())));
    // the histogram exports as a PNG of the figure's size at scale 2
    const QString png = tmp_.filePath(QStringLiteral("histogram.png"));
    QCOMPARE(d->histogramFigure()->figureActions()->exportTo(png, 2.0), QString());
    const QImage image(png);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), d->histogramFigure()->figureSize() * 2);
    QVERIFY(QFileInfo(png).size() > 1000);
}

void TestGuiFeatures::dashboardBarsAreTheReadout() {
    const int f = panel_->selectedFeature();
    const FeatureReadout r = readFeature(*model_, set_->coders[0], f, FeatureDashboard::kBarsPerSide);
    QCustomPlot* plot = panel_->dashboard()->logitsFigure()->plot();
    QCOMPARE(plot->plottableCount(), 2);
    auto* up = qobject_cast<QCPBars*>(plot->plottable(0));
    auto* down = qobject_cast<QCPBars*>(plot->plottable(1));
    QVERIFY(up && down);
    QCOMPARE(up->keyAxis(), plot->yAxis); // horizontal bars
    QCOMPARE(up->data()->size(), int(r.decoderTop.size()));
    QCOMPARE(down->data()->size(), int(r.decoderBottom.size()));
    const int n = int(r.decoderTop.size() + r.decoderBottom.size());
    auto ticker = qSharedPointerCast<QCPAxisTickerText>(plot->yAxis->ticker());
    auto valuesOf = [](QCPBars* bars) {
        QMap<double, double> m;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) m.insert(it->key, it->value);
        return m;
    };
    const QMap<double, double> upValues = valuesOf(up), downValues = valuesOf(down);
    for (int i = 0; i < int(r.decoderTop.size()); ++i) { // sorted by key ascending: the top row (largest) is last
        const double key = n - 1 - i;
        QVERIFY(upValues.contains(key));
        QCOMPARE(upValues.value(key), double(r.decoderTop[size_t(i)].score));
        QCOMPARE(ticker->ticks().value(key), tokenLabels(model_->tokenizer(), {r.decoderTop[size_t(i)].id}).value(0));
    }
    for (int i = 0; i < int(r.decoderBottom.size()); ++i) { // the most negative at the bottom (key 0)
        QVERIFY(downValues.contains(double(i)));
        QCOMPARE(downValues.value(double(i)), double(r.decoderBottom[size_t(i)].score));
    }
    QVERIFY(r.decoderTop[0].score > 0 && r.decoderBottom[0].score < 0);
}

void TestGuiFeatures::badFolderSaysWhy() {
    FeaturesPanel panel;
    panel.setDictionaries(nullptr, QStringLiteral("/no/such"), QStringLiteral("/no/such: no such file or folder"));
    bool found = false;
    for (QLabel* l : panel.findChildren<QLabel*>()) found |= l->text() == QStringLiteral("Cannot open /no/such: /no/such: no such file or folder");
    QVERIFY(found);
}


void TestGuiFeatures::labelsBesideFeatures() {
    // labels for every feature at the SAE's layer (1) and different ones at layer 0, which must not show
    QByteArray csv = "layer,feature,label\n";
    for (int f = 0; f < 64; ++f) csv += "1," + QByteArray::number(f) + ",\"reads, at L1: #" + QByteArray::number(f) + "\"\n0," + QByteArray::number(f) + ",wrong layer\n";
    const QString path = tmp_.filePath(QStringLiteral("labels.csv"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(csv);
    file.close();
    panel_->setFeatureLabels(std::make_shared<const FeatureLabels>(readFeatureLabels(path)));
    panel_->selectPosition(3);
    QTableWidget* firing = nullptr;
    for (QTableWidget* t : panel_->findChildren<QTableWidget*>())
        if (t->columnCount() == 3) firing = t;
    QVERIFY(firing);
    QCOMPARE(firing->horizontalHeaderItem(2)->text(), QStringLiteral("label"));
    const std::vector<FeatureValue> top = run_.firing(3, 10);
    QCOMPARE(firing->rowCount(), int(top.size()));
    for (int i = 0; i < firing->rowCount(); ++i)
        QCOMPARE(firing->item(i, 2)->text(), QStringLiteral("reads, at L1: #%1").arg(top[size_t(i)].feature));
    const int f = top.front().feature;
    panel_->selectFeature(f);
    QVERIFY(labelContaining(QStringLiteral("<b>Feature %1</b> — <i>reads, at L1: #%1</i> across the prompt").arg(f)));
    // the feature column and the activations stay readable at the default size: not cut to nothing by the label column
    QVERIFY(firing->columnWidth(1) >= firing->fontMetrics().horizontalAdvance(firing->item(0, 1)->text()));
    QCoreApplication::processEvents(); // the header lays its sections out after the rows changed
    QVERIFY2(firing->horizontalHeader()->length() <= firing->viewport()->width(), qPrintable(QStringLiteral("%1 %2 %3 %4 %5").arg(firing->horizontalHeader()->length()).arg(firing->viewport()->width()).arg(firing->columnWidth(0)).arg(firing->columnWidth(1)).arg(firing->columnWidth(2)))); // no column cut off behind a scroll bar
    panel_->setFeatureLabels(nullptr);
    QCOMPARE(firing->item(0, 2)->text(), QString());
    QVERIFY(labelContaining(QStringLiteral("<b>Feature %1</b> across the prompt").arg(f)));
}

QTEST_MAIN(TestGuiFeatures)
#include "tst_gui_features.moc"
