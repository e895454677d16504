// Enumeration of legal schedules and their one-knob neighbourhoods.
#include "search/search_space.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "support/error.h"
#include "support/parallel.h"

namespace comfuse::search {
namespace {

using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

struct RolesAndRows {
  WarpRoles roles;
  int bm;
};
constexpr RolesAndRows kRoles[] = {
    {WarpRoles::kCooperative, 128}, {WarpRoles::kCooperative, 64}, {WarpRoles::kPingPong, 64}};
constexpr int kStages[] = {3, 4, 5, 6};
constexpr ValueHome kHomes[] = {ValueHome::kRegisters, ValueHome::kL2Stash, ValueHome::kShared};
constexpr int kClusters[] = {1, 2, 4, 8};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

std::vector<int> tile_widths(const schedule::FusionPlan& plan) {
  std::set<int> widths = {64, 128, 192, 256};
  const std::int64_t n = plan.anchor.n;
  for (int cluster : kClusters) {
    const std::int64_t fit = ceil_div(ceil_div(n, cluster), 16) * 16;
    if (fit >= 16 && fit <= 256) widths.insert(static_cast<int>(fit));
  }
  if (n < 64) widths.insert(static_cast<int>(ceil_div(n, 16) * 16));
  return {widths.begin(), widths.end()};
}

bool legal(const schedule::FusionPlan& plan, const Schedule& s, const schedule::TargetLimits& limits) {
  try {
    schedule::check_legal(plan, s, limits);
    return true;
  } catch (const CompileError&) {
    return false;
  }
}

// The knobs a plan takes whatever the schedule: each a walk over the plan's expressions, made once per plan
// instead of once per schedule put in canonical form.
struct PlanKnobs {
  explicit PlanKnobs(const schedule::FusionPlan& plan)
      : one_pass_variance(schedule::one_pass_variance_applies(plan)),
        prefetch_inputs(schedule::prefetch_inputs_apply(plan)),
        online_softmax(schedule::online_softmax_applies(plan)),
        // (On the plan as planned: the merges of effective_plan move tiles but neither add nor drop one.)
        approximate_math(schedule::approximate_math_applies(plan)),
        reciprocal_division(schedule::reciprocal_division_applies(plan)),
        stash_terms(online_softmax && schedule::terms_stashable(online_plan(plan))),
        element_wise_inputs(std::any_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                                        [](const schedule::EpilogueInput& input) {
                                          return input.broadcast == schedule::Broadcast::kFull;
                                        })) {}
  bool one_pass_variance, prefetch_inputs, online_softmax, approximate_math, reciprocal_division;
  bool stash_terms;  // with online_softmax alone (one_pass_variance would merge a centered sum as well)
  bool element_wise_inputs;  // an input read whole, element by element (a residual)

 private:
  static schedule::FusionPlan online_plan(const schedule::FusionPlan& plan) {
    Schedule online;
    online.online_softmax = true;
    return schedule::effective_plan(plan, online);
  }
};

Schedule canonical_form(const schedule::FusionPlan& plan, const PlanKnobs& knobs, Schedule s);

// The canonical forms of `raw`, unique (in field order: the JSON texts are made only once, by finish). Put in
// canonical form on every core: each walks effective plans, and spaces run to 10^6 raw schedules.
std::vector<Schedule> unique_canonical(const schedule::FusionPlan& plan, const PlanKnobs& knobs,
                                       const std::vector<Schedule>& raw) {
  std::vector<Schedule> forms(raw.size());
  support::parallel_each(raw.size(), [&](std::size_t i) { forms[i] = canonical_form(plan, knobs, raw[i]); });
  std::sort(forms.begin(), forms.end());
  forms.erase(std::unique(forms.begin(), forms.end()), forms.end());
  return forms;
}

// `canonical` (canonical schedules with `knob` off, unique and sorted) and the canonical forms of each with
// the knob turned on, unique and sorted: the same as unique_canonical of both, with half the canonical forms
// to make (the schedules with the knob off are their own) and none kept that folded back to the schedule it
// came from.
std::vector<Schedule> with_knob(const schedule::FusionPlan& plan, const PlanKnobs& knobs,
                                const std::vector<Schedule>& canonical, const schedule::OptionalKnob& knob) {
  std::vector<Schedule> on(canonical.size());
  support::parallel_each(canonical.size(), [&](std::size_t i) {
    Schedule s = canonical[i];
    s.*knob.field = true;
    on[i] = canonical_form(plan, knobs, s);
  });
  std::vector<Schedule> out = canonical;
  for (std::size_t i = 0; i < on.size(); ++i) {
    if (on[i] != canonical[i]) out.push_back(on[i]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The legal ones of `unique` (canonical schedules, each once), sorted in canonical order (the order of their
// JSON texts). The legality checks and the texts are made on every core; the result does not depend on how
// many.
std::vector<Schedule> keep_legal(const schedule::FusionPlan& plan, const std::vector<Schedule>& unique,
                                 const schedule::TargetLimits& limits) {
  std::vector<std::pair<std::string, const Schedule*>> keyed(unique.size());
  support::parallel_each(unique.size(), [&](std::size_t i) {
    if (legal(plan, unique[i], limits)) keyed[i] = {schedule::to_json(unique[i]).dump(), &unique[i]};
  });
  std::erase_if(keyed, [](const auto& entry) { return entry.second == nullptr; });
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Schedule> out;
  out.reserve(keyed.size());
  for (const auto& [key, s] : keyed) out.push_back(*s);
  return out;
}

// Keeps legal canonical schedules, unique and sorted in canonical order.
std::vector<Schedule> finish(const schedule::FusionPlan& plan, const PlanKnobs& knobs,
                             const std::vector<Schedule>& raw, const schedule::TargetLimits& limits) {
  return keep_legal(plan, unique_canonical(plan, knobs, raw), limits);
}

// Every schedule of `in` with each of `values` set by `set`: one more knob in the product.
template <typename T, typename Set>
std::vector<Schedule> expand(const std::vector<Schedule>& in, const std::vector<T>& values, Set set) {
  std::vector<Schedule> out;
  out.reserve(in.size() * values.size());
  for (const Schedule& s : in) {
    for (const T& value : values) {
      Schedule next = s;
      set(next, value);
      out.push_back(next);
    }
  }
  return out;
}

template <typename T, std::size_t N>
std::vector<T> steps(const T (&values)[N], T current) {
  std::vector<T> out;
  const auto it = std::find(std::begin(values), std::end(values), current);
  if (it == std::end(values)) return out;
  if (it != std::begin(values)) out.push_back(*(it - 1));
  if (it + 1 != std::end(values)) out.push_back(*(it + 1));
  return out;
}

Schedule canonical_form(const schedule::FusionPlan& plan, const PlanKnobs& knobs, Schedule s) {
  if (!plan.has_reductions()) {
    s.cluster_n = 1;
    s.reduction = ReductionPlacement::kCta;
  } else {
    s.raster_group_m = 8;
    // A deferred reduction keeps its placement where it can run: no cluster, carried tiles in the L2 stash.
    const ValueHome deferred_home = plan.carried_tiles.empty() ? ValueHome::kRegisters : ValueHome::kL2Stash;
    if (!(s.deferred() && s.cluster_n == 1 && s.carried == deferred_home))
      s.reduction = s.cluster_n > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
    // A deferred reduction's stash may leave by TMA, and the output of rows combined in the kernel from the
    // slot of an input staged there (checked with tma_inputs, below).
    if (!s.deferred() && !s.tma_inputs) s.tma_store = false;
  }
  if (plan.carried_tiles.empty()) s.carried = ValueHome::kRegisters;
  if (!schedule::vector_loads_apply(plan, s)) s.vector_loads = false;
  if (!schedule::batched_reads_apply(plan, s)) s.batched_reads = false;
  if (!s.batched_reads) s.deep_reads = false;
  if (!schedule::bf16_stash_applies(plan, s)) s.bf16_stash = false;
  if (!knobs.one_pass_variance) s.one_pass_variance = false;
  if (!knobs.prefetch_inputs) s.prefetch_inputs = false;
  if (!knobs.online_softmax) s.online_softmax = false;
  if (!s.online_softmax) s.branchless_online_update = false;
  // Not searched, legal: the exchange through global memory, and the vectors left out of the staged slot or
  // kept resident. On the H100 the cluster form with them ran 115.6 µs (three stages) and 119.3 µs (four,
  // vectors unstaged) against 106.2 µs with the DSMEM exchange: its wait for the group's peers took 6–7.6 µs
  // a row block where the cluster's took 1.25 (benchmarks/NOTES.md, Change 53). Vectors unstaged in one slot
  // lost 4-5% (H100), resident in one slot gained 4.9% (H200), still 17% behind the deferred form (Changes
  // 68 and 69).
  s.global_exchange = s.unstaged_vectors = s.resident_vectors = false;
  if (s.cluster_n == 1) s.relaxed_exchange_wait = s.fenced_exchange_arrive = false;
  if (!schedule::finish_row_split_applies(plan, s)) s.finish_row_split = false;
  if (!schedule::multicast_b_applies(plan, s)) s.multicast_b = false;
  if (!knobs.approximate_math) s.approximate_math = false;
  if (!knobs.reciprocal_division) s.reciprocal_division = false;
  if (!(knobs.stash_terms && !s.one_pass_variance && schedule::stash_terms_fit(plan, s)))
    s.stash_terms = false;
  if (!schedule::wide_finish_applies(plan, s)) s.wide_finish = false;
  if (s.wide_finish) s.batched_reads = s.deep_reads = false;  // the finish kernel loads eight columns at once
  if (!schedule::streaming_hints_apply(s)) s.streaming_hints = false;  // (wide_finish is settled above)
  // Not searched, legal: the finish kernel's rows last-first, and the stash's stores kept in L2, were never
  // faster beyond the noise (H100: reverse_finish +2.0 to +2.8 µs in three A/Bs and +1.6 to +2.6% in six
  // tuning twins of post-LN N = 1024, -0.4 and +0.2% in two of N = 4096; stash_evict_last +6% stored
  // element-wise, +0.4 to +0.9 µs stored from the slot). Searched, the model's credit for them took most
  // trials from the forms that won (benchmarks/NOTES.md, Change 52).
  s.reverse_finish = s.stash_evict_last = false;
  // Not searched, legal: the finish kernel on a persistent grid with each warp's next row prefetched was
  // slower or level in its A/B about five K = 1024 winners (H100: post-LN N = 1024 +3.8%, N = 4096 +7.5%,
  // gelu-LN +7.0%, the softmax rows -0.4 to +0.2%; benchmarks/NOTES.md, Change 72's outcome).
  s.persistent_finish = false;
  // Not searched until measured, legal: the ping-pong mainloop handed over before its last group retires.
  s.early_handoff = false;
  // The finish kernel reducing its rows itself: searched where its wide walk keeps each row in registers
  // (H100: the post-LN rows -2.1 to -5.3%), not where it loads the row twice (N = 4096: +3.4 and +9.9%), nor
  // where the pairs walk keeps it (RMSNorm 0.0%, LN-relu +1.9%); benchmarks/NOTES.md, Changes 64, 66 and 67.
  // (After wide_finish and bf16_stash, which it depends on.)
  if (s.finish_reductions && !(s.wide_finish && schedule::finish_reductions_apply(plan, s) &&
                               schedule::finish_row_in_registers(plan, s))) {
    s.finish_reductions = false;
  }
  // Refinements, on in every schedule (the same bits by fewer instructions; faster or the same wherever
  // measured: H100, the GEMM K1024 N1024's element loop 1.72 -> 1.19 us a tile with the packed roundings and
  // 0.84 with shared pointers as well, its kernel -5.4%; post-LN's within 0.5%; benchmarks/NOTES.md,
  // Changes 57 and 58). Logs written before them are searched without them (knob_pair_filter).
  s = schedule::with_refinements(std::move(s));
  // Searched where it has won: plans without row reductions (every GEMM-family winner takes it), and deferred
  // reductions that read no element-wise input, whose fourth stage costs no loads (H100, the shipped H200
  // winners with the stash or a softmax's terms in chunks and one stage more: main kernels softmax N = 8192
  // -10.1%, the softcapped one as cooperative 128 x 256 -10.5%, RMSNorm and LN-relu K = 4096 -1.8% and -1.7%,
  // softmax N = 32000 -0.3%; benchmarks/NOTES.md, Change 73's outcome). Not with a residual, which the chunks
  // move out of its staged slot into loads in the element loop: post-LN's best chunked form was 8% slower
  // than its whole-tile winner ("the deferred stash in chunks").
  const bool chunks_searched = !plan.has_reductions() || (s.deferred() && !knobs.element_wise_inputs);
  if (!schedule::store_chunks_applies(s) || !chunks_searched) s.store_chunks = false;
  if (s.stash_terms) {
    s.bf16_stash = false;                // the terms' stash is bf16 already
    s.branchless_online_update = false;  // the element loop takes the maximum alone, with no online update
  }
  // (Tested only when on: turning off a knob that is off changes nothing, and the tests need the plan `s`
  // runs.)
  if (s.carry_in_accumulator && !schedule::carry_in_accumulator_applies(plan, s))
    s.carry_in_accumulator = false;
  if (s.tma_inputs) {
    // One look at the plan `s` runs (a copy where a knob rewrites it) for both questions.
    const auto [applies, stages_all] =
        schedule::with_effective_plan(plan, s, [&](const schedule::FusionPlan& effective) {
          const bool all = s.prefetch_inputs &&
                           std::all_of(effective.epilogue_inputs.begin(), effective.epilogue_inputs.end(),
                                       [&](const schedule::EpilogueInput& input) {
                                         return input.broadcast != schedule::Broadcast::kFull ||
                                                schedule::stages_input(effective, s, input);
                                       });
          return std::pair{schedule::tma_inputs_apply(effective, s), all};
        });
    if (!applies) s.tma_inputs = false;
    // Inputs staged by TMA arrive whole without it: a prefetch of their rows (one bulk prefetch a row,
    // issued by the producer before the tile's operands) only holds the operands back. Slower in all 47
    // pairs of the H200 log that differ in it alone (median +3.6%); benchmarks/NOTES.md, "Finding — the
    // prefetch of staged inputs".
    if (applies && stages_all) s.prefetch_inputs = false;
  }
  if (plan.has_reductions() && !s.deferred() && s.tma_store &&
      !(s.tma_inputs && schedule::with_effective_plan(plan, s, [&](const schedule::FusionPlan& effective) {
          return schedule::in_place_store_input(effective, s) != nullptr;
        }))) {
    s.tma_store = false;
  }
  // (After tma_inputs is settled. In the kernel, it needs unstaged_vectors or resident_vectors for the norms,
  // both off here: one slot is searched for the deferred forms alone, as its cluster forms measured slower.)
  if (s.one_input_slot && !schedule::with_effective_plan(plan, s, [&](const schedule::FusionPlan& effective) {
        return schedule::one_input_slot_applies(effective, s);
      })) {
    s.one_input_slot = false;
  }
  if (!schedule::staged_pairs_applies(s)) s.staged_pairs = false;
  // A box's staged pairs loaded ahead of its elements, wherever staged pairs are read: faster in both forms
  // measured (post-LN K = 1024 N = 1024 on the H100: the element loop 3.90 -> 3.20 us cooperative, 4.8 -> 3.1
  // ping-pong; benchmarks/NOTES.md, Change 54), so the space holds it instead of its twin without.
  s.box_reads = s.staged_pairs;
  if (s.stash_in_slot && !schedule::with_effective_plan(plan, s, [&](const schedule::FusionPlan& effective) {
        return schedule::stash_in_slot_applies(effective, s);
      })) {
    s.stash_in_slot = false;
  }
  return s;
}

// The optional knobs in the order the space turns them on: each after every knob its canonical form reads.
// optional_knobs() lists tma_store before tma_inputs (its order is the logs' and the calibration's), but
// the TMA store of rows combined in the kernel exists only with tma_inputs on; turned on first, it would fold
// back on every such schedule and leave them out of the space.
std::vector<schedule::OptionalKnob> knobs_in_space_order() {
  const auto all = schedule::optional_knobs();
  std::vector<schedule::OptionalKnob> order(all.begin(), all.end());
  const auto named = [&](std::string_view name) {
    return std::find_if(order.begin(), order.end(), [&](const auto& k) { return name == k.name; });
  };
  const schedule::OptionalKnob store = *named("tma_store");
  order.erase(named("tma_store"));
  order.insert(named("tma_inputs") + 1, store);
  return order;
}

}  // namespace

Schedule canonical(const schedule::FusionPlan& plan, Schedule s) {
  return canonical_form(plan, PlanKnobs(plan), s);
}

std::vector<Schedule> schedule_space(const schedule::FusionPlan& plan, const schedule::TargetLimits& limits) {
  const PlanKnobs knobs(plan);
  const bool reductions = plan.has_reductions();
  const std::vector<int> clusters =
      reductions ? std::vector<int>(std::begin(kClusters), std::end(kClusters)) : std::vector<int>{1};
  const std::vector<ValueHome> homes = plan.carried_tiles.empty()
                                           ? std::vector<ValueHome>{ValueHome::kRegisters}
                                           : std::vector<ValueHome>(std::begin(kHomes), std::end(kHomes));
  const std::vector<int> rasters = reductions ? std::vector<int>{8} : std::vector<int>{1, 8};
  const std::vector<RolesAndRows> roles(std::begin(kRoles), std::end(kRoles));
  const std::vector<int> stages(std::begin(kStages), std::end(kStages));
  std::vector<Schedule> raw = {Schedule{}};
  raw = expand(raw, roles, [](Schedule& s, RolesAndRows r) {
    s.warp_roles = r.roles;
    s.bm = r.bm;
  });
  raw = expand(raw, tile_widths(plan), [](Schedule& s, int bn) { s.bn = bn; });
  raw = expand(raw, stages, [](Schedule& s, int n) { s.stages = n; });
  raw = expand(raw, clusters, [](Schedule& s, int n) { s.cluster_n = n; });
  raw = expand(raw, homes, [](Schedule& s, ValueHome home) { s.carried = home; });
  raw = expand(raw, rasters, [](Schedule& s, int group) { s.raster_group_m = group; });
  if (reductions) {  // the placement follows the cluster, except a deferred one (which canonical keeps)
    raw = expand(raw, std::vector<bool>{false, true}, [](Schedule& s, bool deferred) {
      if (deferred) s.reduction = ReductionPlacement::kDeferred;
    });
  }
  raw = unique_canonical(plan, knobs, raw);
  // A knob the plan or the schedule ignores folds back at once (canonical turns it off), so the product grows
  // only by the knobs that apply; each depends only on fields set before it.
  for (const schedule::OptionalKnob& knob : knobs_in_space_order()) raw = with_knob(plan, knobs, raw, knob);
  return keep_legal(plan, raw, limits);  // canonical and unique already
}

std::vector<Schedule> neighbours(const schedule::FusionPlan& plan, const Schedule& s,
                                 const schedule::TargetLimits& limits) {
  std::vector<Schedule> raw;
  auto with = [&](auto change) {
    Schedule n = s;
    change(n);
    raw.push_back(n);
  };
  for (const RolesAndRows& roles : kRoles) {
    with([&](Schedule& n) {
      n.warp_roles = roles.roles;
      n.bm = roles.bm;
    });
  }
  const std::vector<int> widths = tile_widths(plan);
  const auto width = std::find(widths.begin(), widths.end(), s.bn);
  if (width != widths.begin() && width != widths.end()) with([&](Schedule& n) { n.bn = *(width - 1); });
  if (width != widths.end() && width + 1 != widths.end()) with([&](Schedule& n) { n.bn = *(width + 1); });
  for (int stages : steps(kStages, s.stages)) with([&](Schedule& n) { n.stages = stages; });
  for (int cluster : steps(kClusters, s.cluster_n)) with([&](Schedule& n) { n.cluster_n = cluster; });
  for (ValueHome home : kHomes) {
    if (home != s.carried) with([&](Schedule& n) { n.carried = home; });
  }
  with([&](Schedule& n) { n.raster_group_m = s.raster_group_m == 1 ? 8 : 1; });
  with([&](Schedule& n) {  // the reduction deferred to a finish kernel, or back in the main kernel
    if (s.deferred()) {
      n.reduction = ReductionPlacement::kCta;
    } else {
      n.reduction = ReductionPlacement::kDeferred;
      n.cluster_n = 1;
      n.carried = plan.carried_tiles.empty() ? ValueHome::kRegisters : ValueHome::kL2Stash;
    }
  });
  for (const schedule::OptionalKnob& knob : schedule::optional_knobs()) {
    with([&](Schedule& n) { n.*knob.field = !(s.*knob.field); });
    // And on with the pipeline stage it frees (store_chunks: that pair is what gained, H100: a softmax's main
    // kernel -10%, where searches from scratch that took the chunks alone, three stages, never reached it;
    // benchmarks/NOTES.md, Change 75's outcome).
    if (knob.frees_stage && !(s.*knob.field)) {
      with([&](Schedule& n) {
        n.*knob.field = true;
        ++n.stages;
      });
    }
  }
  const PlanKnobs knobs(plan);
  std::vector<Schedule> out = finish(plan, knobs, raw, limits);
  const Schedule self = canonical_form(plan, knobs, s);
  out.erase(std::remove(out.begin(), out.end(), self), out.end());
  return out;
}

std::function<bool(const Schedule&)> knob_filter(const std::vector<std::string>& fixes) {
  const std::vector<schedule::KnobSetting> wanted = schedule::parse_knob_settings(fixes, "knob filter");
  const auto knobs = schedule::optional_knobs();
  for (const schedule::KnobSetting& setting : wanted) {
    const bool refinement = std::any_of(knobs.begin(), knobs.end(), [&](const schedule::OptionalKnob& k) {
      return k.refines && setting.knob == k.name;
    });
    if (refinement && setting.value == false) {
      throw CompileError("knob filter: " + setting.knob +
                         "=false admits nothing: a refinement, on in every schedule the search generates");
    }
  }
  return [wanted](const Schedule& s) {
    const nlohmann::json json = schedule::to_json(s);
    for (const schedule::KnobSetting& setting : wanted) {
      const auto it = json.find(setting.knob);
      const nlohmann::json actual = it != json.end() ? *it : nlohmann::json(false);  // optional booleans
      if (actual != setting.value) return false;
    }
    return true;
  };
}

std::function<bool(const Schedule&)> knob_pair_filter(const schedule::FusionPlan& plan, const Schedule& base,
                                                      const std::string& knob) {
  const auto knobs = schedule::optional_knobs();
  const auto it = std::find_if(knobs.begin(), knobs.end(),
                               [&](const schedule::OptionalKnob& k) { return knob == k.name; });
  if (it == knobs.end()) {
    std::string names;
    for (const schedule::OptionalKnob& k : knobs) names += (names.empty() ? "" : ", ") + std::string(k.name);
    throw CompileError("knob pair '" + knob + "': not an optional knob (optional knobs: " + names + ")");
  }
  if (it->refines) {
    throw CompileError("knob pair '" + knob +
                       "': a refinement, on in every schedule the search generates (the same values by other "
                       "instructions); trace a schedule with and without it instead");
  }
  Schedule flipped = base;
  flipped.*it->field = !(base.*it->field);
  // A knob turned on that frees a pipeline stage is also tried with that stage, as `neighbours` offers it:
  // the pair is what gained (Change 75's outcome), and the knob alone leaves the stage unused.
  std::vector<Schedule> admitted = {schedule::without_refinements(base),
                                    schedule::without_refinements(canonical(plan, flipped))};
  if (it->frees_stage && flipped.*it->field) {
    ++flipped.stages;
    admitted.push_back(schedule::without_refinements(canonical(plan, flipped)));
  }
  // A logged base may predate the refinements the space turns on: it is found as its refined twin.
  return [admitted = std::move(admitted)](const Schedule& s) {
    return std::find(admitted.begin(), admitted.end(), schedule::without_refinements(s)) != admitted.end();
  };
}

bool canonical_less(const Schedule& a, const Schedule& b) {
  return schedule::to_json(a).dump() < schedule::to_json(b).dump();
}

}  // namespace comfuse::search
