#include "shm-schema/map_layout.h"

#include <algorithm>

namespace dracpu::shm {
namespace {

class Layout {
 public:
  explicit Layout(const BoxMetrics& m) : m_(m) {}

  bool IsLeaf(const MapBox& b) const { return m_.is_leaf ? m_.is_leaf(b) : b.children.empty(); }

  int Natural(const MapBox& b, int max_w) const {
    const int inner = max_w - 2 * m_.inset_x;
    int need;
    if (IsLeaf(b)) {
      need = m_.leaf_width(b) + 2 * m_.inset_x;
    } else {
      int sum = -m_.gap_x;
      for (const auto& k : b.children) sum += m_.gap_x + Natural(k, inner);
      if (sum > inner) return max_w;  // the children wrap: take all there is
      need = sum + 2 * m_.inset_x;
    }
    return std::clamp(std::max(need, m_.title_width(b)), std::min(max_w, m_.min_width), max_w);
  }

  PlacedBox Place(const MapBox& b, int x, int y, int w) const {
    PlacedBox p{&b, x, y, w, 0, {}};
    const int inner = w - 2 * m_.inset_x;
    if (IsLeaf(b)) {
      p.h = m_.inset_top + m_.leaf_height(b, inner) + m_.inset_bottom;
      return p;
    }
    std::vector<int> widths;
    for (const auto& k : b.children) widths.push_back(Natural(k, inner));
    int cy = y + m_.inset_top;
    const std::vector<std::vector<size_t>> rows = PackRows(widths, inner, m_.gap_x);
    // Several rows of children that all fit the first row's (stretched) columns form a grid:
    // later rows take those columns instead of stretching a shorter last row across the box.
    const int columns = static_cast<int>(rows.front().size());
    const int column_w = (inner - m_.gap_x * (columns - 1)) / columns;
    const bool grid = rows.size() > 1 && std::all_of(widths.begin(), widths.end(),
                                                     [&](int kw) { return kw <= column_w; });
    bool first_row = true;
    for (const auto& row : rows) {
      if (!first_row) cy += m_.gap_y;
      first_row = false;
      const int n = grid ? columns : static_cast<int>(row.size());
      int used = -m_.gap_x;
      for (size_t i : row) used += m_.gap_x + widths[i];
      const int extra = std::max(0, inner - used);
      int kx = x + m_.inset_x;
      int row_h = 0;
      const size_t first = p.kids.size();
      for (int i = 0; i < static_cast<int>(row.size()); ++i) {
        // In a grid every child is one column wide (the remainder going to the first columns).
        const int kw =
            grid ? column_w + (i < (inner - m_.gap_x * (n - 1)) % n ? 1 : 0)
                 : widths[row[static_cast<size_t>(i)]] + extra / n + (i < extra % n ? 1 : 0);
        p.kids.push_back(Place(b.children[row[static_cast<size_t>(i)]], kx, cy, kw));
        row_h = std::max(row_h, p.kids.back().h);
        kx += kw + m_.gap_x;
      }
      for (size_t i = first; i < p.kids.size(); ++i) Stretch(p.kids[i], row_h);
      cy += row_h;
    }
    p.h = cy - y + m_.inset_bottom;
    return p;
  }

 private:
  // Makes a box `h` tall; its last row of children grows with it.
  static void Stretch(PlacedBox& p, int h) {
    const int grow = h - p.h;
    p.h = h;
    if (grow <= 0 || p.kids.empty()) return;
    const int last_y = p.kids.back().y;
    for (auto& k : p.kids) {
      if (k.y == last_y) Stretch(k, k.h + grow);
    }
  }

  const BoxMetrics& m_;
};

}  // namespace

NodeLayout LayoutNode(const std::vector<const MapBox*>& tops, int x, int y, int width,
                      const BoxMetrics& metrics) {
  const Layout layout(metrics);
  NodeLayout out;
  std::vector<int> widths;
  widths.reserve(tops.size());
  for (const MapBox* b : tops) widths.push_back(layout.Natural(*b, width));
  int cy = y;
  bool first_row = true;
  for (const auto& row : PackRows(widths, width, metrics.gap_x)) {
    if (!first_row) cy += metrics.gap_y;
    first_row = false;
    int cx = x;
    int row_h = 0;
    for (size_t i : row) {
      out.boxes.push_back(layout.Place(*tops[i], cx, cy, widths[i]));
      row_h = std::max(row_h, out.boxes.back().h);
      cx += widths[i] + metrics.gap_x;
    }
    out.width = std::max(out.width, cx - metrics.gap_x - x);
    cy += row_h;
  }
  out.height = cy - y;
  return out;
}

std::vector<std::vector<size_t>> PackRows(const std::vector<int>& widths, int available, int gap) {
  std::vector<std::vector<size_t>> rows;
  int used = 0;
  for (size_t i = 0; i < widths.size(); ++i) {
    if (rows.empty() || used + gap + widths[i] > available) {
      rows.emplace_back();
      used = widths[i];
    } else {
      used += gap + widths[i];
    }
    rows.back().push_back(i);
  }
  return rows;
}

}  // namespace dracpu::shm
