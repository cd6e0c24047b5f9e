#pragma once

// The largest finite float16 and bfloat16 numbers: a value whose max |x| passes one of them
// overflows to Inf in that precision. One definition for the replay's headroom and the scan's.
namespace nanscope {

inline constexpr double kFloat16Max = 65504.0;
inline constexpr double kBFloat16Max = 3.3895313892515355e38;

} // namespace nanscope
