// The node map as a standalone SVG document (dracpu-shm map --format svg): the same boxes as the
// text map (map_layout.h), every thread a square labelled with its CPU id and filled with its
// owner's colour, cores outlined, a legend with each owner's CPUs and detail, then the notes.
// Self-contained: no scripts, no external fonts or stylesheets, so a browser, rsvg-convert or an
// image viewer shows it as is.
//
// Thread safety: a pure function.
#pragma once

#include <string>

#include "shm-schema/node_map.h"

namespace dracpu::shm {

struct SvgMapOptions {
  int width = 1200;   // pixels available for the boxes (the document is as wide as needed)
  std::string title;  // <title> of the document; empty: "dracpu node map <node>"
};

std::string RenderMapSvg(const NodeMap& map, const SvgMapOptions& options);

}  // namespace dracpu::shm
