#include "model/features/circuit_tracer_set.h"

#include "model/core/errors.h"
#include "model/features/config_fields.h"
#include "model/features/dictionary_tensors.h"
#include "model/features/gemma_scope2_multilayer.h"
#include "model/features/gemma_scope_params.h"
#include "model/formats/hf_repo_folder.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <map>

#ifdef ATTNSCOPE_HAVE_YAML_CPP
#include <yaml-cpp/yaml.h>
#endif

namespace attnscope {

bool isCircuitTracerFolder(const QString& folder) {
    return QFileInfo(folder).isDir() && QDir(folder).exists(QStringLiteral("config.yaml"));
}

#ifndef ATTNSCOPE_HAVE_YAML_CPP
CircuitTracerConfig readCircuitTracerConfig(const QString& yamlPath) {
    throw ModelError(QDir::toNativeSeparators(yamlPath),
                     QStringLiteral("this build reads no config.yaml (built without yaml-cpp; install libyaml-cpp-dev and rebuild)"));
}

DictionarySet readCircuitTracerSet(const QString& path) {
    readCircuitTracerConfig(QFileInfo(path).isFile() ? path : QDir(path).filePath(QStringLiteral("config.yaml")));
    return {};
}
#else

namespace {

/// The type PyYAML (YAML 1.1, circuit-tracer's yaml.safe_load) gives a node: "null", "boolean", "integer", "number",
/// "string", "sequence" or "mapping". A plain scalar is typed by PyYAML's implicit resolvers (yes/no/on/off are
/// booleans, 1e5 without a dot is a string); a quoted one is a string; an explicit !!tag is taken as written.
QString yamlType(const YAML::Node& n) {
    if (!n || n.IsNull()) return QStringLiteral("null");
    if (n.IsSequence()) return QStringLiteral("sequence");
    if (n.IsMap()) return QStringLiteral("mapping");
    const std::string& tag = n.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return QStringLiteral("string");
    if (tag == "tag:yaml.org,2002:bool") return QStringLiteral("boolean");
    if (tag == "tag:yaml.org,2002:int") return QStringLiteral("integer");
    if (tag == "tag:yaml.org,2002:float") return QStringLiteral("number");
    if (tag == "tag:yaml.org,2002:null") return QStringLiteral("null");
    if (tag != "?" && !tag.empty()) return QStringLiteral("string");
    static const QRegularExpression null(QStringLiteral("^(?:~|null|Null|NULL|)$"));
    static const QRegularExpression boolean(QStringLiteral("^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"));
    static const QRegularExpression integer(QStringLiteral("^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
                                                           "[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"));
    static const QRegularExpression number(QStringLiteral("^(?:[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9_]+(?:[eE][-+][0-9]+)?|"
                                                          "[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$"));
    const QString v = QString::fromStdString(n.Scalar());
    if (null.match(v).hasMatch()) return QStringLiteral("null");
    if (boolean.match(v).hasMatch()) return QStringLiteral("boolean");
    if (integer.match(v).hasMatch()) return QStringLiteral("integer");
    if (number.match(v).hasMatch()) return QStringLiteral("number");
    return QStringLiteral("string");
}

/// Typed members of a config.yaml mapping, checked as config_fields.h checks JSON (absent or null: not given).
struct YamlFields {
    YAML::Node map;
    QString label, prefix;

    [[noreturn]] void wrongType(const YAML::Node& n, const QString& key, const QString& expected) const {
        const QString type = yamlType(n);
        const QString got = n.IsScalar() ? QStringLiteral("the YAML %1 %2").arg(type, QString::fromStdString(n.Scalar()).left(40))
                                         : QStringLiteral("a YAML %1").arg(type);
        configTypeError(label, prefix + key, expected, got);
    }
    std::optional<QString> string(const char* key) const {
        const YAML::Node n = map[key];
        if (yamlType(n) == QLatin1String("null")) return std::nullopt;
        if (yamlType(n) != QLatin1String("string")) wrongType(n, QLatin1String(key), QStringLiteral("a string"));
        return QString::fromStdString(n.Scalar());
    }
    std::optional<qint64> integer(const char* key, qint64 lo, qint64 hi) const {
        const YAML::Node n = map[key];
        if (yamlType(n) == QLatin1String("null")) return std::nullopt;
        const QString expected = QStringLiteral("an integer between %1 and %2").arg(lo).arg(hi);
        if (yamlType(n) != QLatin1String("integer")) wrongType(n, QLatin1String(key), expected);
        long long v = 0;
        if (!YAML::convert<long long>::decode(n, v) || v < lo || v > hi) wrongType(n, QLatin1String(key), expected);
        return qint64(v);
    }
};

/// The file an hf://ORG/NAME/PATH URI names in the Hugging Face cache that holds `dir` (…/hub/models--A--B/snapshots/REV/…,
/// as circuit-tracer's own download leaves a set whose config.yaml lists another repository's files: mwhanna's
/// gemma-scope-2-* sets list google/gemma-scope-2-*'s), in any snapshot of models--ORG--NAME; "" when not there.
QString inHfCache(const QDir& dir, const QString& repoId, const QString& inRepo) {
    QDir d(dir.absolutePath());
    while (hfRepoIdOfFolderName(d.dirName()).isEmpty())
        if (!d.cdUp()) return {};
    if (!d.cdUp()) return {};
    const QDir snapshots(d.filePath(hfRepoFolderName(repoId) + QStringLiteral("/snapshots")));
    for (const QString& rev : snapshots.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        if (QFileInfo::exists(snapshots.filePath(rev + QLatin1Char('/') + inRepo))) return snapshots.filePath(rev + QLatin1Char('/') + inRepo);
    return {};
}

/// Where a config entry's file is looked for, inside `dir`: a relative or absolute path as written; an hf:// URI
/// (hf://OWNER/REPO/PATH?revision=…) by PATH inside `dir`, then in the Hugging Face cache holding the folder (inHfCache),
/// then by its file name beside the config when `byName` (no other entry has that name: Gemma Scope's are all
/// params.npz or params.safetensors, and one of them must not stand for every layer). The first existing candidate is
/// the file; none: empty, with the candidates in `lookedFor`.
QString resolveEntry(const QDir& dir, const QString& entry, bool byName, QStringList* lookedFor) {
    QStringList candidates;
    if (entry.startsWith(QLatin1String("hf://"))) {
        QString p = entry.mid(5);
        if (const int q = p.indexOf(QLatin1Char('?')); q >= 0) p.truncate(q);
        const QStringList parts = p.split(QLatin1Char('/'));
        const QString inRepo = parts.mid(2).join(QLatin1Char('/'));
        if (!inRepo.isEmpty()) candidates << dir.filePath(inRepo);
        if (const QString cached = inRepo.isEmpty() ? QString() : inHfCache(dir, parts.mid(0, 2).join(QLatin1Char('/')), inRepo); !cached.isEmpty())
            candidates << cached;
        if (const QString name = QFileInfo(inRepo).fileName(); byName && !name.isEmpty() && !candidates.contains(dir.filePath(name)))
            candidates << dir.filePath(name);
    } else if (!entry.isEmpty()) {
        candidates << (QFileInfo(entry).isAbsolute() ? entry : dir.filePath(entry));
    }
    if (lookedFor) *lookedFor = candidates;
    for (const QString& c : candidates)
        if (QFileInfo::exists(c)) return c;
    return {};
}

/// "blocks.{layer}.hook_resid_pre" or "hook_resid_mid" → the hook of layer l.
QString layerHook(const QString& pattern, int l) {
    QString h = pattern;
    h.replace(QStringLiteral("{layer}"), QString::number(l));
    return h.startsWith(QLatin1String("blocks.")) ? h : QStringLiteral("blocks.%1.%2").arg(l).arg(h);
}

SparseCoder readLayerFile(const QString& path, int layer, const CircuitTracerConfig& c) {
    const QString label = QDir::toNativeSeparators(path);
    if (isGemmaScopeFile(path)) {
        SparseCoder sae = readGemmaScopeFile(path, layerHook(c.input, layer));
        sae.hookOut = layerHook(c.output, layer);
        sae.format = QStringLiteral("circuit-tracer");
        return sae;
    }
    DictionaryTensors t(SafetensorsFile::open(path, label));
    SparseCoder sae;
    sae.path = path;
    sae.format = QStringLiteral("circuit-tracer");
    sae.owners.push_back(t.owner());
    const auto be = t.shape(QStringLiteral("b_enc")), bd = t.shape(QStringLiteral("b_dec"));
    if (!be || !bd || be->size() != 1 || bd->size() != 1 || (*be)[0] < 1 || (*bd)[0] < 1)
        throw ModelError(label, QStringLiteral("b_enc [d_transcoder] and b_dec [d_model] are required (has: %1)").arg(t.names().join(QStringLiteral(", "))));
    const std::int64_t dt = (*be)[0], dm = (*bd)[0];
    const QString ctx = QStringLiteral("b_enc and b_dec (d_transcoder %1, d_model %2)").arg(dt).arg(dm);
    sae.d_in = sae.d_out = int(dm);
    sae.d_sae = int(dt);
    sae.hookIn = layerHook(c.input, layer);
    sae.hookOut = layerHook(c.output, layer);
    sae.W_enc = t.weight(QStringLiteral("W_enc"), {dt, dm}, dm, dt, true, ctx);
    sae.W_dec = t.weight(QStringLiteral("W_dec"), {dt, dm}, dt, dm, false, ctx);
    sae.b_enc = t.weight(QStringLiteral("b_enc"), {dt}, 1, dt, false, ctx);
    sae.b_dec = t.weight(QStringLiteral("b_dec"), {dm}, 1, dm, false, ctx);
    sae.W_skip = t.optionalWeight(QStringLiteral("W_skip"), {dm, dm}, dm, dm, true, ctx);
    sae.threshold = t.optionalWeight(QStringLiteral("activation_function.threshold"), {dt}, 1, dt, false, ctx);
    sae.relu = false; // circuit-tracer's JumpReLU and TopK take pre as it is
    QString act = c.activation.isEmpty() ? (sae.threshold.empty() ? QStringLiteral("relu") : QStringLiteral("jump_relu")) : c.activation;
    if (act == QLatin1String("relu")) {
        sae.activation = FeatureActivation::ReLU;
        sae.relu = true;
    } else if (act == QLatin1String("jump_relu") || act == QLatin1String("jumprelu")) {
        sae.activation = FeatureActivation::JumpReLU;
        if (sae.threshold.empty()) throw ModelError(label, QStringLiteral("activation jump_relu needs activation_function.threshold"));
    } else if (act == QLatin1String("topk")) {
        sae.activation = FeatureActivation::TopK;
        if (c.k < 1 || c.k > dt) throw ModelError(label, QStringLiteral("k = %1 must be between 1 and d_transcoder = %2").arg(c.k).arg(dt));
        sae.k = c.k;
    } else {
        throw ModelError(label, QStringLiteral("activation \"%1\" is not supported (relu, jump_relu, topk)").arg(act));
    }
    sae.architecture = sae.W_skip.empty() ? QStringLiteral("transcoder") : QStringLiteral("skip_transcoder");
    return sae;
}

DictionarySet readCrossLayer(const QDir& dir, const CircuitTracerConfig& c, const QString& cfgLabel) {
    DictionarySet set;
    set.kind = QStringLiteral("cross_layer_transcoder");
    int n = 0;
    while (QFileInfo::exists(dir.filePath(QStringLiteral("W_enc_%1.safetensors").arg(n)))) ++n;
    if (n == 0) throw ModelError(cfgLabel, QStringLiteral("a cross_layer_transcoder folder needs W_enc_0.safetensors, W_dec_0.safetensors, …"));
    set.crossLayerDecoders.resize(size_t(n));
    for (int i = 0; i < n; ++i) {
        const QString encPath = dir.filePath(QStringLiteral("W_enc_%1.safetensors").arg(i));
        const QString decPath = dir.filePath(QStringLiteral("W_dec_%1.safetensors").arg(i));
        if (!QFileInfo::exists(decPath)) throw ModelError(cfgLabel, QStringLiteral("W_dec_%1.safetensors is missing").arg(i));
        DictionaryTensors enc(SafetensorsFile::open(encPath, QDir::toNativeSeparators(encPath)));
        DictionaryTensors dec(SafetensorsFile::open(decPath, QDir::toNativeSeparators(decPath)));
        const QString si = QString::number(i);
        const auto be = enc.shape(QStringLiteral("b_enc_") + si), bd = enc.shape(QStringLiteral("b_dec_") + si);
        if (!be || !bd || be->size() != 1 || bd->size() != 1 || (*be)[0] < 1 || (*bd)[0] < 1)
            throw ModelError(enc.label(), QStringLiteral("b_enc_%1 and b_dec_%1 are required").arg(i));
        const std::int64_t dt = (*be)[0], dm = (*bd)[0];
        if (i > 0 && (dt != set.coders[0].d_sae || dm != set.coders[0].d_in))
            throw ModelError(enc.label(), QStringLiteral("layer %1 has d_transcoder %2 and d_model %3 but layer 0 has %4 and %5")
                                              .arg(i).arg(dt).arg(dm).arg(set.coders[0].d_sae).arg(set.coders[0].d_in));
        const QString ctx = QStringLiteral("b_enc_%1 and b_dec_%1 (d_transcoder %2, d_model %3)").arg(i).arg(dt).arg(dm);
        SparseCoder sae;
        sae.path = encPath;
        sae.format = QStringLiteral("circuit-tracer");
        sae.architecture = QStringLiteral("cross_layer_transcoder");
        sae.owners = {enc.owner(), dec.owner()};
        sae.d_in = sae.d_out = int(dm);
        sae.d_sae = int(dt);
        sae.hookIn = layerHook(c.input, i);
        sae.hookOut = layerHook(c.output, i);
        sae.W_enc = enc.weight(QStringLiteral("W_enc_") + si, {dt, dm}, dm, dt, true, ctx);
        sae.b_enc = enc.weight(QStringLiteral("b_enc_") + si, {dt}, 1, dt, false, ctx);
        sae.b_dec = enc.weight(QStringLiteral("b_dec_") + si, {dm}, 1, dm, false, ctx);
        sae.threshold = enc.optionalWeight(QStringLiteral("threshold_") + si, {dt}, 1, dt, false, ctx);
        sae.activation = sae.threshold.empty() ? FeatureActivation::ReLU : FeatureActivation::JumpReLU;
        sae.relu = sae.threshold.empty();
        const std::int64_t outs = n - i;
        const Weight whole = dec.weight(QStringLiteral("W_dec_") + si, {dt, outs, dm}, dt, outs * dm, false,
                                        QStringLiteral("%1 layers after layer %2 (d_transcoder %3, d_model %4)").arg(outs).arg(i).arg(dt).arg(dm));
        for (std::int64_t j = 0; j < outs; ++j) set.crossLayerDecoders[size_t(i)].push_back(whole.colBlock(j * dm, dm));
        sae.W_dec = set.crossLayerDecoders[size_t(i)][0];
        set.coders.push_back(std::move(sae));
    }
    return set;
}

} // namespace

CircuitTracerConfig readCircuitTracerConfig(const QString& yamlPath) {
    const QString cfgLabel = QDir::toNativeSeparators(yamlPath);
    const QDir dir = QFileInfo(yamlPath).absoluteDir();
    const QByteArray text = readSmallFile(yamlPath, cfgLabel, 1 << 20);
    CircuitTracerConfig c;
    c.path = yamlPath;
    YAML::Node root;
    try {
        root = YAML::Load(text.toStdString());
    } catch (const YAML::Exception& e) {
        throw ModelError(cfgLabel, QStringLiteral("not valid YAML: %1").arg(QString::fromStdString(e.what())));
    }
    if (!root.IsMap()) throw ModelError(cfgLabel, QStringLiteral("not a YAML mapping"));
    const YamlFields cfg{root, cfgLabel, {}};
    c.kind = cfg.string("model_kind").value_or(QString());
    c.input = cfg.string("feature_input_hook").value_or(QString());
    c.output = cfg.string("feature_output_hook").value_or(QString());
    c.activation = cfg.string("activation").value_or(QString());
    c.scan = cfg.string("scan").value_or(QString());
    c.modelName = cfg.string("model_name").value_or(QString());
    c.k = int(cfg.integer("k", 0, 1'000'000'000).value_or(0));
    if (c.input.isEmpty() || c.output.isEmpty())
        throw ModelError(cfgLabel, QStringLiteral("feature_input_hook and feature_output_hook are required"));
    if (!c.kind.isEmpty() && c.kind != QLatin1String("transcoder_set") && c.kind != QLatin1String("cross_layer_transcoder"))
        throw ModelError(cfgLabel, QStringLiteral("model_kind \"%1\" is not transcoder_set or cross_layer_transcoder").arg(c.kind));
    const YAML::Node list = root["transcoders"];
    if (yamlType(list) != QLatin1String("null") && !list.IsSequence())
        cfg.wrongType(list, QStringLiteral("transcoders"), QStringLiteral("a list of paths or of {layer, filepath}"));
    if (!list || !list.IsSequence()) return c;
    std::map<QString, int> names; // how many entries share each file name
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node e = list[i];
        const YAML::Node f = e.IsMap() ? e["filepath"] : e;
        if (f && f.IsScalar()) {
            QString n = QString::fromStdString(f.Scalar());
            if (const int q = n.indexOf(QLatin1Char('?')); q >= 0) n.truncate(q);
            ++names[QFileInfo(n).fileName()];
        }
    }
    std::map<int, size_t> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node e = list[i];
        CircuitTracerEntry t;
        t.layer = int(i);
        if (e.IsMap()) { // the first format (circuit-tracer 0.1, circuit_tracer/configs/*.yaml): {id, layer, filepath}
            const YamlFields f{e, cfgLabel, QStringLiteral("transcoders[%1].").arg(i)};
            t.id = f.string("id").value_or(QString());
            const std::optional<qint64> l = f.integer("layer", 0, 4096);
            t.entry = f.string("filepath").value_or(QString());
            if (!l || t.entry.isEmpty())
                throw ModelError(cfgLabel, QStringLiteral("transcoders entry %1 is neither a path nor {layer, filepath}").arg(i));
            t.layer = int(*l);
        } else if (yamlType(e) == QLatin1String("string")) {
            t.entry = QString::fromStdString(e.Scalar());
        } else {
            const YamlFields f{list, cfgLabel, QStringLiteral("transcoders")};
            f.wrongType(e, QStringLiteral("[%1]").arg(i), QStringLiteral("a path (a string) or {layer, filepath}"));
        }
        if (t.layer > 4096) throw ModelError(cfgLabel, QStringLiteral("transcoders entry %1 has layer %2").arg(i).arg(t.layer));
        if (seen.count(t.layer)) throw ModelError(cfgLabel, QStringLiteral("two transcoders for layer %1").arg(t.layer));
        seen[t.layer] = i;
        QString name = t.entry;
        if (const int q = name.indexOf(QLatin1Char('?')); q >= 0) name.truncate(q);
        t.file = resolveEntry(dir, t.entry, names[QFileInfo(name).fileName()] == 1, &t.lookedFor);
        c.transcoders.push_back(std::move(t));
    }
    std::sort(c.transcoders.begin(), c.transcoders.end(), [](const CircuitTracerEntry& a, const CircuitTracerEntry& b) { return a.layer < b.layer; });
    return c;
}

DictionarySet readCircuitTracerSet(const QString& path) {
    const bool file = QFileInfo(path).isFile();
    const QString yamlPath = file ? path : QDir(path).filePath(QStringLiteral("config.yaml"));
    const QDir dir = QFileInfo(yamlPath).absoluteDir();
    const QString cfgLabel = QDir::toNativeSeparators(yamlPath);
    const QString cfgName = QFileInfo(yamlPath).fileName();
    const CircuitTracerConfig c = readCircuitTracerConfig(yamlPath);
    if (c.kind == QLatin1String("cross_layer_transcoder") && c.transcoders.empty()) {
        DictionarySet set = readCrossLayer(dir, c, cfgLabel);
        set.path = path;
        set.format = QStringLiteral("circuit-tracer");
        set.scan = c.scan;
        return set;
    }
    std::map<int, QString> byLayer;
    for (const CircuitTracerEntry& t : c.transcoders) {
        if (t.file.isEmpty()) {
            QStringList looked;
            for (const QString& c : t.lookedFor) looked << QDir::toNativeSeparators(dir.relativeFilePath(c));
            throw ModelError(cfgLabel, t.entry.startsWith(QLatin1String("hf://"))
                                           ? QStringLiteral("transcoder %1 (layer %2) is not in the folder (looked for %3): download the "
                                                            "repository's files next to %4").arg(t.entry).arg(t.layer).arg(looked.join(QStringLiteral(" or ")), cfgName)
                                           : QStringLiteral("transcoder file %1 (layer %2) does not exist").arg(t.entry).arg(t.layer));
        }
        byLayer[t.layer] = t.file;
    }
    if (c.transcoders.empty()) {
        for (int l = 0; QFileInfo::exists(dir.filePath(QStringLiteral("layer_%1.safetensors").arg(l))); ++l)
            byLayer[l] = dir.filePath(QStringLiteral("layer_%1.safetensors").arg(l));
        const QStringList all = dir.entryList({QStringLiteral("layer_*.safetensors")}, QDir::Files);
        if (int(all.size()) != int(byLayer.size()))
            throw ModelError(cfgLabel, QStringLiteral("layer files are not numbered 0 … %1 without gaps (found %2)")
                                           .arg(int(all.size()) - 1).arg(all.join(QStringLiteral(", "))));
    }
    if (byLayer.empty()) throw ModelError(cfgLabel, QStringLiteral("no transcoders: neither a transcoders list nor layer_0.safetensors"));
    const int maxLayer = byLayer.rbegin()->first;
    for (int l = 0; l <= maxLayer; ++l)
        if (!byLayer.count(l))
            throw ModelError(cfgLabel, QStringLiteral("no transcoder for layer %1 (each layer 0 … %2 needs one)").arg(l).arg(maxLayer));
    if (c.kind == QLatin1String("cross_layer_transcoder")) { // a Gemma Scope 2 CLT listed file by file (load_gemma_scope_2_clt)
        std::vector<QString> files;
        std::vector<std::pair<QString, QString>> hooks;
        for (const auto& [l, file] : byLayer) {
            files.push_back(file);
            hooks.push_back({layerHook(c.input, l), layerHook(c.output, l)});
        }
        DictionarySet set = readGemmaScope2MultiLayer(files, hooks, false);
        set.path = path;
        set.format = QStringLiteral("circuit-tracer");
        set.scan = c.scan;
        return set;
    }
    DictionarySet set;
    set.path = path;
    set.format = QStringLiteral("circuit-tracer");
    set.kind = QStringLiteral("transcoder_set");
    set.scan = c.scan;
    for (const auto& [l, f] : byLayer) {
        SparseCoder sae = readLayerFile(f, l, c);
        if (l > 0 && (sae.d_sae != set.coders[0].d_sae || sae.d_in != set.coders[0].d_in))
            throw ModelError(QDir::toNativeSeparators(f), QStringLiteral("d_transcoder %1 and d_model %2 differ from layer 0's %3 and %4")
                                                              .arg(sae.d_sae).arg(sae.d_in).arg(set.coders[0].d_sae).arg(set.coders[0].d_in));
        set.coders.push_back(std::move(sae));
    }
    return set;
}
#endif

} // namespace attnscope
