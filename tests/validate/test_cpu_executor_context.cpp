// Context parallelism's programs, executed on threads: each rank holds 2 of the 2c chunks of every
// sequence and attention reaches the other positions only through the mode's collectives, so the
// loss, every gradient and the updated weights match the single-device reference only when every
// block, gather and exchange moves the right data to the right rank.
#include <cmath>
#include <cstdlib>

#include "tests/validate/cpu_executor_cases.hpp"
#include "validate/cpu/blockwise_attention.hpp"
#include "validate/cpu/kernels.hpp"

using namespace cuboid;
using namespace cuboid::cpu;
using namespace cuboid::cpu::cases;

namespace {

constexpr ContextMode kModes[] = {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll};

// Rows of `m` ([seqs * seq, cols]) at `positions` of each sequence.
Mat rows_at(const Mat& m, int seqs, int seq, const std::vector<int>& positions) {
    Mat out(seqs * static_cast<Eigen::Index>(positions.size()), m.cols());
    Eigen::Index r = 0;
    for (int q = 0; q < seqs; ++q)
        for (int p : positions) out.row(r++) = m.row(q * seq + p);
    return out;
}

}  // namespace

// The ring's arithmetic against the whole-sequence kernels the other executors use: attention
// over the c ranks' key blocks, merged by log-sum-exp, is causal attention over the sequence, and
// the blocks' gradients (from the final output and log-sum-exp) sum to its gradients.
TEST_CASE("blockwise attention merges to causal attention over the whole sequence", "[cpu_executor][context]") {
    constexpr int seqs = 2, seq = 8, heads = 2, hd = 3, c = 2;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::srand(5);
    const Mat q = Mat::Random(seqs * seq, heads * hd), k = Mat::Random(seqs * seq, heads * hd),
              v = Mat::Random(seqs * seq, heads * hd), dout = Mat::Random(seqs * seq, heads * hd);
    const AttnShape a{seqs, seq, heads, hd};
    const Mat probs = causal_softmax(attn_scores(q, k, a), scale, a.seq);
    const Mat out = attn_context(probs, v, a);
    const Mat dscores = causal_softmax_backward(probs, attn_dprobs(dout, v, a), scale);

    std::vector<int> all(seq);
    for (int p = 0; p < seq; ++p) all[static_cast<std::size_t>(p)] = p;
    PartialAttention merged;
    std::vector<BlockShape> blocks;
    for (int i = 0; i < c; ++i) {
        blocks.push_back({seqs, heads, hd, all, context_positions(seq, c, i)});
        const auto& keys = blocks.back().keys;
        const PartialAttention p = block_attention(q, rows_at(k, seqs, seq, keys), rows_at(v, seqs, seq, keys), blocks.back(), scale);
        if (i == 0) merged = p;
        else merge_partial(merged, p, heads);
    }
    CHECK((merged.out - out).cwiseAbs().maxCoeff() < 1e-12);

    Mat dq = Mat::Zero(q.rows(), q.cols()), dk(k.rows(), k.cols()), dv(v.rows(), v.cols());
    for (const BlockShape& b : blocks) {
        const BlockGrads g = block_attention_backward(q, rows_at(k, seqs, seq, b.keys), rows_at(v, seqs, seq, b.keys), merged.out,
                                                      dout, merged.lse, b, scale);
        dq += g.dq;
        Eigen::Index r = 0;
        for (int s = 0; s < seqs; ++s)
            for (int p : b.keys) {
                dk.row(s * seq + p) = g.dk.row(r);
                dv.row(s * seq + p) = g.dv.row(r++);
            }
    }
    CHECK((dq - attn_dq(dscores, k, a)).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((dk - attn_dk(dscores, q, a)).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((dv - attn_dv(probs, dout, a)).cwiseAbs().maxCoeff() < 1e-12);
    // Rank 1's block (positions 2 to 5) hides every key from position 0: its log-sum-exp is -inf ...
    CHECK(std::isinf(block_attention(q, rows_at(k, seqs, seq, context_positions(seq, c, 1)),
                                     rows_at(v, seqs, seq, context_positions(seq, c, 1)), {seqs, heads, hd, {0}, context_positions(seq, c, 1)}, scale)
                         .lse(0, 0)));
    // ... and the 2c-chunk split gives rank i chunks i and 2c-1-i.
    CHECK(context_positions(8, 2, 0) == std::vector<int>{0, 1, 6, 7});
    CHECK(context_positions(8, 2, 1) == std::vector<int>{2, 3, 4, 5});
}

TEST_CASE("context parallelism reproduces the reference in every mode, c = 2 and 4", "[cpu_executor][context]") {
    for (const ContextMode mode : kModes)
        for (int c : {2, 4}) check_case(context(c, mode));  // seq 8: chunks of 2 and of 1 position
}

TEST_CASE("context parallelism with tensor, sequence, pipeline and data parallelism", "[cpu_executor][context]") {
    for (const ContextMode mode : kModes) {
        Case sp = context(2, mode, 2);
        sp.sp = true;
        check_case(sp);
        check_case(context(2, mode, 1, 2, 2));
    }
    for (const ContextMode mode : kModes) {  // two sequences per micro-batch; t = 2 without sequence parallelism
        Case b2 = context(4, mode, 1, 2);
        b2.b = 2;
        check_case(b2);
        check_case(context(2, mode, 2));
    }
    Case all = context(2, ContextMode::AllToAll, 2, 2, 2);
    all.sp = true;
    check_case(all);
}

TEST_CASE("context parallelism with ZeRO and recomputation", "[cpu_executor][context]") {
    Case zero1 = context(2, ContextMode::Ring, 1, 1, 2);
    zero1.zero = 1;
    check_case(zero1);
    Case zero2 = context(2, ContextMode::AllToAll, 1, 1, 2);
    zero2.zero = 2;
    check_case(zero2);
    Case zero3 = context(2, ContextMode::AllGather, 1, 2, 2);
    zero3.zero = 3;
    check_case(zero3);
    Case hybrid = context(2, ContextMode::Ring, 1, 1, 2);  // shard groups of one context group each
    hybrid.zero = 3;
    hybrid.shard_group = 2;
    check_case(hybrid);
    for (const ContextMode mode : kModes) {
        Case full = context(2, mode, 1, 2);
        full.recompute = Recompute::Full;
        check_case(full);
        // The recomputed forward runs the mode's collectives again (and matches the first, check_case).
        const char* again = mode == ContextMode::Ring ? "R.cp.exchange" : mode == ContextMode::AllGather ? "R.cp.allgather" : "R.cp.alltoall_out";
        first_op(build(scenario_of(full)), 0, again, true);
    }
    for (const Recompute r : {Recompute::Selective, Recompute::StageAware}) {
        Case c = context(2, ContextMode::Ring, 1, 2);
        c.recompute = r;
        check_case(c);
    }
}

TEST_CASE("context parallelism under the interleaved and GPipe schedules", "[cpu_executor][context]") {
    Case inter = context(2, ContextMode::AllGather, 1, 2);
    inter.schedule = Schedule::Interleaved;
    inter.v = 2;
    check_case(inter);
    Case gpipe = context(4, ContextMode::AllToAll, 1, 2);
    gpipe.schedule = Schedule::GPipe;
    check_case(gpipe);
}

// Each of context parallelism's collectives is necessary: without it a step finds no K/V block,
// the kernel no gathered or head-split tensor, the QKV backward (B.qkv.dgrad) its dK/dV, and the
// run stops naming what is missing.
TEST_CASE("context parallelism fails the check without any one of its collectives", "[cpu_executor][context]") {
    struct Drop {
        ContextMode mode;
        const char* label;
        int skip;  // the (skip+1)-th such op of the first layer's first micro-batch
        const char* error;
    };
    for (const Drop& x : {
             Drop{ContextMode::Ring, "F.cp.exchange", 0, "needs the K/V block of ring step 1"},
             Drop{ContextMode::Ring, "F.cp.exchange", 1, "needs the K/V block of ring step 1 to pass on"},
             Drop{ContextMode::Ring, "B.cp.exchange", 0, "needs the K/V block of ring step 1"},
             Drop{ContextMode::Ring, "B.cp.dkv_exchange", 0, "needs the partial dK/dV of ring step 1"},
             Drop{ContextMode::Ring, "B.cp.dkv_exchange", 3, "'B.qkv.dgrad'"},
             Drop{ContextMode::AllGather, "F.cp.allgather", 0, "needs KvAll"},
             Drop{ContextMode::AllGather, "B.cp.allgather", 0, "needs KvAll"},
             Drop{ContextMode::AllGather, "B.cp.reducescatter", 0, "'B.qkv.dgrad'"},
             Drop{ContextMode::AllToAll, "F.cp.alltoall_qkv", 0, "needs QH"},
             Drop{ContextMode::AllToAll, "F.cp.alltoall_out", 0, "needs Ctx"},
             Drop{ContextMode::AllToAll, "B.cp.alltoall_out", 0, "needs DCtxH"},
             Drop{ContextMode::AllToAll, "B.cp.alltoall_qkv", 0, "'B.qkv.dgrad'"},
         }) {
        const Scenario sc = scenario_of(context(4, x.mode));
        TaggedProgram tp = build(sc);
        std::uint32_t at = first_op(tp, 0, x.label, true);
        for (int k = 0; k < x.skip; ++k) {
            const auto& ops = tp.program.op_lists[0].ops;
            do ++at; while (at < ops.size() && tp.program.labels[ops[at].label] != x.label);
            REQUIRE(at < ops.size());
        }
        erase_op(tp, 0, at);
        const Outcome o = execute(sc, tp);
        INFO(x.label << " #" << x.skip << ": " << o.run.error);
        REQUIRE_FALSE(o.run.ok());
        CHECK(o.run.error.find(x.error) != std::string::npos);
        CHECK(o.run.error.find("needs") != std::string::npos);  // B.qkv.dgrad: dQ, dK and dV, absent
    }
}
