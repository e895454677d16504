// The analytic model: tensor-core time per CTA with waves, epilogue work and traffic, overlap by warp roles.
#include "search/cost_model.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "te/expr_inl.h"

namespace comfuse::search {
namespace {

using schedule::ValueHome;
using schedule::WarpRoles;

// The tensor cores' utilisation when one warpgroup at a time issues wgmma: idle between its instructions. So
// runs a cooperative CTA of 64 rows, and ping-pong, whose warpgroups take the tensor cores in turn (one in
// its mainloop while the other is in its epilogue). Two cooperative warpgroups keep them fed. In the shipped
// H200 log the fastest ping-pong 64 x 256 record of a workload ran about 12% behind its fastest cooperative
// 128 x 256 one, GEMM or deferred reduction; 0.85 orders a workload's fastest cooperative and ping-pong
// records as measured on 22 of 25 workloads (benchmarks/NOTES.md, Change 79).
constexpr double kSingleIssueEfficiency = 0.85;
// The rate of the passes after an in-kernel reduction's barrier, against that of a streaming epilogue.
constexpr double kLatePassEfficiency = 0.5;
// How much longer one consumer warpgroup takes over an epilogue than the two the streaming rates assume
// (fitted to the exhaustive sweeps of 2026-12-02 and the shipped log's cooperative BM = 64 records).
constexpr double kLoneEpilogueSlowdown = 1.5;
// The share of their bytes an epilogue still pays for tiles TMA moves while a mainloop runs: outputs stored
// with tma_store, stage-0 inputs staged with tma_inputs.
constexpr double kTmaMovedBytesWeight = 0.3;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// How a schedule evaluates the elements' functions: approximate_math and reciprocal_division.
struct ElementMath {
  bool approximate = false;
  bool reciprocal = false;
};

// f32 operations one evaluation of `e` costs; transcendental functions count as 8 (SFU rate plus fix-ups),
// and so does an IEEE f32 division (a reciprocal estimate, refinement FMAs, a range test and a slow path).
// With approximate_math, exp and tanh are one special-function operation and an FFMA; with
// reciprocal_division, a division by a constant is one multiplication.
double op_weight(const te::Expr& e, ElementMath math) {
  double weight = 0;
  switch (e.kind()) {
    case te::ExprKind::kRead:
    case te::ExprKind::kVar:
    case te::ExprKind::kIntImm:
    case te::ExprKind::kFloatImm:
      return 0;  // operands; index arithmetic is not counted
    case te::ExprKind::kUnary: {
      const auto& node = static_cast<const te::UnaryNode&>(*e.node());
      const bool special = node.op == te::UnaryOp::kExp || node.op == te::UnaryOp::kTanh;
      weight = node.op == te::UnaryOp::kNeg || node.op == te::UnaryOp::kAbs ? 1
               : math.approximate && special                                ? 2
                                                                            : 8;
      break;
    }
    case te::ExprKind::kBinary: {
      const auto& node = static_cast<const te::BinaryNode&>(*e.node());
      const bool f32_division = node.op == te::BinaryOp::kDiv && e.dtype() == te::DType::f32;
      weight = f32_division && !(math.reciprocal && schedule::divides_by_constant(e)) ? 8 : 1;
      break;
    }
    case te::ExprKind::kPow:
      weight = std::abs(static_cast<const te::PowNode&>(*e.node()).exponent);
      break;
    default:
      weight = 1;
  }
  te::for_each_child(e, [&](const te::Expr& child) { weight += op_weight(child, math); });
  return weight;
}

// The stage of each epilogue input's first reader (plan.stages.size() for an input nothing reads), in the
// order of plan.epilogue_inputs.
std::vector<int> first_read_stages(const schedule::FusionPlan& plan) {
  std::vector<int> stages(plan.epilogue_inputs.size(), static_cast<int>(plan.stages.size()));
  if (std::none_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                   [](const auto& input) { return input.broadcast == schedule::Broadcast::kFull; }))
    return stages;  // only inputs read element by element are asked about
  for (const te::Tensor& t : plan.program.tensors()) {
    for (const te::Tensor& read : te::Program::reads_of(t)) {
      for (std::size_t i = 0; i < stages.size(); ++i) {
        if (read.same_as(plan.epilogue_inputs[i].tensor)) stages[i] = std::min(stages[i], plan.stage(t));
      }
    }
  }
  return stages;
}

// CTAs of `cluster` the GPU runs at once: clusters must fit in one GPC, which strands SMs for large ones. On
// the H200 the driver's occupancy query gives 66 clusters of 2, 30 of 4 and 15 of 8 (120 of 132 SMs for 4 and
// 8).
double concurrent_ctas(int sms, int cluster) {
  if (cluster >= 4) return sms * 120.0 / 132.0;
  return sms;
}

// The share of the tensor cores' time a ring of `stages` operand stages keeps fed. The stages in flight while
// one is consumed hide the loads' latency when they take long enough to consume, so what counts is the work
// ahead, not the count: a 128 x 256 tile's K block is twice a 64 x 256 tile's, and three stages of it hide as
// much as five of the smaller. Counted in 64 x 256 x 64 blocks ahead (64 x 256 tiles with two, three and four
// stages have 1, 2 and 3): 0.8 at one, 0.87 at two, full from three, linear between; under one, down to 0.5.
// Chosen among three curves by where each ranks the shipped log's fastest records (benchmarks/NOTES.md, "The
// cost model's pipeline depth and staged inputs").
double pipeline_depth_efficiency(const schedule::Schedule& s) {
  const double ahead = (s.stages - 1) * static_cast<double>(s.bm) * s.bn * s.bk / (64.0 * 256.0 * 64.0);
  if (ahead >= 3) return 1.0;
  if (ahead >= 2) return 0.87 + 0.13 * (ahead - 2);
  if (ahead >= 1) return 0.8 + 0.07 * (ahead - 1);
  return 0.5 + 0.3 * ahead;
}

}  // namespace

MachineModel machine_model(const runtime::DeviceFingerprint& target) {
  MachineModel model;
  if (target.sms > 0) model.sms = target.sms;
  return model;
}

CostEstimate estimate(const schedule::FusionPlan& original, const schedule::Schedule& s,
                      const MachineModel& machine) {
  const schedule::FusionPlan plan = schedule::effective_plan(original, s);  // the merged reductions' stages
  const auto& a = plan.anchor;
  const std::int64_t n_tiles = ceil_div(a.n, s.bn);
  const std::int64_t row_blocks = ceil_div(a.m, s.bm);
  const bool ping_pong = s.warp_roles == WarpRoles::kPingPong;

  // CTAs and the column tiles each computes.
  std::int64_t ctas = 0, tiles_per_cta = 0;
  std::int64_t row_blocks_per_cta = 1;
  // A deferred reduction's CTAs take tiles as a plan without reductions does; the finish kernel is apart.
  const bool deferred = plan.has_reductions() && s.deferred();
  const bool in_kernel = plan.has_reductions() && !deferred;
  // The CTAs that walk a row block together: a hardware cluster, or with global_exchange a group of a
  // cooperative launch, which no GPC strands.
  const int hardware_cluster = s.global_exchange ? 1 : s.cluster_n;
  if (in_kernel && s.persistent) {  // clusters walk the row blocks
    const auto fit = static_cast<std::int64_t>(concurrent_ctas(machine.sms, hardware_cluster)) / s.cluster_n;
    const std::int64_t clusters = std::min<std::int64_t>(row_blocks, std::max<std::int64_t>(1, fit));
    ctas = clusters * s.cluster_n;
    row_blocks_per_cta = ceil_div(row_blocks, clusters);
    tiles_per_cta = row_blocks_per_cta * ceil_div(n_tiles, s.cluster_n);
  } else if (in_kernel) {
    ctas = row_blocks * s.cluster_n;
    tiles_per_cta = ceil_div(n_tiles, s.cluster_n);
  } else if (s.persistent) {
    ctas = std::min<std::int64_t>(row_blocks * n_tiles, machine.sms);
    tiles_per_cta = ceil_div(row_blocks * n_tiles, ctas);
  } else if (ping_pong) {
    ctas = row_blocks * ceil_div(n_tiles, 2);
    tiles_per_cta = 2;
  } else {
    ctas = row_blocks * n_tiles;
    tiles_per_cta = 1;
  }
  const double waves = std::ceil(static_cast<double>(ctas) / concurrent_ctas(machine.sms, hardware_cluster));

  // Tensor-core time of one tile on one SM. One warpgroup issuing wgmma at a time (ping-pong, or a
  // cooperative BM = 64) leaves the tensor cores idle between its instructions; two cooperative ones keep
  // them fed. Narrow tiles lose to the fixed cost of each wgmma; shallow pipelines expose TMA latency.
  const double sm_flops_per_us = machine.tensor_tflops * 1e6 / machine.sms;
  const bool one_issuer = ping_pong || s.consumer_warpgroups() == 1;
  const double issue_efficiency = one_issuer ? kSingleIssueEfficiency : 1.0;
  const double width_efficiency = s.bn / (s.bn + 24.0);
  const double depth_efficiency = pipeline_depth_efficiency(s);
  const double tile_flops = 2.0 * s.bm * s.bn * static_cast<double>(a.k);
  const double tile_mma_us =
      tile_flops / (sm_flops_per_us * issue_efficiency * width_efficiency * depth_efficiency);
  // Operands stream from L2: (BM + BN) x K bf16 per tile, at this SM's share of the L2 bandwidth; with
  // multicast_b a CTA fetches half of B and its cluster peer the other half.
  const double l2_per_sm_bytes_per_us = machine.l2_gbps * 1e3 / machine.sms;
  const double b_rows = s.multicast_b ? s.bn / 2.0 : s.bn;
  const double tile_feed_us = (s.bm + b_rows) * 2.0 * static_cast<double>(a.k) / l2_per_sm_bytes_per_us;
  const double tile_main_us = std::max(tile_mma_us, tile_feed_us);

  // Epilogue of one tile, split at the first reduction barrier: the work of stage 0 (on the accumulator, as
  // each tile's mainloop ends) and that of the later stages (after whole rows have combined; with a deferred
  // reduction, in the finish kernel). Each is arithmetic per element plus its share of the memory traffic.
  const ElementMath math{s.approximate_math, s.reciprocal_division};
  double early_ops = 0, late_ops = 0, reductions = 0;
  for (const te::Tensor& t : plan.program.tensors()) {
    if (!t->body.defined() || t.same_as(a.tensor)) continue;
    const schedule::Role role = plan.role(t);
    double ops = 0;
    if (role == schedule::Role::kTile) ops = op_weight(t->body, math);
    if (role == schedule::Role::kRowValue && t->body.kind() == te::ExprKind::kReduce) {
      ops = op_weight(t->body, {}) + 1;
      reductions += 1;
    }
    (plan.stage(t) == 0 ? early_ops : late_ops) += ops;
  }
  const double elements = static_cast<double>(s.bm) * s.bn;
  const double element_us = elements / (machine.fp32_gops_per_sm * 1e3);  // per operation an element
  // Bytes an element: inputs read element by element, by the stage of their first reader; outputs by the
  // stage computing them.
  double early_bytes = 0, late_input_bytes = 0, early_output_bytes = 0, late_output_bytes = 0;
  const std::vector<int> read_stage = first_read_stages(plan);
  for (std::size_t i = 0; i < plan.epilogue_inputs.size(); ++i) {
    const schedule::EpilogueInput& input = plan.epilogue_inputs[i];
    if (input.broadcast != schedule::Broadcast::kFull) continue;
    (read_stage[i] == 0 ? early_bytes : late_input_bytes) += te::dtype_bytes(input.tensor.dtype());
  }
  const double compulsory_input_bytes = early_bytes + late_input_bytes;
  // Inputs staged by TMA (tma_inputs) arrive in shared memory while the mainloop runs, as the TMA store's
  // outputs leave under the next one: the epilogue pays for reading them from shared memory, not their bytes.
  if (s.tma_inputs) early_bytes *= kTmaMovedBytesWeight;
  for (const te::Tensor& out : plan.program.outputs())
    (plan.stage(out) == 0 ? early_output_bytes : late_output_bytes) += te::dtype_bytes(out.dtype());
  const double compulsory_per_element = compulsory_input_bytes + early_output_bytes + late_output_bytes;
  // Outputs stored with TMA leave asynchronously from shared memory in whole lines: most of their time hides
  // under the next tile's mainloop.
  const double store_weight = s.tma_store ? kTmaMovedBytesWeight : 1.0;
  early_bytes += store_weight * early_output_bytes;
  double late_bytes = late_input_bytes + store_weight * late_output_bytes;
  // Each carried tile is written once and read once per later stage that needs it, as f32 or bf16.
  // Loaded two columns at a time (vector_loads), re-reads and inputs cost fewer transactions.
  const bool stashing = s.carried == ValueHome::kL2Stash && !plan.carried_tiles.empty();
  const double load_weight = s.vector_loads ? 0.7 : 1.0;
  const double stashed = te::dtype_bytes(schedule::stash_dtype(s));
  const auto carried = static_cast<double>(plan.carried_tiles.size());
  const auto later_stages = static_cast<double>(plan.stages.size() - 1);
  double finish_us = 0;
  if (deferred) {
    // The main kernel only writes the stash (in whole lines through TMA with tma_store); the finish kernel
    // streams it back with the later stages' inputs and writes the outputs (whole rows, coalesced: at the
    // DRAM rate), after a launch of its own.
    early_bytes += stashed * carried * (s.tma_store ? 0.5 : 1.0);
    const double mn = static_cast<double>(a.m) * static_cast<double>(a.n);
    // At the DRAM rate whatever the rows' order or the stash's L2 policy: taking the last rows first
    // (reverse_finish) made the finish kernel slower, and the stash kept in L2 (stash_evict_last) cost the
    // main kernel more than it saved the finish kernel (NOTES, Change 52).
    const double rows_bytes = mn * (stashed * carried + late_input_bytes + late_output_bytes);
    // A warp a row (kFinishSplit with finish_row_split), 6 CTAs of 8 warps an SM (their registers): fewer
    // warps than fit keep fewer loads in flight (softmax at M = 4096: 0.65 waves, 2.2 TB/s).
    const double warps = static_cast<double>(a.m) * (s.finish_row_split ? schedule::kFinishSplit : 1);
    const double resident_warps = machine.sms * 6.0 * (schedule::kFinishThreads / 32);
    const double fill = std::clamp(warps / resident_warps, 0.3, 1.0);
    // The pairs walk (two columns a lane a load) keeps fewer bytes in flight than the wide walk's 16-byte
    // words (wide_finish).
    const double walk = s.wide_finish  ? 1.0
                        : stashed == 2 ? machine.pairs_walk_rate_16
                                       : machine.pairs_walk_rate_32;
    finish_us = machine.launch_us + rows_bytes / (machine.dram_gbps * 1e3 * fill * walk);
    late_ops = 0;  // the finish kernel's arithmetic hides under its traffic
    late_bytes = 0;
  } else if (stashing) {
    early_bytes += stashed * carried * later_stages;
    late_bytes += stashed * load_weight * carried * later_stages;
  }
  // Epilogue traffic shares the DRAM/L2 bandwidth with the mainloop: charge it at the SM's DRAM share.
  const double dram_per_sm_bytes_per_us = machine.dram_gbps * 1e3 / machine.sms;
  const double byte_us = elements / dram_per_sm_bytes_per_us;  // per byte an element
  // A cooperative CTA of 64 rows has one consumer warpgroup: a warp a scheduler runs its epilogue, with no
  // second warpgroup's instructions to fill its waits.
  const double lone = !ping_pong && s.consumer_warpgroups() == 1 ? kLoneEpilogueSlowdown : 1.0;
  const double early_us = lone * (early_ops * element_us + early_bytes * byte_us);
  // The later stages of an in-kernel reduction run as a pass after a barrier: each thread walks the values
  // it carried, loads few of them at a time and waits on each, at half the rate of the streaming model
  // (fitted to the shipped log's measurements: see benchmarks/NOTES.md, the cost model's late passes).
  const double late_us =
      lone * (late_ops * element_us + late_bytes * byte_us) / (in_kernel ? kLatePassEfficiency : 1.0);
  // Combining a reduction across the cluster costs a cluster barrier per stage; across ping-pong
  // warpgroups a named barrier. Through global memory (global_exchange), six times the cluster's: the H100
  // trace of post-LN K = 1024 N = 1024 took 7.6 µs from the partials sent to the row combined, against
  // 1.25 µs through DSMEM (benchmarks/NOTES.md, Change 53).
  const double cluster_exchange_us = s.cluster_n == 1 ? 0.0 : s.global_exchange ? 6.0 : 1.0;
  const double exchange_us = in_kernel ? reductions * (cluster_exchange_us + (ping_pong ? 0.3 : 0.1)) : 0.0;

  // Per CTA. Without row reductions in the kernel, ping-pong hides one warpgroup's epilogue under the other's
  // mainloop and cooperative warpgroups run them in turn. With them, the later stages wait for whole rows:
  // ping-pong warpgroups that split a row block's column tiles overlap only their stage-0 epilogues, then
  // both run the later stages with nothing under them; on the persistent grid, warpgroups that take
  // alternate row blocks take turns at the tensor cores a row block at a time (one starts its mainloops when
  // the other has finished all of its own), so the other's later stages hide under one's mainloops and
  // stage-0 epilogues, whichever is longer; an odd row block out runs alone, its later stages under nothing.
  double cta_us = 0;
  const double tile_us = tile_main_us + early_us + late_us;
  if (in_kernel) {
    const auto tiles = static_cast<double>(tiles_per_cta / row_blocks_per_cta);  // a row block's
    const auto blocks = static_cast<double>(row_blocks_per_cta);
    if (!ping_pong) {
      cta_us = blocks * (tiles * tile_us + exchange_us);
    } else if (s.alternate_row_blocks()) {
      const double rows_us = tiles * (tile_main_us + early_us);  // mainloops and stage-0 epilogues
      const double tail_us = exchange_us + tiles * late_us;      // what waits for whole rows
      const double pairs = std::floor(blocks / 2), alone = blocks - 2 * pairs;
      cta_us = pairs * 2 * std::max(rows_us, tail_us) + alone * (rows_us + tail_us);
    } else {
      const double pair_us = std::max(2 * tile_main_us, tile_main_us + early_us);
      cta_us = blocks * (std::ceil(tiles / 2) * pair_us + exchange_us + tiles * late_us);
    }
  } else if (ping_pong) {
    const double per_pair = std::max(2 * tile_main_us, tile_us);
    cta_us = static_cast<double>(ceil_div(tiles_per_cta, 2)) * per_pair;
  } else {
    cta_us = static_cast<double>(tiles_per_cta) * tile_us;
  }
  cta_us += machine.cta_start_us;  // once per CTA: per wave without a persistent grid, once with it

  CostEstimate estimate;
  estimate.waves = waves;
  estimate.mainloop_us = waves * static_cast<double>(tiles_per_cta) * tile_main_us;
  estimate.epilogue_us = waves * cta_us - estimate.mainloop_us;
  // Compulsory traffic: operands once, epilogue inputs and outputs once.
  double compulsory = 2.0 * static_cast<double>(a.m * a.k + a.n * a.k);
  compulsory += static_cast<double>(a.m) * static_cast<double>(a.n) * compulsory_per_element;
  estimate.dram_us = compulsory / (machine.dram_gbps * 1e3);
  estimate.total_us = machine.launch_us + std::max(waves * cta_us, estimate.dram_us) + finish_us;
  return estimate;
}

std::string model_family(const schedule::FusionPlan& plan, const schedule::Schedule& s) {
  std::string family(schedule::warp_roles_name(s.warp_roles));
  family += "/" + std::to_string(s.bm);
  if (!plan.carried_tiles.empty()) family += "/" + std::string(schedule::value_home_name(s.carried));
  if (plan.has_reductions()) family += "/" + std::string(schedule::reduction_placement_name(s.reduction));
  // What a softmax's stash holds: its terms (stash_terms: the element loop takes the maximum alone, then one
  // exp an element) or its logits (the online update in the element loop, up to two accurate exps an
  // element). The model charges both for their bytes alike; on the H100 the terms' main kernel ran 28%
  // faster (benchmarks/NOTES.md, Change 79's outcome), so each form needs a measurement of its own.
  if (s.stash_terms) family += "/terms";
  return family;
}

std::vector<int> calibration_features(const schedule::Schedule& s, int* count) {
  std::vector<int> on = {0};  // the intercept
  int next = 1;
  auto flag = [&](bool value) {
    if (value) on.push_back(next);
    ++next;
  };
  auto one_of = [&](int index, int size) {  // a value among `size`, as one indicator
    on.push_back(next + std::clamp(index, 0, size - 1));
    next += size;
  };
  flag(s.warp_roles == schedule::WarpRoles::kPingPong);
  flag(s.bm == 128);
  one_of((s.bn - 1) / 64, 4);  // BN up to 64, 128, 192, 256
  one_of(s.stages - 2, 7);     // 2 to 8 stages
  one_of(s.cluster_n == 1 ? 0 : s.cluster_n == 2 ? 1 : s.cluster_n == 4 ? 2 : 3, 4);
  one_of(static_cast<int>(s.carried), 3);
  flag(s.raster_group_m == 1);
  flag(s.deferred());
  for (const schedule::OptionalKnob& knob : schedule::optional_knobs()) flag(s.*knob.field);
  if (count != nullptr) *count = next;
  return on;
}

double CalibratedModel::predict_us(const schedule::Schedule& schedule) const {
  return estimate(*plan_, schedule, machine_).total_us * calibration(schedule);
}

double CalibratedModel::calibration(const schedule::Schedule& schedule) const {
  if (observed_ == 0) return 1.0;
  const std::vector<double>& w = weights();
  double sum = 0;
  for (int f : calibration_features(schedule)) sum += w[static_cast<std::size_t>(f)];
  return std::exp(sum);
}

void CalibratedModel::observe(const schedule::Schedule& schedule, double measured_us) {
  const double raw = estimate(*plan_, schedule, machine_).total_us;
  if (!(measured_us > 0) || !(raw > 0)) return;
  int count = 0;
  const std::vector<int> on = calibration_features(schedule, &count);
  const auto n = static_cast<std::size_t>(count);
  if (gram_.empty()) {
    gram_.assign(n * n, 0.0);
    moment_.assign(n, 0.0);
  }
  const double y = std::log(measured_us / raw);
  for (int a : on) {
    moment_[static_cast<std::size_t>(a)] += y;
    for (int b : on) gram_[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)] += 1.0;
  }
  ++observed_;
  weights_.clear();
}

const std::vector<double>& CalibratedModel::weights() const {
  if (!weights_.empty()) return weights_;
  // Ridge regression: (X^T X + lambda) w = X^T y. A prior of 1 per knob keeps a knob seen once or twice near
  // 0 (the analytic model's own say); the intercept's is nearly 0, so the overall ratio is learnt at once.
  // Only the features some measurement had on take part: the others' weights are 0 exactly, and the
  // solve's rounding does not depend on how many knobs exist that this run never turned on.
  constexpr double kKnobPrior = 1.0, kInterceptPrior = 1e-3;
  const std::size_t n = moment_.size();
  std::vector<std::size_t> seen;
  for (std::size_t f = 0; f < n; ++f) {
    if (gram_[f * n + f] > 0) seen.push_back(f);
  }
  const auto m = static_cast<Eigen::Index>(seen.size());
  Eigen::MatrixXd gram(m, m);
  Eigen::VectorXd moment(m);
  for (Eigen::Index a = 0; a < m; ++a) {
    moment(a) = moment_[seen[a]];
    for (Eigen::Index b = 0; b < m; ++b) gram(a, b) = gram_[seen[a] * n + seen[b]];
    gram(a, a) += seen[a] == 0 ? kInterceptPrior : kKnobPrior;
  }
  const Eigen::VectorXd w = gram.ldlt().solve(moment);
  weights_.assign(n, 0.0);
  for (Eigen::Index a = 0; a < m; ++a) weights_[seen[a]] = w(a);
  return weights_;
}

}  // namespace comfuse::search
