// Every strategy's program, executed on threads with real data, must reproduce the loss, every
// gradient and the SGD-updated weights of a single-device reference.
#include "tests/validate/cpu_executor_cases.hpp"

using namespace cuboid;
using namespace cuboid::cpu;
using namespace cuboid::cpu::cases;

TEST_CASE("reference gradients match finite differences of the reference loss", "[cpu_executor]") {
    const GptDims d = GptDims::of(scenario_of({}).model);
    GptParams p = init_params(d, 7);
    const Batch batch = make_batch(d, 2, 11);
    const Reference ref = reference_step(d, p, batch);
    const auto check = [&](Mat& w, const Mat& g, Eigen::Index i) { check_central_difference(d, p, batch, w, g, i); };
    // The tied word embedding: its gradient is the lookup's plus the output layer's.
    check(p.wemb, ref.grads.wemb, 3 + 64 * 5);
    check(p.wemb, ref.grads.wemb, 500);
    check(p.wpos, ref.grads.wpos, 10);
    check(p.layers[0].wqkv, ref.grads.layers[0].wqkv, 100);
    check(p.layers[1].wqkv, ref.grads.layers[1].wqkv, 32 * 40 + 7);  // a K column
    check(p.layers[1].ln1_g, ref.grads.layers[1].ln1_g, 5);
    check(p.layers[2].wproj, ref.grads.layers[2].wproj, 77);
    check(p.layers[3].w1, ref.grads.layers[3].w1, 300);
    check(p.layers[3].b2, ref.grads.layers[3].b2, 4);
    check(p.lnf_b, ref.grads.lnf_b, 9);
    // The output layer's copy reports the same tied total.
    CHECK((ref.grads.wout - ref.grads.wemb).cwiseAbs().maxCoeff() == 0.0);
}

TEST_CASE("every (t, p, d) layout reproduces the reference under 1F1B", "[cpu_executor]") {
    for (auto [t, p, d] : {std::array{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 2}, {4, 2, 1}})
        check_case(Case{t, p, d});
}

TEST_CASE("sequence parallelism reproduces the reference", "[cpu_executor]") {
    for (auto [t, p, d] : {std::array{2, 1, 1}, {2, 2, 2}, {4, 2, 1}}) check_case(Case{t, p, d, Schedule::OneFOneB, Recompute::None, true});
}

TEST_CASE("every pipeline schedule reproduces the reference", "[cpu_executor]") {
    check_case(Case{2, 2, 1, Schedule::GPipe});
    check_case(Case{1, 2, 2, Schedule::GPipe});
    check_case(Case{2, 2, 1, Schedule::Interleaved, Recompute::None, false, 0, 2});
    check_case(Case{1, 2, 2, Schedule::Interleaved, Recompute::Full, true, 0, 2});
    check_case(Case{2, 2, 1, Schedule::Interleaved, Recompute::None, true, 0, 2});
    check_case(Case{1, 2, 1, Schedule::ShiftedCriticalPath, Recompute::Full});
    check_case(Case{2, 2, 2, Schedule::ShiftedCriticalPath, Recompute::Full, true});
    check_case(Case{1, 4, 1, Schedule::ShiftedCriticalPath, Recompute::StageAware});
}

// ZB-H1: each layer's backward as B (input gradients) and a W pass (the linears' weight
// gradients) that stage s runs s micro-batches later; the weight gradients must still all reach
// the data-parallel reduction, ZeRO's reduce-scatters and the optimizer.
TEST_CASE("ZB-H1's split backward reproduces the reference", "[cpu_executor]") {
    check_case(Case{1, 2, 1, Schedule::ZeroBubbleH1});
    check_case(Case{1, 4, 1, Schedule::ZeroBubbleH1});
    check_case(Case{2, 2, 2, Schedule::ZeroBubbleH1, Recompute::None, true});  // sequence parallel: W re-gathers
    check_case(Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::Full, true});
    check_case(Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::Selective});
    check_case(Case{1, 4, 1, Schedule::ZeroBubbleH1, Recompute::StageAware});
    Case sync{2, 2, 2, Schedule::ZeroBubbleH1};
    sync.tp_overlap = false;
    sync.dp_overlap = false;
    check_case(sync);
    for (int zero : {1, 3}) check_case(Case{1, 2, 2, Schedule::ZeroBubbleH1, Recompute::None, false, zero});
    Case fp8{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::None, true};
    fp8.fused_attention = true;
    fp8.te_fp8 = true;
    check_case(fp8);
    check_case(overlapped(2, 2, 2, true, Schedule::ZeroBubbleH1, Recompute::None));
}

// ZB-V: stage s holds model chunks s and 2p-1-s; the first stage holds the embedding and the
// head (the tied embedding is one parameter there), the last stage turns the V without a message.
// DualPipeV: ZB-V's placement in DualPipe's order; each F+B pair of its steady phase runs the
// forward of one micro-batch and chunk, then the backward (B and W at once) of another.
TEST_CASE("ZB-V's and DualPipeV's two chunks per stage in a V reproduce the reference", "[cpu_executor]") {
    for (const Schedule schedule : {Schedule::ZeroBubbleV, Schedule::DualPipeV}) {
        const auto v = [schedule](int t, int p, int d, Recompute r = Recompute::None, bool sp = false, int zero = 0) {
            Case c{t, p, d, schedule, r, sp, zero};
            c.v = 2;
            return c;
        };
        check_case(v(1, 1, 1));
        check_case(v(1, 2, 1));
        check_case(v(2, 2, 2, Recompute::None, true));
        check_case(v(2, 2, 1, Recompute::Full));
        check_case(v(1, 2, 2, Recompute::Selective, false, 1));
        check_case(v(1, 2, 2, Recompute::None, false, 3));
    }
}

TEST_CASE("every recompute policy reproduces the reference", "[cpu_executor]") {
    for (Recompute r : {Recompute::Full, Recompute::Selective, Recompute::StageAware}) {
        check_case(Case{1, 1, 1, Schedule::OneFOneB, r});
        check_case(Case{2, 2, 1, Schedule::OneFOneB, r});
        check_case(Case{2, 2, 1, Schedule::OneFOneB, r, true});
    }
}

// Megatron-Core's layernorm module without Transformer Engine: both norms of every layer are
// modules of their own, their outputs (QKV's and FC1's inputs) are not kept, and each norm runs
// again at the start of its block's backward. The executor drops what the program's forward GEMMs
// allocate nothing for, so the gradients match only if the recomputed norms reach the weight
// gradients (under sequence parallelism through the re-gathers); without one, the check fails.
TEST_CASE("the layernorm recompute module reproduces the reference", "[cpu_executor]") {
    for (const Case& base : {Case{1, 2, 2, Schedule::OneFOneB, Recompute::Selective},
                             Case{2, 2, 1, Schedule::OneFOneB, Recompute::Selective, true},
                             Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::Selective, true}}) {
        Scenario sc = scenario_of(base);
        sc.parallel.recompute_modules = {true, false, true, false};
        INFO("t=" << base.t << " sp " << base.sp << " schedule " << static_cast<int>(base.schedule));
        const TaggedProgram tp = build(sc);
        check_agreement(execute(sc, tp));
        for (const char* label : {"R.ln1", "R.ln2"}) {
            INFO("without " << label);
            CHECK_FALSE(without_layer_op(sc, tp, label).run.ok());
        }
    }
}

// Megatron-Core's mlp module with Transformer Engine (the norm fused into FC1, fp8 casts): the
// MLP keeps only its input, and its forward (norm, gather, FC1, activation, FC2 and its reduction)
// runs again at the start of its backward. The executor drops what the forward allocates nothing
// for, so without the recomputed FC1 the backward has no activation to read.
TEST_CASE("the mlp recompute module reproduces the reference", "[cpu_executor]") {
    for (Case base : {Case{2, 2, 1, Schedule::OneFOneB, Recompute::Selective, true},
                      Case{2, 2, 1, Schedule::ZeroBubbleH1, Recompute::Selective, true},
                      Case{1, 2, 2, Schedule::OneFOneB, Recompute::Selective}}) {
        base.fused_attention = true;
        base.te_fp8 = true;
        Scenario sc = scenario_of(base);
        sc.parallel.recompute_modules = {true, false, false, false, true};
        INFO("t=" << base.t << " sp " << base.sp << " schedule " << static_cast<int>(base.schedule));
        const TaggedProgram tp = build(sc);
        check_agreement(execute(sc, tp));
        CHECK_FALSE(without_layer_op(sc, tp, "R.fc1").run.ok());
    }
}

TEST_CASE("fused attention reproduces the reference under every recompute policy and sequence parallelism", "[cpu_executor]") {
    for (Recompute r : {Recompute::None, Recompute::Full, Recompute::Selective}) {
        for (bool sp : {false, true}) {
            Case c{2, 2, 1, Schedule::OneFOneB, r, sp};
            c.fused_attention = true;
            check_case(c);
        }
    }
    Case dp{1, 1, 2};
    dp.fused_attention = true;
    check_case(dp);
}

// The casts change no value of the executor's double-precision model; what this checks is that
// they sit where no collective or later kernel mistakes them for the op that produced its input.
TEST_CASE("Transformer Engine's fp8 passes leave the program's numbers to the reference", "[cpu_executor]") {
    for (Recompute r : {Recompute::None, Recompute::Full, Recompute::Selective}) {
        for (bool sp : {false, true}) {
            Case c{2, 2, 1, Schedule::OneFOneB, r, sp};
            c.fused_attention = true;
            c.te_fp8 = true;
            check_case(c);
        }
    }
    Case overlap{2, 1, 1};
    overlap.te_fp8 = true;
    overlap.overlap_chunks = 2;
    overlap.b = 2;
    check_case(overlap);
}

// Activation offloading adds copies to host memory and back on streams of their own: the
// program's numbers stay the reference's (with tensor parallelism and ZeRO-3 around it too).
TEST_CASE("activation offloading leaves the program's numbers to the reference", "[cpu_executor]") {
    for (const Case& c : {Case{1, 1, 2}, Case{2, 1, 2, Schedule::OneFOneB, Recompute::None, true, 3}}) {
        Scenario sc = scenario_of(c);
        sc.training.activation_offload_layers = 3;
        const TaggedProgram tp = build(sc);
        int copies = 0;
        for (const sim::Op& op : tp.program.op_lists[0].ops)
            copies += tp.program.labels[op.label].find("offload.activations") != std::string::npos ? 1 : 0;
        CHECK(copies > 0);
        const Outcome o = execute(sc, tp);
        INFO("t=" << c.t << " zero " << c.zero << " error: " << o.run.error << " worst gradient: " << o.agreement.worst);
        REQUIRE(o.run.ok());
        CHECK(o.agreement.loss < kTolerance);
        CHECK(o.agreement.grads < kTolerance);
        CHECK(o.agreement.weights < kTolerance);
    }
}

TEST_CASE("ZeRO 1 and 2 reproduce the reference and the updated weights", "[cpu_executor]") {
    for (int zero : {1, 2}) {
        check_case(Case{1, 1, 2, Schedule::OneFOneB, Recompute::None, false, zero});
        check_case(Case{2, 2, 2, Schedule::OneFOneB, Recompute::Full, true, zero});
    }
}

// ZeRO-3: every unit's weights gathered from the shards before each forward and backward, its
// gradient reduce-scattered every micro-batch, the updated shards assembled from their owners.
TEST_CASE("ZeRO 3 with full and hybrid sharding reproduces the reference and the updated weights", "[cpu_executor]") {
    check_case(Case{1, 1, 2, Schedule::OneFOneB, Recompute::None, false, 3});
    check_case(Case{2, 2, 2, Schedule::OneFOneB, Recompute::Full, true, 3});  // tied embedding over two stages
    check_case(Case{1, 2, 2, Schedule::GPipe, Recompute::Selective, false, 3});
    Case interleaved{1, 2, 2, Schedule::Interleaved, Recompute::None, false, 3};
    interleaved.v = 2;
    check_case(interleaved);
    check_case(Case{1, 2, 2, Schedule::ShiftedCriticalPath, Recompute::Full, false, 3});  // gathers in the R pass
    for (int p : {1, 2}) {  // hybrid: shards of 2 ranks, 2 copies
        Case hybrid{1, p, 4, Schedule::OneFOneB, Recompute::None, false, 3};
        hybrid.shard_group = 2;
        check_case(hybrid);
    }
    Case hybrid_tp{2, 1, 4, Schedule::OneFOneB, Recompute::None, true, 3};
    hybrid_tp.shard_group = 2;
    check_case(hybrid_tp);
}

TEST_CASE("synchronous tensor and data-parallel reductions reproduce the reference", "[cpu_executor]") {
    Case c{2, 2, 2};
    c.tp_overlap = false;
    c.dp_overlap = false;
    check_case(c);
}

// Merak's sub-pipelined tensor parallelism: with one sequence per micro-batch the k sub-batches
// cut the sequence (later queries attend to earlier sub-batches' keys); with b = k they are whole
// sequences. Each sub-batch's reduction must carry that sub-batch's rows.
TEST_CASE("overlap chunks reproduce the reference", "[cpu_executor]") {
    for (int k : {2, 4})
        for (bool sp : {false, true}) {
            check_case(overlapped(2, 1, k, sp));
            check_case(overlapped(2, 2, k, sp, Schedule::ShiftedCriticalPath, Recompute::StageAware));
        }
    check_case(overlapped(2, 2, 2, true, Schedule::OneFOneB, Recompute::Full));
    check_case(overlapped(2, 1, 2, false, Schedule::OneFOneB, Recompute::Selective));
    check_case(overlapped(2, 1, 2, true, Schedule::OneFOneB, Recompute::None, 2));  // whole sequences
    check_case(overlapped(2, 2, 4, false, Schedule::ShiftedCriticalPath, Recompute::Full, 4));
}

// ATP on a 2 x 2 mesh: the linears' partial sums and the LayerNorm statistics reduce over the
// two axis groups (slots 6 and 7), in both orders of the axes.

TEST_CASE("ATP reproduces the reference", "[cpu_executor]") {
    for (AtpOrder order : {AtpOrder::ColumnFirst, AtpOrder::RowFirst}) {
        check_case(atp(1, 1, order));
        check_case(atp(1, 2, order, Recompute::Full));
        check_case(atp(1, 1, order, Recompute::None, 2));  // attention split over the hidden axis too
        check_case(atp(1, 2, order, Recompute::Full, 2));
    }
    check_case(atp(2, 1, AtpOrder::ColumnFirst));
    check_case(atp(2, 1, AtpOrder::RowFirst, Recompute::Selective, 2));
}

// ATP's chunk-based overlap, 2 chunks, each computing on its own rows (sub_chunk tags). Under the
// token split (dr = 2 divides b) a device's attention cores hold b/2 sequences: b = 4 gives each
// chunk one whole sequence, b = 2 gives each chunk half the positions of the device's sequence
// (the second chunk's queries attend to the first chunk's keys, and send it key gradients in the
// backward, which visits the chunks in reverse); b = 1 keeps the attention whole (replicated)
// and splits its single sequence by positions.
TEST_CASE("ATP's overlap chunks reproduce the reference chunk by chunk", "[cpu_executor]") {
    for (AtpOrder order : {AtpOrder::ColumnFirst, AtpOrder::RowFirst}) {
        for (int b : {2, 4}) {
            check_case(atp(1, 1, order, Recompute::None, b, 2));
            check_case(atp(1, 1, order, Recompute::Full, b, 2));
            check_case(atp(1, 1, order, Recompute::Selective, b, 2));
        }
        check_case(atp(1, 1, order, Recompute::None, 1, 2));
    }
    check_case(atp(2, 2, AtpOrder::RowFirst, Recompute::Selective, 4, 2));  // with pipeline and data parallelism
    check_case(atp(1, 1, AtpOrder::ColumnFirst, Recompute::Full, 4, 4));    // 4 chunks: half a sequence each
}

// 2d (SUMMA) on a 2 x 2 mesh: each linear in two steps of row and column broadcasts, the input
// and weight gradients reduced to the step's device.

TEST_CASE("2d reproduces the reference", "[cpu_executor]") {
    check_case(two_d(1, 1));
    check_case(two_d(2, 1));
    check_case(two_d(1, 2, Recompute::Full));
}

// 3d on a 2 x 2 x 2 cube: gathers over the input and weight axes, reduce-scatters over the output
// axis; each device's rows are b/q^2 whole sequences.

TEST_CASE("3d reproduces the reference", "[cpu_executor]") {
    Case c{8, 1, 1};
    c.mode = TensorMode::ThreeD;
    c.b = 4;
    check_case(c);
    c.p = 2;
    c.recompute = Recompute::Full;
    check_case(c);
}

// LayerNorm and bias gradients partial over a device's rows: without the program's
// tp.grad_allreduce each device keeps the sum over its own rows only (1d + sp: 1/2 of the rows
// per rank; 2d: 1/q; 3d: 1/q^2), so those gradients are off by O(1).
