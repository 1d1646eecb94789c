//! The counters of one tmws process, and their Prometheus text (`/metrics`, docs/surfaces.md).
//!
//! The engine counts what every surface does (search and context latency, stale answers,
//! redundant context defaults, lazy connects, tool calls); the HTTP surface adds requests by
//! route and status. Rendering reads the index and the pool through the engine.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 11] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// A Prometheus histogram of latencies.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    /// Per bucket (not cumulative), the last one for over a second.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BUCKETS.iter().position(|&b| secs <= b).unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut total = 0;
        for (i, bound) in BUCKETS.iter().enumerate() {
            total += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {total}");
        }
        total += self.counts[BUCKETS.len()].load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}\n{name}_sum {sum}\n{name}_count {total}");
    }
}

/// Counters of one process.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub(crate) search: Histogram,
    pub(crate) context: Histogram,
    pub(crate) memory_search: Histogram,
    pub(crate) tool_search: Histogram,
    pub(crate) recall: Histogram,
    /// Starting a downstream server for a call (lazy connect).
    pub(crate) connect: Histogram,
    pub(crate) tool_calls_ok: AtomicU64,
    pub(crate) tool_calls_failed: AtomicU64,
    pub(crate) stale_answers: AtomicU64,
    pub(crate) defaults_redundant: AtomicU64,
    /// HTTP requests by (route, status).
    requests: Mutex<BTreeMap<(String, u16), u64>>,
}

impl Metrics {
    pub(crate) fn count_request(&self, route: &str, status: u16) {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests.entry((route.to_owned(), status)).or_default() += 1;
    }
}

/// What `/metrics` shows besides the counters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gauges {
    pub ready: bool,
    pub lag: Duration,
    /// Items by kind, memories by namespace (None when the index could not be counted).
    pub counts: Option<(BTreeMap<String, u64>, BTreeMap<String, u64>)>,
    pub pool_size: usize,
    /// Trust by agent.
    pub trust: Vec<(String, f64)>,
    /// Current importance of every live memory, by namespace.
    pub importance: BTreeMap<String, Vec<f64>>,
    /// When the upkeep last ran (seconds since the epoch).
    pub upkeep_at: Option<i64>,
}

/// Upper bounds of the importance histogram's buckets.
const IMPORTANCE_BUCKETS: [f64; 6] = [0.05, 0.1, 0.25, 0.5, 0.75, 1.0];

impl Metrics {
    /// The counters in Prometheus' text format.
    pub(crate) fn text(&self, g: &Gauges) -> String {
        let mut out = String::new();
        let m = self;
        let gauge = |out: &mut String, name: &str, help: &str, value: String| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        };
        gauge(&mut out, "tmws_index_ready", "1 once the first sync has finished.", u8::from(g.ready).to_string());
        gauge(
            &mut out,
            "tmws_index_lag_seconds",
            "How long the index has been behind the files (0 when fresh).",
            g.lag.as_secs_f64().to_string(),
        );
        if let Some((kinds, namespaces)) = &g.counts {
            out.push_str("# HELP tmws_index_items Items in the index by kind.\n# TYPE tmws_index_items gauge\n");
            for (kind, n) in kinds {
                let _ = writeln!(out, "tmws_index_items{{kind=\"{}\"}} {n}", label(kind));
            }
            out.push_str(
                "# HELP tmws_memory_entries Live memory entries by namespace.\n# TYPE tmws_memory_entries gauge\n",
            );
            for (ns, n) in namespaces {
                let _ = writeln!(out, "tmws_memory_entries{{namespace=\"{}\"}} {n}", label(ns));
            }
        }
        m.search.render(&mut out, "tmws_search_latency_seconds", "workspace_search time in the index.");
        m.context.render(&mut out, "tmws_context_latency_seconds", "workspace_get_context time in the index.");
        m.memory_search.render(
            &mut out,
            "tmws_memory_search_latency_seconds",
            "memory_search and memory_list time in the index.",
        );
        m.tool_search.render(&mut out, "tmws_tool_search_latency_seconds", "tool_search time in the index.");
        m.recall.render(&mut out, "tmws_recall_latency_seconds", "recall time in the index.");
        if !g.trust.is_empty() {
            out.push_str(
                "# HELP tmws_trust Trust of each verified agent, 0 to 1.
# TYPE tmws_trust gauge
",
            );
            for (agent, score) in &g.trust {
                let _ = writeln!(out, "tmws_trust{{agent=\"{}\"}} {score}", label(agent));
            }
        }
        if !g.importance.is_empty() {
            out.push_str(
                "# HELP tmws_memory_importance Current importance (decayed) of live memories by namespace.\n\
# TYPE tmws_memory_importance histogram\n",
            );
            for (ns, values) in &g.importance {
                let ns = label(ns);
                for bound in IMPORTANCE_BUCKETS {
                    let n = values.iter().filter(|v| **v <= bound).count();
                    let _ = writeln!(out, "tmws_memory_importance_bucket{{namespace=\"{ns}\",le=\"{bound}\"}} {n}");
                }
                let sum: f64 = values.iter().sum();
                let n = values.len();
                let _ = writeln!(
                    out,
                    "tmws_memory_importance_bucket{{namespace=\"{ns}\",le=\"+Inf\"}} {n}\n\
tmws_memory_importance_sum{{namespace=\"{ns}\"}} {sum}\ntmws_memory_importance_count{{namespace=\"{ns}\"}} {n}"
                );
            }
        }
        if let Some(at) = &g.upkeep_at {
            gauge(
                &mut out,
                "tmws_upkeep_last_run_timestamp_seconds",
                "When the upkeep (cleanup, prune, gc-branches) last ran, in seconds since the epoch.",
                at.to_string(),
            );
        }
        gauge(
            &mut out,
            "tmws_pool_size",
            "Downstream MCP server processes alive (connected, starting or closing).",
            g.pool_size.to_string(),
        );
        m.connect.render(
            &mut out,
            "tmws_pool_connect_latency_seconds",
            "Lazy connects: from a tool_call to the downstream server's initialize answer.",
        );
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        };
        counter(
            &mut out,
            "tmws_stale_answers_total",
            "Answers given while the index was behind the files.",
            m.stale_answers.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "tmws_defaults_redundant_total",
            "Context defaults asked for again within a session.",
            m.defaults_redundant.load(Ordering::Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP tmws_tool_calls_total tool_call calls by outcome.\n# TYPE tmws_tool_calls_total counter\n\
tmws_tool_calls_total{{ok=\"true\"}} {}\ntmws_tool_calls_total{{ok=\"false\"}} {}",
            m.tool_calls_ok.load(Ordering::Relaxed),
            m.tool_calls_failed.load(Ordering::Relaxed)
        );
        let requests = m.requests.lock().unwrap_or_else(|e| e.into_inner());
        if !requests.is_empty() {
            out.push_str("# HELP tmws_http_requests_total HTTP requests by route and status.\n");
            out.push_str("# TYPE tmws_http_requests_total counter\n");
            for ((route, status), n) in requests.iter() {
                let _ = writeln!(out, "tmws_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}", label(route));
            }
        }
        out
    }
}

/// A Prometheus label value, escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
