#pragma once

#include "core/tensor/Tensor.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nanscope {

// A value of an unpickled object tree: an IValue-like variant that is all the checkpoint and
// batch files of a training run hold. Tuples are lists with isTuple set. Objects are TorchScript
// module objects (`__torch__.*` classes): a class name and attributes, never code.
struct PickledValue
{
    enum class Kind { None, Bool, Int, Double, String, Tensor, List, Dict, Object };

    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0.0;
    std::string text;                   // String: the string; Object: the class name
    std::shared_ptr<const TensorView> tensor;
    std::vector<PickledValue> items;    // List
    bool isTuple = false;
    std::vector<std::pair<PickledValue, PickledValue>> entries; // Dict (in file order); Object attributes

    bool isNone() const { return kind == Kind::None; }
    bool isTensor() const { return kind == Kind::Tensor; }
    // The entry under a string key of a Dict or an attribute of an Object; nullptr if absent.
    const PickledValue* find(const std::string& key) const;
};

} // namespace nanscope
