// Text layout helpers of the text map: UTF-8 columns, truncation and word wrap, and TextCanvas,
// a grid of one-column cells each with a style, joined into lines with ANSI SGR codes or without.
// Every character the map draws (ASCII, the box-drawing lines, '·', '…') is one column wide.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dracpu::shm {

// UTF-8 code points of `s`, each as the bytes that make it.
std::vector<std::string_view> CodePoints(std::string_view s);
// Columns `s` takes (one per code point).
int Columns(std::string_view s);
// `s` cut to `width` columns, its last kept column an ellipsis ('~' with `ascii`) when cut.
std::string Truncate(std::string_view s, int width, bool ascii);
std::string ReplaceAll(std::string s, std::string_view from, std::string_view to);
// Word-wraps `text` to `width` columns; continuation lines start with `indent` spaces. A word
// longer than a line (a long cpulist) is cut after a comma when one is in reach, else anywhere.
std::vector<std::string> Wrap(const std::string& text, int width, int indent);

// A canvas `width` columns wide that grows downwards. Style 0 is plain; the caller gives the SGR
// parameters of the others ("1", "97;44") at Render.
class TextCanvas {
 public:
  static constexpr int kPlain = 0;

  explicit TextCanvas(int width) : width_(width) {}

  // Puts `text` at (x, y) in `style`, clipped at the width.
  void Put(int x, int y, std::string_view text, int style);
  int height() const { return static_cast<int>(rows_.size()); }
  // Appends every line to `out` with '\n'; trailing plain blanks are dropped. With `color`, each
  // run of one style is wrapped in "\x1b[<sgr[style]>m" ... "\x1b[0m".
  void Render(const std::vector<std::string>& sgr, bool color, std::string& out) const;

 private:
  struct Cell {
    std::string ch = " ";  // one code point
    int style = kPlain;
  };
  void Ensure(int y);

  int width_;
  std::vector<std::vector<Cell>> rows_;
};

}  // namespace dracpu::shm
