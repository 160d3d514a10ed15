#include "common/metrics.h"

#include <cmath>
#include <cstdio>

namespace dracpu {
namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

const char* MetricKindName(Metric::Kind k) {
  switch (k) {
    case Metric::Kind::kCounter:
      return "counter";
    case Metric::Kind::kGauge:
      return "gauge";
    case Metric::Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string MetricSpecsToJson(const std::vector<MetricSpec>& specs) {
  std::string out = "[\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const MetricSpec& m = specs[i];
    out += "  {\n    \"name\": " + JsonString(m.name) + ",\n    \"type\": \"" +
           MetricKindName(m.kind) +
           "\",\n    \"stability\": \"ALPHA\",\n    \"help\": " + JsonString(m.help) +
           ",\n    \"labels\": [";
    for (size_t j = 0; j < m.labels.size(); ++j) {
      out += std::string(j ? "," : "") + "\n      " + JsonString(m.labels[j]);
    }
    out += m.labels.empty() ? "]" : "\n    ]";
    out += std::string("\n  }") + (i + 1 < specs.size() ? "," : "") + "\n";
  }
  return out + "]\n";
}

Metric::Metric(Kind kind, std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> buckets)
    : kind_(kind),
      name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(buckets)) {}

void Metric::Add(const LabelValues& labels, double delta) {
  if (kind_ == Kind::kCounter && delta < 0) return;
  std::lock_guard lock(mu_);
  series_[labels].value += delta;
}

void Metric::Set(const LabelValues& labels, double value) {
  std::lock_guard lock(mu_);
  series_[labels].value = value;
}

void Metric::Observe(const LabelValues& labels, double value) {
  std::lock_guard lock(mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) ++s.buckets[i];
  }
  s.value += value;
  ++s.count;
}

double Metric::Value(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(labels);
  if (it == series_.end()) return 0;
  return kind_ == Kind::kHistogram ? static_cast<double>(it->second.count) : it->second.value;
}

std::string Metric::LabelText(const LabelValues& values, const std::string& extra) const {
  std::string out;
  for (size_t i = 0; i < label_names_.size() && i < values.size(); ++i) {
    if (!out.empty()) out += ',';
    out += label_names_[i] + "=\"" + EscapeLabel(values[i]) + "\"";
  }
  if (!extra.empty()) {
    if (!out.empty()) out += ',';
    out += extra;
  }
  return out.empty() ? "" : "{" + out + "}";
}

void Metric::Render(std::string& out) const {
  out += "# HELP " + name_ + " " + help_ + "\n";
  out += "# TYPE " + name_ + " " + MetricKindName(kind_) + "\n";
  std::lock_guard lock(mu_);
  // A metric without labels exists from the start, at zero, as Prometheus clients show it.
  std::map<LabelValues, Series> unlabelled;
  if (series_.empty() && label_names_.empty()) {
    unlabelled[{}].buckets.assign(bounds_.size(), 0);
  }
  for (const auto& [labels, s] : series_.empty() ? unlabelled : series_) {
    if (kind_ != Kind::kHistogram) {
      out += name_ + LabelText(labels) + " " + FormatValue(s.value) + "\n";
      continue;
    }
    for (size_t i = 0; i < bounds_.size(); ++i) {
      out += name_ + "_bucket" + LabelText(labels, "le=\"" + FormatValue(bounds_[i]) + "\"") + " " +
             std::to_string(s.buckets[i]) + "\n";
    }
    out +=
        name_ + "_bucket" + LabelText(labels, "le=\"+Inf\"") + " " + std::to_string(s.count) + "\n";
    out += name_ + "_sum" + LabelText(labels) + " " + FormatValue(s.value) + "\n";
    out += name_ + "_count" + LabelText(labels) + " " + std::to_string(s.count) + "\n";
  }
}

Metric& MetricsRegistry::Add(std::unique_ptr<Metric> metric) {
  std::lock_guard lock(mu_);
  metrics_.push_back(std::move(metric));
  return *metrics_.back();
}

Metric& MetricsRegistry::Add(const MetricSpec& spec) {
  return Add(std::make_unique<Metric>(spec.kind, spec.name, spec.help, spec.labels, spec.buckets));
}

Metric& MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names) {
  return Add(std::make_unique<Metric>(Metric::Kind::kCounter, name, help, std::move(label_names)));
}

Metric& MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  return Add(std::make_unique<Metric>(Metric::Kind::kGauge, name, help, std::move(label_names)));
}

Metric& MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names,
                                      std::vector<double> buckets) {
  return Add(std::make_unique<Metric>(Metric::Kind::kHistogram, name, help, std::move(label_names),
                                      std::move(buckets)));
}

std::string MetricsRegistry::RenderText() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& m : metrics_) m->Render(out);
  return out;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

}  // namespace dracpu
