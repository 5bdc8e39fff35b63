// The mixture-of-experts MLP of one rank (strategies/moe_layer.hpp): the router on the rank's own
// tokens, the permutation of their top-k copies by expert, the exchanges that carry the copies to
// the ranks holding their experts and back, the experts' grouped GEMMs on the rank's experts/ep
// experts (each split over the expert-tensor group), the weighted un-permutation, and the shared
// experts as a dense MLP split over the tensor group.
//
// The program's byte counts are the balanced expectation the simulator prices; here every
// exchange moves the rows the router actually chose, so ranks send and receive unequal numbers of
// rows. Each copy in flight carries its expert and its origin (the member of the expert group that
// routed it) as two extra columns: the experts group rows by the first, the combine returns rows
// by the second, and every hop checks that what arrives is what was sent, so a missing or
// misplaced exchange stops the run or changes the result instead of going unnoticed.
#include <stdexcept>
#include <string>

#include "strategies/group_slots.hpp"
#include "validate/cpu/kernels.hpp"
#include "validate/cpu/rank_runner.hpp"

namespace cuboid::cpu {
namespace {

constexpr Eigen::Index kTags = 2;  // expert, origin

Mat tagged(const Mat& rows, const std::vector<int>& experts, const std::vector<int>& origins) {
    Mat m(rows.rows(), rows.cols() + kTags);
    m.leftCols(rows.cols()) = rows;
    for (Eigen::Index r = 0; r < rows.rows(); ++r) {
        m(r, rows.cols()) = experts[static_cast<std::size_t>(r)];
        m(r, rows.cols() + 1) = origins[static_cast<std::size_t>(r)];
    }
    return m;
}

struct Copies {
    Mat rows;
    std::vector<int> experts, origins;
};

Copies untag(const Mat& m) {
    if (m.cols() <= kTags) throw std::runtime_error("token copies without their expert and origin");
    const Eigen::Index h = m.cols() - kTags;
    Copies c{m.leftCols(h), {}, {}};
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        c.experts.push_back(static_cast<int>(m(r, h)));
        c.origins.push_back(static_cast<int>(m(r, h + 1)));
    }
    return c;
}

// The rows of `m` whose tag column `col` (from the right: 2 expert, 1 origin) satisfies `keep`.
template <class Keep>
Mat rows_where(const Mat& m, Eigen::Index col, Keep keep) {
    std::vector<Eigen::Index> rows;
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        if (keep(static_cast<int>(m(r, m.cols() - col)))) rows.push_back(r);
    Mat out(static_cast<Eigen::Index>(rows.size()), m.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = m.row(rows[i]);
    return out;
}

// What each forward kernel saves for the backward, as the program allocates it (moe_layer.cpp):
// the router its input and (with them) the routing and the combined expert outputs the
// un-permutation's backward reads, FC1 its input, the activation its input and output, the shared
// experts' FC1 and activation their outputs. A kernel that allocates nothing under the
// recompute policy keeps nothing: the backward needs the recomputation.
std::vector<Field> saved_by(MoeOp op) {
    switch (op) {
        case MoeOp::Router: return {Field::Ln2, Field::RouteWeights, Field::ExpertY};
        case MoeOp::ExpertFc1: return {Field::ExpertX};
        case MoeOp::ExpertAct: return {Field::ExpertA, Field::ExpertG};
        case MoeOp::SharedFc1: return {Field::SharedA1};
        case MoeOp::SharedAct: return {Field::SharedG1};
        default: return {};
    }
}

const char* moe_gemm_name(MoeOp op) {
    switch (op) {
        case MoeOp::Router: return "the router";
        case MoeOp::ExpertFc1: return "expert FC1";
        case MoeOp::ExpertFc2: return "expert FC2";
        case MoeOp::SharedFc1: return "shared-expert FC1";
        default: return "shared-expert FC2";
    }
}

}  // namespace

// The rank's experts: experts [e*E/ep, (e+1)*E/ep), part a of etp of each. FC2's bias enters the
// expert-tensor sum once (a row-parallel linear adds its bias after the reduction): member 0 adds it.
ExpertSlice RankRunner::expert_slice(const LayerParams& w) const {
    const GptDims& d = ctx_.dims;
    const int local = d.experts / expert_.ep;
    return {&w.ew1, &w.eb1, &w.ew2, &w.eb2, expert_.e * local, local, d.expert_ffn / expert_.etp, expert_.a == 0};
}

void RankRunner::moe_forward(MoeOp op, const OpTag& tag, Phase phase, const sim::Op& o) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const LayerParams& w = out_.weights.layers.at(static_cast<std::size_t>(tag.layer));
    if (!w.moe) throw std::runtime_error("mixture-of-experts kernel in a dense layer");
    MoeRoute& r = routes_[key];
    const int k = ctx_.dims.top_k;
    const auto set = [&](Field f, Mat v) { put(c, key, f, std::move(v), phase); };
    if (phase == Phase::Forward && o.memory_alloc.value == 0.0)
        for (Field f : saved_by(op)) unkept_[key].push_back(f);
    // Expert FC2's forward releasing memory is the moe_act module's: the activation output it read
    // is not kept, and the backward must write it again before FC2's weight gradient reads it. So
    // does the moe module's recomputation of the forward under moe_act.
    if (phase != Phase::Backward && op == MoeOp::ExpertFc2 && o.memory_free.value > 0.0)
        unkept_[key].push_back(Field::ExpertG);
    // The copies the permutation sends, by expert: their experts, and this rank as their origin.
    const auto sent = [&](std::vector<int>& experts, std::vector<int>& origins) {
        for (int copy : r.send_order) experts.push_back(r.routing.expert[static_cast<std::size_t>(copy)]);
        origins.assign(r.send_order.size(), expert_.e);
    };
    switch (op) {
        case MoeOp::Router: c[Field::RouterLogits] = need(c, Field::Ln2) * w.wr; break;
        case MoeOp::RouterTopk:
            r.routing = route(need(c, Field::RouterLogits), k);
            c.erase(Field::RouterLogits);
            r.send_order = copies_by_expert(r.routing);
            set(Field::RouteWeights, r.routing.weight);
            break;
        case MoeOp::Permute: {
            const Mat& x = need(c, Field::Ln2);
            if (x.rows() != r.routing.weight.rows()) throw std::runtime_error("the permutation runs on tokens the router did not route");
            Mat rows(static_cast<Eigen::Index>(r.send_order.size()), x.cols());
            for (std::size_t i = 0; i < r.send_order.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = x.row(r.send_order[i] / k);
            std::vector<int> experts, origins;
            sent(experts, origins);
            c[Field::MoeIn] = tagged(rows, experts, origins);
            break;
        }
        case MoeOp::ExpertFc1: {
            Copies in = untag(need(c, Field::MoeIn));
            c.erase(Field::MoeIn);
            set(Field::ExpertA, expert_fc1(in.rows, in.experts, expert_slice(w)));  // throws for a foreign expert
            r.experts = std::move(in.experts);
            r.origins = std::move(in.origins);
            set(Field::ExpertX, std::move(in.rows));
            break;
        }
        case MoeOp::ExpertAct: set(Field::ExpertG, gelu(need(c, Field::ExpertA))); break;
        case MoeOp::ExpertFc2:
            c[Field::MoeBack] = tagged(expert_fc2(need(c, Field::ExpertG), r.experts, expert_slice(w)), r.experts, r.origins);
            // A forward drops what it does not keep at the layer's end; a recomputation has no end
            // of its own, and drops it here.
            if (phase == Phase::Recompute) drop_unkept(key);
            break;
        case MoeOp::Unpermute: {
            Copies back = untag(need(c, Field::MoeBack));
            c.erase(Field::MoeBack);
            std::vector<int> experts, origins;
            sent(experts, origins);
            if (back.experts != experts || back.origins != origins)
                throw std::runtime_error("the experts' outputs came back as other token copies than the permutation sent");
            const Mat& weights = need(c, Field::RouteWeights);
            Mat out = Mat::Zero(weights.rows(), back.rows.cols());
            for (std::size_t i = 0; i < r.send_order.size(); ++i) {
                const int copy = r.send_order[i];
                out.row(copy / k) += weights(copy / k, copy % k) * back.rows.row(static_cast<Eigen::Index>(i));
            }
            set(Field::ExpertY, std::move(back.rows));
            c[Field::MoeOut] = std::move(out);
            break;
        }
        case MoeOp::SharedFc1: set(Field::SharedA1, add_bias(need(c, ctx_.sp ? Field::Ln2Full : Field::Ln2) * w.sw1, w.sb1)); break;
        case MoeOp::SharedAct: set(Field::SharedG1, gelu(need(c, Field::SharedA1))); break;
        case MoeOp::SharedFc2: c[Field::SharedPartial] = need(c, Field::SharedG1) * w.sw2; break;
        case MoeOp::Count: throw std::runtime_error("not a mixture-of-experts kernel");
    }
}

Mat RankRunner::moe_output(Cache& c, const LayerParams& w) {
    Mat out = need(c, Field::MoeOut);
    if (w.shared) out += add_bias(reduced(c, Field::SharedPartial, Field::SharedRed), w.sb2);
    for (Field f : {Field::MoeOut, Field::SharedPartial, Field::SharedRed, Field::Ln2Full}) c.erase(f);
    return out;
}

Mat RankRunner::moe_input_grad(Cache& c, const LayerParams& w) {
    Mat d = need(c, Field::DLn2Routed);
    if (w.shared) d += reduced(c, Field::DLn2Partial, Field::DLn2);
    return d;
}

void RankRunner::moe_backward(MoeOp op, bool wgrad, const OpTag& tag) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const LayerParams& w = out_.weights.layers.at(static_cast<std::size_t>(tag.layer));
    LayerParams& g = out_.grads.layers.at(static_cast<std::size_t>(tag.layer));
    const auto found = routes_.find(key);
    if (!w.moe || found == routes_.end()) throw std::runtime_error("mixture-of-experts backward without its forward");
    MoeRoute& r = found->second;
    const int k = ctx_.dims.top_k;
    const bool sp = ctx_.sp;
    if (wgrad) backward_ends_[key].moe_weight_grads.insert(op);
    switch (op) {
        case MoeOp::SharedFc2: {
            const Mat& dy = need(c, sp ? Field::GOutFull : Field::GOut);
            if (wgrad) g.sw2 += need(c, Field::SharedG1).transpose() * dy;
            else c[Field::DSharedG1] = dy * w.sw2.transpose();
            break;
        }
        case MoeOp::SharedAct: c[Field::DSharedA1] = gelu_backward(need(c, Field::SharedA1), need(c, Field::DSharedG1)); break;
        case MoeOp::SharedFc1:
            if (wgrad) {
                g.sw1 += need(c, sp ? Field::Ln2Regather : Field::Ln2).transpose() * need(c, Field::DSharedA1);
                g.sb1 += column_sums(need(c, Field::DSharedA1));
            } else {
                c[Field::DLn2Partial] = need(c, Field::DSharedA1) * w.sw1.transpose();
            }
            break;
        case MoeOp::Unpermute: {  // each copy's output gradient, weighted; the weights' gradients
            const Mat& dout = need(c, Field::GOut);
            const Mat& y = need(c, Field::ExpertY);
            const Mat& weights = need(c, Field::RouteWeights);
            if (static_cast<std::size_t>(y.rows()) != r.send_order.size() || dout.rows() != weights.rows())
                throw std::runtime_error("the un-permutation's backward meets other tokens than its forward");
            Mat dy(y.rows(), y.cols()), droute(weights.rows(), k);
            std::vector<int> experts;
            for (std::size_t i = 0; i < r.send_order.size(); ++i) {
                const int copy = r.send_order[i], t = copy / k, j = copy % k;
                const auto row = static_cast<Eigen::Index>(i);
                dy.row(row) = weights(t, j) * dout.row(t);
                droute(t, j) = dout.row(t).dot(y.row(row));
                experts.push_back(r.routing.expert[static_cast<std::size_t>(copy)]);
            }
            c[Field::DRoute] = std::move(droute);
            c[Field::MoeIn] = tagged(dy, experts, std::vector<int>(experts.size(), expert_.e));
            break;
        }
        case MoeOp::ExpertFc2:
            if (wgrad) {
                expert_fc2_wgrad(need(c, Field::ExpertG), need(c, Field::DExpertY), r.experts, expert_slice(w), g.ew2, g.eb2);
            } else {
                Copies in = untag(need(c, Field::MoeIn));
                c.erase(Field::MoeIn);
                if (in.experts != r.experts || in.origins != r.origins)
                    throw std::runtime_error("the output gradient reached the experts as other token copies than the forward's");
                c[Field::DExpertG] = expert_fc2_dgrad(in.rows, r.experts, expert_slice(w));
                c[Field::DExpertY] = std::move(in.rows);
            }
            break;
        case MoeOp::ExpertAct: c[Field::DExpertA] = gelu_backward(need(c, Field::ExpertA), need(c, Field::DExpertG)); break;
        case MoeOp::ExpertFc1:
            if (wgrad)
                expert_fc1_wgrad(need(c, Field::ExpertX), need(c, Field::DExpertA), r.experts, expert_slice(w), g.ew1, g.eb1);
            else
                c[Field::MoeBack] = tagged(expert_fc1_dgrad(need(c, Field::DExpertA), r.experts, expert_slice(w)), r.experts, r.origins);
            break;
        case MoeOp::Permute: {  // the copies' input gradients summed into their tokens
            Copies back = untag(need(c, Field::MoeBack));
            c.erase(Field::MoeBack);
            if (static_cast<std::size_t>(back.rows.rows()) != r.send_order.size())
                throw std::runtime_error("the input gradients came back as other token copies than the permutation sent");
            for (std::size_t i = 0; i < r.send_order.size(); ++i)
                if (back.experts[i] != r.routing.expert[static_cast<std::size_t>(r.send_order[i])] || back.origins[i] != expert_.e)
                    throw std::runtime_error("the input gradients came back as other token copies than the permutation sent");
            Mat dx = Mat::Zero(r.routing.weight.rows(), back.rows.cols());
            for (std::size_t i = 0; i < r.send_order.size(); ++i) dx.row(r.send_order[i] / k) += back.rows.row(static_cast<Eigen::Index>(i));
            c[Field::DLn2Routed] = std::move(dx);
            break;
        }
        case MoeOp::RouterTopk: {
            Routing chosen = r.routing;
            chosen.weight = need(c, Field::RouteWeights);
            c[Field::DRouterLogits] = route_backward(chosen, need(c, Field::DRoute), ctx_.dims.experts);
            break;
        }
        case MoeOp::Router:
            if (wgrad) {
                g.wr += need(c, Field::Ln2).transpose() * need(c, Field::DRouterLogits);
            } else {
                const Mat dx = need(c, Field::DRouterLogits) * w.wr.transpose();
                need(c, Field::DLn2Routed);
                c[Field::DLn2Routed] += dx;
            }
            break;
        case MoeOp::Count: throw std::runtime_error("not a mixture-of-experts kernel");
    }
}

bool RankRunner::moe_weight_grads_done(const Key& key, std::string* missing) const {
    const auto it = backward_ends_.find(key);
    const bool shared = out_.weights.layers.at(static_cast<std::size_t>(std::get<1>(key))).shared;
    for (MoeOp op : {MoeOp::Router, MoeOp::ExpertFc1, MoeOp::ExpertFc2, MoeOp::SharedFc1, MoeOp::SharedFc2}) {
        if (!shared && (op == MoeOp::SharedFc1 || op == MoeOp::SharedFc2)) continue;
        if (it == backward_ends_.end() || it->second.moe_weight_grads.count(op) == 0) {
            if (missing) *missing = moe_gemm_name(op);
            return false;
        }
    }
    return true;
}

// The exchanges. To the experts (the forward's dispatch, the backward's combine of the output
// gradient): the all-to-all gives each member of the expert group the copies for its experts, in
// member order, then the expert-tensor all-gather stacks the members' rows. Back (the forward's
// combine, the backward's dispatch of the input gradients): the expert-tensor reduce-scatter sums
// the members' partial results and hands each member its own rows back, then the all-to-all
// returns each copy to its origin, which receives them in the order it sent them.
void RankRunner::moe_exchange(const OpCode& code, const OpTag& tag, const sim::Op& op) {
    const Key key = layer_key(tag);
    Cache& c = cache(key);
    const auto found = routes_.find(key);
    if (found == routes_.end()) throw std::runtime_error("mixture-of-experts exchange before the layer's router");
    MoeRoute& r = found->second;
    const bool forward = code.phase != Phase::Backward;
    std::size_t member = 0;
    const auto expect_member = [&](int want, const char* group) {
        if (static_cast<int>(member) != want)
            throw std::runtime_error(std::string("rank is member ") + std::to_string(member) + " of its " + group +
                                     " group, its experts say " + std::to_string(want));
    };
    switch (code.exchange) {
        case MoeExchange::Dispatch:
        case MoeExchange::Combine: {
            if (op.kind != sim::OpKind::AllToAll) throw std::runtime_error("expert exchange expected as an all-to-all");
            const bool to_experts = (code.exchange == MoeExchange::Dispatch) == forward;
            const Field f = to_experts ? Field::MoeIn : Field::MoeBack;
            const std::vector<Mat> parts = exchange_mats(op.group_slot, label(op), need(c, f), &member);
            expect_member(expert_.e, "expert");
            const int local = ctx_.dims.experts / expert_.ep, me = expert_.e;
            std::vector<Mat> mine;
            for (const Mat& p : parts) {
                if (to_experts) mine.push_back(rows_where(p, 2, [&](int expert) { return expert / local == me; }));
                else mine.push_back(rows_where(p, 1, [&](int origin) { return origin == me; }));
            }
            c[f] = stack_rows(mine);
            break;
        }
        case MoeExchange::EtpGather: {
            if (op.kind != sim::OpKind::AllGather) throw std::runtime_error("expert-tensor gather expected as an all-gather");
            const std::vector<Mat> parts = exchange_mats(op.group_slot, label(op), need(c, Field::MoeIn), &member);
            expect_member(expert_.a, "expert-tensor");
            r.from_etp.clear();
            for (const Mat& p : parts) r.from_etp.push_back(static_cast<int>(p.rows()));
            c[Field::MoeIn] = stack_rows(parts);
            break;
        }
        case MoeExchange::EtpScatter: {
            if (op.kind != sim::OpKind::ReduceScatter) throw std::runtime_error("expert-tensor reduction expected as a reduce-scatter");
            const Mat& partial = need(c, Field::MoeBack);
            const std::vector<Mat> parts = exchange_mats(op.group_slot, label(op), partial, &member);
            expect_member(expert_.a, "expert-tensor");
            if (r.from_etp.size() != parts.size())
                throw std::runtime_error("expert-tensor reduce-scatter without the gather that stacked its rows");
            const Eigen::Index h = partial.cols() - kTags;
            Mat sum = Mat::Zero(partial.rows(), h);
            for (const Mat& p : parts) {
                if (p.rows() != partial.rows() || p.cols() != partial.cols() || p.rightCols(kTags) != partial.rightCols(kTags))
                    throw std::runtime_error("expert-tensor members reduce different token copies");
                sum += p.leftCols(h);
            }
            Eigen::Index first = 0;
            for (std::size_t m = 0; m < member; ++m) first += r.from_etp[m];
            const Eigen::Index rows = r.from_etp[member];
            Mat out(rows, partial.cols());
            out.leftCols(h) = sum.middleRows(first, rows);
            out.rightCols(kTags) = partial.middleRows(first, rows).rightCols(kTags);
            c[Field::MoeBack] = std::move(out);
            break;
        }
        case MoeExchange::None: throw std::runtime_error("not a mixture-of-experts exchange");
    }
}

}  // namespace cuboid::cpu
