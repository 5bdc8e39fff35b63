// DualPipeV: DeepSeek's DualPipe (DeepSeek-V3 technical report §3.2.1) cut in half, so that each
// stage holds one copy of the model in ZB-V's V (stage s: model chunk s on the way down, chunk
// 2p-1-s on the way up) instead of DualPipe's two copies fed from both ends. The order is the
// reference implementation's (deepseek-ai/DualPipe, dualpipe/dualpipev.py, DualPipeV.step), for
// rank r of p and m micro-batches (m >= 2p), in its eight steps:
//   1  2(p-r-1) forwards of chunk 0
//   2  r+1 pairs: F chunk 0, F chunk 1
//   3  p-r-1 triples: B chunk 1 (weight gradient deferred), W, F chunk 1
//   4  m-2p+r+1 times: F chunk 0 + B chunk 1, F chunk 1 + B chunk 0 (the overlapped pairs)
//   5  p-r-1 times: B chunk 1, then F chunk 1 + B chunk 0
//   6  r+1 pairs: B chunk 1, B chunk 0; from the middle pair on (for odd r before its B chunk
//      1, for even r after it) the weight gradients are deferred
//   7  p-r-1 pairs: W, B chunk 0 (deferred)
//   8  r+1 W
// A backward whose weight gradient is not deferred runs B then W at once; deferred ones queue, and
// each W step runs the oldest (the implementation's WeightGradStore is a FIFO).
// Not modelled: the overlap inside a pair "F chunk a + B chunk b", where DualPipe hides one
// micro-batch's expert all-to-alls behind the other's compute; cuboid runs the pair's forward
// then its backward, their communication overlapping only as their own streams allow.
#include <array>
#include <deque>
#include <utility>

#include "strategies/schedule.hpp"

namespace cuboid {

std::vector<PipelineStep> dualpipev_stage_schedule(int p, int m, int stage) {
    const int r = stage;
    std::vector<PipelineStep> out;
    out.reserve(static_cast<std::size_t>(6 * m));
    std::array<int, 2> forwards{0, 0}, backwards{0, 0};
    std::deque<std::pair<int, int>> deferred;  // (micro-batch, chunk) of the pending weight gradients
    const auto f = [&](int c) { out.push_back({Pass::Forward, forwards[c]++, c}); };
    const auto b = [&](int c, bool defer) {
        const int micro = backwards[c]++;
        out.push_back({Pass::Backward, micro, c});
        if (defer) deferred.emplace_back(micro, c);
        else out.push_back({Pass::WeightGrad, micro, c});
    };
    const auto w = [&] {
        out.push_back({Pass::WeightGrad, deferred.front().first, deferred.front().second});
        deferred.pop_front();
    };
    for (int i = 0; i < 2 * (p - r - 1); ++i) f(0);
    for (int i = 0; i < r + 1; ++i) f(0), f(1);
    for (int i = 0; i < p - r - 1; ++i) b(1, true), w(), f(1);
    for (int i = 0; i < m - 2 * p + r + 1; ++i) f(0), b(1, false), f(1), b(0, false);
    for (int i = 0; i < p - r - 1; ++i) b(1, false), f(1), b(0, false);
    bool defer = false;
    for (int i = 0; i < r + 1; ++i) {
        if (i == (r + 1) / 2 && r % 2 == 1) defer = true;
        b(1, defer);
        if (i == (r + 1) / 2 && r % 2 == 0) defer = true;
        b(0, defer);
    }
    for (int i = 0; i < p - r - 1; ++i) w(), b(0, true);
    for (int i = 0; i < r + 1; ++i) w();
    return out;
}

}  // namespace cuboid
