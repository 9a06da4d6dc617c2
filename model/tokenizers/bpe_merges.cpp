#include "model/tokenizers/bpe_merges.h"

#include <functional>
#include <queue>

namespace attnscope {

void BpeMerges::add(int left, int right, int merged) { merges_.insert(pairKey(left, right), Merge{nextRank_++, merged}); }

std::vector<int> BpeMerges::apply(std::vector<int> ids, Order order) const {
    // Doubly linked list of symbols; ids[i] < 0 marks a merged-away node. A min-queue of
    // (rank, left node) finds the next pair in O(log n) instead of rescanning the word, so very long
    // words stay fast. Entries of one rank all name the same pair and come out in word order.
    const int n = int(ids.size());
    std::vector<int> next(n), prev(n);
    for (int i = 0; i < n; ++i) {
        next[i] = i + 1 < n ? i + 1 : -1;
        prev[i] = i - 1;
    }
    using Entry = std::pair<int, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    auto rankAt = [&](int left) -> const Merge* {
        if (left < 0 || ids[left] < 0 || next[left] < 0) return nullptr;
        const auto it = merges_.constFind(pairKey(ids[left], ids[next[left]]));
        return it == merges_.constEnd() ? nullptr : &*it;
    };
    auto push = [&](int left) {
        if (const Merge* m = rankAt(left)) queue.push({m->rank, left});
    };
    auto pushAround = [&](int left) {
        if (ids[left] < 0) return;
        push(prev[left]);
        push(left);
    };
    for (int i = 0; i + 1 < n; ++i) push(i);

    std::vector<int> deferred; // AllOccurrences: merged nodes whose new pairs wait for the rank to end
    int batchRank = -1;
    for (;;) {
        if (!deferred.empty() && (queue.empty() || queue.top().first != batchRank)) {
            for (int left : deferred) pushAround(left);
            deferred.clear();
            continue;
        }
        if (queue.empty()) break;
        const auto [rank, left] = queue.top();
        queue.pop();
        const Merge* m = rankAt(left);
        if (!m || m->rank != rank) continue; // stale: a node changed since it was queued
        const int right = next[left];
        ids[left] = m->id;
        ids[right] = -1;
        next[left] = next[right];
        if (next[right] >= 0) prev[next[right]] = left;
        if (order == Order::OneAtATime) {
            pushAround(left);
        } else {
            batchRank = rank;
            deferred.push_back(left);
        }
    }
    std::vector<int> out;
    out.reserve(n);
    for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(ids[i]);
    return out;
}

} // namespace attnscope
