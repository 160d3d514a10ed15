// MapLayout: where each box of a NodeMap goes, for both renderers, in the renderer's own unit
// (text: columns and lines; SVG: pixels). The renderer says how big a title and a leaf's content
// are (BoxMetrics); the layout nests and flows the boxes:
//  * a box's natural width is what its content needs on one row (its title included), capped at
//    the width available;
//  * children flow left to right in rows that fit the parent's content width, each row stretched
//    to fill it (so siblings line up), every child of a row as tall as the tallest;
//  * top-level boxes (sockets) flow the same way at their natural widths, unstretched.
//
// Thread safety: pure functions.
#pragma once

#include <functional>
#include <vector>

#include "shm-schema/node_map.h"

namespace dracpu::shm {

struct BoxMetrics {
  int inset_x = 2;       // content inset from the left and from the right border
  int inset_top = 1;     // from the top (the title)
  int inset_bottom = 1;  // from the bottom
  int gap_x = 1;         // between boxes side by side
  int gap_y = 0;         // between rows of boxes
  int min_width = 8;
  // Whether the layout treats `b` as a leaf (draws no boxes inside it). Unset: no children.
  std::function<bool(const MapBox&)> is_leaf;
  // Width the box needs for its title (borders and margins included).
  std::function<int(const MapBox&)> title_width;
  // A leaf's content: its width on one row, and its height at a given content width.
  std::function<int(const MapBox&)> leaf_width;
  std::function<int(const MapBox&, int content_width)> leaf_height;
};

struct PlacedBox {
  const MapBox* box = nullptr;
  int x = 0;
  int y = 0;
  int w = 0;
  int h = 0;
  std::vector<PlacedBox> kids;
};

struct NodeLayout {
  std::vector<PlacedBox> boxes;  // the top-level boxes, in the order given
  int width = 0;                 // of the widest row
  int height = 0;
};

// Lays out `tops` (sockets, then any extra box) in `width`, starting at (x, y).
NodeLayout LayoutNode(const std::vector<const MapBox*>& tops, int x, int y, int width,
                      const BoxMetrics& metrics);

// Rows of a flow layout: consecutive items whose widths (plus `gap` between neighbours) fit in
// `available`; an item wider than `available` gets a row of its own.
std::vector<std::vector<size_t>> PackRows(const std::vector<int>& widths, int available, int gap);

}  // namespace dracpu::shm
