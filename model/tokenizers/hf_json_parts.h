#pragma once
// Pieces of Hugging Face tokenizer files shared by the tokenizers built from them: the vocabulary,
// merges and added tokens of tokenizer.json (and vocab.json), tokenizer_config.json, and which BOS
// the model adds. Source: the tokenizers crate's serialization (src/models/bpe/serialization.rs,
// src/tokenizer/added_vocabulary.rs, src/processors/template.rs) and transformers'
// tokenization_utils_base.py for tokenizer_config.json.

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <optional>
#include <utility>
#include <vector>

namespace attnscope {

/// The file's bytes. Throws ModelError(path, "file not found" / "cannot open: ...").
QByteArray readTokenizerFile(const QString& path);
/// The top-level JSON object. Throws ModelError(file, "invalid JSON at offset N: ...") or
/// "invalid JSON: expected an object at the top level".
QJsonObject parseTokenizerJsonObject(const QByteArray& json, const QString& file);

/// {token string: id} as id -> string ("" for ids without a token). Throws ModelError(file, ...) for
/// a non-integer or negative id, an id of 2^24 or more, an id used twice, an empty vocabulary, and
/// an empty token string unless `allowEmptyToken` (Llama 2's tokenizer.json has one, id 31353).
std::vector<QString> readHfVocab(const QJsonObject& vocab, const QString& file, bool allowEmptyToken);

/// Where a merge is in its file, for error messages: pattern ("line %1") and number.
struct MergeLocation {
    QLatin1String pattern;
    qsizetype number;
    QString text() const { return QString(pattern).arg(number); }
};

/// model.merges in rank order, each "a b" or [a, b]. Throws ModelError(file, "model.merges[i]: ...").
std::vector<std::pair<QString, QString>> readHfMerges(const QJsonValue& merges, const QString& file);

struct HfAddedToken {
    int id;
    QString content;
    bool special; ///< "special": true: matched in text only on request
};
/// The top-level added_tokens. Throws ModelError(file, ...) for an entry without an integer id and content.
std::vector<HfAddedToken> readHfAddedTokens(const QJsonObject& root, const QString& file);
/// Puts the added tokens into `tokens` (id -> string, grown as needed); one already in the vocabulary
/// at its id is left as it is. Throws ModelError(file, ...) when the vocabulary has the text at
/// another id, or the id holds another token.
void placeHfAddedTokens(std::vector<QString>& tokens, const std::vector<HfAddedToken>& added, const QString& file);

/// What tokenizer_config.json says about BOS.
struct HfTokenizerConfig {
    std::optional<bool> addBosToken; ///< add_bos_token, if present
    bool bosTokenGiven = false;      ///< the file has a bos_token key
    std::optional<QString> bosToken; ///< its content (a string or {"content": ...}); none for null
};
/// Parses tokenizer_config.json. Throws ModelError(file, ...) for invalid JSON.
HfTokenizerConfig parseHfTokenizerConfig(const QByteArray& json, const QString& file);
/// tokenizer_config.json in the folder of `tokenizerJsonPath`, or an empty config if there is none.
HfTokenizerConfig siblingTokenizerConfig(const QString& tokenizerJsonPath);

/// The BOS a tokenizer.json model puts first.
struct HfBos {
    std::optional<QString> token; ///< its text, none if the model has no BOS
    bool add = false;             ///< whether prompts start with it by default
};
/// The post_processor's TemplateProcessing (alone or in a Sequence) decides when its "single"
/// template starts with a SpecialToken; tokenizer_config.json's add_bos_token overrides whether it
/// is added (transformers LlamaTokenizerFast.update_post_processor) and its bos_token names it
/// (null: no BOS). Otherwise `fallback` with `fallbackAdd`.
HfBos hfBos(const QJsonObject& root, const HfTokenizerConfig& config, const std::optional<QString>& fallback, bool fallbackAdd);

} // namespace attnscope
