#pragma once

// The `name value` pairs of one piece of a text log, whatever their syntax. Seen in real logs
// (tests/source/TextRecordLogReaderTest.cpp cites each):
//
//   step:12 - actor/pg_loss:np.float64(0.0204) - actor/entropy:0.227 - critic/score/mean:0.41
//   {'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}
//   (epoch: 1, iters: 400, time: 0.565, data: 0.002) G_GAN: 3.302 G_L1: 21.309 D_real: 0.016
//   Epoch 0:  45%|████▌     | 450/1000 [00:10<00:12, 45.00it/s, loss=1.23, v_num=0]
//   [batch=12/100]:
//            Train loss/train/total: 2.9980
//   iter 100: loss 2.4049, time 929.71ms, mfu 16.59%
//
// A name is one to three words (a word starts with a letter or '_' and may hold '/', '.', '-');
// quotes around it are dropped. A name ends at `:` or `=` (a word after that starts a new name),
// and at `,` `;` `|` brackets and braces. A value is a number with an optional unit (ms, s, %), a
// NaN or an Inf in any spelling, a number in a wrapper (`np.float64(0.1)`, `tensor(0.1,
// device='cuda:0')`), or None/null: the name logged without a value. A NaN or Inf glued to a unit
// ("nanms") is a placeholder, not a value. `n/total` after a step name is the step n; after
// anything else and before '[', a progress bar's count.

#include <cstdint>
#include <string_view>
#include <vector>

namespace nanscope::textrecord {

struct Pair
{
    std::string_view name; // as logged, without quotes; points into the parsed text
    double value = 0;
    bool absent = false;   // None, null: logged without a value
};

struct Segment
{
    std::vector<Pair> pairs;
    bool indented = false;                 // begins with a space or a tab: may continue a record
    int64_t barCount = -1, barTotal = -1;  // a progress bar's "n/total", when the text has one
    bool binary = false;                   // holds a NUL byte or other control characters
};

// Pairs past this in one segment are not read (a JSON object with 100,000 keys on one line).
constexpr size_t kMostPairs = 20000;

// Reads `text` (one line, or one `\r` update of a progress bar, without its end) into `out`, which
// is cleared first; a caller reading many segments passes the same one to reuse its memory.
void parseSegment(std::string_view text, Segment& out);

} // namespace nanscope::textrecord
