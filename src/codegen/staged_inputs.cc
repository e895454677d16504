// Epilogue inputs staged in shared memory by the producer with TMA (schedule knob tma_inputs).
#include "codegen/staged_inputs.h"

#include <algorithm>

#include "support/error.h"

namespace comfuse::codegen {

using schedule::Broadcast;

StagedInputs::StagedInputs(const schedule::FusionPlan& plan, const schedule::Schedule& schedule)
    : schedule_(schedule), slots_(schedule.one_input_slot ? 1 : 2) {
  if (!schedule.tma_inputs) return;
  const std::int64_t boxes = (schedule.bn + 63) / 64;
  for (const schedule::EpilogueInput& input : plan.epilogue_inputs) {
    if (!schedule::stages_input(plan, schedule, input)) continue;
    const int rows = input.broadcast == Broadcast::kFull ? schedule.bm : 1;
    const bool resident = !schedule::in_staged_slot(plan, schedule, input);
    std::int64_t& bytes = resident ? resident_bytes_ : slot_bytes_;
    inputs_.push_back({input.tensor, input.broadcast, rows, bytes, resident});
    bytes += (boxes * rows * 128 + 1023) / 1024 * 1024;
    (resident ? resident_tx_bytes_ : tx_bytes_) += boxes * rows * 128;
  }
}

bool StagedInputs::staged(const te::Tensor& input) const {
  return std::any_of(inputs_.begin(), inputs_.end(),
                     [&](const Input& in) { return in.tensor.same_as(input); });
}

std::string StagedInputs::address(const te::Tensor& input, Broadcast broadcast) const {
  const auto it =
      std::find_if(inputs_.begin(), inputs_.end(), [&](const Input& in) { return in.tensor.same_as(input); });
  // Fragment element i of the thread lies in box i >> 5, at 16-byte piece (i >> 2) & 7 of its line, bytes
  // (lane & 3) * 4 + (i & 1) * 2 into the piece. An element-wise input's line is the thread's row of the tile
  // (local_row0 + 8 h, whose low three bits are lane >> 2, since BM is a multiple of 8); a vector's is the
  // box.
  const bool full = broadcast == Broadcast::kFull;
  const std::string line = full ? "((i >> 5) * BM + local_row0 + 8 * h)" : "(i >> 5)";
  const std::string swizzle = full ? "(lane >> 2)" : "((i >> 5) & 7)";
  return std::string(it->resident ? "vec_tile + " : "in_tile + ") + std::to_string(it->offset) + " + " +
         line + " * 128 + ((((i >> 2) & 7) ^ " + swizzle + ") << 4) + (lane & 3) * 4";
}

std::string StagedInputs::read(const te::Tensor& input, Broadcast broadcast, bool interior) const {
  const std::string element = "lds_u16(" + address(input, broadcast) + " + (i & 1) * 2)";
  const std::string convert = input.dtype() == te::DType::bf16 ? "bf16_to_f32(" : "f16_to_f32(";
  if (interior) return convert + element + ")";
  const bool full = broadcast == Broadcast::kFull;
  return "(" + std::string(full ? "inb" : "gcol < N") + " ? " + convert + element + ") : 0.0f)";
}

std::string StagedInputs::read_pair(const te::Tensor& input, Broadcast broadcast, bool interior) const {
  const std::string pair = "lds_u32(" + address(input, broadcast) + ")";
  if (interior) return pair;
  return std::string(broadcast == Broadcast::kFull ? "inb" : "gcol < N") + " ? " + pair + " : 0u";
}

std::int64_t StagedInputs::offset_of(const te::Tensor& input) const {
  for (const Input& in : inputs_) {
    if (in.tensor.same_as(input)) return in.offset;
  }
  throw InternalError("input '" + input.name() + "' is not staged");
}

std::vector<std::pair<te::Tensor, int>> StagedInputs::boxes() const {
  std::vector<std::pair<te::Tensor, int>> result;
  for (const Input& in : inputs_) result.emplace_back(in.tensor, in.rows);
  return result;
}

void StagedInputs::helpers(CodeStream& out) const {
  if (empty()) return;
  out.line(
      "// A 16-bit load from a shared-memory address. Volatile: it stays after the wait on its slot (32-bit");
  out.line("// addresses keep the epilogue's register count where generic pointers would spill).");
  out.open("__device__ __forceinline__ u16 lds_u16(u32 address)");
  out.line("u16 v;");
  out.line(R"(asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(address));)");
  out.line("return v;");
  out.close();
  if (schedule_.staged_pairs) {
    out.open("__device__ __forceinline__ u32 lds_u32(u32 address)");
    out.line("u32 v;");
    out.line(R"(asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(address));)");
    out.line("return v;");
    out.close();
  }
  if (schedule_.stores_in_place()) {
    out.line("// A 32-bit store to a shared-memory address: the output tile over a staged input's slot.");
    out.open("__device__ __forceinline__ void sts_u32(u32 address, u32 v)");
    out.line(R"(asm volatile("st.shared.u32 [%0], %1;" :: "r"(address), "r"(v) : "memory");)");
    out.close();
  }
  out.line();
}

void StagedInputs::carve(CodeStream& out, const std::string& start) const {
  std::string layout, resident_layout;
  for (const Input& in : inputs_) {
    std::string& where = in.resident ? resident_layout : layout;
    where += (where.empty() ? "" : ", ") + in.tensor.name() + " at " + std::to_string(in.offset);
  }
  std::string slots_start = start;
  if (resident_bytes_ > 0) {  // (a multiple of 1024 bytes: the slots stay aligned)
    out.line("constexpr u32 VEC_BYTES = " + std::to_string(resident_bytes_) + ", VEC_TX_BYTES = " +
             std::to_string(resident_tx_bytes_) + ";  // resident vectors: " + resident_layout);
    out.line("unsigned char* sVec = (unsigned char*)(" + start +
             ");  // [VEC_BYTES] loaded once, for every row block");
    slots_start = "sVec + VEC_BYTES";
  }
  out.line("constexpr u32 IN_SLOT_BYTES = " + std::to_string(slot_bytes_) +
           ", IN_TX_BYTES = " + std::to_string(tx_bytes_) +
           ", IN_BOXES = " + std::to_string((schedule_.bn + 63) / 64) + ";  // staged inputs: " + layout);
  const bool one = slots_ == 1;
  out.line("unsigned char* sIn = (unsigned char*)(" + slots_start + ");  // " +
           (one ? "[IN_SLOT_BYTES] staged inputs, one slot" : "[2][IN_SLOT_BYTES] staged inputs"));
  out.line(std::string("u64* in_full = (u64*)(sIn + ") + (one ? "" : "2 * ") +
           "IN_SLOT_BYTES);  // a tile's staged inputs landed in the slot");
  out.line("u64* in_empty = in_full + 2;                     // the slot's readers are done with it");
  if (resident_bytes_ > 0)
    out.line("u64* vec_full = in_empty + 2;                    // the resident vectors landed");
}

std::string StagedInputs::barriers_end() const {
  return resident_bytes_ > 0 ? "vec_full + 1" : "in_empty + 2";
}

void StagedInputs::init_barriers(CodeStream& out, const std::string& readers) const {
  out.open("for (int s = 0; s < 2; ++s)");
  out.line("mbar_init(&in_full[s], 1);");
  out.line("mbar_init(&in_empty[s], 4 * " + readers + ");  // every warp of the tile's warpgroups");
  out.close();
  if (resident_bytes_ > 0) out.line("mbar_init(vec_full, 1);");
}

void StagedInputs::produce_resident(CodeStream& out) const {
  if (resident_bytes_ == 0) return;
  out.line("// The per-column vectors of the CTA's one column tile, once for all its row blocks.");
  out.open("if (tiles.count > 0)");
  out.line("mbar_expect_tx(vec_full, VEC_TX_BYTES);");
  out.open("for (int b = 0; b < IN_BOXES; ++b)");
  for (const Input& in : inputs_) {
    if (!in.resident) continue;
    out.line("tma_load_2d(sVec + " + std::to_string(in.offset) + " + b * 128, &tma_in_" + in.tensor.name() +
             ", vec_full, tiles.n_tile(0) * BN + 64 * b, 0);");
  }
  out.close();
  out.close();
}

void StagedInputs::wait_resident(CodeStream& out) const {
  if (resident_bytes_ == 0) return;
  out.line("if (tiles.count > 0) mbar_wait(vec_full, 0);  // the resident vectors, loaded once");
}

void StagedInputs::produce(CodeStream& out, const std::string& tile, const std::string& m_block,
                           const std::string& n_tile) const {
  const StagedProtocol p = protocol();
  out.line(
      slots_ == 1
          ? "// The tile's staged inputs, after its operands, once the tile before has left the one slot."
          : "// The tile's staged inputs, into slot " + tile + " & 1 once the tile two before has left it.");
  out.open("");
  // Two slots: slot and in_full barrier are one index. One slot: in_full alternates (see protocol()).
  const std::string full_bar = slots_ == 1 ? "bar" : "slot";
  if (slots_ == 1) {
    out.line("const int bar = " + p.full_barrier.of(tile) +
             ";  // the tile's in_full barrier; the slot is the one");
    out.line("mbar_wait(&in_empty[" + p.slot.of(tile) + "], (" + p.empty_phase.of(tile) + ") ^ 1);");
    out.line("mbar_expect_tx(&in_full[bar], IN_TX_BYTES);");
    out.line("unsigned char* const dst = sIn;");
  } else {
    out.line("const int slot = " + p.slot.of(tile) + ";");
    out.line("mbar_wait(&in_empty[slot], (" + p.empty_phase.of(tile) + ") ^ 1);");
    out.line("mbar_expect_tx(&in_full[slot], IN_TX_BYTES);");
    out.line("unsigned char* const dst = sIn + slot * IN_SLOT_BYTES;");
  }
  // streaming_hints: an element-wise input's lines are read once, by this tile; a vector's by every tile.
  const bool hinted = streams_loads();
  if (hinted) out.line("const u64 read_once = l2_evict_first_policy();");
  out.open("for (int b = 0; b < IN_BOXES; ++b)");
  for (const Input& in : inputs_) {
    if (in.resident) continue;
    const bool full = in.broadcast == Broadcast::kFull;
    const bool hint = hinted && full;
    out.line(std::string(hint ? "tma_load_2d_hint(" : "tma_load_2d(") + "dst + " + std::to_string(in.offset) +
             " + b * " + (full ? "BM * 128" : "128") + ", &tma_in_" + in.tensor.name() + ", &in_full[" +
             full_bar + "], " + n_tile + " * BN + 64 * b, " + (full ? m_block + " * BM" : std::string("0")) +
             (hint ? ", read_once" : "") + ");");
  }
  out.close();
  out.close();
}

bool StagedInputs::streams_loads() const {
  return schedule_.streaming_hints && std::any_of(inputs_.begin(), inputs_.end(), [](const Input& in) {
           return in.broadcast == Broadcast::kFull;
         });
}

void StagedInputs::declare(CodeStream& out) const {
  out.line("u32 in_tile = smem_addr(sIn);  // the slot of the tile in hand (tma_inputs), a shared address");
  if (resident_bytes_ > 0) out.line("const u32 vec_tile = smem_addr(sVec);  // the resident vectors");
  out.line("int in_slot = 0;");
}

std::string TileBit::of(const std::string& tile) const {
  if (constant >= 0) return std::to_string(constant);
  return shift == 0 ? tile + " & 1" : "(" + tile + " >> " + std::to_string(shift) + ") & 1";
}

int TileBit::of(std::int64_t tile) const {
  return constant >= 0 ? constant : static_cast<int>((tile >> shift) & 1);
}

StagedProtocol StagedInputs::protocol() const {
  // Two slots: slot c & 1, each slot's barriers at phase (c >> 1) & 1. One slot: in_empty[0] takes a phase a
  // tile, but in_full still alternates (the header says why).
  if (slots_ == 1) return {TileBit::zero(), TileBit::bit(0), TileBit::bit(1), TileBit::bit(0), true};
  return {TileBit::bit(0), TileBit::bit(0), TileBit::bit(1), TileBit::bit(1), false};
}

void StagedInputs::wait(CodeStream& out, const std::string& tile) const {
  const StagedProtocol p = protocol();
  if (slots_ == 1) {  // in_slot stays 0 and in_tile the slot's address
    out.line("mbar_wait(&in_full[" + p.full_barrier.of(tile) + "], " + p.full_phase.of(tile) +
             ");  // the tile's staged inputs (in_full alternates between tiles, the slot is one)");
    return;
  }
  // in_full[in_slot]: with two slots, a tile's barrier is its slot.
  out.line("in_slot = " + p.slot.of(tile) + ";");
  out.line("in_tile = smem_addr(sIn) + in_slot * IN_SLOT_BYTES;");
  out.line("mbar_wait(&in_full[in_slot], " + p.full_phase.of(tile) + ");  // the tile's staged inputs");
}

void StagedInputs::release(CodeStream& out) const {
  out.line("__syncwarp();");
  out.line("if (lane == 0) mbar_arrive(&in_empty[in_slot]);  // this warp has read the tile's staged inputs");
}

}  // namespace comfuse::codegen
