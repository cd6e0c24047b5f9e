#include "core/replay/SampleBisection.h"

#include <algorithm>
#include <numeric>

namespace nanscope {

std::vector<int64_t> bisectBadSamples(int64_t n, const std::function<bool(const std::vector<int64_t>&)>& isBad,
                                      std::vector<std::string>& notes)
{
    std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(n, 0)));
    std::iota(all.begin(), all.end(), 0);
    if (all.empty() || !isBad(all))
        return {};
    // Clean padding: the largest clean half found by halving.
    std::vector<int64_t> clean;
    std::vector<std::vector<int64_t>> queue{all};
    while (!queue.empty() && clean.empty()) {
        auto set = queue.front();
        queue.erase(queue.begin());
        if (set.size() < 2)
            continue;
        const auto mid = set.begin() + long(set.size() / 2);
        for (auto half : {std::vector<int64_t>(set.begin(), mid), std::vector<int64_t>(mid, set.end())}) {
            if (half.size() >= 2 && !isBad(half)) {
                clean = half;
                break;
            }
            queue.push_back(half);
        }
    }
    if (clean.empty()) {
        notes.push_back("no clean subset of two or more samples was found: every sample is reported");
        return all;
    }
    if (clean.size() > 4)
        clean.resize(4);
    std::vector<int64_t> bad;
    std::function<void(const std::vector<int64_t>&)> search = [&](const std::vector<int64_t>& set) {
        std::vector<int64_t> padded = set;
        padded.insert(padded.end(), clean.begin(), clean.end());
        if (set.empty() || !isBad(padded))
            return;
        if (set.size() == 1) {
            bad.push_back(set.front());
            return;
        }
        const auto mid = set.begin() + long(set.size() / 2);
        search(std::vector<int64_t>(set.begin(), mid));
        search(std::vector<int64_t>(mid, set.end()));
    };
    std::vector<int64_t> rest;
    for (int64_t i : all)
        if (std::find(clean.begin(), clean.end(), i) == clean.end())
            rest.push_back(i);
    search(rest);
    std::sort(bad.begin(), bad.end());
    return bad;
}

} // namespace nanscope
