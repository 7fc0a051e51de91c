//! Resource lists (`{"cpu": "100m", ...}`) as kube's `quota` helpers see them: parsed,
//! summed, compared and printed in kube's canonical form.

use crate::cel::kubelib::{Quantity, QuantityFormat};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One quantity and the format it prints in.
#[derive(Clone, Debug, PartialEq)]
pub struct Amount {
    /// The value.
    pub q: Quantity,
    /// How it prints.
    pub format: QuantityFormat,
}

impl Amount {
    /// A count (`pods: 1`).
    pub fn count(n: i64) -> Amount {
        Amount {
            q: Quantity::parse(&n.to_string()).unwrap_or_else(|_| Quantity::zero()),
            format: QuantityFormat::DecimalSI,
        }
    }

    /// Parsed from its text (`None`: not a quantity).
    pub fn parse(s: &str) -> Option<Amount> {
        Some(Amount {
            q: Quantity::parse(s).ok()?,
            format: Quantity::format_of(s),
        })
    }

    /// kube's canonical text.
    pub fn text(&self) -> String {
        self.q.canonical(self.format)
    }

    /// `self + other` (the format of the first non-zero, as kube's `Add`).
    pub fn plus(&self, other: &Amount) -> Amount {
        let format = if self.q.is_zero() {
            other.format
        } else {
            self.format
        };
        Amount {
            q: self
                .q
                .add(&other.q, false)
                .unwrap_or_else(|_| self.q.clone()),
            format,
        }
    }

    /// `self - other`.
    pub fn minus(&self, other: &Amount) -> Amount {
        Amount {
            q: self
                .q
                .add(&other.q, true)
                .unwrap_or_else(|_| self.q.clone()),
            format: self.format,
        }
    }
}

/// A resource list by name.
pub type List = BTreeMap<String, Amount>;

/// Read a JSON resource list (unparsable values are left out).
pub fn list(v: Option<&Value>) -> List {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Amount::parse(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A resource list as JSON, canonical texts.
pub fn to_json(l: &List) -> Value {
    Value::Object(
        l.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.text())))
            .collect::<Map<String, Value>>(),
    )
}

/// `a + b` by name.
pub fn add(a: &List, b: &List) -> List {
    let mut out = a.clone();
    for (k, v) in b {
        let sum = match out.get(k) {
            Some(x) => x.plus(v),
            None => v.clone(),
        };
        out.insert(k.clone(), sum);
    }
    out
}

/// kube's `prettyPrint`: `name=value` sorted by name, comma-separated.
pub fn pretty(l: &List) -> String {
    l.iter()
        .map(|(k, v)| format!("{k}={}", v.text()))
        .collect::<Vec<_>>()
        .join(",")
}

/// A pod's requests and limits: its containers summed, at least each init container.
pub fn pod_totals(pod: &Value) -> (List, List) {
    let containers = |key: &str| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let lists = |c: &Value| {
        (
            list(c.pointer("/resources/requests")),
            list(c.pointer("/resources/limits")),
        )
    };
    let (mut req, mut lim) = (List::new(), List::new());
    for c in containers("containers") {
        let (r, l) = lists(&c);
        req = add(&req, &r);
        lim = add(&lim, &l);
    }
    for c in containers("initContainers") {
        let (r, l) = lists(&c);
        for (total, one) in [(&mut req, r), (&mut lim, l)] {
            for (k, v) in one {
                if total
                    .get(&k)
                    .is_none_or(|t| v.q.compare(&t.q) == std::cmp::Ordering::Greater)
                {
                    total.insert(k, v);
                }
            }
        }
    }
    (req, lim)
}
