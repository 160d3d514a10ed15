#include "shm-schema/text_canvas.h"

namespace dracpu::shm {

std::vector<std::string_view> CodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

int Columns(std::string_view s) { return static_cast<int>(CodePoints(s).size()); }

std::string Truncate(std::string_view s, int width, bool ascii) {
  const std::vector<std::string_view> cps = CodePoints(s);
  if (static_cast<int>(cps.size()) <= width) return std::string(s);
  if (width <= 0) return "";
  std::string out;
  for (int i = 0; i < width - 1; ++i) out += cps[static_cast<size_t>(i)];
  return out + (ascii ? "~" : "…");
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::vector<std::string> Wrap(const std::string& text, int width, int indent) {
  std::vector<std::string> lines;
  std::string line;
  int cols = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    const int w = Columns(word);
    if (cols > 0 && cols + 1 + w > width) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      lines.push_back(line);
      line = std::string(static_cast<size_t>(indent), ' ');
      cols = indent;
    } else if (cols > 0) {
      line += ' ';
      ++cols;
    }
    // A word longer than a line (a long cpulist) is cut after a comma when it has one in reach.
    while (cols + Columns(word) > width && width - cols > 0) {
      const std::vector<std::string_view> cps = CodePoints(word);
      size_t take = static_cast<size_t>(width - cols);
      for (size_t i = take; i > 1; --i) {
        if (cps[i - 1] == ",") {
          take = i;
          break;
        }
      }
      for (size_t i = 0; i < take; ++i) line += cps[i];
      lines.push_back(line);
      std::string rest;
      for (size_t i = take; i < cps.size(); ++i) rest += cps[i];
      word = rest;
      line = std::string(static_cast<size_t>(indent), ' ');
      cols = indent;
    }
    line += word;
    cols += Columns(word);
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

void TextCanvas::Put(int x, int y, std::string_view text, int style) {
  Ensure(y);
  for (std::string_view cp : CodePoints(text)) {
    if (x >= 0 && x < width_) {
      rows_[static_cast<size_t>(y)][static_cast<size_t>(x)] = {std::string(cp), style};
    }
    ++x;
  }
}

void TextCanvas::Render(const std::vector<std::string>& sgr, bool color, std::string& out) const {
  for (const auto& row : rows_) {
    size_t end = row.size();
    while (end > 0 && row[end - 1].ch == " " && (!color || row[end - 1].style == kPlain)) --end;
    int current = kPlain;
    for (size_t i = 0; i < end; ++i) {
      const Cell& c = row[i];
      if (color && c.style != current) {
        if (current != kPlain) out += "\x1b[0m";
        if (c.style != kPlain) out += "\x1b[" + sgr[static_cast<size_t>(c.style)] + "m";
        current = c.style;
      }
      out += c.ch;
    }
    if (color && current != kPlain) out += "\x1b[0m";
    out += '\n';
  }
}

void TextCanvas::Ensure(int y) {
  while (static_cast<int>(rows_.size()) <= y) rows_.emplace_back(static_cast<size_t>(width_));
}

}  // namespace dracpu::shm
