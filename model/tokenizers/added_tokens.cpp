#include "model/tokenizers/added_tokens.h"

#include <algorithm>

namespace attnscope {

void AddedTokens::add(const QString& text, int id, bool special) {
    if (text.isEmpty()) return;
    std::vector<Entry>& list = byFirst_[text.at(0).unicode()];
    const auto same = std::find_if(list.begin(), list.end(), [&](const Entry& e) { return e.text == text; });
    if (same != list.end()) list.erase(same);
    const auto at = std::find_if(list.begin(), list.end(), [&](const Entry& e) { return e.text.size() < text.size(); });
    list.insert(at, Entry{text, id, special});
    anyPlain_ = anyPlain_ || !special;
}

std::vector<TextFragment> AddedTokens::split(QStringView text) const {
    std::vector<TextFragment> out;
    if (text.isEmpty()) return out;
    if (byFirst_.isEmpty() || (!matchSpecial_ && !anyPlain_)) {
        out.push_back({0, text.size(), -1});
        return out;
    }
    qsizetype plainStart = 0;
    for (qsizetype i = 0; i < text.size();) {
        const auto it = byFirst_.constFind(text.at(i).unicode());
        const Entry* match = nullptr;
        if (it != byFirst_.constEnd()) {
            for (const Entry& e : *it) {
                if ((matchSpecial_ || !e.special) && text.sliced(i).startsWith(e.text)) {
                    match = &e;
                    break;
                }
            }
        }
        if (!match) {
            ++i;
            continue;
        }
        if (i > plainStart) out.push_back({plainStart, i - plainStart, -1});
        out.push_back({i, match->text.size(), match->id});
        i += match->text.size();
        plainStart = i;
    }
    if (plainStart < text.size()) out.push_back({plainStart, text.size() - plainStart, -1});
    return out;
}

} // namespace attnscope
