// Kernels the phase-trace tests trace: the suite's post-LN K = 1024 N = 1024 cluster and deferred forms, an
// in-CTA reduction through the L2 stash and a GEMM storing through TMA, at a shape with tails in M and K (and
// N for the GEMM), with the events each kernel's source marks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/test_programs.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/json.h"

namespace comfuse::codegen::trace_cases {

inline schedule::Schedule schedule_of(const std::string& json) {
  return schedule::schedule_from_json(nlohmann::json::parse(json));
}

struct TracedCase {
  std::string what;
  std::string workload;
  std::int64_t m, k, n;
  schedule::FusionPlan plan;  // of the workload at (m, k, n)
  schedule::Schedule schedule;
  std::vector<std::string> events;  // each mark's comment, "// trace: <event>", once in the source
};

inline std::vector<TracedCase> cases() {
  const std::vector<std::string> tile = {"loads begin",  "loads issued",     "mainloop begin",
                                         "mainloop end", "stage 0 elements", "first stage ready"};
  std::vector<std::string> in_kernel = tile;
  in_kernel.insert(in_kernel.end(), {"stage 0 combined", "stage 1 elements"});
  // The cluster form also waits for its staged inputs (tma_inputs) and for its peers' partials.
  std::vector<std::string> in_cluster = in_kernel;
  in_cluster.insert(in_cluster.end(), {"inputs ready", "stage 0 sent"});
  // Two-pass LayerNorm: the mean, then the centred squares, then the normalised tile.
  std::vector<std::string> two_pass = in_kernel;
  two_pass.insert(two_pass.end(), {"stage 1 combined", "stage 2 elements"});
  std::vector<std::string> stored = tile;
  stored.push_back("store issued");
  const auto make = [](std::string what, std::string workload, std::int64_t n, const std::string& json,
                       std::vector<std::string> events) {
    const std::int64_t m = 200, k = 200;
    schedule::FusionPlan plan = test_programs::plan_of(workload, m, k, n);
    const schedule::Schedule chosen = schedule_of(json);
    return TracedCase{std::move(what), std::move(workload), m, k, n, std::move(plan),
                      chosen,          std::move(events)};
  };
  return {
      // The suite's post-LN K = 1024 N = 1024 cluster form: ping-pong warpgroups on alternate row blocks.
      make("cluster ping-pong", "post_layernorm", 1024,
           R"({"bk":64,"bm":64,"bn":256,"carried":"registers","carry_in_accumulator":true,
               "cluster_n":4,"fenced_exchange_arrive":true,"interior_tiles":true,"one_pass_variance":true,
               "persistent":true,"raster_group_m":8,"reduction":"cluster","stages":3,"tma_inputs":true,
               "warp_roles":"ping_pong"})",
           in_cluster),
      // Its deferred winner: the main kernel alone is traced.
      make("deferred", "post_layernorm", 1024,
           R"({"batched_reads":true,"bf16_stash":true,"bk":64,"bm":64,"bn":256,"carried":"l2_stash",
               "cluster_n":1,"deep_reads":true,"interior_tiles":true,"multicast_b":true,"one_pass_variance":true,
               "persistent":true,"raster_group_m":8,"reduction":"deferred","stages":4,"vector_loads":true,
               "warp_roles":"ping_pong"})",
           tile),
      // A CTA a row block, its tiles through the L2 stash, the variance in a second pass.
      make(
          "in-CTA, L2 stash", "post_layernorm", 1024,
          R"({"bk":64,"bm":128,"bn":128,"carried":"l2_stash","cluster_n":1,"raster_group_m":8,"reduction":"cta",
               "stages":4,"warp_roles":"cooperative"})",
          two_pass),
      make("GEMM with TMA stores", "gemm", 1000,
           R"({"bk":64,"bm":128,"bn":192,"carried":"registers","cluster_n":1,"persistent":true,
               "raster_group_m":8,"reduction":"cta","stages":4,"tma_store":true,"warp_roles":"cooperative"})",
           stored),
  };
}

}  // namespace comfuse::codegen::trace_cases
