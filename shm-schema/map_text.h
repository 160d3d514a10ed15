// The node map as text for a terminal or a file (dracpu-shm map, gatherinfo).
//
// Boxes nest as the NodeMap does; sibling boxes sit side by side when they fit the width and
// wrap otherwise. Two views:
//  * threads: every core is a cell, its id (lowest CPU) above one glyph per thread, so each CPU
//    of the node is visible with its owner. A 2-socket, 96-CPU node fits 80 columns.
//  * cores: one glyph per core (a core shows its claim when any thread is claimed, else the owner
//    of most of its threads) and, per innermost box, the CPU count of each owner: the summary
//    for large nodes (1024 CPUs in about 50 lines of 80 columns).
//  auto picks threads up to 256 online CPUs and cores above.
// The legend lists every owner with its glyph, CPUs and detail; notes follow. With `color`,
// ANSI SGR codes (16-colour palette) mark owners; without it the output is plain text whose
// glyphs alone tell the owners. `ascii` draws boxes with + - | instead of Unicode lines.
//
// Thread safety: a pure function.
#pragma once

#include <string>

#include "shm-schema/node_map.h"

namespace dracpu::shm {

enum class MapView { kAuto, kThreads, kCores };

struct TextMapOptions {
  int width = 80;  // columns; at least 40 are used whatever is asked
  bool color = false;
  bool ascii = false;
  MapView view = MapView::kAuto;
};

// The view `auto` resolves to for this map.
MapView ResolveView(const NodeMap& map, MapView view);

// Every line ends with '\n' and, with color off, no line is wider than options.width (40 min).
std::string RenderMapText(const NodeMap& map, const TextMapOptions& options);

}  // namespace dracpu::shm
