//! What each stage changed, for `X-Pipeline-Trace` and `--log-pipeline`.

/// A pipeline trace: `stage: change` lines, collected only when asked for.
#[derive(Debug, Default)]
pub struct Trace {
    enabled: bool,
    lines: Vec<String>,
}

impl Trace {
    /// A trace that records only when `enabled`.
    pub fn new(enabled: bool) -> Self {
        Trace {
            enabled,
            lines: Vec::new(),
        }
    }

    /// Continue a trace whose earlier stages ran before admission.
    pub fn resume(enabled: bool, lines: Vec<String>) -> Self {
        Trace { enabled, lines }
    }

    /// Record one change of one stage.
    pub fn note(&mut self, stage: &str, what: impl std::fmt::Display) {
        if self.enabled {
            self.lines.push(format!("{stage}: {what}"));
        }
    }

    /// The recorded lines.
    pub fn into_lines(self) -> Vec<String> {
        self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_when_enabled() {
        let mut off = Trace::new(false);
        off.note("prune", "removed spec.x");
        assert!(off.into_lines().is_empty());
        let mut on = Trace::new(true);
        on.note("prune", "removed spec.x");
        assert_eq!(on.into_lines(), vec!["prune: removed spec.x".to_string()]);
    }
}
