#include "model/analysis/graphs/graph_document.h"

#include "model/core/errors.h"

#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

/// Reads members of one JSON object, each error "LABEL: WHERE.member …".
class Reader {
public:
    Reader(const QJsonObject& o, QString label, QString where) : o_(o), label_(std::move(label)), where_(std::move(where)) {}

    [[noreturn]] void fail(const QString& member, const QString& problem) const {
        const QString at = where_.isEmpty() ? member : member.isEmpty() ? where_ : where_ + QLatin1Char('.') + member;
        throw InputError(QStringLiteral("%1: %2 %3").arg(label_, at, problem));
    }
    /// Present and not null.
    bool has(const QString& m) const { return !o_.value(m).isUndefined() && !o_.value(m).isNull(); }
    QJsonValue need(const QString& m) const {
        const QJsonValue v = o_.value(m);
        if (v.isUndefined()) fail(m, QStringLiteral("is missing"));
        return v;
    }
    QString string(const QString& m) const {
        const QJsonValue v = need(m);
        if (!v.isString()) fail(m, QStringLiteral("is not a string"));
        return v.toString();
    }
    /// An optional string: absent or null → "".
    QString optString(const QString& m) const {
        const QJsonValue v = o_.value(m);
        if (v.isUndefined() || v.isNull()) return {};
        if (!v.isString()) fail(m, QStringLiteral("is not a string"));
        return v.toString();
    }
    int integer(const QString& m) const {
        const QJsonValue v = need(m);
        return toInt(m, v);
    }
    /// A whole number up to kMaxGraphFeatureId in magnitude (a 64-bit feature id).
    qint64 toInt64(const QString& m, const QJsonValue& v) const {
        const double d = v.toDouble(std::nan(""));
        if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d) || std::abs(d) > double(kMaxGraphFeatureId))
            fail(m, QStringLiteral("is not an integer"));
        return v.toInteger();
    }
    int toInt(const QString& m, const QJsonValue& v) const {
        const double d = v.toDouble(std::nan(""));
        if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d) || std::abs(d) > 2e9) fail(m, QStringLiteral("is not an integer"));
        return int(d);
    }
    /// An optional number: absent or null → `otherwise`.
    double optNumber(const QString& m, double otherwise) const {
        const QJsonValue v = o_.value(m);
        if (v.isUndefined() || v.isNull()) return otherwise;
        if (!v.isDouble() || !std::isfinite(v.toDouble())) fail(m, QStringLiteral("is not a finite number"));
        return v.toDouble();
    }
    double number(const QString& m) const {
        need(m);
        const QJsonValue v = o_.value(m);
        if (!v.isDouble() || !std::isfinite(v.toDouble())) fail(m, QStringLiteral("is not a finite number"));
        return v.toDouble();
    }
    bool optBool(const QString& m) const {
        const QJsonValue v = o_.value(m);
        if (v.isUndefined() || v.isNull()) return false;
        if (!v.isBool()) fail(m, QStringLiteral("is not true or false"));
        return v.toBool();
    }
    QJsonArray array(const QString& m) const {
        const QJsonValue v = need(m);
        if (!v.isArray()) fail(m, QStringLiteral("is not an array"));
        return v.toArray();
    }
    QJsonObject object(const QString& m) const {
        const QJsonValue v = need(m);
        if (!v.isObject()) fail(m, QStringLiteral("is not an object"));
        return v.toObject();
    }
    QStringList strings(const QJsonArray& a, const QString& m) const {
        QStringList out;
        for (int i = 0; i < a.size(); ++i) {
            if (!a[i].isString()) fail(QStringLiteral("%1[%2]").arg(m).arg(i), QStringLiteral("is not a string"));
            out << a[i].toString();
        }
        return out;
    }
    const QJsonObject& members() const { return o_; }
    Reader at(const QJsonValue& v, const QString& where) const {
        if (!v.isObject()) Reader(o_, label_, where).fail(QString(), QStringLiteral("is not an object"));
        return Reader(v.toObject(), label_, where);
    }

private:
    QJsonObject o_;
    QString label_, where_;
};

/// The node members GraphDocumentNode holds (graphDocumentToJson writes each one the node's `kept` does not have).
const QStringList kNodeMembers{"node_id", "feature", "layer", "ctx_idx", "feature_type", "jsNodeId", "clerp",
                               "influence", "activation", "token_prob", "is_target_logit"};

/// `o` without `members`.
QJsonObject without(QJsonObject o, std::initializer_list<const char*> members) {
    for (const char* m : members) o.remove(QLatin1String(m));
    return o;
}

GraphNodeKind kindOf(const QString& featureType) {
    if (featureType == QLatin1String("embedding")) return GraphNodeKind::Token;
    if (featureType == QLatin1String("logit")) return GraphNodeKind::Logit;
    if (featureType == QLatin1String("mlp reconstruction error")) return GraphNodeKind::Error;
    return GraphNodeKind::Feature;
}

GraphDocumentNode readNode(const Reader& r, int nTokens) {
    GraphDocumentNode n;
    n.nodeId = r.string(QStringLiteral("node_id"));
    n.featureType = r.string(QStringLiteral("feature_type"));
    n.kind = kindOf(n.featureType);
    // an integer (64-bit: Cantor pairings pass 2^32), or null (the schema allows it; read as −1, written back null)
    const QJsonValue feature = r.need(QStringLiteral("feature"));
    n.feature = feature.isNull() ? -1 : r.toInt64(QStringLiteral("feature"), feature);
    n.ctxIdx = r.integer(QStringLiteral("ctx_idx"));
    if (n.ctxIdx < 0 || (nTokens > 0 && n.ctxIdx >= nTokens))
        r.fail(QStringLiteral("ctx_idx"), QStringLiteral("%1 is outside the prompt's %2 tokens").arg(n.ctxIdx).arg(nTokens));
    const QJsonValue layer = r.need(QStringLiteral("layer"));
    if (layer.isString() && layer.toString() == QLatin1String("E")) {
        n.layer = -1;
    } else {
        int l = -1;
        if (layer.isDouble()) {
            l = r.toInt(QStringLiteral("layer"), layer);
        } else if (layer.isString()) {
            bool ok = false;
            l = layer.toString().toInt(&ok);
            if (!ok) r.fail(QStringLiteral("layer"), QStringLiteral("\"%1\" is not a layer (a number or \"E\")").arg(layer.toString()));
        } else {
            r.fail(QStringLiteral("layer"), QStringLiteral("is not a layer (a number or \"E\")"));
        }
        if (l < 0 || (n.kind == GraphNodeKind::Logit && l < 1) || l > kMaxGraphLayers)
            r.fail(QStringLiteral("layer"), QStringLiteral("%1 is not a layer (0 to %2)").arg(l).arg(kMaxGraphLayers));
        n.layer = n.kind == GraphNodeKind::Logit ? l - 1 : l;
    }
    if (n.kind == GraphNodeKind::Token) n.layer = -1;
    // circuit-tracer writes feature = id + 10^⌈log10 d_transcoder⌉ · layer when it knows the width: the id is node_id's
    // middle part ("L_F_P")
    n.fileFeature = n.feature;
    if (n.kind == GraphNodeKind::Feature) {
        const QStringList parts = n.nodeId.split(QLatin1Char('_'));
        bool okLayer = false, okFeature = false;
        const int idLayer = parts.size() == 3 ? parts[0].toInt(&okLayer) : -1;
        const qint64 id = parts.size() == 3 ? parts[1].toLongLong(&okFeature) : -1;
        if (okLayer && okFeature && idLayer == n.layer && id >= 0) n.feature = id;
    }
    n.jsNodeId = r.optString(QStringLiteral("jsNodeId"));
    n.clerp = r.optString(QStringLiteral("clerp"));
    n.influence = r.optNumber(QStringLiteral("influence"), 0);
    n.activation = r.optNumber(QStringLiteral("activation"), 0);
    n.tokenProb = r.optNumber(QStringLiteral("token_prob"), 0);
    n.isTargetLogit = r.optBool(QStringLiteral("is_target_logit"));
    // written back as read: the members held above leave `kept` unless null; the layer stays as the file wrote it
    n.kept = r.members();
    for (const QString& m : kNodeMembers)
        if (m != QLatin1String("layer") && !n.kept.value(m).isNull()) n.kept.remove(m);
    return n;
}

/// metadata and qParams into `doc`.
void readHeader(const Reader& top, GraphDocument& doc) {
    const Reader meta(top.object(QStringLiteral("metadata")), doc.label, QStringLiteral("metadata"));
    doc.promptTokens = meta.strings(meta.array(QStringLiteral("prompt_tokens")), QStringLiteral("prompt_tokens"));
    doc.slug = meta.optString(QStringLiteral("slug"));
    doc.scan = meta.optString(QStringLiteral("scan"));
    doc.prompt = meta.optString(QStringLiteral("prompt"));
    doc.nodeThreshold = meta.optNumber(QStringLiteral("node_threshold"), doc.nodeThreshold);
    doc.extraMetadata = top.object(QStringLiteral("metadata"));
    for (const char* k : {"slug", "scan", "prompt", "prompt_tokens", "node_threshold"}) doc.extraMetadata.remove(QLatin1String(k));
}

/// qParams (optional) into `doc`, dropping ids that name no node (listed in notes).
void readQParams(const QJsonObject& json, GraphDocument& doc) {
    const QJsonValue q = json.value(QStringLiteral("qParams"));
    if (q.isUndefined() || q.isNull()) return;
    const Reader top(json, doc.label, QString());
    const Reader r = top.at(q, QStringLiteral("qParams"));
    doc.extraQParams = without(r.members(), {"pinnedIds", "supernodes"});
    const auto known = [&](const QString& id) {
        if (doc.indexOf(id) >= 0) return true;
        doc.notes << QStringLiteral("qParams names %1, which is not a node of the graph: left out").arg(id);
        return false;
    };
    if (r.has(QStringLiteral("pinnedIds"))) {
        for (const QString& id : r.strings(r.array(QStringLiteral("pinnedIds")), QStringLiteral("pinnedIds")))
            if (known(id) && !doc.pinnedIds.contains(id)) doc.pinnedIds << id;
    }
    if (!r.has(QStringLiteral("supernodes"))) return;
    const QJsonArray groups = r.array(QStringLiteral("supernodes"));
    for (int i = 0; i < groups.size(); ++i) {
        const QString m = QStringLiteral("supernodes[%1]").arg(i);
        if (!groups[i].isArray()) r.fail(m, QStringLiteral("is not an array"));
        const QStringList s = r.strings(groups[i].toArray(), m);
        if (s.isEmpty()) r.fail(m, QStringLiteral("is empty (it needs a name)"));
        QStringList group{s.front()};
        for (int k = 1; k < s.size(); ++k)
            if (known(s[k])) group << s[k];
        doc.supernodes.push_back(group);
    }
}

} // namespace

int GraphDocument::nLayers() const {
    int top = 0;
    for (const GraphDocumentNode& n : nodes)
        if (n.kind == GraphNodeKind::Logit) return n.layer;
        else top = std::max(top, n.layer + 1);
    return top;
}

int GraphDocument::nPositions() const {
    int n = int(promptTokens.size());
    for (const GraphDocumentNode& x : nodes) n = std::max(n, x.ctxIdx + 1);
    return n;
}

int GraphDocument::indexOf(const QString& nodeId) const {
    for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].nodeId == nodeId) return int(i);
    return -1;
}

bool GraphDocument::isOffline() const {
    return std::all_of(nodes.begin(), nodes.end(), [](const GraphDocumentNode& n) { return n.graphIndex < 0; });
}

double GraphDocument::sizeWeight(int node) const {
    const GraphDocumentNode& n = nodes[size_t(node)];
    return std::clamp(n.kind == GraphNodeKind::Logit ? n.tokenProb : 1.0 - n.influence, 0.0, 1.0);
}

QString documentNodeLabel(const GraphDocumentNode& n, const QStringList& promptTokens) {
    const QString token = promptTokens.value(n.ctxIdx);
    switch (n.kind) {
    case GraphNodeKind::Feature: return QStringLiteral("L%1 F%2 @%3").arg(n.layer).arg(n.feature).arg(n.ctxIdx);
    case GraphNodeKind::Error: return QStringLiteral("error L%1 @%2").arg(n.layer).arg(n.ctxIdx);
    case GraphNodeKind::Token: return QStringLiteral("emb @%1 '%2'").arg(n.ctxIdx).arg(token);
    case GraphNodeKind::Logit: break;
    }
    QString text = n.clerp;
    if (text.startsWith(QLatin1String("Output "))) text = text.mid(7); // circuit-tracer's "Output "TOKEN" (p=…)"
    return QStringLiteral("logit %1").arg(text.isEmpty() ? QStringLiteral("%1 p=%2").arg(n.feature).arg(n.tokenProb, 0, 'f', 3) : text);
}

QString GraphDocument::nodeLabel(int node) const { return documentNodeLabel(nodes[size_t(node)], promptTokens); }

std::vector<int> GraphDocument::strongestLinks(int node, bool incoming, int k) const {
    std::vector<int> out;
    for (size_t i = 0; i < links.size(); ++i)
        if ((incoming ? links[i].target : links[i].source) == node) out.push_back(int(i));
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return std::abs(links[size_t(a)].weight) > std::abs(links[size_t(b)].weight); });
    if (int(out.size()) > k) out.resize(size_t(std::max(0, k)));
    return out;
}

GraphDocument graphDocumentFromJson(const QJsonObject& json, const QString& label) {
    GraphDocument doc;
    doc.label = label;
    const Reader top(json, label, QString());
    readHeader(top, doc);
    doc.extraMembers = without(json, {"metadata", "qParams", "nodes", "links"});
    const QJsonArray nodes = top.array(QStringLiteral("nodes"));
    const QJsonArray links = top.array(QStringLiteral("links"));
    // circuit-tracer writes an error node's id as 0_LAYER_POS, which can equal a layer-0 feature's (0_FEATURE_POS): one
    // id may then name a feature and an error node. A target is never an error node; a source is the one below its
    // target (a lower layer), and, when both are, the first listed (the feature). Two nodes of one kind with one id are
    // a broken file.
    QHash<QString, std::vector<int>> index;
    doc.nodes.reserve(size_t(nodes.size()));
    int shared = 0;
    for (int i = 0; i < nodes.size(); ++i) {
        GraphDocumentNode n = readNode(top.at(nodes[i], QStringLiteral("nodes[%1]").arg(i)), int(doc.promptTokens.size()));
        std::vector<int>& named = index[n.nodeId];
        for (int j : named)
            if (doc.nodes[size_t(j)].kind == n.kind)
                throw InputError(QStringLiteral("%1: nodes[%2].node_id \"%3\" repeats nodes[%4]'s").arg(label).arg(i).arg(n.nodeId).arg(j));
        shared += !named.empty();
        named.push_back(i);
        doc.nodes.push_back(std::move(n));
    }
    if (shared > 0)
        doc.notes << QStringLiteral("%1 node ids name both a feature and an error node (circuit-tracer writes an error node's id as "
                                    "0_LAYER_POS); each of their links goes to the one below its target, the feature when both are").arg(shared);
    doc.links.reserve(size_t(links.size()));
    for (int i = 0; i < links.size(); ++i) {
        const Reader r = top.at(links[i], QStringLiteral("links[%1]").arg(i));
        GraphDocumentLink l;
        const QString s = r.string(QStringLiteral("source")), t = r.string(QStringLiteral("target"));
        if (!index.contains(s)) r.fail(QStringLiteral("source"), QStringLiteral("\"%1\" is not a node of the graph").arg(s));
        if (!index.contains(t)) r.fail(QStringLiteral("target"), QStringLiteral("\"%1\" is not a node of the graph").arg(t));
        const std::vector<int>& targets = index.value(t);
        l.target = targets.front();
        for (int j : targets)
            if (doc.nodes[size_t(j)].kind != GraphNodeKind::Error) {
                l.target = j;
                break;
            }
        const std::vector<int>& sources = index.value(s);
        l.source = sources.front();
        for (int j : sources)
            if (doc.nodes[size_t(j)].layer < doc.nodes[size_t(l.target)].layer) {
                l.source = j;
                break;
            }
        l.weight = r.number(QStringLiteral("weight"));
        l.kept = without(r.members(), {"source", "target", "weight"});
        doc.links.push_back(std::move(l));
    }
    readQParams(json, doc);
    return doc;
}

QJsonObject graphDocumentToJson(const GraphDocument& doc) {
    // each member the object does not already hold (the file's own, kept as read)
    const auto put = [](QJsonObject& o, const char* member, const QJsonValue& v) {
        if (!o.contains(QLatin1String(member))) o.insert(QLatin1String(member), v);
    };
    QJsonObject meta = doc.extraMetadata;
    QJsonArray tokens;
    for (const QString& t : doc.promptTokens) tokens.append(t);
    meta.insert(QStringLiteral("slug"), doc.slug);
    meta.insert(QStringLiteral("scan"), doc.scan);
    meta.insert(QStringLiteral("prompt"), doc.prompt);
    meta.insert(QStringLiteral("prompt_tokens"), tokens);
    meta.insert(QStringLiteral("node_threshold"), doc.nodeThreshold);
    QJsonArray nodes, links, supernodes;
    QJsonObject qkOnly = doc.extraMembers.value(QStringLiteral("qk_only_nodes")).toObject();
    QStringList qkOnlyIds;
    for (const GraphDocumentNode& n : doc.nodes) {
        if (n.qkOnly) { // Neuronpedia's side channel for QK contributors pruned out of nodes (its graph-schema.json)
            QJsonObject o = n.kept;
            o.remove(QStringLiteral("influence"));
            put(o, "node_id", n.nodeId);
            put(o, "feature", n.fileFeature < 0 ? QJsonValue(QJsonValue::Null) : QJsonValue(n.fileFeature));
            put(o, "layer", n.kind == GraphNodeKind::Token ? QStringLiteral("E") : QString::number(n.layer));
            put(o, "ctx_idx", n.ctxIdx);
            put(o, "feature_type", n.featureType);
            put(o, "jsNodeId", n.jsNodeId);
            put(o, "clerp", n.clerp);
            put(o, "activation", n.kind == GraphNodeKind::Feature ? QJsonValue(n.activation) : QJsonValue(QJsonValue::Null));
            qkOnly.insert(n.nodeId, o);
            qkOnlyIds << n.nodeId;
            continue;
        }
        QJsonObject o = n.kept;
        put(o, "node_id", n.nodeId);
        put(o, "feature", QJsonValue(n.fileFeature)); // an integer as read (a double would be written 1.3e+10)
        put(o, "layer", n.kind == GraphNodeKind::Token ? QStringLiteral("E") : QString::number(n.kind == GraphNodeKind::Logit ? n.layer + 1 : n.layer));
        put(o, "ctx_idx", n.ctxIdx);
        put(o, "feature_type", n.featureType);
        put(o, "jsNodeId", n.jsNodeId);
        put(o, "clerp", n.clerp);
        put(o, "influence", n.influence);
        put(o, "activation", n.activation);
        put(o, "token_prob", n.tokenProb);
        put(o, "is_target_logit", n.isTargetLogit);
        nodes.append(o);
    }
    for (const GraphDocumentLink& l : doc.links) {
        QJsonObject o = l.kept;
        o.insert(QStringLiteral("source"), doc.nodes[size_t(l.source)].nodeId);
        o.insert(QStringLiteral("target"), doc.nodes[size_t(l.target)].nodeId);
        o.insert(QStringLiteral("weight"), l.weight);
        links.append(o);
    }
    for (const QStringList& s : doc.supernodes) supernodes.append(QJsonArray::fromStringList(s));
    QJsonObject q = doc.extraQParams;
    QStringList pinned = doc.pinnedIds;
    for (const QString& id : qkOnlyIds) pinned.removeAll(id); // pins name nodes of `nodes`
    q.insert(QStringLiteral("pinnedIds"), QJsonArray::fromStringList(pinned));
    q.insert(QStringLiteral("supernodes"), supernodes);
    put(q, "linkType", QStringLiteral("both"));
    put(q, "clickedId", QString());
    put(q, "sg_pos", QString());
    QJsonObject out = doc.extraMembers;
    out.insert(QStringLiteral("metadata"), meta);
    out.insert(QStringLiteral("qParams"), q);
    out.insert(QStringLiteral("nodes"), nodes);
    out.insert(QStringLiteral("links"), links);
    if (!qkOnly.isEmpty()) out.insert(QStringLiteral("qk_only_nodes"), qkOnly);
    return out;
}

QJsonObject graphFileSummary(const GraphDocument& doc) {
    int counts[4] = {0, 0, 0, 0}; // feature, error, token, logit
    for (const GraphDocumentNode& n : doc.nodes)
        ++counts[n.kind == GraphNodeKind::Feature ? 0 : n.kind == GraphNodeKind::Error ? 1 : n.kind == GraphNodeKind::Token ? 2 : 3];
    QJsonArray supernodes;
    for (const QStringList& s : doc.supernodes)
        supernodes.append(QJsonObject{{"name", s.value(0)}, {"members", QJsonArray::fromStringList(s.mid(1))}});
    QJsonObject out{{"file", doc.label},
                    {"slug", doc.slug},
                    {"scan", doc.scan},
                    {"prompt", doc.prompt},
                    {"prompt_tokens", QJsonArray::fromStringList(doc.promptTokens)},
                    {"n_layers", doc.nLayers()},
                    {"n_positions", doc.nPositions()},
                    {"nodes", QJsonObject{{"feature", counts[0]}, {"error", counts[1]}, {"token", counts[2]}, {"logit", counts[3]},
                                          {"total", int(doc.nodes.size())}}},
                    {"links", int(doc.links.size())},
                    {"pinned_ids", QJsonArray::fromStringList(doc.pinnedIds)},
                    {"supernodes", supernodes},
                    {"notes", QJsonArray::fromStringList(doc.notes)}};
    if (doc.extraMetadata.contains(QLatin1String("schema_version")))
        out.insert(QStringLiteral("schema_version"), doc.extraMetadata.value(QLatin1String("schema_version")));
    // scores, when the file has them: a "scores" object, or circuit-tracer's names
    QJsonObject scores = doc.extraMetadata.value(QLatin1String("scores")).toObject();
    for (const char* m : {"replacement_score", "completeness_score"})
        if (doc.extraMetadata.value(QLatin1String(m)).isDouble()) scores.insert(QString::fromLatin1(m).section(QLatin1Char('_'), 0, 0), doc.extraMetadata.value(QLatin1String(m)));
    if (!scores.isEmpty()) out.insert(QStringLiteral("scores"), scores);
    return out;
}

GraphDocument readGraphFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw InputError(QStringLiteral("%1: cannot open: %2").arg(path, f.errorString()));
    if (f.size() > kMaxGraphFileBytes)
        throw InputError(QStringLiteral("%1: %2 MB, larger than the %3 MB a graph file may have").arg(path).arg(f.size() / 1000000).arg(kMaxGraphFileBytes / 1000000));
    const QByteArray bytes = f.readAll();
    QJsonParseError error;
    const QJsonDocument json = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError)
        throw InputError(QStringLiteral("%1: not JSON: %2 at byte %3").arg(path, error.errorString()).arg(error.offset));
    if (!json.isObject()) throw InputError(QStringLiteral("%1: not a graph: the JSON is not an object").arg(path));
    return graphDocumentFromJson(json.object(), path);
}

void writeGraphFile(const GraphDocument& doc, const QString& path) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) throw InputError(QStringLiteral("%1: cannot write: %2").arg(path, f.errorString()));
    f.write(QJsonDocument(graphDocumentToJson(doc)).toJson(QJsonDocument::Indented));
    if (!f.commit()) throw InputError(QStringLiteral("%1: cannot write: %2").arg(path, f.errorString()));
}

} // namespace attnscope
