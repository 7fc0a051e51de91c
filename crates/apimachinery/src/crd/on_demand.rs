//! Version schemas compiled on first use and dropped again past a process-wide budget.
//!
//! A CRD version's compiled schema (structural schema, validator, CEL programs,
//! immutability plan) takes several times its JSON. Compiling every version of every
//! CRD when it is written made hundreds of large CRDs cost gigabytes whether or not
//! their resources were ever used. So a version is compiled when a request first
//! needs it, and the process keeps compiled schemas up to [`set_budget`] bytes of
//! schema JSON: past it, the least recently used are dropped (requests holding one
//! keep their `Arc`; the next request compiles it again). A compiled schema is a
//! function of its CRD's spec only, so dropping and remaking it changes no answer.

use crate::pipeline::VersionSchema;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Default budget: compiled schemas made from at most this many bytes of schema JSON
/// (about 4× as much memory): ten of the largest CRDs (kube's pod-spec kinds inlined,
/// 400 KB) at once, hundreds of typical ones.
pub const DEFAULT_BUDGET: usize = 4 << 20;

/// The budget in bytes of schema JSON (process-wide).
static BUDGET: AtomicUsize = AtomicUsize::new(DEFAULT_BUDGET);
/// Use counter: orders slots by last use.
static TICK: AtomicU64 = AtomicU64::new(0);
/// The slots holding a compiled schema, with their weights.
static HELD: Mutex<Held> = Mutex::new(Held {
    slots: Vec::new(),
    weight: 0,
});

struct Held {
    slots: Vec<(Weak<Slot>, usize)>,
    weight: usize,
}

/// Keep compiled schemas made from at most `bytes` of schema JSON in this process
/// (at least one schema is always kept: the one a request just compiled).
pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// How many compiled schemas the process holds, and the bytes of schema JSON they
/// were made from.
pub fn held() -> (usize, usize) {
    let mut held = lock(&HELD);
    forget_dropped(&mut held);
    (held.slots.len(), held.weight)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where one version's compiled schema is kept while it is.
pub(crate) struct Slot {
    compiled: Mutex<Option<Arc<VersionSchema>>>,
    last_used: AtomicU64,
    /// Bytes of schema JSON it is made from.
    weight: usize,
}

impl Slot {
    pub(crate) fn new(weight: usize) -> Arc<Slot> {
        Arc::new(Slot {
            compiled: Mutex::new(None),
            last_used: AtomicU64::new(0),
            weight,
        })
    }

    /// The compiled schema: kept, or made by `compile` now (one maker at a time; the
    /// others wait for it) and kept within the budget.
    pub(crate) fn get(
        self: &Arc<Slot>,
        compile: impl FnOnce() -> VersionSchema,
    ) -> Arc<VersionSchema> {
        self.last_used
            .store(TICK.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        let mut compiled = lock(&self.compiled);
        if let Some(kept) = compiled.as_ref() {
            return kept.clone();
        }
        let made = Arc::new(compile());
        *compiled = Some(made.clone());
        drop(compiled);
        self.admit();
        made
    }

    /// Count this slot as held, then drop the least recently used others past the
    /// budget. A slot busy compiling is skipped (its lock is never awaited here).
    fn admit(self: &Arc<Slot>) {
        let mut held = lock(&HELD);
        forget_dropped(&mut held);
        held.slots.push((Arc::downgrade(self), self.weight));
        held.weight += self.weight;
        let budget = BUDGET.load(Ordering::Relaxed);
        if held.weight <= budget {
            return;
        }
        let mut by_age: Vec<(u64, Arc<Slot>)> = held
            .slots
            .iter()
            .filter_map(|(slot, _)| slot.upgrade())
            .filter(|slot| !Arc::ptr_eq(slot, self))
            .map(|slot| (slot.last_used.load(Ordering::Relaxed), slot))
            .collect();
        by_age.sort_by_key(|(used, _)| *used);
        let mut evicted = Vec::new();
        for (_, slot) in by_age {
            if held.weight <= budget {
                break;
            }
            if let Ok(mut compiled) = slot.compiled.try_lock() {
                if let Some(schema) = compiled.take() {
                    held.weight -= slot.weight;
                    evicted.push((slot.clone(), schema));
                }
            }
        }
        held.slots.retain(|(slot, _)| {
            !evicted
                .iter()
                .any(|(e, _)| std::ptr::eq(slot.as_ptr(), Arc::as_ptr(e)))
        });
        drop(held);
        // The schemas (and any last slot reference) are freed outside the lock.
        drop(evicted);
    }
}

/// Slots dropped with their CRD (a changed or deleted CRD) no longer count.
fn forget_dropped(held: &mut Held) {
    let mut gone = 0;
    held.slots.retain(|(slot, weight)| {
        let live = slot.strong_count() > 0;
        if !live {
            gone += weight;
        }
        live
    });
    held.weight -= gone;
}
