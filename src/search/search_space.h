// The schedule space of a fusion plan: every legal combination of the searched knobs, pruned by check_legal
// before anything is emitted or compiled.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"

namespace comfuse::search {

/// `schedule` with the knobs `plan` ignores set to fixed values, so that two schedules that generate the same
/// kernel compare equal: without row reductions the cluster is 1 and the placement `cta`; without carried
/// tiles the carried home is `registers`.
schedule::Schedule canonical(const schedule::FusionPlan& plan, schedule::Schedule schedule);

/// Every legal, canonical schedule for `plan`, without duplicates, in canonical order. The knobs searched:
/// warp roles with BM (cooperative 128 or 64, ping-pong 64); BN in {64, 128, 192, 256} plus the widths at
/// which clusters of 1, 2, 4 and 8 CTAs cover N with one tile each (and N rounded up to 16 when N < 64);
/// stages 3 to 6; with row reductions, clusters of 1, 2, 4 and 8 CTAs (placement `cluster` above 1); with
/// carried tiles, registers, the L2 stash or shared memory; the persistent grid (with reductions: clusters
/// walking row blocks); raster groups of 1 and 8 row blocks without reductions (with
/// them a CTA owns whole rows, so the raster does not change the kernel's traffic and stays at 8).
std::vector<schedule::Schedule> schedule_space(const schedule::FusionPlan& plan,
                                               const schedule::TargetLimits& limits = {});

/// The legal canonical schedules one knob step away from `schedule` (the next value up or down of one knob;
/// for the warp roles, each other roles/BM pair), and each knob that frees a stage
/// (OptionalKnob::frees_stage: store_chunks) turned on with that stage, in canonical order.
std::vector<schedule::Schedule> neighbours(const schedule::FusionPlan& plan,
                                           const schedule::Schedule& schedule,
                                           const schedule::TargetLimits& limits = {});

/// A predicate that admits the schedules whose knobs have the given values, from "knob=value" texts such as
/// "persistent=true" or "carried=registers" (a knob as its JSON field; booleans absent from the JSON are
/// false). An unknown knob or a malformed text is a CompileError naming it and the knobs there are; so is a
/// refinement fixed off, which would admit no schedule of the space.
std::function<bool(const schedule::Schedule&)> knob_filter(const std::vector<std::string>& fixes);

/// A predicate for an A/B of one knob with every other knob fixed: it admits `base` and the canonical form of
/// `base` with the optional knob `knob` flipped (where the knob excludes another, as stash_terms does
/// bf16_stash, canonical turns that one off). A knob turned on that frees a pipeline stage
/// (schedule::OptionalKnob::frees_stage) admits a third schedule, the flipped one with that stage: an A/B of
/// store_chunks runs without the chunks, with them, and with them and one stage more. Nothing else is
/// admitted. Schedules compare without their refinements (schedule::OptionalKnob::refines): a base from a log
/// older than a refinement admits its refined twin in the space. A knob that is not optional is a
/// CompileError naming the ones there are; so is a refinement, which no schedule of the space goes without.
std::function<bool(const schedule::Schedule&)> knob_pair_filter(const schedule::FusionPlan& plan,
                                                                const schedule::Schedule& base,
                                                                const std::string& knob);

/// The canonical order of schedules: by their JSON text (keys sorted). Deterministic tie-breaks use it.
bool canonical_less(const schedule::Schedule& a, const schedule::Schedule& b);

}  // namespace comfuse::search
