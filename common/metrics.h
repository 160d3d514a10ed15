// MetricsRegistry: counters, gauges and histograms rendered in the Prometheus text exposition
// format (version 0.0.4) for /metrics. Small on purpose: label values are strings given per
// observation, label names are fixed when the metric is created.
//
// Thread safety: all operations may be called concurrently. Metrics live as long as the
// registry; Add* returns a reference that stays valid.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dracpu {

using LabelValues = std::vector<std::string>;

class Metric {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };
  Metric(Kind kind, std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> buckets = {});

  // Counter/gauge: adds `delta` (counters only go up: negative deltas are ignored).
  void Add(const LabelValues& labels, double delta);
  // Gauge: sets the value.
  void Set(const LabelValues& labels, double value);
  // Histogram: records one observation.
  void Observe(const LabelValues& labels, double value);
  // Current value (counter/gauge) or observation count (histogram); 0 when never touched.
  double Value(const LabelValues& labels) const;

  void Render(std::string& out) const;

 private:
  struct Series {
    double value = 0;               // counter/gauge value, histogram sum
    uint64_t count = 0;             // histogram observations
    std::vector<uint64_t> buckets;  // histogram cumulative-by-render counts per bucket
  };
  std::string LabelText(const LabelValues& values, const std::string& extra = "") const;

  const Kind kind_;
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
};

// What a metric is, independent of its values: for registration and for `introspect metrics`.
struct MetricSpec {
  Metric::Kind kind;
  std::string name;
  std::string help;
  std::vector<std::string> labels;
  std::vector<double> buckets;  // histograms only
};

// "counter" / "gauge" / "histogram".
const char* MetricKindName(Metric::Kind kind);

// The reference driver's `dracpu introspect metrics` format: a JSON array of
// {name, type, stability: "ALPHA", help, labels: [...]}, indented by two spaces.
std::string MetricSpecsToJson(const std::vector<MetricSpec>& specs);

class MetricsRegistry {
 public:
  Metric& Add(const MetricSpec& spec);
  Metric& AddCounter(const std::string& name, const std::string& help,
                     std::vector<std::string> label_names = {});
  Metric& AddGauge(const std::string& name, const std::string& help,
                   std::vector<std::string> label_names = {});
  // `buckets`: ascending upper bounds; +Inf is implied.
  Metric& AddHistogram(const std::string& name, const std::string& help,
                       std::vector<std::string> label_names, std::vector<double> buckets);
  // Every metric, in creation order.
  std::string RenderText() const;

 private:
  Metric& Add(std::unique_ptr<Metric> metric);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Metric>> metrics_;
};

// Latency buckets in seconds, 100 µs to 10 s, for request-latency histograms.
std::vector<double> LatencyBuckets();

}  // namespace dracpu
