#include "core/record/EventText.h"

#include "EventTextTable.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

namespace nanscope::eventtext {

namespace table = runformat::eventtext;

namespace {

std::string number(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

std::string joined(const std::vector<std::string>& items)
{
    std::string text;
    for (const auto& item : items)
        text += (text.empty() ? "" : ", ") + item;
    return text;
}

using Field = std::pair<std::string_view, std::string>;

// The template with each {name} replaced by its field. A placeholder without a field, or a field
// the template does not name, is this file's bug, not the user's: it throws.
std::string fill(std::string_view text, std::initializer_list<Field> fields)
{
    std::string out;
    std::vector<bool> used(fields.size(), false);
    size_t at = 0;
    while (at < text.size()) {
        const size_t open = text.find('{', at);
        if (open == std::string_view::npos) {
            out.append(text.substr(at));
            break;
        }
        const size_t close = text.find('}', open);
        if (close == std::string_view::npos)
            throw std::logic_error("event text template without a closing brace: " + std::string(text));
        out.append(text.substr(at, open - at));
        const std::string_view name = text.substr(open + 1, close - open - 1);
        bool found = false;
        size_t index = 0;
        for (const auto& field : fields) {
            if (field.first == name) {
                out += field.second;
                found = true;
                used[index] = true;
                break;
            }
            ++index;
        }
        if (!found)
            throw std::logic_error("event text template names {" + std::string(name) + "}, which has no value");
        at = close + 1;
    }
    if (std::find(used.begin(), used.end(), false) != used.end())
        throw std::logic_error("event text template does not use every field: " + std::string(text));
    return out;
}

} // namespace

std::string nonfiniteLoss(double loss)
{
    return fill(table::kNonfiniteLoss, {{"loss", number(loss)}});
}

std::string reasonNonfiniteLoss(double loss)
{
    return fill(table::kReasonNonfiniteLoss, {{"loss", number(loss)}});
}

std::string reasonNonfiniteGradients(size_t parameterCount, const std::string& firstParameter)
{
    return fill(table::kReasonNonfiniteGradients, {{"count", std::to_string(parameterCount)}, {"first", firstParameter}});
}

std::string reasonNormOverflow()
{
    return fill(table::kReasonNormOverflow, {});
}

std::string skippedStep(const std::string& reason)
{
    return fill(table::kSkippedStep, {{"reason", reason}});
}

std::string updateApplied(const std::string& reason)
{
    return fill(table::kUpdateApplied, {{"reason", reason}});
}

std::string rollback(int64_t goodStep, int64_t streak, int64_t step, double lrFactor,
                     const std::vector<std::pair<double, double>>& learningRates)
{
    std::vector<std::string> changes;
    for (const auto& [before, after] : learningRates)
        changes.push_back(number(before) + " -> " + number(after));
    return fill(table::kRollback, {{"good_step", std::to_string(goodStep)},
                                   {"streak", std::to_string(streak)},
                                   {"step", std::to_string(step)},
                                   {"factor", number(lrFactor)},
                                   {"lrs", joined(changes)}});
}

std::string buffersRestored(const std::vector<std::string>& layers, int64_t step)
{
    return fill(table::kBuffersRestored, {{"layers", joined(layers)}, {"step", std::to_string(step)}});
}

std::string checkpoint(const std::string& relativePath, const std::string& form)
{
    return fill(table::kCheckpoint, {{"path", relativePath}, {"form", form}});
}

} // namespace nanscope::eventtext
