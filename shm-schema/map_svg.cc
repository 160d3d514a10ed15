#include "shm-schema/map_svg.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "shm-schema/map_layout.h"

namespace dracpu::shm {
namespace {

// Geometry, in pixels.
constexpr int kThreadMinW = 26;  // a thread square; wider for 4-digit CPU ids
constexpr int kThreadH = 18;
constexpr int kCorePad = 2;
constexpr int kCoreGap = 4;
constexpr int kTitleH = 20;
constexpr int kInset = 8;
constexpr int kCharW = 7;  // of the 12 px sans-serif titles, roughly
constexpr int kLineH = 18;

constexpr const char* kClaimFills[] = {"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2",
                                       "#edc948", "#f28e2b", "#9c755f", "#ff9da7",
                                       "#bab0ac", "#86bcb6", "#8cd17d"};

struct Fill {
  const char* fill;
  const char* text;
};

Fill OwnerFill(const MapOwner& o) {
  switch (o.use) {
    case CpuUse::kClaim: {
      const char* f = kClaimFills[static_cast<size_t>(o.color) % std::size(kClaimFills)];
      return {f, "#ffffff"};
    }
    case CpuUse::kConflict:
      return {"#e15759", "#ffffff"};
    case CpuUse::kReserved:
      return {"#fbe3a1", "#5a4500"};
    case CpuUse::kShared:
      return {"#e8eef5", "#3c4f66"};
    case CpuUse::kIsolated:
      return {"#ecd5ec", "#5a2a5a"};
    case CpuUse::kUnassigned:
      return {"#ffffff", "#777777"};
    case CpuUse::kOffline:
      return {"#d0d0d0", "#777777"};
    case CpuUse::kUnknown:
      return {"#f4f4f4", "#777777"};
  }
  return {"#ffffff", "#000000"};
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

int Chars(std::string_view s) {
  int n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string Title(const MapBox& b) {
  std::string t;
  for (const auto& part : b.title) t += (t.empty() ? "" : " · ") + part;
  if (b.children.empty()) {
    const std::string cores =
        std::to_string(b.cores.size()) + (b.cores.size() == 1 ? " core" : " cores");
    t += t.empty() ? cores : " · " + cores;
  }
  return t;
}

// Pixel sizes that depend on the map: a thread square fits the widest CPU id.
struct Geometry {
  int thread_w = kThreadMinW;

  int CoreWidth(const MapCore& c) const {
    return static_cast<int>(c.threads.size()) * thread_w + 2 * kCorePad;
  }
  int MaxCoreWidth(const MapBox& b) const {
    int w = thread_w + 2 * kCorePad;
    for (const auto& c : b.cores) w = std::max(w, CoreWidth(c));
    return w;
  }
  int PerRow(const MapBox& b, int content_w) const {
    return std::max(1, (content_w + kCoreGap) / (MaxCoreWidth(b) + kCoreGap));
  }
};

BoxMetrics Metrics(const Geometry& g) {
  BoxMetrics m;
  m.inset_x = kInset;
  m.inset_top = kTitleH + 4;
  m.inset_bottom = kInset;
  m.gap_x = kInset;
  m.gap_y = kInset;
  m.min_width = 80;
  m.title_width = [](const MapBox& b) { return Chars(Title(b)) * kCharW + 2 * kInset; };
  m.leaf_width = [g](const MapBox& b) {
    const int n = static_cast<int>(b.cores.size());
    return std::max(1, n * (g.MaxCoreWidth(b) + kCoreGap) - kCoreGap);
  };
  m.leaf_height = [g](const MapBox& b, int cw) {
    const int n = static_cast<int>(b.cores.size());
    const int rows = std::max(1, (n + g.PerRow(b, cw) - 1) / g.PerRow(b, cw));
    return rows * (kThreadH + 2 * kCorePad) + (rows - 1) * kCoreGap;
  };
  return m;
}

class SvgWriter {
 public:
  SvgWriter(const NodeMap& map, const Geometry& g) : map_(map), g_(g) {}

  void Box(const PlacedBox& p) {
    const MapBox& b = *p.box;
    const bool leaf = b.children.empty();
    Printf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" class=\"%s\"/>\n", p.x, p.y,
           p.w, p.h, leaf ? "leaf" : "box");
    Printf("<text x=\"%d\" y=\"%d\" class=\"title\">%s</text>\n", p.x + kInset, p.y + 16,
           Escape(Title(b)).c_str());
    for (const auto& k : p.kids) Box(k);
    if (!leaf) return;
    const int per_row = g_.PerRow(b, p.w - 2 * kInset);
    const int cell = g_.MaxCoreWidth(b) + kCoreGap;
    for (size_t i = 0; i < b.cores.size(); ++i) {
      const MapCore& c = b.cores[i];
      const int x = p.x + kInset + static_cast<int>(i % static_cast<size_t>(per_row)) * cell;
      const int y =
          p.y + kTitleH + 4 +
          static_cast<int>(i / static_cast<size_t>(per_row)) * (kThreadH + 2 * kCorePad + kCoreGap);
      Printf("<g><title>core %d (CPUs", c.id);
      for (const auto& t : c.threads) Printf(" %d", t.cpu);
      Printf(
          ")</title>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\" "
          "class=\"core\"/>\n",
          x, y, g_.CoreWidth(c), kThreadH + 2 * kCorePad);
      for (size_t t = 0; t < c.threads.size(); ++t) {
        Thread(c.threads[t], x + kCorePad + static_cast<int>(t) * g_.thread_w, y + kCorePad);
      }
      out_ += "</g>\n";
    }
  }

  void Thread(const MapThread& t, int x, int y) {
    const MapOwner& o = map_.owners[static_cast<size_t>(t.owner)];
    const Fill f = OwnerFill(o);
    Printf(
        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" class=\"cpu\">"
        "<title>CPU %d: %s</title></rect>\n",
        x + 1, y, g_.thread_w - 2, kThreadH, f.fill, t.cpu, Escape(o.label).c_str());
    Printf("<text x=\"%d\" y=\"%d\" fill=\"%s\" class=\"id\">%d</text>\n", x + g_.thread_w / 2,
           y + 13, f.text, t.cpu);
  }

  // A legend row: swatch, glyph, label, CPUs and detail. Returns the row's height.
  int LegendRow(const MapOwner& o, int x, int y) {
    const Fill f = OwnerFill(o);
    Printf("<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\" class=\"cpu\"/>\n", x,
           y - 11, f.fill);
    const int n = o.cpus.Count();
    const std::string cpus = std::to_string(n) + (n == 1 ? " CPU" : " CPUs") +
                             (n > 0 ? ": " + o.cpus.ToListString() : std::string());
    Printf(
        "<text x=\"%d\" y=\"%d\" class=\"legend\" xml:space=\"preserve\"><tspan "
        "class=\"glyph\">%c</tspan> "
        "<tspan font-weight=\"bold\">%s</tspan>  %s  <tspan class=\"detail\">%s</tspan>"
        "</text>\n",
        x + 22, y, o.glyph, Escape(o.label).c_str(), Escape(cpus).c_str(),
        Escape(o.detail).c_str());
    return kLineH;
  }

  void Text(int x, int y, const char* cls, const std::string& text) {
    Printf("<text x=\"%d\" y=\"%d\" class=\"%s\">%s</text>\n", x, y, cls, Escape(text).c_str());
  }

  std::string& out() { return out_; }

 private:
  template <typename... A>
  void Printf(const char* format, A... args) {
    char buf[1024];
    const int n = std::snprintf(buf, sizeof buf, format, args...);
    if (n < 0) return;
    if (static_cast<size_t>(n) < sizeof buf) {
      out_.append(buf, static_cast<size_t>(n));
      return;
    }
    std::string big(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(big.data(), big.size(), format, args...);
    big.pop_back();
    out_ += big;
  }

  const NodeMap& map_;
  const Geometry& g_;
  std::string out_;
};

}  // namespace

std::string RenderMapSvg(const NodeMap& map, const SvgMapOptions& options) {
  const std::string node = map.node_name.empty() ? "?" : map.node_name;
  std::string head = "node " + node + " · " + std::to_string(map.online_cpus) + " CPUs online";
  if (map.have_segment) head += " · generation " + std::to_string(map.generation);

  MapBox outside;
  std::vector<const MapBox*> tops;
  for (const auto& s : map.sockets) tops.push_back(&s);
  if (!map.outside.empty()) {
    outside.title = {"not online or not in the topology"};
    for (const auto& t : map.outside) outside.cores.push_back({t.cpu, CoreType::kStandard, {t}});
    tops.push_back(&outside);
  }
  Geometry g;
  int max_cpu = 0;
  for (const MapBox* b : tops) max_cpu = std::max(max_cpu, b->cpus.Last());
  for (const auto& t : map.outside) max_cpu = std::max(max_cpu, t.cpu);
  if (max_cpu >= 1000) g.thread_w = kThreadMinW + 7;
  const int margin = 16;
  int y = margin + 18;
  const int header_lines = map.agents.empty() ? 1 : 2;
  const NodeLayout layout =
      LayoutNode(tops, margin, y + header_lines * kLineH, std::max(options.width, 200), Metrics(g));

  SvgWriter w(map, g);
  int ly = margin + 18 + header_lines * kLineH + layout.height + 2 * kLineH;
  for (const auto& b : layout.boxes) w.Box(b);
  std::string body = std::move(w.out());
  w.out().clear();
  for (const auto& o : map.owners) ly += w.LegendRow(o, margin, ly);
  ly += kLineH / 2;
  for (const auto& n : map.notes) {
    w.Text(margin, ly, "note", "note: " + n);
    ly += kLineH;
  }
  std::string legend = std::move(w.out());

  int legend_w = 0;
  for (const auto& o : map.owners) {
    legend_w = std::max(
        legend_w, 40 + 7 * (Chars(o.label) + Chars(o.detail) + 8 + Chars(o.cpus.ToListString())));
  }
  for (const auto& n : map.notes) legend_w = std::max(legend_w, 7 * (Chars(n) + 6));
  const int width = std::max({layout.width, legend_w, 7 * Chars(head)}) + 2 * margin;
  const int height = ly + margin;

  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n",
                width, height, width, height);
  out += buf;
  out += "<title>" + Escape(options.title.empty() ? "dracpu node map " + node : options.title) +
         "</title>\n";
  out +=
      "<style>\n"
      ".box{fill:#f7f7f9;stroke:#9aa0a6;stroke-width:1}\n"
      ".leaf{fill:#ffffff;stroke:#9aa0a6;stroke-width:1}\n"
      ".core{fill:none;stroke:#5f6368;stroke-width:1}\n"
      ".cpu{stroke:#9aa0a6;stroke-width:0.5}\n"
      ".title{font-size:12px;font-weight:bold;fill:#202124}\n"
      ".id{font-size:10px;text-anchor:middle;font-family:DejaVu Sans Mono,monospace}\n"
      ".head{font-size:15px;font-weight:bold;fill:#202124}\n"
      ".agents{font-size:12px;fill:#5f6368}\n"
      ".legend{font-size:12px;fill:#202124}\n"
      ".glyph{font-family:DejaVu Sans Mono,monospace;font-weight:bold}\n"
      ".detail{fill:#5f6368}\n"
      ".note{font-size:12px;fill:#a0341c}\n"
      "</style>\n";
  std::snprintf(buf, sizeof buf, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width,
                height);
  out += buf;
  SvgWriter h(map, g);
  h.Text(margin, margin + 14, "head", head);
  if (!map.agents.empty()) h.Text(margin, margin + 14 + kLineH, "agents", map.agents);
  out += h.out();
  out += body;
  out += legend;
  out += "</svg>\n";
  return out;
}

}  // namespace dracpu::shm
