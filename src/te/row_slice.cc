// The program at another row count, through its canonical JSON: the rows are found by walking the bodies,
// the shapes changed, and the program rebuilt by the validating parser.
#include "te/row_slice.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/error.h"
#include "te/json.h"

namespace comfuse::te {
namespace {

enum class Read : std::uint8_t { kByRow, kWhole };

bool is_row_axis(const nlohmann::json& expr) {
  return expr.is_object() && expr.value("op", "") == "axis" && expr.value("index", -1) == 0;
}

// Walks one compute's body: records how each tensor is read, and meets any other use of the row index by
// refusing it (a slice) or by counting it from `first` (a block of the whole program's rows).
class BodyWalk {
 public:
  BodyWalk(std::string compute, std::map<std::string, Read>& reads, std::optional<std::int64_t> first)
      : compute_(std::move(compute)), reads_(reads), first_(first) {}

  void visit(nlohmann::json& expr) {
    if (is_row_axis(expr)) {
      if (!first_) {
        throw CompileError(
            "rows of '" + compute_ +
            "' are not independent: its body uses its row index other than as the first index of a "
            "read (as a causal mask or a transpose does), so the program cannot be cut into rows");
      }
      if (*first_ != 0) {
        expr = {{"op", "add"}, {"a", expr}, {"b", {{"op", "int"}, {"dtype", "i32"}, {"value", *first_}}}};
      }
      return;
    }
    if (expr.value("op", "") == "read") {
      nlohmann::json& indices = expr.at("indices");
      const std::string tensor = expr.at("tensor").get<std::string>();
      const bool by_row = !indices.empty() && is_row_axis(indices[0]);
      note(tensor, by_row ? Read::kByRow : Read::kWhole);
      for (std::size_t i = by_row ? 1 : 0; i < indices.size(); ++i) visit(indices[i]);
      return;
    }
    for (auto field = expr.begin(); field != expr.end(); ++field) {
      if (field.key() == "axes") continue;  // a reduction's axes: names and extents
      if (field->is_object() && field->contains("op")) visit(*field);
    }
  }

 private:
  void note(const std::string& tensor, Read read) {
    const auto [it, added] = reads_.emplace(tensor, read);
    if (!added && it->second != read) {
      throw CompileError("rows of '" + compute_ + "' are not independent: '" + tensor +
                         "' is read by row in one place and at other rows in another");
    }
  }

  std::string compute_;
  std::map<std::string, Read>& reads_;
  std::optional<std::int64_t> first_;
};

// with_rows, and row_block with `first`.
Program cut_rows(const Program& program, std::optional<std::int64_t> first, std::int64_t rows) {
  const std::string what = first ? "row_block" : "with_rows";
  if (rows < 1) throw CompileError(what + ": rows=" + std::to_string(rows) + " must be at least 1");
  nlohmann::json json = program_to_json(program);
  std::map<std::string, Read> reads;
  std::int64_t program_rows = 0;
  for (nlohmann::json& tensor : json.at("tensors")) {
    if (tensor.at("kind") != "compute") continue;
    const std::string name = tensor.at("name").get<std::string>();
    const std::int64_t extent = tensor.at("shape").at(0).get<std::int64_t>();
    if (program_rows != 0 && extent != program_rows) {
      throw CompileError("rows of '" + name + "' are not independent: its first extent is " +
                         std::to_string(extent) + ", the computes before it have " +
                         std::to_string(program_rows) + " rows");
    }
    program_rows = extent;
    BodyWalk(name, reads, first).visit(tensor.at("body"));
  }
  for (nlohmann::json& tensor : json.at("tensors")) {
    const std::string name = tensor.at("name").get<std::string>();
    const auto read = reads.find(name);
    const bool compute = tensor.at("kind") == "compute";
    if (compute && read != reads.end() && read->second == Read::kWhole) {
      throw CompileError("rows of the program are not independent: '" + name +
                         "' is computed by row and read at other rows");
    }
    if (!compute && (read == reads.end() || read->second == Read::kWhole)) continue;
    if (tensor.at("shape").at(0).get<std::int64_t>() != program_rows) {
      throw CompileError("rows of the program are not independent: input '" + name +
                         "' is read by row but has " +
                         std::to_string(tensor.at("shape").at(0).get<std::int64_t>()) +
                         " rows, the computes " + std::to_string(program_rows));
    }
    tensor["shape"][0] = rows;
  }
  if (first && (*first < 0 || *first + rows > program_rows)) {
    throw CompileError("row_block: rows " + std::to_string(*first) + " to " + std::to_string(*first + rows) +
                       " are not rows of the program's " + std::to_string(program_rows));
  }
  return program_from_json(json, what);
}

}  // namespace

Program with_rows(const Program& program, std::int64_t rows) {
  return cut_rows(program, std::nullopt, rows);
}

Program row_block(const Program& program, std::int64_t first, std::int64_t rows) {
  return cut_rows(program, first, rows);
}

}  // namespace comfuse::te
