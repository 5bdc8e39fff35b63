#include "validate/cpu/moe_math.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cuboid::cpu {
namespace {

// The rows of each expert of the slice, in row order.
std::vector<std::vector<Eigen::Index>> rows_of_experts(const std::vector<int>& ids, const ExpertSlice& s) {
    std::vector<std::vector<Eigen::Index>> rows(static_cast<std::size_t>(s.count));
    for (std::size_t r = 0; r < ids.size(); ++r) rows[static_cast<std::size_t>(s.local(ids[r]))].push_back(static_cast<Eigen::Index>(r));
    return rows;
}

Mat take_rows(const Mat& m, const std::vector<Eigen::Index>& rows) {
    Mat out(static_cast<Eigen::Index>(rows.size()), m.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = m.row(rows[i]);
    return out;
}

void put_rows(Mat& m, const std::vector<Eigen::Index>& rows, const Mat& v) {
    for (std::size_t i = 0; i < rows.size(); ++i) m.row(rows[i]) = v.row(static_cast<Eigen::Index>(i));
}

void check_rows(const Mat& m, const std::vector<int>& ids, const char* what) {
    if (static_cast<std::size_t>(m.rows()) != ids.size())
        throw std::runtime_error(std::string(what) + ": " + std::to_string(m.rows()) + " rows for " +
                                 std::to_string(ids.size()) + " routed copies");
}

}  // namespace

int ExpertSlice::local(int expert) const {
    if (expert < first || expert >= first + count)
        throw std::runtime_error("a token copy for expert " + std::to_string(expert) + " reached a rank holding experts " +
                                 std::to_string(first) + ".." + std::to_string(first + count - 1));
    return expert - first;
}

Routing route(const Mat& logits, int top_k) {
    const Eigen::Index tokens = logits.rows();
    const int experts = static_cast<int>(logits.cols());
    if (top_k < 1 || top_k > experts) throw std::invalid_argument("top_k must be in 1..experts");
    Routing r;
    r.top_k = top_k;
    r.weight = Mat(tokens, top_k);
    std::vector<int> order(static_cast<std::size_t>(experts));
    for (Eigen::Index t = 0; t < tokens; ++t) {
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits(t, a) > logits(t, b); });
        double top = logits(t, order[0]), sum = 0.0;
        for (int j = 0; j < top_k; ++j) sum += std::exp(logits(t, order[static_cast<std::size_t>(j)]) - top);
        for (int j = 0; j < top_k; ++j) {
            const int x = order[static_cast<std::size_t>(j)];
            r.expert.push_back(x);
            r.weight(t, j) = std::exp(logits(t, x) - top) / sum;
        }
    }
    return r;
}

Mat route_backward(const Routing& r, const Mat& dweight, int experts) {
    Mat dlogits = Mat::Zero(r.weight.rows(), experts);
    for (Eigen::Index t = 0; t < r.weight.rows(); ++t) {
        const double dot = r.weight.row(t).dot(dweight.row(t));  // softmax backward over the k chosen
        for (int j = 0; j < r.top_k; ++j)
            dlogits(t, r.expert[static_cast<std::size_t>(t * r.top_k + j)]) = r.weight(t, j) * (dweight(t, j) - dot);
    }
    return dlogits;
}

std::vector<int> copies_by_expert(const Routing& r) {
    std::vector<int> copies(r.expert.size());
    std::iota(copies.begin(), copies.end(), 0);
    std::stable_sort(copies.begin(), copies.end(), [&](int a, int b) {
        return r.expert[static_cast<std::size_t>(a)] < r.expert[static_cast<std::size_t>(b)];
    });
    return copies;
}

Mat expert_fc1(const Mat& x, const std::vector<int>& ids, const ExpertSlice& s) {
    check_rows(x, ids, "expert FC1");
    Mat a(x.rows(), s.width);
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (mine.empty()) continue;
        Mat out = take_rows(x, mine) * s.w1->middleCols(j * s.width, s.width);
        out.rowwise() += s.b1->middleCols(j * s.width, s.width).row(0);
        put_rows(a, mine, out);
    }
    return a;
}

Mat expert_fc2(const Mat& g, const std::vector<int>& ids, const ExpertSlice& s) {
    check_rows(g, ids, "expert FC2");
    Mat y(g.rows(), s.w2->cols());
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (mine.empty()) continue;
        Mat out = take_rows(g, mine) * s.w2->middleRows(j * s.width, s.width);
        if (s.add_fc2_bias) out.rowwise() += s.b2->row(j);
        put_rows(y, mine, out);
    }
    return y;
}

Mat expert_fc2_dgrad(const Mat& dy, const std::vector<int>& ids, const ExpertSlice& s) {
    check_rows(dy, ids, "expert FC2 input gradient");
    Mat dg(dy.rows(), s.width);
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (!mine.empty()) put_rows(dg, mine, take_rows(dy, mine) * s.w2->middleRows(j * s.width, s.width).transpose());
    }
    return dg;
}

Mat expert_fc1_dgrad(const Mat& da, const std::vector<int>& ids, const ExpertSlice& s) {
    check_rows(da, ids, "expert FC1 input gradient");
    Mat dx(da.rows(), s.w1->rows());
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (!mine.empty()) put_rows(dx, mine, take_rows(da, mine) * s.w1->middleCols(j * s.width, s.width).transpose());
    }
    return dx;
}

void expert_fc2_wgrad(const Mat& g, const Mat& dy, const std::vector<int>& ids, const ExpertSlice& s, Mat& gw, Mat& gb) {
    check_rows(dy, ids, "expert FC2 weight gradient");
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (mine.empty()) continue;
        const Mat d = take_rows(dy, mine);
        gw.middleRows(j * s.width, s.width) += take_rows(g, mine).transpose() * d;
        gb.row(j) += d.colwise().sum();
    }
}

void expert_fc1_wgrad(const Mat& x, const Mat& da, const std::vector<int>& ids, const ExpertSlice& s, Mat& gw, Mat& gb) {
    check_rows(da, ids, "expert FC1 weight gradient");
    const auto rows = rows_of_experts(ids, s);
    for (int j = 0; j < s.count; ++j) {
        const auto& mine = rows[static_cast<std::size_t>(j)];
        if (mine.empty()) continue;
        const Mat d = take_rows(da, mine);
        gw.middleCols(j * s.width, s.width) += take_rows(x, mine).transpose() * d;
        gb.middleCols(j * s.width, s.width) += d.colwise().sum();
    }
}

}  // namespace cuboid::cpu
