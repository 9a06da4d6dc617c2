#include "tests/support/stories_reference.h"

#include "tests/support/reference_json.h"
#include "tests/support/test_paths.h"

namespace attnscope::test {

namespace {

QJsonObject reference() { return readJsonObject(storiesFile(QStringLiteral("reference.json"))); }

} // namespace

QString storiesFile(const QString& name) { return testdata(QStringLiteral("stories260K/") + name); }

std::vector<StoriesPrompt> storiesPrompts() {
    const QJsonObject ref = reference();
    std::vector<StoriesPrompt> out;
    const QJsonObject main = ref.value("main").toObject();
    StoriesPrompt m;
    m.name = QStringLiteral("main");
    m.text = main.value("prompt").toString();
    m.ids = intsFromJson(main.value("prompt_token_ids").toArray());
    QJsonArray rows;
    for (const QJsonValue& p : main.value("logits_per_prompt_position").toArray()) {
        m.positions.push_back(p.toObject().value("position").toInt());
        rows.append(p.toObject().value("logits"));
    }
    m.logits = matrixFromJson(rows);
    m.continuation = intsFromJson(main.value("greedy_continuation_ids").toArray());
    out.push_back(m);
    const QJsonArray others = ref.value("other_prompts").toArray();
    for (qsizetype i = 0; i < others.size(); ++i) {
        const QJsonObject o = others[i].toObject();
        StoriesPrompt p;
        p.name = QStringLiteral("other %1").arg(i + 1);
        p.text = o.value("prompt").toString();
        p.ids = intsFromJson(o.value("prompt_token_ids").toArray());
        p.positions = {int(p.ids.size()) - 1};
        p.logits = matrixFromJson(QJsonArray{o.value("logits_last_prompt_position")});
        p.continuation = intsFromJson(o.value("greedy_continuation_ids").toArray());
        out.push_back(p);
    }
    return out;
}

std::vector<StoriesTokenizerCase> storiesTokenizerCases() {
    std::vector<StoriesTokenizerCase> out;
    for (const QJsonValue& v : reference().value("tokenizer_cases").toArray())
        out.push_back({v.toObject().value("text").toString(), intsFromJson(v.toObject().value("ids").toArray())});
    return out;
}

QString storiesUnpromptedText() {
    for (const QJsonValue& v : reference().value("run_c_outputs").toArray()) {
        const QJsonObject o = v.toObject();
        if (o.value("command").toString().endsWith(QLatin1String("-n 200"))) {
            QString s = o.value("stdout").toString();
            if (s.endsWith(QLatin1Char('\n'))) s.chop(1);
            return s;
        }
    }
    qFatal("reference.json has no -n 200 run");
}

} // namespace attnscope::test
