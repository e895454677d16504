// Epilogue emission of the row partials' exchange across the CTAs that share a row block: through
// distributed shared memory in a cluster, or through global memory in a group of a cooperative launch
// (global_exchange).
#include "codegen/epilogue_emitter.h"

#include "codegen/epilogue_names.h"
#include "codegen/group_exchange.h"
#include "codegen/phase_trace.h"

namespace comfuse::codegen {

void EpilogueEmitter::dsmem_exchange(CodeStream& out, int stage, const std::vector<Slot>& slots,
                                     bool own_rows, bool ping_pong) const {
  const std::string xch = own_rows ? "wg_xch" : "xch", xbar = own_rows ? "wg_xbar" : "xbar";
  out.line("// ... then across the cluster's CTAs through distributed shared memory");
  out.open("");
  out.line("const int buf = xround & 1;");
  out.line("const u32 parity = (xround >> 1) & 1;");
  out.open(ping_pong ? "if ((lane & 3) == 0 && consumer == 0)" : "if ((lane & 3) == 0)");
  out.open("for (int peer = 0; peer < CLUSTER_N; ++peer)");
  out.open("for (int h = 0; h < 2; ++h)");
  for (const Slot& slot : slots) {
    for (const auto& [offset, part] : exchanged(slot)) {
      out.line("st_cluster_f32(map_to_rank(&" + xch + "[((buf * CLUSTER_N + cta_rank) * XSLOTS + " +
               std::to_string(slot.xslot + offset) + ") * BM + local_row0 + 8 * h], peer), " +
               slot_name(slot.stage, slot.index) + part + "[h]);");
    }
  }
  out.close();
  if (schedule_.fenced_exchange_arrive) {
    out.close();
    out.line("// One cluster-scope release for all peers, then relaxed arrivals.");
    out.line(R"(asm volatile("fence.acq_rel.cluster;" ::: "memory");)");
    out.open("for (int peer = 0; peer < CLUSTER_N; ++peer)");
    out.line("mbar_arrive_cluster_relaxed(map_to_rank(&" + xbar + "[buf], peer));");
  } else {
    out.line("mbar_arrive_cluster(map_to_rank(&" + xbar + "[buf], peer));");
  }
  out.close();
  out.close();
  if (trace_ != nullptr)
    trace_->mark(out, TraceEvent::kExchangeSent, stage, "m0 / BM", std::to_string(kTraceRowBlock));
  out.line(std::string(schedule_.relaxed_exchange_wait ? "mbar_wait_cluster_relaxed" : "mbar_wait_cluster") +
           "(&" + xbar + "[buf], parity);");
  combine_peers(out, slots, xch, false);
  out.line("++xround;");
  out.close();
}

void EpilogueEmitter::combine_peers(CodeStream& out, const std::vector<Slot>& slots, const std::string& xch,
                                    bool from_l2) const {
  out.open("for (int h = 0; h < 2; ++h)");
  for (const Slot& slot : slots) {
    auto partial = [&](int offset) {
      const std::string at = xch + "[((buf * CLUSTER_N + peer) * XSLOTS + " +
                             std::to_string(slot.xslot + offset) + ") * BM + local_row0 + 8 * h]";
      return from_l2 ? "__ldcg(&" + at + ")" : at;
    };
    const std::string name = slot_name(slot.stage, slot.index);
    if (partial_form(slot) !=
        nullptr) {  // every CTA combines the peers in rank order: the same bits everywhere
      merged_start(out, slot, [](const PartialForm::Part& part) { return part.identity; });
      out.line("#pragma unroll");
      out.open("for (int peer = 0; peer < CLUSTER_N; ++peer)");
      out.line(merged_combine(slot, partial));
      out.close();
      merged_store(out, slot);
      continue;
    }
    const std::string v = "v" + std::to_string(slot.index);
    out.line("float " + v + " = " + identity(slot.node->op) + ";");
    out.line("#pragma unroll");
    out.open("for (int peer = 0; peer < CLUSTER_N; ++peer)");
    out.line("const float p = " + partial(0) + ";");
    out.line(v + " = " + combine(slot.node->op, v, "p") + ";");
    out.close();
    out.line(name + "[h] = " + v + ";");
  }
  out.close();
}

void EpilogueEmitter::global_exchange(CodeStream& out, int stage, const std::vector<Slot>& slots,
                                      bool own_rows, bool ping_pong) const {
  // The partials go to L2 (.cg stores); after a barrier of the exchanging threads, one thread releases them
  // with a fence and an arrival on the group's counter, and polls it with acquiring loads until every CTA of
  // the group has arrived at this round; a second barrier, then the peers' partials come back from L2 (.cg
  // loads, past this SM's L1, which may hold a buffer's lines from two rounds before).
  const std::string xch = own_rows ? "wg_xch" : "xch", count = own_rows ? "wg_xcount" : "xcount";
  const std::string sync = own_rows ? "exchange_sync(consumer);" : "consumers_sync(CONSUMERS * 128);";
  out.line("// ... then across the group's CTAs through global memory (L2)");
  out.open("");
  const GroupExchangeProtocol protocol = group_exchange_protocol();
  out.line("const int buf = " + protocol.buffer("xround") + ";");
  out.open(ping_pong ? "if ((lane & 3) == 0 && consumer == 0)" : "if ((lane & 3) == 0)");
  out.open("for (int h = 0; h < 2; ++h)");
  for (const Slot& slot : slots) {
    for (const auto& [offset, part] : exchanged(slot)) {
      out.line("__stcg(&" + xch + "[((buf * CLUSTER_N + cta_rank) * XSLOTS + " +
               std::to_string(slot.xslot + offset) + ") * BM + local_row0 + 8 * h], " +
               slot_name(slot.stage, slot.index) + part + "[h]);");
    }
  }
  out.close();
  out.close();
  out.line(sync);
  if (trace_ != nullptr)
    trace_->mark(out, TraceEvent::kExchangeSent, stage, "m0 / BM", std::to_string(kTraceRowBlock));
  out.open(own_rows ? "if ((threadIdx.x & 127) == 0)" : "if (threadIdx.x == 128)");
  out.line("__threadfence();");
  out.line("atomicAdd(" + count + ", 1u);");
  out.line("while (ld_acquire_gpu(" + count + ") < " + protocol.arrivals("xround") + ") {}");
  out.close();
  out.line(sync);
  combine_peers(out, slots, xch, true);
  out.line("++xround;");
  out.close();
}

}  // namespace comfuse::codegen
