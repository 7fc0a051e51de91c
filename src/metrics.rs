//! Observability: kube-apiserver's Prometheus metrics (same names, labels and buckets
//! as `k8s.io/apiserver/pkg/endpoints/metrics` and `.../storage/etcd3/metrics`), served
//! at `/metrics` in the Prometheus text format, and one structured log line per request.
//!
//! Recording takes no lock and writes nothing another thread writes once a series
//! exists: each thread records into values of its own, found in a map of the thread's
//! (see [`Family`]), and `/metrics` sums them. Only the in-flight counts are shared
//! (their peak is the whole server's).

use crate::apiserver::ApiServer;
use crate::goformat::go_float_v;
use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::storage::{
    KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream,
};
use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, Method, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::{Body as _, Frame, SizeHint};
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// kube's `apiserver_request_duration_seconds` (and `etcd_request_duration_seconds`) buckets.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// kube's `apiserver_response_sizes` buckets: 1 KB to 1 GB, ×10.
pub const SIZE_BUCKETS: &[f64] = &[1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/// The `component` label kube's API endpoints use.
const COMPONENT: &str = "apiserver";

/// Separates label values inside a series key (cannot occur in a request path or header).
const KEY_SEPARATOR: char = '\u{0}';

/// The hash of series keys in each thread's map.
const SERIES_HASH: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x6b75_6265);

/// The most series a thread keeps at hand (of every family of every server in the
/// process); past it the thread starts over, making new values that are summed with
/// the old ones on output.
const LOCAL_SERIES_LIMIT: usize = 4096;

/// A thread's series of one value type, found by family and label values.
type LocalSeries<V> = hashbrown::HashTable<LocalEntry<V>>;

/// One series a thread records into.
struct LocalEntry<V> {
    family: u64,
    hash: u64,
    values: Box<[Box<str>]>,
    value: Arc<V>,
}

/// The hash of a family's series of `values`, from the values themselves (each ended by
/// a byte UTF-8 never holds).
fn series_hash(family: u64, values: &[&str]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = SERIES_HASH.build_hasher();
    h.write_u64(family);
    for v in values {
        h.write(v.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

/// A series value: each thread records into its own, and output sums them.
trait Series: Send + Sync + Sized + 'static {
    /// A value with nothing recorded.
    fn fresh() -> Self;
    /// Add what `other` recorded to this one.
    fn add(&self, other: &Self);
    /// This value type's series of the current thread.
    fn local() -> &'static std::thread::LocalKey<std::cell::RefCell<LocalSeries<Self>>>;
}

macro_rules! local_series {
    ($t:ty) => {
        fn local() -> &'static std::thread::LocalKey<std::cell::RefCell<LocalSeries<$t>>> {
            thread_local! {
                static LOCAL: std::cell::RefCell<LocalSeries<$t>> =
                    std::cell::RefCell::new(hashbrown::HashTable::new());
            }
            &LOCAL
        }
    };
}

/// Tells families apart in the threads' maps (never reused, so a new server's family
/// never finds a dropped one's values).
static NEXT_FAMILY: AtomicU64 = AtomicU64::new(0);

/// One metric family's series: label values → value. Every thread
/// records into values of its own, found in a map of the thread's without a lock or a
/// shared write: two cores recording the same series no longer pass its cache lines
/// back and forth on every request. `/metrics` sums each series over the threads.
/// The label values are bounded (unserved resources are not recorded).
struct Family<V: Series> {
    /// Tells this family's series apart in the threads' maps.
    id: u64,
    /// Every value any thread made, with its label values' key.
    all: Mutex<Vec<(String, Arc<V>)>>,
}

impl<V: Series> Family<V> {
    fn new() -> Self {
        Family {
            id: NEXT_FAMILY.fetch_add(1, Ordering::Relaxed),
            all: Mutex::default(),
        }
    }

    /// This thread's value of the series of `values`, made on first use: found by
    /// hashing and comparing the values, with no key built. The value may be kept and
    /// written from any thread (a gauge lowered later).
    fn series(&self, values: &[&str]) -> Arc<V> {
        let hash = series_hash(self.id, values);
        let same = |e: &LocalEntry<V>| {
            e.family == self.id
                && e.values.len() == values.len()
                && e.values.iter().zip(values).all(|(a, b)| **a == **b)
        };
        let local = V::local().try_with(|local| {
            let mut local = local.borrow_mut();
            if let Some(e) = local.find(hash, same) {
                return e.value.clone();
            }
            let value = self.register(values);
            if local.len() >= LOCAL_SERIES_LIMIT {
                local.clear();
            }
            let entry = LocalEntry {
                family: self.id,
                hash,
                values: values.iter().map(|v| Box::from(*v)).collect(),
                value: value.clone(),
            };
            local.insert_unique(hash, entry, |e| e.hash);
            value
        });
        // A thread being torn down has no map left: a value of its own, kept.
        local.unwrap_or_else(|_| self.register(values))
    }

    /// A new value of the series of `values`, counted on output.
    fn register(&self, values: &[&str]) -> Arc<V> {
        let mut key = String::new();
        write_series_key(&mut key, values);
        let v = Arc::new(V::fresh());
        self.all
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key, v.clone()));
        v
    }

    /// Every series as (label values, its values summed over the threads), sorted by
    /// label values (as Go's client).
    fn snapshot(&self) -> Vec<(Vec<String>, V)> {
        let mut summed: HashMap<String, V> = HashMap::new();
        for (key, v) in self.all.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            summed.entry(key.clone()).or_insert_with(V::fresh).add(v);
        }
        let mut out: Vec<(Vec<String>, V)> = summed
            .into_iter()
            .map(|(k, v)| (k.split(KEY_SEPARATOR).map(str::to_owned).collect(), v))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// Counters and gauges: one atomic, summed.
macro_rules! atomic_series {
    ($($t:ty),*) => {$(
        impl Series for $t {
            fn fresh() -> Self {
                <$t>::new(0)
            }
            fn add(&self, other: &Self) {
                self.fetch_add(other.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            local_series!($t);
        }
    )*};
}

atomic_series!(AtomicI64, AtomicU64);

fn write_series_key(key: &mut String, values: &[&str]) {
    key.reserve(values.iter().map(|v| v.len() + 1).sum());
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            key.push(KEY_SEPARATOR);
        }
        // A separator inside a value would split it in two on output: such a value
        // (rare) is written without them.
        if v.as_bytes().contains(&(KEY_SEPARATOR as u8)) {
            key.extend(v.chars().filter(|c| *c != KEY_SEPARATOR));
        } else {
            key.push_str(v);
        }
    }
}

/// A Prometheus histogram over fixed buckets, updated with atomics only.
struct Histogram {
    bounds: &'static [f64],
    /// Non-cumulative counts; the last one is `+Inf`.
    counts: Box<[AtomicU64]>,
    /// The sum of observations, as `f64` bits.
    sum: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    fn observe(&self, v: f64) {
        let idx = self
            .bounds
            .iter()
            .position(|b| v <= *b)
            .unwrap_or(self.bounds.len());
        self.counts[idx].fetch_add(1, Ordering::Relaxed);
        let mut cur = self.sum.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(cur) + v).to_bits();
            match self
                .sum
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Add `other`'s observations (over the same buckets) to these.
    fn add(&self, other: &Histogram) {
        for (c, o) in self.counts.iter().zip(other.counts.iter()) {
            c.fetch_add(o.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed))
            + f64::from_bits(other.sum.load(Ordering::Relaxed));
        self.sum.store(sum.to_bits(), Ordering::Relaxed);
    }
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// One request series: latencies, response sizes (of GETs and LISTs) and counts by
/// code, found once per request. Sizes are labelled without `dry_run`: summed over it
/// on output. The counts are `apiserver_request_total`, whose labels are these plus
/// `code` and `system_client`.
struct RequestSeries {
    durations: Histogram,
    sizes: Histogram,
    /// (code, system_client, count): a few per series, scanned in place.
    totals: RwLock<Vec<(u16, &'static str, AtomicU64)>>,
}

impl Series for RequestSeries {
    fn fresh() -> Self {
        RequestSeries {
            durations: latency_histogram(),
            sizes: size_histogram(),
            totals: RwLock::new(Vec::new()),
        }
    }
    fn add(&self, other: &Self) {
        self.durations.add(&other.durations);
        self.sizes.add(&other.sizes);
        let totals = other.totals.read().unwrap_or_else(|e| e.into_inner());
        for (code, system_client, n) in totals.iter() {
            self.count(*code, system_client, n.load(Ordering::Relaxed));
        }
    }
    local_series!(RequestSeries);
}

impl RequestSeries {
    /// Count one request answered with `code`.
    fn count(&self, code: u16, system_client: &'static str, n: u64) {
        let is = |(c, s, _): &&(u16, &str, AtomicU64)| *c == code && *s == system_client;
        let totals = self.totals.read().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, count)) = totals.iter().find(is) {
            count.fetch_add(n, Ordering::Relaxed);
            return;
        }
        drop(totals);
        let mut totals = self.totals.write().unwrap_or_else(|e| e.into_inner());
        match totals.iter().find(is) {
            Some((_, _, count)) => {
                count.fetch_add(n, Ordering::Relaxed);
            }
            None => totals.push((code, system_client, AtomicU64::new(n))),
        }
    }
}

/// One storage series: a call's latency, count and errors.
struct StorageSeries {
    durations: Histogram,
    requests: AtomicU64,
    errors: AtomicU64,
}

impl Series for StorageSeries {
    fn fresh() -> Self {
        StorageSeries {
            durations: latency_histogram(),
            requests: AtomicU64::default(),
            errors: AtomicU64::default(),
        }
    }
    fn add(&self, other: &Self) {
        self.durations.add(&other.durations);
        self.requests.add(&other.requests);
        self.errors.add(&other.errors);
    }
    local_series!(StorageSeries);
}

fn size_histogram() -> Histogram {
    Histogram::new(SIZE_BUCKETS)
}

/// `request_kind` of `apiserver_current_inflight_requests`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// get, list (and watch, which is long-running and not counted).
    ReadOnly,
    /// Every other verb.
    Mutating,
}

/// Requests in flight of one kind: the current count and the peak since the last scrape
/// (kube reports the peak of the last second; a scraper sees the peak between scrapes).
#[derive(Default)]
struct Inflight {
    current: AtomicI64,
    peak: AtomicI64,
}

impl Inflight {
    fn enter(&self) {
        let now = self.current.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.current.fetch_sub(1, Ordering::Relaxed);
    }

    /// The peak since the previous call, restarting the window at the current count.
    fn take_peak(&self) -> i64 {
        let current = self.current.load(Ordering::Relaxed);
        self.peak.swap(current, Ordering::Relaxed).max(current)
    }
}

/// The metrics of one server.
pub struct Metrics {
    /// `apiserver_request_duration_seconds`: component, dry_run, group, resource, scope,
    /// subresource, verb, version; and below each series, `apiserver_request_total`
    /// (those labels and code, system_client).
    durations: Family<RequestSeries>,
    /// `apiserver_longrunning_requests`: component, group, resource, scope, subresource,
    /// verb, version.
    longrunning: Family<AtomicI64>,
    /// `apiserver_current_inflight_requests`: readOnly, mutating.
    inflight: [Inflight; 2],
    /// `etcd_request_duration_seconds`, `etcd_requests_total` and
    /// `etcd_request_errors_total`: group, operation, resource (one series for the
    /// three, found once per storage call).
    storage: Family<StorageSeries>,
    /// When these metrics were created (the start time when /proc cannot tell).
    created: SystemTime,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Self {
        Metrics {
            durations: Family::new(),
            longrunning: Family::new(),
            inflight: [Inflight::default(), Inflight::default()],
            storage: Family::new(),
            created: SystemTime::now(),
        }
    }

    /// Start measuring a request (counts it in flight until the returned meter is dropped).
    pub fn begin(
        self: &Arc<Self>,
        api: &ApiServer,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        info: Arc<RequestInfo>,
        served_custom: bool,
    ) -> RequestMeter {
        let labels = RequestLabels::of(api, method, uri, headers, info, served_custom);
        let kind = if matches!(&*labels.info.verb, "get" | "list" | "watch") {
            RequestKind::ReadOnly
        } else {
            RequestKind::Mutating
        };
        let long_running = labels.verb == "WATCH";
        let longrunning_series = if long_running {
            let series = labels
                .recorded
                .then(|| self.longrunning.series(&labels.short()));
            if let Some(g) = &series {
                g.fetch_add(1, Ordering::Relaxed);
            }
            series
        } else {
            self.inflight[kind as usize].enter();
            None
        };
        RequestMeter {
            metrics: self.clone(),
            labels,
            kind,
            long_running,
            longrunning_series,
            method: method.clone(),
            started: Instant::now(),
        }
    }

    /// Record one finished request (kube's `MonitorRequest`).
    fn record(&self, labels: &RequestLabels, code: u16, bytes: u64, elapsed: Duration) {
        if !labels.recorded {
            return;
        }
        let l = labels;
        let series = self.durations.series(&l.with_dry_run());
        series.count(code, l.system_client, 1);
        series.durations.observe(elapsed.as_secs_f64());
        if l.verb == "GET" || l.verb == "LIST" {
            series.sizes.observe(bytes as f64);
        }
    }

    /// Record one storage call (kube's `RecordEtcdRequest`).
    fn record_storage(
        &self,
        operation: &str,
        key: &str,
        prefix: &str,
        ok: bool,
        elapsed: Duration,
    ) {
        let (group, resource) = group_resource_of_key(key, prefix);
        let series = self.storage.series(&[group, operation, resource]);
        series.durations.observe(elapsed.as_secs_f64());
        series.requests.fetch_add(1, Ordering::Relaxed);
        if !ok {
            series.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Wrap a backend so every call is timed into `etcd_request_duration_seconds`.
    pub fn instrument_storage(
        self: &Arc<Self>,
        storage: Arc<dyn Storage>,
        prefix: &str,
    ) -> Arc<dyn Storage> {
        Arc::new(MeteredStorage {
            inner: storage,
            metrics: self.clone(),
            prefix: prefix.trim_end_matches('/').to_owned(),
        })
    }

    /// The whole exposition: request metrics, storage object counts (read from `storage`
    /// now, -1 when the read fails, as kube) and process metrics.
    pub async fn render(&self, api: &ApiServer, storage: &dyn Storage) -> String {
        let counts = object_counts(api, storage).await;
        let mut out = String::with_capacity(16 * 1024);
        self.render_requests(&mut out);
        render_object_counts(&mut out, &counts);
        render_compiled_schemas(&mut out);
        render_process(&mut out, self.created);
        out
    }

    /// Every request and storage family, in the text format.
    fn render_requests(&self, out: &mut String) {
        const REQUEST_LABELS: &[&str] = &[
            "code",
            "component",
            "dry_run",
            "group",
            "resource",
            "scope",
            "subresource",
            "system_client",
            "verb",
            "version",
        ];
        const DURATION_LABELS: &[&str] = &[
            "component",
            "dry_run",
            "group",
            "resource",
            "scope",
            "subresource",
            "verb",
            "version",
        ];
        const SHORT_LABELS: &[&str] = &[
            "component",
            "group",
            "resource",
            "scope",
            "subresource",
            "verb",
            "version",
        ];
        const STORAGE_LABELS: &[&str] = &["group", "operation", "resource"];

        header(out, "apiserver_current_inflight_requests", "gauge", "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.");
        for (name, kind) in [
            ("mutating", RequestKind::Mutating),
            ("readOnly", RequestKind::ReadOnly),
        ] {
            let peak = self.inflight[kind as usize].take_peak();
            sample(
                out,
                "apiserver_current_inflight_requests",
                &["request_kind"],
                &[name],
                None,
                peak as f64,
            );
        }

        header(out, "apiserver_longrunning_requests", "gauge", "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.");
        for (values, g) in self.longrunning.snapshot() {
            let v = g.load(Ordering::Relaxed) as f64;
            sample(
                out,
                "apiserver_longrunning_requests",
                SHORT_LABELS,
                &values,
                None,
                v,
            );
        }

        header(out, "apiserver_request_duration_seconds", "histogram", "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.");
        let durations = self.durations.snapshot();
        for (values, s) in &durations {
            histogram(
                out,
                "apiserver_request_duration_seconds",
                DURATION_LABELS,
                values,
                &s.durations,
            );
        }

        header(out, "apiserver_request_total", "counter", "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.");
        // Each duration series' counts, with `code` first and `system_client` before
        // `verb`, sorted by label values as the other families are.
        let mut totals: Vec<(Vec<String>, u64)> = Vec::new();
        for (values, s) in &durations {
            let counts = s.totals.read().unwrap_or_else(|e| e.into_inner());
            for (code, system_client, count) in counts.iter() {
                let mut labels = Vec::with_capacity(REQUEST_LABELS.len());
                labels.push(code.to_string());
                labels.extend(values[..6].iter().cloned());
                labels.push(system_client.to_string());
                labels.extend(values[6..].iter().cloned());
                totals.push((labels, count.load(Ordering::Relaxed)));
            }
        }
        totals.sort_by(|a, b| a.0.cmp(&b.0));
        for (values, v) in &totals {
            sample(
                out,
                "apiserver_request_total",
                REQUEST_LABELS,
                values,
                None,
                *v as f64,
            );
        }

        header(out, "apiserver_response_sizes", "histogram", "[STABLE] Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.");
        // The duration series' labels but `dry_run` (the second): GETs and LISTs only.
        let mut sizes: std::collections::BTreeMap<Vec<String>, Histogram> = Default::default();
        for (values, s) in &durations {
            if !matches!(values.get(6).map(String::as_str), Some("GET" | "LIST")) {
                continue;
            }
            let short: Vec<String> = values
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != 1)
                .map(|(_, v)| v.clone())
                .collect();
            sizes
                .entry(short)
                .or_insert_with(size_histogram)
                .add(&s.sizes);
        }
        for (values, h) in &sizes {
            histogram(out, "apiserver_response_sizes", SHORT_LABELS, values, h);
        }

        header(
            out,
            "etcd_request_duration_seconds",
            "histogram",
            "[ALPHA] Etcd request latency in seconds for each operation and object type.",
        );
        let storage = self.storage.snapshot();
        for (values, s) in &storage {
            histogram(
                out,
                "etcd_request_duration_seconds",
                STORAGE_LABELS,
                values,
                &s.durations,
            );
        }
        header(
            out,
            "etcd_request_errors_total",
            "counter",
            "[ALPHA] Etcd failed request counts for each operation and object type.",
        );
        // A series of errors exists from a call's first error on, as kube's.
        for (values, s) in &storage {
            let v = s.errors.load(Ordering::Relaxed);
            if v > 0 {
                sample(
                    out,
                    "etcd_request_errors_total",
                    STORAGE_LABELS,
                    values,
                    None,
                    v as f64,
                );
            }
        }
        header(
            out,
            "etcd_requests_total",
            "counter",
            "[ALPHA] Etcd request counts for each operation and object type.",
        );
        for (values, s) in &storage {
            let v = s.requests.load(Ordering::Relaxed) as f64;
            sample(out, "etcd_requests_total", STORAGE_LABELS, values, None, v);
        }
    }
}

/// The labels of one request, worked out as kube's `MonitorRequest` does.
struct RequestLabels {
    /// What the request addresses (the gate's own parse, shared).
    info: Arc<RequestInfo>,
    /// Upper-case reported verb: GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, ...
    verb: &'static str,
    scope: &'static str,
    /// The path of an instrumented non-resource endpoint (a resource request's
    /// subresource is its info's).
    endpoint: &'static str,
    dry_run: String,
    component: &'static str,
    system_client: &'static str,
    /// Whether kube instruments this endpoint at all (served resources, health checks,
    /// discovery); anything else (unknown resources, arbitrary paths) is only logged, so
    /// clients cannot grow the series without bound.
    recorded: bool,
    uri: Uri,
    user_agent: Option<http::HeaderValue>,
}

impl RequestLabels {
    fn of(
        api: &ApiServer,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        info: Arc<RequestInfo>,
        served_custom: bool,
    ) -> Self {
        let path = uri.path();
        let query = uri.query().unwrap_or("");
        let watch_param = query_values(query, "watch").next();
        let scope = clean_scope(&info);
        let content_type = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let verb = reported_verb(method, scope, &info, watch_param.as_deref(), content_type);
        let user_agent = headers.get(http::header::USER_AGENT).cloned();
        let (recorded, component, endpoint) = if info.is_resource_request {
            let served = served_custom
                || api
                    .options
                    .served
                    .serves(info.group(), info.version(), info.resource());
            (served, COMPONENT, "")
        } else {
            match path {
                // kube instruments its health checks with an empty component.
                "/healthz" => (true, "", "/healthz"),
                "/readyz" => (true, "", "/readyz"),
                "/livez" => (true, "", "/livez"),
                "/api" => (true, COMPONENT, "/api"),
                "/apis" => (true, COMPONENT, "/apis"),
                _ => (false, COMPONENT, ""),
            }
        };
        RequestLabels {
            dry_run: clean_dry_run(query),
            system_client: system_client(
                user_agent
                    .as_ref()
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
            ),
            info,
            verb,
            scope,
            endpoint,
            component,
            recorded,
            uri: uri.clone(),
            user_agent,
        }
    }

    /// The `subresource` label: the subresource, or the path for instrumented
    /// non-resource endpoints.
    fn subresource(&self) -> &str {
        if self.info.is_resource_request {
            self.info.subresource()
        } else {
            self.endpoint
        }
    }

    /// Values of the latency family (all but `code` and `system_client`), in label-name
    /// order.
    fn with_dry_run(&self) -> [&str; 8] {
        let [component, group, resource, scope, subresource, verb, version] = self.short();
        [
            component,
            &self.dry_run,
            group,
            resource,
            scope,
            subresource,
            verb,
            version,
        ]
    }

    /// Values of the families without `dry_run` and `code`, in label-name order.
    fn short(&self) -> [&str; 7] {
        [
            self.component,
            self.info.group(),
            self.info.resource(),
            self.scope,
            self.subresource(),
            self.verb,
            self.info.version(),
        ]
    }
}

/// kube's `CleanScope`.
fn clean_scope(info: &RequestInfo) -> &'static str {
    if !info.name().is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace().is_empty() {
        "namespace"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

/// kube's reported verb: the upper-case method, GET on a collection as LIST, watches as
/// WATCH, server-side apply as APPLY, anything unknown as `other`.
fn reported_verb(
    method: &Method,
    scope: &str,
    info: &RequestInfo,
    watch_param: Option<&str>,
    content_type: Option<&str>,
) -> &'static str {
    const VALID: &[&str] = &[
        "APPLY",
        "CONNECT",
        "CREATE",
        "DELETE",
        "DELETECOLLECTION",
        "GET",
        "LIST",
        "PATCH",
        "POST",
        "PROXY",
        "PUT",
        "UPDATE",
        "WATCH",
        "WATCHLIST",
    ];
    let method = method.as_str();
    let upper = VALID
        .iter()
        .find(|v| v.eq_ignore_ascii_case(method))
        .copied()
        .unwrap_or(if method.eq_ignore_ascii_case("HEAD") {
            "HEAD"
        } else {
            "other"
        });
    let mut verb = match upper {
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST",
        "HEAD" => "GET",
        v => v,
    };
    // `?watch=` counts unless it is "0" or "false" (Go's loose bool conversion).
    let watch_query = watch_param.is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
    if info.verb == "watch" || ((verb == "GET" || verb == "LIST") && watch_query) {
        verb = "WATCH";
    }
    if verb == "PATCH" && content_type == Some("application/apply-patch+yaml") {
        verb = "APPLY";
    }
    verb
}

/// kube's `cleanDryRun`: "" without the parameter, "invalid" for values other than
/// `All`, else the sorted distinct values joined by commas.
fn clean_dry_run(query: &str) -> String {
    if !query.contains("dryRun") {
        return String::new();
    }
    let mut values: Vec<String> = query_values(query, "dryRun").collect();
    if values.is_empty() {
        return String::new();
    }
    if values.iter().any(|v| v != "All") {
        return "invalid".into();
    }
    values.sort();
    values.dedup();
    values.join(",")
}

/// Every value of `name` in a raw query string, percent-decoded.
fn query_values<'a>(query: &'a str, name: &'a str) -> impl Iterator<Item = String> + 'a {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(move |pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (crate::http::percent_decode(k) == name).then(|| crate::http::percent_decode(v))
        })
}

/// kube's `system_client` label: the user agent's product when it is a control-plane
/// component, else empty.
fn system_client(user_agent: &str) -> &'static str {
    let Some((product, _)) = user_agent.split_once('/') else {
        return "";
    };
    match product {
        "kube-apiserver" => "kube-apiserver",
        "kube-controller-manager" => "kube-controller-manager",
        "kube-scheduler" => "kube-scheduler",
        "cluster-policy-controller" => "cluster-policy-controller",
        _ => "",
    }
}

/// Measures one request from arrival to the end of its response body.
pub struct RequestMeter {
    metrics: Arc<Metrics>,
    labels: RequestLabels,
    kind: RequestKind,
    long_running: bool,
    longrunning_series: Option<Arc<AtomicI64>>,
    method: Method,
    started: Instant,
}

impl RequestMeter {
    /// Record the response: now for a whole body, or when a streamed body (a watch) ends,
    /// as kube counts a watch when it closes, with its whole duration.
    pub fn finish(self, resp: Response<Body>) -> Response<Body> {
        let code = resp.status().as_u16();
        match resp.body().size_hint().exact() {
            Some(bytes) => {
                self.complete(code, bytes);
                resp
            }
            None => resp.map(|inner| {
                MeteredBody {
                    inner,
                    bytes: 0,
                    done: Some((self, code)),
                }
                .boxed()
            }),
        }
    }

    fn complete(self, code: u16, bytes: u64) {
        let elapsed = self.started.elapsed();
        self.metrics.record(&self.labels, code, bytes, elapsed);
        let l = &self.labels;
        // One line per request at debug, as kube-apiserver logs requests only from -v=3
        // (written, a line cost a GET about a quarter of its server CPU); a server error at
        // info, where the default filter shows it.
        macro_rules! request_line {
            ($level:expr) => {
                tracing::event!(
                    target: "crd_apiserver::request",
                    $level,
                    method = %self.method,
                    path = %l.uri.path(),
                    verb = %l.verb,
                    resource = %l.info.resource(),
                    subresource = %l.info.subresource(),
                    namespace = %l.info.namespace(),
                    code,
                    latency_ms = elapsed.as_secs_f64() * 1e3,
                    bytes,
                    user_agent = %l.user_agent.as_ref().and_then(|v| v.to_str().ok()).unwrap_or(""),
                    "request"
                )
            };
        }
        if code >= 500 {
            request_line!(tracing::Level::INFO);
        } else {
            request_line!(tracing::Level::DEBUG);
        }
    }
}

impl Drop for RequestMeter {
    fn drop(&mut self) {
        if self.long_running {
            if let Some(g) = &self.longrunning_series {
                g.fetch_sub(1, Ordering::Relaxed);
            }
        } else {
            self.metrics.inflight[self.kind as usize].leave();
        }
    }
}

/// A streamed body that records its request when it ends or is dropped.
struct MeteredBody {
    inner: Body,
    bytes: u64,
    done: Option<(RequestMeter, u16)>,
}

impl hyper::body::Body for MeteredBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.bytes += data.len() as u64;
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        if let Some((meter, code)) = self.done.take() {
            meter.complete(code, self.bytes);
        }
    }
}

/// `(group, resource)` of a storage key: `{prefix}/{group}/{resource}/...` for grouped
/// kinds (a group always has a dot), `{prefix}/{resource}/...` for core ones.
fn group_resource_of_key<'a>(key: &'a str, prefix: &str) -> (&'a str, &'a str) {
    let rest = key
        .strip_prefix(prefix)
        .unwrap_or(key)
        .trim_start_matches('/');
    // One pass over the first segment, finding its end and whether it holds a dot:
    // every storage call is counted under the group and resource its key names.
    let bytes = rest.as_bytes();
    let mut end = bytes.len();
    let mut dotted = false;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'/' => {
                end = i;
                break;
            }
            b'.' => dotted = true,
            _ => {}
        }
    }
    let first = &rest[..end];
    if !dotted {
        return ("", first);
    }
    let after = rest.get(end + 1..).unwrap_or("");
    let second = after.split_once('/').map_or(after, |(s, _)| s);
    (first, second)
}

/// A storage backend that times every call into the server's metrics.
struct MeteredStorage {
    inner: Arc<dyn Storage>,
    metrics: Arc<Metrics>,
    prefix: String,
}

impl MeteredStorage {
    fn done<T>(
        &self,
        operation: &str,
        key: &str,
        started: Instant,
        r: Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        self.metrics
            .record_storage(operation, key, &self.prefix, r.is_ok(), started.elapsed());
        r
    }
}

#[async_trait]
impl Storage for MeteredStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let t = Instant::now();
        let r = self.inner.get(key).await;
        self.done("get", key, t, r)
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        let t = Instant::now();
        let r = self.inner.list(prefix, opts).await;
        self.done("list", prefix, t, r)
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError> {
        let t = Instant::now();
        let r = self.inner.create(key, value).await;
        self.done("create", key, t, r)
    }

    async fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let t = Instant::now();
        let r = self.inner.update(key, value, expected).await;
        self.done("update", key, t, r)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let t = Instant::now();
        let r = self.inner.delete(key, expected).await;
        self.done("delete", key, t, r)
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.inner.watch(prefix, after).await
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn ready(&self) -> Result<(), StorageError> {
        self.inner.ready().await
    }
}

/// Stored objects per group-resource (`-1` when counting failed), sorted.
async fn object_counts(api: &ApiServer, storage: &dyn Storage) -> Vec<(String, String, i64)> {
    let prefix = api.options.prefix.trim_end_matches('/');
    let mut roots: Vec<(String, String, String)> = api
        .options
        .served
        .resources()
        .map(|r| {
            (
                r.group.to_owned(),
                r.resource.to_owned(),
                format!("{prefix}/{}/", r.storage),
            )
        })
        .collect();
    for crd in api.catalog.all() {
        let (g, r) = (&crd.info.group, &crd.info.plural);
        roots.push((g.clone(), r.clone(), format!("{prefix}/{g}/{r}/")));
    }
    roots.sort();
    roots.dedup();
    let mut out = Vec::with_capacity(roots.len());
    for (group, resource, key_root) in roots {
        let opts = ListOptions {
            limit: 1,
            ..Default::default()
        };
        let n = match storage.list(&key_root, &opts).await {
            Ok(l) => l.items.len() as i64 + l.remaining,
            Err(_) => -1,
        };
        out.push((group, resource, n));
    }
    out
}

fn render_object_counts(out: &mut String, counts: &[(String, String, i64)]) {
    header(out, "apiserver_resource_objects", "gauge", "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.");
    for (group, resource, n) in counts {
        sample(
            out,
            "apiserver_resource_objects",
            &["group", "resource"],
            &[group.as_str(), resource.as_str()],
            None,
            *n as f64,
        );
    }
    header(out, "apiserver_storage_objects", "gauge", "[STABLE] (Deprecated since 1.34.0) [DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.");
    let mut by_name: Vec<(String, i64)> = counts
        .iter()
        .map(|(g, r, n)| {
            // kube's GroupResource.String(): `resource.group`, or `resource` for core.
            let name = if g.is_empty() {
                r.clone()
            } else {
                format!("{r}.{g}")
            };
            (name, *n)
        })
        .collect();
    by_name.sort();
    for (name, n) in by_name {
        sample(
            out,
            "apiserver_storage_objects",
            &["resource"],
            &[name.as_str()],
            None,
            n as f64,
        );
    }
}

/// The process collector's metrics that matter here (Linux `/proc`; missing elsewhere).
/// This server's own gauges of the CRD schemas compiled and kept (kube has none:
/// it compiles every CRD's schemas up front and keeps them).
fn render_compiled_schemas(out: &mut String) {
    let (count, bytes) = crate::registry::catalog::on_demand::held();
    for (name, help, value) in [
        (
            "crd_apiserver_compiled_schemas",
            "Number of CRD version schemas compiled and kept.",
            count,
        ),
        (
            "crd_apiserver_compiled_schemas_json_bytes",
            "Bytes of schema JSON the kept compiled CRD version schemas were made from.",
            bytes,
        ),
    ] {
        header(out, name, "gauge", help);
        sample(out, name, NO_LABELS, NO_LABELS, None, value as f64);
    }
}

fn render_process(out: &mut String, created: SystemTime) {
    let stat = ProcessStat::read();
    if let Some(s) = &stat {
        header(
            out,
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
        );
        sample(
            out,
            "process_cpu_seconds_total",
            NO_LABELS,
            NO_LABELS,
            None,
            s.cpu_seconds,
        );
    }
    if let Some(fds) = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count()) {
        header(
            out,
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
        );
        sample(
            out,
            "process_open_fds",
            NO_LABELS,
            NO_LABELS,
            None,
            fds as f64,
        );
    }
    if let Some(rss) = resident_memory_bytes() {
        header(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
        );
        sample(
            out,
            "process_resident_memory_bytes",
            NO_LABELS,
            NO_LABELS,
            None,
            rss as f64,
        );
    }
    let start = stat
        .as_ref()
        .and_then(|s| s.start_time_seconds)
        .unwrap_or_else(|| {
            created
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
        });
    header(
        out,
        "process_start_time_seconds",
        "gauge",
        "[ALPHA] Start time of the process since unix epoch in seconds.",
    );
    sample(
        out,
        "process_start_time_seconds",
        NO_LABELS,
        NO_LABELS,
        None,
        start,
    );
    if let Some(s) = &stat {
        header(
            out,
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
        );
        sample(
            out,
            "process_virtual_memory_bytes",
            NO_LABELS,
            NO_LABELS,
            None,
            s.vsize as f64,
        );
    }
}

/// The label list of a family without labels.
const NO_LABELS: &[&str] = &[];

/// Kernel clock ticks per second of `/proc/*/stat` times (USER_HZ, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

/// What `/proc/self/stat` says about this process.
struct ProcessStat {
    cpu_seconds: f64,
    vsize: u64,
    start_time_seconds: Option<f64>,
}

impl ProcessStat {
    fn read() -> Option<ProcessStat> {
        let text = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name (which may hold spaces and parentheses).
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3 (state): field n is f[n - 3].
        let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        let cpu_seconds = (num(14)? + num(15)?) as f64 / CLOCK_TICKS;
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
        Some(ProcessStat {
            cpu_seconds,
            vsize: num(23)?,
            start_time_seconds: boot
                .zip(num(22))
                .map(|(b, t)| b as f64 + t as f64 / CLOCK_TICKS),
        })
    }
}

/// This process's resident set size, from `/proc/self/status` (`VmRSS`).
pub fn resident_memory_bytes() -> Option<u64> {
    rss_of_status(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes.
pub fn rss_of_status(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// `# HELP` and `# TYPE` lines of a family.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One sample line: `name{a="x",b="y"} value`, with an optional trailing `le` label.
fn sample<S: AsRef<str>>(
    out: &mut String,
    name: &str,
    labels: &[&str],
    values: &[S],
    le: Option<&str>,
    value: f64,
) {
    out.push_str(name);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        for (l, v) in labels.iter().zip(values) {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, "{l}=\"{}\"", escape_label(v.as_ref()));
        }
        if let Some(le) = le {
            if !first {
                out.push(',');
            }
            let _ = write!(out, "le=\"{le}\"");
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(&format_value(value));
    out.push('\n');
}

/// The `_bucket` (cumulative), `_sum` and `_count` lines of one histogram series.
fn histogram(out: &mut String, name: &str, labels: &[&str], values: &[String], h: &Histogram) {
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0u64;
    for (i, bound) in h.bounds.iter().enumerate() {
        cumulative += h.counts[i].load(Ordering::Relaxed);
        let le = format_value(*bound);
        sample(out, &bucket, labels, values, Some(&le), cumulative as f64);
    }
    cumulative += h.counts[h.bounds.len()].load(Ordering::Relaxed);
    sample(
        out,
        &bucket,
        labels,
        values,
        Some("+Inf"),
        cumulative as f64,
    );
    let sum = f64::from_bits(h.sum.load(Ordering::Relaxed));
    sample(out, &format!("{name}_sum"), labels, values, None, sum);
    sample(
        out,
        &format!("{name}_count"),
        labels,
        values,
        None,
        cumulative as f64,
    );
}

/// A sample value as Go's Prometheus client writes it (`strconv` `'g'`, shortest).
fn format_value(v: f64) -> String {
    go_float_v(v)
}

/// Label values escape `\`, `"` and line feeds.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Help texts escape `\` and line feeds.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// `text/plain; version=0.0.4`: the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request_info;

    fn verb_of(method: Method, path: &str, query: &str, content_type: Option<&str>) -> String {
        let watch_param = query_values(query, "watch").next();
        let watch = matches!(watch_param.as_deref(), Some("true" | "1"));
        let info = request_info::parse(&method, path, watch);
        reported_verb(
            &method,
            clean_scope(&info),
            &info,
            watch_param.as_deref(),
            content_type,
        )
        .to_string()
    }

    #[test]
    fn series_recorded_on_several_threads_are_summed_and_families_kept_apart() {
        let family: Arc<Family<AtomicU64>> = Arc::new(Family::new());
        let other: Family<AtomicU64> = Family::new();
        let threads: Vec<_> = (0..4u64)
            .map(|i| {
                let family = family.clone();
                std::thread::spawn(move || {
                    for _ in 0..=i {
                        family.series(&["a", "b"]).fetch_add(1, Ordering::Relaxed);
                    }
                    family
                        .series(&["only", &i.to_string()])
                        .fetch_add(10, Ordering::Relaxed);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // This thread records too, into its own value, and another family's series of
        // the same labels stays apart.
        family.series(&["a", "b"]).fetch_add(100, Ordering::Relaxed);
        other.series(&["a", "b"]).fetch_add(1000, Ordering::Relaxed);
        let seen: Vec<(Vec<String>, u64)> = family
            .snapshot()
            .into_iter()
            .map(|(values, v)| (values, v.load(Ordering::Relaxed)))
            .collect();
        let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            seen,
            [
                (labels(&["a", "b"]), 1 + 2 + 3 + 4 + 100),
                (labels(&["only", "0"]), 10),
                (labels(&["only", "1"]), 10),
                (labels(&["only", "2"]), 10),
                (labels(&["only", "3"]), 10),
            ]
        );
        assert_eq!(other.snapshot().len(), 1);
        assert_eq!(other.snapshot()[0].1.load(Ordering::Relaxed), 1000);
    }

    #[test]
    fn a_gauge_raised_on_one_thread_and_lowered_on_another_sums_to_zero() {
        let family: Family<AtomicI64> = Family::new();
        let gauge = family.series(&["watch"]);
        gauge.fetch_add(1, Ordering::Relaxed);
        let moved = gauge.clone();
        std::thread::spawn(move || {
            moved.fetch_sub(1, Ordering::Relaxed);
        })
        .join()
        .unwrap();
        family.series(&["watch"]).fetch_add(1, Ordering::Relaxed);
        let seen = family.snapshot();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn series_keys_drop_separators_inside_values() {
        let family: Family<AtomicU64> = Family::new();
        family
            .series(&["a", "b\u{0}c", ""])
            .fetch_add(1, Ordering::Relaxed);
        family
            .series(&["a", "bc", ""])
            .fetch_add(1, Ordering::Relaxed);
        family.series(&["\u{0}"]).fetch_add(1, Ordering::Relaxed);
        family.series(&[]).fetch_add(1, Ordering::Relaxed);
        let seen: Vec<(Vec<String>, u64)> = family
            .snapshot()
            .into_iter()
            .map(|(values, v)| (values, v.load(Ordering::Relaxed)))
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(seen, [(strings(&[""]), 2), (strings(&["a", "bc", ""]), 2),]);
    }

    #[test]
    fn verbs_as_kube_reports_them() {
        let ns = "/apis/example.com/v1/namespaces/default/widgets";
        assert_eq!(verb_of(Method::GET, ns, "", None), "LIST");
        assert_eq!(verb_of(Method::GET, &format!("{ns}/w1"), "", None), "GET");
        assert_eq!(verb_of(Method::HEAD, &format!("{ns}/w1"), "", None), "GET");
        assert_eq!(verb_of(Method::GET, ns, "watch=true", None), "WATCH");
        assert_eq!(verb_of(Method::GET, ns, "watch=1", None), "WATCH");
        // Go's loose conversion: anything but "0"/"false" is a watch.
        assert_eq!(verb_of(Method::GET, ns, "watch=yes", None), "WATCH");
        assert_eq!(verb_of(Method::GET, ns, "watch=false", None), "LIST");
        assert_eq!(
            verb_of(
                Method::GET,
                "/apis/example.com/v1/watch/namespaces/default/widgets",
                "",
                None
            ),
            "WATCH"
        );
        assert_eq!(verb_of(Method::POST, ns, "", None), "POST");
        assert_eq!(verb_of(Method::PUT, &format!("{ns}/w1"), "", None), "PUT");
        assert_eq!(verb_of(Method::DELETE, ns, "", None), "DELETE");
        assert_eq!(
            verb_of(
                Method::PATCH,
                &format!("{ns}/w1"),
                "",
                Some("application/merge-patch+json")
            ),
            "PATCH"
        );
        assert_eq!(
            verb_of(
                Method::PATCH,
                &format!("{ns}/w1"),
                "",
                Some("application/apply-patch+yaml")
            ),
            "APPLY"
        );
        assert_eq!(verb_of(Method::OPTIONS, ns, "", None), "other");
    }

    #[test]
    fn scopes_as_kube_cleans_them() {
        let scope = |m: Method, p: &str| clean_scope(&request_info::parse(&m, p, false));
        assert_eq!(
            scope(Method::GET, "/apis/g.io/v1/namespaces/a/ws/w"),
            "resource"
        );
        assert_eq!(
            scope(Method::POST, "/apis/g.io/v1/namespaces/a/ws"),
            "resource"
        );
        assert_eq!(
            scope(Method::GET, "/apis/g.io/v1/namespaces/a/ws"),
            "namespace"
        );
        assert_eq!(scope(Method::GET, "/apis/g.io/v1/ws"), "cluster");
        assert_eq!(scope(Method::GET, "/healthz"), "");
    }

    #[test]
    fn dry_run_label() {
        assert_eq!(clean_dry_run("limit=1"), "");
        assert_eq!(clean_dry_run("dryRun=All"), "All");
        assert_eq!(clean_dry_run("dryRun=All&dryRun=All"), "All");
        assert_eq!(clean_dry_run("dryRun=Some"), "invalid");
    }

    #[test]
    fn system_clients() {
        assert_eq!(
            system_client("kube-controller-manager/v1.36.0 (linux/amd64)"),
            "kube-controller-manager"
        );
        assert_eq!(system_client("kubectl/v1.36.0 (linux/amd64)"), "");
        assert_eq!(system_client("kube-scheduler"), "");
    }

    #[test]
    fn storage_keys_to_group_resource() {
        let p = "/registry";
        assert_eq!(
            group_resource_of_key("/registry/example.com/widgets/default/w1", p),
            ("example.com", "widgets")
        );
        assert_eq!(
            group_resource_of_key("/registry/namespaces/default", p),
            ("", "namespaces")
        );
        assert_eq!(
            group_resource_of_key(
                "/registry/apiextensions.k8s.io/customresourcedefinitions/",
                p
            ),
            ("apiextensions.k8s.io", "customresourcedefinitions")
        );
        assert_eq!(
            group_resource_of_key("/registry/example.com", p),
            ("example.com", "")
        );
        assert_eq!(group_resource_of_key("/registry/pods", p), ("", "pods"));
        assert_eq!(group_resource_of_key("/other/a.b/c/d", p), ("", "other"));
    }

    #[test]
    fn counter_exposition() {
        let m = Metrics::new();
        let labels = [
            "apiserver",
            "",
            "example.com",
            "widgets",
            "resource",
            "",
            "GET",
            "v1",
        ];
        m.durations.series(&labels).count(200, "", 2);
        m.durations.series(&labels).count(200, "", 1);
        m.durations.series(&labels).count(404, "kube-scheduler", 1);
        let mut out = String::new();
        m.render_requests(&mut out);
        assert!(out.contains(
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n"
        ));
        assert!(out.contains(
            "\napiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"example.com\",resource=\"widgets\",scope=\"resource\",subresource=\"\",system_client=\"\",verb=\"GET\",version=\"v1\"} 3\napiserver_request_total{code=\"404\",component=\"apiserver\",dry_run=\"\",group=\"example.com\",resource=\"widgets\",scope=\"resource\",subresource=\"\",system_client=\"kube-scheduler\",verb=\"GET\",version=\"v1\"} 1\n"
        ));
        // Nothing in flight: both kinds are present at 0.
        assert!(out.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 0\n"));
        assert!(out.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 0\n"));
    }

    /// Latency labels of a cluster-wide LIST of namespaces, with `dry_run`.
    fn namespaces_list(dry_run: &str) -> [&str; 8] {
        [
            "apiserver",
            dry_run,
            "",
            "namespaces",
            "cluster",
            "",
            "LIST",
            "v1",
        ]
    }

    #[test]
    fn response_sizes_are_summed_over_dry_run() {
        let m = Metrics::new();
        m.durations
            .series(&namespaces_list(""))
            .sizes
            .observe(500.0);
        m.durations
            .series(&namespaces_list("All"))
            .sizes
            .observe(5000.0);
        let mut out = String::new();
        m.render_requests(&mut out);
        let series = "component=\"apiserver\",group=\"\",resource=\"namespaces\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"";
        for line in [
            format!("apiserver_response_sizes_bucket{{{series},le=\"1000\"}} 1\n"),
            format!("apiserver_response_sizes_bucket{{{series},le=\"10000\"}} 2\n"),
            format!("apiserver_response_sizes_sum{{{series}}} 5500\n"),
            format!("apiserver_response_sizes_count{{{series}}} 2\n"),
        ] {
            assert!(out.contains(&line), "missing {line} in\n{out}");
        }
        assert_eq!(out.matches("apiserver_response_sizes_count{").count(), 1);
    }

    #[test]
    fn histogram_exposition_is_cumulative_with_kube_buckets() {
        let m = Metrics::new();
        let h = m.durations.series(&namespaces_list(""));
        h.durations.observe(0.001);
        h.durations.observe(0.03);
        h.durations.observe(100.0);
        let mut out = String::new();
        m.render_requests(&mut out);
        let series = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"namespaces\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"";
        for (le, n) in [
            ("0.005", 1),
            ("0.025", 1),
            ("0.05", 2),
            ("1", 2),
            ("60", 2),
            ("+Inf", 3),
        ] {
            let line =
                format!("apiserver_request_duration_seconds_bucket{{{series},le=\"{le}\"}} {n}\n");
            assert!(out.contains(&line), "missing {line} in\n{out}");
        }
        assert!(out.contains(&format!(
            "apiserver_request_duration_seconds_count{{{series}}} 3\n"
        )));
        assert!(out.contains(&format!(
            "apiserver_request_duration_seconds_sum{{{series}}} 100.031\n"
        )));
        let buckets = out
            .lines()
            .filter(|l| l.starts_with("apiserver_request_duration_seconds_bucket"))
            .count();
        assert_eq!(buckets, LATENCY_BUCKETS.len() + 1);
    }

    #[test]
    fn size_buckets_print_as_go_does() {
        let m = Metrics::new();
        m.durations
            .series(&["apiserver", "", "", "widgets", "resource", "", "GET", "v1"])
            .sizes
            .observe(2500.0);
        let mut out = String::new();
        m.render_requests(&mut out);
        assert!(out.contains(",le=\"1000\"} 0\n"));
        assert!(out.contains(",le=\"10000\"} 1\n"));
        assert!(out.contains(",le=\"1e+06\"} 1\n"));
        assert!(out.contains(",le=\"1e+09\"} 1\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        sample(&mut out, "m", &["a"], &["x\"y\\z\nw"], None, 1.5);
        assert_eq!(out, "m{a=\"x\\\"y\\\\z\\nw\"} 1.5\n");
        let mut out = String::new();
        sample(&mut out, "m", NO_LABELS, NO_LABELS, None, 1234567.0);
        assert_eq!(out, "m 1.234567e+06\n");
    }

    #[test]
    fn inflight_peak_survives_until_scraped() {
        let i = Inflight::default();
        i.enter();
        i.enter();
        i.leave();
        assert_eq!(i.take_peak(), 2);
        assert_eq!(i.take_peak(), 1);
        i.leave();
        assert_eq!(i.take_peak(), 1);
        assert_eq!(i.take_peak(), 0);
    }

    #[test]
    fn rss_from_proc_status() {
        let status = "Name:\tx\nVmPeak:\t  100 kB\nVmRSS:\t    2048 kB\n";
        assert_eq!(rss_of_status(status), Some(2048 * 1024));
        assert_eq!(rss_of_status("Name: x\n"), None);
    }
}
