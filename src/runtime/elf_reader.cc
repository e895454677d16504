// Reading section tables, .nv.info attributes and the dynamic section of ELF64 images.
#include "runtime/elf_reader.h"

#include <elf.h>

#include <cstring>
#include <map>

#include "support/error.h"

namespace comfuse::runtime {
namespace {

// .nv.info attribute encodings (formats) and the attribute ids read here; see the EIATTR list of cuobjdump.
constexpr unsigned char kFormatNoValue = 0x01;
constexpr unsigned char kFormatByteValue = 0x02;
constexpr unsigned char kFormatHalfValue = 0x03;
constexpr unsigned char kFormatSizedValue = 0x04;
constexpr unsigned char kAttrFrameSize = 0x11;
constexpr unsigned char kAttrRegCount = 0x2f;

struct Section {
  std::string name;
  Elf64_Shdr header;
};

template <typename T>
T read_at(std::string_view image, std::size_t offset, const char* what) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) {
    throw InternalError(std::string("elf: ") + what + " at offset " + std::to_string(offset) +
                        " runs past the end of the image (" + std::to_string(image.size()) + " bytes)");
  }
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

std::string_view section_bytes(std::string_view image, const Elf64_Shdr& header) {
  if (header.sh_type == SHT_NOBITS) return {};
  if (header.sh_offset > image.size() || image.size() - header.sh_offset < header.sh_size) {
    throw InternalError("elf: section at offset " + std::to_string(header.sh_offset) + " of size " +
                        std::to_string(header.sh_size) + " runs past the end of the image (" +
                        std::to_string(image.size()) + " bytes)");
  }
  return image.substr(header.sh_offset, header.sh_size);
}

std::string string_at(std::string_view table, std::size_t offset) {
  if (offset >= table.size()) {
    throw InternalError("elf: string offset " + std::to_string(offset) + " outside a table of " +
                        std::to_string(table.size()) + " bytes");
  }
  std::string_view rest = table.substr(offset);
  return std::string(rest.substr(0, rest.find('\0')));
}

std::vector<Section> read_sections(std::string_view image) {
  if (!is_elf(image)) throw InternalError("elf: the image does not start with the ELF magic");
  const auto header = read_at<Elf64_Ehdr>(image, 0, "the file header");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    throw InternalError("elf: only little-endian ELF64 images are read (class " +
                        std::to_string(header.e_ident[EI_CLASS]) + ", data " +
                        std::to_string(header.e_ident[EI_DATA]) + ")");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    throw InternalError("elf: section header size " + std::to_string(header.e_shentsize) + ", expected " +
                        std::to_string(sizeof(Elf64_Shdr)));
  }
  std::vector<Section> sections(header.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    sections[i].header =
        read_at<Elf64_Shdr>(image, header.e_shoff + i * sizeof(Elf64_Shdr), "a section header");
  }
  if (header.e_shstrndx >= sections.size()) {
    throw InternalError("elf: section-name table index " + std::to_string(header.e_shstrndx) + " of " +
                        std::to_string(sections.size()) + " sections");
  }
  std::string_view names = section_bytes(image, sections[header.e_shstrndx].header);
  for (Section& section : sections) section.name = string_at(names, section.header.sh_name);
  return sections;
}

// Symbol index -> name for the cubin's .symtab.
std::map<std::uint32_t, std::string> read_symbols(std::string_view image,
                                                  const std::vector<Section>& sections) {
  std::map<std::uint32_t, std::string> symbols;
  for (const Section& section : sections) {
    if (section.header.sh_type != SHT_SYMTAB) continue;
    if (section.header.sh_link >= sections.size()) {
      throw InternalError("elf: symbol table links to section " + std::to_string(section.header.sh_link));
    }
    std::string_view strings = section_bytes(image, sections[section.header.sh_link].header);
    std::string_view table = section_bytes(image, section.header);
    for (std::uint32_t i = 0; i < table.size() / sizeof(Elf64_Sym); ++i) {
      const auto symbol = read_at<Elf64_Sym>(table, i * sizeof(Elf64_Sym), "a symbol");
      symbols[i] = string_at(strings, symbol.st_name);
    }
  }
  return symbols;
}

}  // namespace

bool is_elf(std::string_view image) {
  return image.size() >= SELFMAG && image.substr(0, SELFMAG) == ELFMAG;
}

std::vector<CubinKernel> read_cubin_kernels(std::string_view cubin) {
  const std::vector<Section> sections = read_sections(cubin);
  std::vector<CubinKernel> kernels;
  std::map<std::string, std::size_t> index_of;
  for (const Section& section : sections) {
    constexpr std::string_view kPrefix = ".nv.info.";
    if (section.name.starts_with(kPrefix)) {
      index_of[section.name.substr(kPrefix.size())] = kernels.size();
      kernels.push_back(CubinKernel{section.name.substr(kPrefix.size())});
    }
  }
  const std::map<std::uint32_t, std::string> symbols = read_symbols(cubin, sections);
  // The global .nv.info section holds per-function attributes keyed by symbol index.
  for (const Section& section : sections) {
    if (section.name != ".nv.info") continue;
    std::string_view info = section_bytes(cubin, section.header);
    std::size_t offset = 0;
    while (offset + 2 <= info.size()) {
      const auto format = static_cast<unsigned char>(info[offset]);
      const auto attribute = static_cast<unsigned char>(info[offset + 1]);
      if (format == kFormatNoValue) {
        offset += 2;
      } else if (format == kFormatByteValue || format == kFormatHalfValue) {
        offset += 4;
      } else if (format == kFormatSizedValue) {
        const auto size = read_at<std::uint16_t>(info, offset + 2, "an attribute size");
        if (size >= 8 && (attribute == kAttrRegCount || attribute == kAttrFrameSize)) {
          const auto symbol = read_at<std::uint32_t>(info, offset + 4, "an attribute symbol");
          const auto value = read_at<std::uint32_t>(info, offset + 8, "an attribute value");
          auto name = symbols.find(symbol);
          if (name != symbols.end()) {
            auto kernel = index_of.find(name->second);
            if (kernel != index_of.end()) {
              int& slot = attribute == kAttrRegCount ? kernels[kernel->second].registers
                                                     : kernels[kernel->second].frame_bytes;
              slot = static_cast<int>(value);
            }
          }
        }
        offset += 4 + size;
      } else {
        throw InternalError("elf: unknown .nv.info attribute format " + std::to_string(format) +
                            " at offset " + std::to_string(offset));
      }
    }
  }
  return kernels;
}

std::vector<std::string> read_needed_libraries(std::string_view elf) {
  const std::vector<Section> sections = read_sections(elf);
  std::vector<std::string> needed;
  for (const Section& section : sections) {
    if (section.header.sh_type != SHT_DYNAMIC) continue;
    if (section.header.sh_link >= sections.size()) {
      throw InternalError("elf: dynamic section links to section " + std::to_string(section.header.sh_link));
    }
    std::string_view strings = section_bytes(elf, sections[section.header.sh_link].header);
    std::string_view table = section_bytes(elf, section.header);
    for (std::size_t i = 0; i < table.size() / sizeof(Elf64_Dyn); ++i) {
      const auto entry = read_at<Elf64_Dyn>(table, i * sizeof(Elf64_Dyn), "a dynamic entry");
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag == DT_NEEDED) needed.push_back(string_at(strings, entry.d_un.d_val));
    }
  }
  return needed;
}

}  // namespace comfuse::runtime
