#include "common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dracpu {
namespace {

TEST(Metrics, PrometheusTextFormat) {
  MetricsRegistry r;
  Metric& claims = r.AddCounter("dra_cpu_prepare_claims_total", "Claims prepared.", {"result"});
  Metric& free = r.AddGauge("dra_cpu_shared_cpus", "CPUs in the shared pool.");
  Metric& latency =
      r.AddHistogram("dra_cpu_prepare_seconds", "Prepare latency.", {}, {0.001, 0.01});
  claims.Add({"success"}, 1);
  claims.Add({"success"}, 2);
  claims.Add({"error"}, 1);
  claims.Add({"error"}, -5);  // counters never go down
  free.Set({}, 12);
  latency.Observe({}, 0.0005);
  latency.Observe({}, 0.005);
  EXPECT_EQ(claims.Value({"success"}), 3);
  EXPECT_EQ(r.RenderText(),
            "# HELP dra_cpu_prepare_claims_total Claims prepared.\n"
            "# TYPE dra_cpu_prepare_claims_total counter\n"
            "dra_cpu_prepare_claims_total{result=\"error\"} 1\n"
            "dra_cpu_prepare_claims_total{result=\"success\"} 3\n"
            "# HELP dra_cpu_shared_cpus CPUs in the shared pool.\n"
            "# TYPE dra_cpu_shared_cpus gauge\n"
            "dra_cpu_shared_cpus 12\n"
            "# HELP dra_cpu_prepare_seconds Prepare latency.\n"
            "# TYPE dra_cpu_prepare_seconds histogram\n"
            "dra_cpu_prepare_seconds_bucket{le=\"0.001\"} 1\n"
            "dra_cpu_prepare_seconds_bucket{le=\"0.01\"} 2\n"
            "dra_cpu_prepare_seconds_bucket{le=\"+Inf\"} 2\n"
            "dra_cpu_prepare_seconds_sum 0.0054999999999999997\n"
            "dra_cpu_prepare_seconds_count 2\n");
}

TEST(Metrics, UnlabelledMetricsExistAtZeroFromTheStart) {
  MetricsRegistry r;
  r.AddGauge("g", "A gauge.");
  r.AddHistogram("h", "A histogram.", {}, {1, 2});
  r.AddCounter("c_total", "Labelled: no series until used.", {"result"});
  EXPECT_EQ(
      r.RenderText(),
      "# HELP g A gauge.\n# TYPE g gauge\ng 0\n"
      "# HELP h A histogram.\n# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 0\nh_bucket{le=\"2\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n"
      "# HELP c_total Labelled: no series until used.\n# TYPE c_total counter\n");
}

TEST(Metrics, SpecsAsTheReferencesIntrospectJson) {
  const std::vector<MetricSpec> specs = {
      {Metric::Kind::kGauge, "a_cpus", "CPUs \"now\".", {}, {}},
      {Metric::Kind::kCounter, "b_total", "Results.", {"result"}, {}}};
  EXPECT_EQ(
      MetricSpecsToJson(specs),
      "[\n"
      "  {\n    \"name\": \"a_cpus\",\n    \"type\": \"gauge\",\n    \"stability\": \"ALPHA\",\n"
      "    \"help\": \"CPUs \\\"now\\\".\",\n    \"labels\": []\n  },\n"
      "  {\n    \"name\": \"b_total\",\n    \"type\": \"counter\",\n    \"stability\": \"ALPHA\",\n"
      "    \"help\": \"Results.\",\n    \"labels\": [\n      \"result\"\n    ]\n  }\n"
      "]\n");
}

}  // namespace
}  // namespace dracpu
